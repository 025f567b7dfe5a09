import { strict as assert } from 'node:assert';
import net from 'node:net';
import { test } from 'uvu';
import { AuthError } from '../../lib/auth.js';
import { channels, type DropEvent, type StartEvent, type StopEvent } from '../../lib/telemetry.js';
import { eventually, LISTEN_HEADERS, listenBody, post, SseConnection, startEndpoint, type TestServer } from '../helpers/http.js';

const byHeader = (request: { header: (name: string) => string | undefined }) => {
  const principal = request.header('x-principal');
  if (principal === 'nobody') throw new AuthError('unknown principal');
  const ttl = request.header('x-ttl');
  const scopes = new Set((request.header('x-scopes') ?? '').split(' ').filter(Boolean));
  return { principal: principal ?? 'anon', scopes, ...(ttl ? { expiresAt: Date.now() + Number(ttl) } : {}) };
};

const ACK_TOOLS_7 =
  'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":7}}}\n\n';

async function withServer(options: Parameters<typeof startEndpoint>[0], body: (s: TestServer) => Promise<void>): Promise<void> {
  const server = await startEndpoint(options);
  try {
    await body(server);
  } finally {
    await server.close();
  }
}

test('M1: a listen without Accept: text/event-stream gets 406 and -32600, and no stream', async () => {
  await withServer({}, async ({ url, endpoint }) => {
    const starts: unknown[] = [];
    const onStart = (e: unknown) => starts.push(e);
    channels.start.subscribe(onStart);
    const res = await post(url, listenBody(3, { toolsListChanged: true }), { 'content-type': 'application/json', accept: 'application/json' });
    channels.start.unsubscribe(onStart);
    assert.equal(res.status, 406);
    assert.equal(res.headers['content-type'], 'application/json');
    assert.deepEqual(JSON.parse(res.body), {
      jsonrpc: '2.0',
      id: 3,
      error: { code: -32600, message: 'subscriptions/listen requires Accept: text/event-stream' },
    });
    assert.equal(endpoint.stats.streams, 0);
    assert.equal(starts.length, 0, 'a refused listen emits no start event');
  });
});

test('M3: invalid filters get a plain JSON-RPC -32602 naming the field, not a stream', async () => {
  await withServer({}, async ({ url }) => {
    const cases: [unknown, string][] = [
      [undefined, 'subscriptions/listen requires params.notifications to be an object'],
      [[], 'subscriptions/listen requires params.notifications to be an object'],
      [{ toolsListChanged: 'yes' }, 'params.notifications.toolsListChanged must be a boolean'],
      [{ resourceSubscriptions: 'file:///a' }, 'params.notifications.resourceSubscriptions must be an array of URI strings'],
      [{ resourceSubscriptions: Array.from({ length: 1001 }, (_, i) => `file:///${i}`) }, 'params.notifications.resourceSubscriptions must list at most 1000 URIs, got 1001'],
    ];
    for (const [notifications, message] of cases) {
      const res = await post(url, listenBody('q', notifications));
      assert.equal(res.status, 200);
      assert.equal(res.headers['content-type'], 'application/json');
      const body = JSON.parse(res.body);
      assert.equal(body.id, 'q');
      assert.equal(body.error.code, -32602);
      assert.equal(body.error.message, message);
    }
  });
});

test('M5: SSE headers, the acknowledgment first with only honoured fields, byte for byte', async () => {
  await withServer({ capabilities: { tools: true, resources: true } }, async ({ url }) => {
    const conn = await SseConnection.open(
      url,
      listenBody(7, { toolsListChanged: true, promptsListChanged: true, resourcesListChanged: false, somethingNew: true }),
    );
    assert.equal(conn.status, 200);
    assert.equal(conn.res.headers['content-type'], 'text/event-stream');
    assert.equal(conn.res.headers['cache-control'], 'no-cache, no-transform');
    assert.equal(conn.res.headers['x-accel-buffering'], 'no');
    await conn.until((c) => c.text.length >= ACK_TOOLS_7.length, 3000, 'the ack');
    assert.equal(conn.text, ACK_TOOLS_7);
    conn.destroy();
  });
});

test('M4: a URI the caller may not read is dropped from the ack silently and never notified', async () => {
  await withServer(
    { authenticate: byHeader, canRead: (uri, { auth }) => !uri.includes('/private/') || auth.scopes.has('private') },
    async ({ url, hub }) => {
      const body = listenBody(1, { resourceSubscriptions: ['file:///d/private/s.txt', 'file:///d/a.txt', 'file:///d/a.txt'] });
      const plain = await SseConnection.open(url, body, { ...LISTEN_HEADERS, 'x-principal': 'p1' });
      const scoped = await SseConnection.open(url, body, { ...LISTEN_HEADERS, 'x-principal': 'p2', 'x-scopes': 'private' });
      await plain.until((c) => c.messages.length >= 1);
      await scoped.until((c) => c.messages.length >= 1);
      assert.deepEqual(plain.messages[0]!.params.notifications, { resourceSubscriptions: ['file:///d/a.txt'] });
      assert.deepEqual(scoped.messages[0]!.params.notifications, { resourceSubscriptions: ['file:///d/private/s.txt', 'file:///d/a.txt'] });
      hub.notifyResourceUpdated('file:///d/private/s.txt');
      hub.notifyResourceUpdated('file:///d/a.txt');
      await plain.until((c) => c.messages.length >= 2);
      await scoped.until((c) => c.messages.length >= 3);
      assert.deepEqual(plain.messages.slice(1).map((m) => m.params.uri), ['file:///d/a.txt']);
      assert.deepEqual(scoped.messages.slice(1).map((m) => m.params.uri), ['file:///d/private/s.txt', 'file:///d/a.txt']);
      plain.destroy();
      scoped.destroy();
    },
  );
});

test('M5: the subscription id is verbatim on every message (number and string), keep-alive is :\\r\\n', async () => {
  await withServer({ keepAliveInterval: 40, maxStreamLifetime: 300 }, async ({ url, hub }) => {
    for (const id of [42, '42']) {
      const conn = await SseConnection.open(url, listenBody(id, { resourceSubscriptions: ['file:///a'] }));
      await conn.until((c) => c.messages.length >= 1);
      hub.notifyResourceUpdated('file:///a');
      await conn.done;
      const tagged = JSON.stringify(id);
      assert.ok(conn.text.includes('\n\n:\r\n'), 'keep-alive comment between frames');
      const frames = conn.text.replace(/:\r\n/g, '').split('\n\n').filter(Boolean);
      assert.deepEqual(frames, [
        `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"resourceSubscriptions":["file:///a"]},"_meta":{"io.modelcontextprotocol/subscriptionId":${tagged}}}}`,
        `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a","_meta":{"io.modelcontextprotocol/subscriptionId":${tagged}}}}`,
        `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":${tagged},"reason":"max_lifetime","_meta":{"io.modelcontextprotocol/subscriptionId":${tagged}}}}`,
        `event: message\ndata: {"jsonrpc":"2.0","id":${tagged},"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":${tagged}}}}`,
      ]);
    }
  });
});

const closing = (conn: SseConnection) => conn.messages.slice(-2);

test('M7: lifetime cap, token expiry and idle timeout each close with cancelled, then the result, then the end', async () => {
  const stops: StopEvent[] = [];
  const onStop = (e: unknown) => stops.push(e as StopEvent);
  channels.stop.subscribe(onStop);
  try {
    await withServer({ authenticate: byHeader, keepAliveInterval: 30, maxStreamLifetime: 250 }, async ({ url }) => {
      const lifetime = await SseConnection.open(url, listenBody(1, { toolsListChanged: true }), { ...LISTEN_HEADERS, 'x-principal': 'a' });
      const token = await SseConnection.open(url, listenBody(2, { toolsListChanged: true }), { ...LISTEN_HEADERS, 'x-principal': 'b', 'x-ttl': '80' });
      await Promise.all([lifetime.done, token.done]);
      assert.deepEqual(closing(lifetime).map((m) => m.method ?? m.result), [
        'notifications/cancelled',
        { resultType: 'complete', _meta: { 'io.modelcontextprotocol/subscriptionId': 1 } },
      ]);
      assert.deepEqual(closing(lifetime)[0]!.params, { requestId: 1, reason: 'max_lifetime', _meta: { 'io.modelcontextprotocol/subscriptionId': 1 } });
      assert.equal(closing(token)[0]!.params.reason, 'token_expired');
      assert.equal(closing(token)[1]!.id, 2);
    });
    await withServer({ keepAliveInterval: 30, listenIdleTimeout: 60 }, async ({ url }) => {
      const idle = await SseConnection.open(url, listenBody(3, { toolsListChanged: true }));
      await idle.done;
      assert.equal(closing(idle)[0]!.params.reason, 'idle_timeout');
      assert.deepEqual(closing(idle)[1]!.result.resultType, 'complete');
    });
    assert.deepEqual(stops.map((s) => s.reason).sort(), ['idle_timeout', 'max_lifetime', 'token_expired']);
    for (const stop of stops) assert.deepEqual(stop.filters, ['tools_list_changed']);
  } finally {
    channels.stop.unsubscribe(onStop);
  }
});

test('M7: closeNotice result-only skips notifications/cancelled', async () => {
  await withServer({ closeNotice: 'result-only', maxStreamLifetime: 50 }, async ({ url }) => {
    const conn = await SseConnection.open(url, listenBody(9, { toolsListChanged: true }));
    await conn.done;
    assert.deepEqual(conn.messages.map((m) => m.method ?? 'result'), ['notifications/subscriptions/acknowledged', 'result']);
  });
});

test('M8: the 5th listen of a principal supersedes its oldest; another principal is untouched', async () => {
  await withServer({ authenticate: byHeader }, async ({ url, endpoint }) => {
    const open = (id: number, principal: string) =>
      SseConnection.open(url, listenBody(id, { toolsListChanged: true }), { ...LISTEN_HEADERS, 'x-principal': principal });
    const other = await open(100, 'other');
    const mine: SseConnection[] = [];
    for (let i = 1; i <= 4; i++) mine.push(await open(i, 'me'));
    await Promise.all(mine.map((c) => c.until((x) => x.messages.length >= 1)));
    assert.equal(endpoint.principals.count('me'), 4);
    mine.push(await open(5, 'me'));
    await mine[0]!.done;
    assert.deepEqual(closing(mine[0]!)[0]!.params, { requestId: 1, reason: 'superseded', _meta: { 'io.modelcontextprotocol/subscriptionId': 1 } });
    assert.equal(closing(mine[0]!)[1]!.id, 1);
    await mine[4]!.until((c) => c.messages.length >= 1);
    assert.equal(endpoint.principals.count('me'), 4);
    for (const c of [other, ...mine.slice(1)]) assert.equal(c.ended, false);
    for (const c of [other, ...mine]) c.destroy();
  });
});

test('M8: a burst of 50 concurrent listens of one principal never holds more than the cap live', async () => {
  await withServer({ authenticate: byHeader, maxStreams: 100 }, async ({ url, endpoint }) => {
    let peak = 0;
    const watch = setInterval(() => (peak = Math.max(peak, endpoint.principals.count('burst'))), 1);
    const conns = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        SseConnection.open(url, listenBody(i, { toolsListChanged: true }), { ...LISTEN_HEADERS, 'x-principal': 'burst' }),
      ),
    );
    await eventually(() => conns.filter((c) => !c.ended).length === 4, 3000, '46 streams to be superseded');
    clearInterval(watch);
    assert.ok(peak <= 4, `peak ${peak}`);
    assert.equal(conns.filter((c) => c.messages.some((m) => m.params?.reason === 'superseded')).length, 46);
    for (const c of conns) c.destroy();
  });
});

test('M9: at maxStreams a listen gets 503 and -32000, and nobody is superseded', async () => {
  await withServer({ authenticate: byHeader, maxStreams: 2 }, async ({ url, endpoint }) => {
    const a = await SseConnection.open(url, listenBody(1, { toolsListChanged: true }), { ...LISTEN_HEADERS, 'x-principal': 'p' });
    const b = await SseConnection.open(url, listenBody(2, { toolsListChanged: true }), { ...LISTEN_HEADERS, 'x-principal': 'p' });
    const res = await post(url, listenBody(3, { toolsListChanged: true }), { ...LISTEN_HEADERS, 'x-principal': 'p' });
    assert.equal(res.status, 503);
    const body = JSON.parse(res.body);
    assert.equal(body.id, 3);
    assert.equal(body.error.code, -32000);
    assert.equal(endpoint.stats.streams, 2);
    assert.equal(a.ended || b.ended, false);
    a.destroy();
    b.destroy();
  });
});

test('M10: a client that stops reading costs at most maxStreamQueue notifications; others get everything', async () => {
  const drops: DropEvent[] = [];
  const onDrop = (e: unknown) => drops.push(e as DropEvent);
  channels.drop.subscribe(onDrop);
  try {
    await withServer({ maxStreamQueue: 20 }, async ({ url, hub, endpoint }) => {
      // Long URIs fill the socket buffers quickly; many of them defeat coalescing.
      const uris = Array.from({ length: 100 }, (_, i) => `file:///${'x'.repeat(4000)}/${i}`);
      const healthy = await SseConnection.open(url, listenBody('h', { resourceSubscriptions: [uris[0]] }));
      await healthy.until((c) => c.messages.length >= 1);
      // The stalled client: a raw socket that sends the request and never reads.
      const stalled = net.connect(Number(new URL(url).port), '127.0.0.1');
      const body = listenBody('s', { resourceSubscriptions: uris });
      stalled.write(
        `POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      stalled.pause();
      await eventually(() => endpoint.stats.streams === 2, 3000, 'the stalled stream to open');
      const rounds = 60;
      for (let round = 0; round < rounds; round++) {
        for (const uri of uris) hub.notifyResourceUpdated(uri);
        await new Promise((resolve) => setImmediate(resolve));
      }
      await healthy.until((c) => c.messages.length >= 1 + rounds, 5000, 'every notification for the healthy client');
      assert.equal(healthy.messages.length, 1 + rounds);
      assert.ok(drops.length > 0, 'the stalled stream dropped notifications');
      for (const drop of drops) {
        assert.equal(drop.topic, 'resource');
        assert.ok(drop.queueLength <= 20, `queue held ${drop.queueLength}`);
      }
      assert.equal(endpoint.stats.streams, 2, 'the stalled stream is not closed for it');
      stalled.destroy();
      healthy.destroy();
      await eventually(() => endpoint.stats.streams === 0, 3000, 'streams released');
    });
  } finally {
    channels.drop.unsubscribe(onDrop);
  }
});

test('a stalled client cannot hold its slot past the close', async () => {
  await withServer({ maxStreamLifetime: 300, keepAliveInterval: 100 }, async ({ url, hub, endpoint }) => {
    const uris = Array.from({ length: 100 }, (_, i) => `file:///${'y'.repeat(4000)}/${i}`);
    const stalled = net.connect(Number(new URL(url).port), '127.0.0.1');
    const body = listenBody('s', { resourceSubscriptions: uris });
    stalled.write(`POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    stalled.pause();
    await eventually(() => endpoint.stats.streams === 1, 3000, 'the stream to open');
    for (let round = 0; round < 60; round++) for (const uri of uris) hub.notifyResourceUpdated(uri);
    await eventually(() => endpoint.stats.streams === 0, 3000, 'the stalled stream to be dropped');
    assert.deepEqual(endpoint.stats, { streams: 0, slots: 0, principals: 0, sessions: 0, sessionSubscriptions: 0 });
    stalled.destroy();
  });
});

test('M14: abrupt disconnects release slots, principals and hub topics', async () => {
  await withServer({ authenticate: byHeader }, async ({ url, hub, endpoint }) => {
    const conns = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        SseConnection.open(url, listenBody(i, { toolsListChanged: true, resourceSubscriptions: [`file:///r/${i}`, 'file:///shared'] }), {
          ...LISTEN_HEADERS,
          'x-principal': `p${i % 5}`,
        }),
      ),
    );
    await Promise.all(conns.map((c) => c.until((x) => x.messages.length >= 1)));
    assert.equal(endpoint.stats.streams, 20);
    assert.equal(hub.size.topics, 21);
    for (const c of conns) c.destroy();
    await eventually(() => endpoint.stats.streams === 0, 3000, 'streams to be released');
    assert.deepEqual(endpoint.stats, { streams: 0, slots: 0, principals: 0, sessions: 0, sessionSubscriptions: 0 });
    assert.deepEqual(hub.size, { topics: 0, subscriptions: 0 });
  });
});

test('M11: start and stop telemetry without URIs or principals; client_closed on disconnect', async () => {
  const events: [string, StartEvent | StopEvent][] = [];
  const onStart = (e: unknown) => events.push(['start', e as StartEvent]);
  const onStop = (e: unknown) => events.push(['stop', e as StopEvent]);
  channels.start.subscribe(onStart);
  channels.stop.subscribe(onStop);
  try {
    await withServer({ authenticate: byHeader }, async ({ url, endpoint }) => {
      const conn = await SseConnection.open(url, listenBody(1, { resourceSubscriptions: ['file:///secret-name'], toolsListChanged: true }), {
        ...LISTEN_HEADERS,
        'x-principal': 'alice',
      });
      await conn.until((c) => c.messages.length >= 1);
      conn.destroy();
      await eventually(() => endpoint.stats.streams === 0);
    });
    assert.deepEqual(events.map(([kind]) => kind), ['start', 'stop']);
    const [start, stop] = [events[0]![1] as StartEvent, events[1]![1] as StopEvent];
    assert.equal(start.resourceSubscriptions, 1);
    assert.deepEqual(start.filters, ['tools_list_changed', 'resource_subscriptions']);
    assert.equal(stop.reason, 'client_closed');
    assert.ok(stop.duration >= 0);
    const text = JSON.stringify(events);
    assert.ok(!text.includes('secret-name') && !text.includes('alice'));
  } finally {
    channels.start.unsubscribe(onStart);
    channels.stop.unsubscribe(onStop);
  }
});

test('bad requests get documented answers: 413, -32700, -32600, 401, 404, 202, 405', async () => {
  await withServer({ authenticate: byHeader, maxBodyBytes: 1024 }, async ({ url }) => {
    const big = await post(url, listenBody(1, { resourceSubscriptions: ['x'.repeat(2000)] }));
    assert.equal(big.status, 413);
    const parse = await post(url, '{"jsonrpc":');
    assert.equal(parse.status, 400);
    assert.deepEqual(JSON.parse(parse.body), { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse error: the body is not valid JSON' } });
    const batch = await post(url, '[]');
    assert.equal(JSON.parse(batch.body).error.code, -32600);
    const version = await post(url, '{"jsonrpc":"1.0","id":1,"method":"ping"}');
    assert.deepEqual(JSON.parse(version.body).id, 1);
    assert.equal(JSON.parse(version.body).error.code, -32600);
    const unauthorized = await post(url, listenBody(1, {}), { ...LISTEN_HEADERS, 'x-principal': 'nobody' });
    assert.equal(unauthorized.status, 401);
    assert.equal(unauthorized.headers['www-authenticate'], 'Bearer');
    const unknown = await post(url, '{"jsonrpc":"2.0","id":5,"method":"nope/nope"}');
    assert.equal(unknown.status, 404);
    assert.equal(JSON.parse(unknown.body).error.code, -32601);
    const proto = await post(url, '{"jsonrpc":"2.0","id":6,"method":"toString"}');
    assert.equal(proto.status, 404, 'inherited properties are not methods');
    const notification = await post(url, '{"jsonrpc":"2.0","method":"notifications/initialized"}');
    assert.equal(notification.status, 202);
  });
});

test.run();
