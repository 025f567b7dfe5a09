// Integration tests of the legacy era (DESIGN L1–L10: 2025-06-18 / 2025-11-25 sessions, the GET
// SSE stream, resources/subscribe, Last-Event-ID replay) over real loopback sockets.
import { strict as assert } from 'node:assert';
import { throwError } from 'rxjs';
import { test } from 'uvu';
import type { AuthInfo } from '../lib/auth.js';
import type { McpEndpointOptions } from '../adapters/http/options.js';
import { Hub } from '../lib/hub.js';
import { hubResources, type ResourceProvider } from '../lib/resources.js';
import { ReplayBuffer, type EventLog } from '../lib/replayBuffer.js';
import { MemorySessionStore } from '../lib/session.js';
import { channels, type DropEvent, type ErrorEvent } from '../lib/telemetry.js';
import { within } from './helpers/wait.js';
import { eventually, LISTEN_HEADERS, listenBody, SseConnection, startEndpoint, type TestServer } from './helpers/http.js';
import {
  call,
  deferred,
  type Deferred,
  frameText,
  framesText,
  GetStream,
  initialize,
  INIT_HEADERS,
  listChangedMessage,
  rawGet,
  rpcBody,
  send,
  nextTurn,
  sessionHeaders,
  sleep,
  updatedMessage,
  primingText,
} from './helpers/legacy.js';
import { collecting } from './helpers/telemetry.js';

async function withServer(options: Partial<McpEndpointOptions>, body: (server: TestServer) => Promise<void>): Promise<void> {
  const server = await startEndpoint(options);
  try {
    await body(server);
  } finally {
    await server.close();
  }
}

/** `initialize` and `notifications/initialized`: the id of a ready session. */
async function session(url: string, headers: Record<string, string> = {}): Promise<string> {
  const init = await initialize(url, { headers });
  assert.equal(init.status, 200, init.body);
  const initialized = await send(url, 'POST', sessionHeaders(init.sessionId, headers), JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
  assert.equal(initialized.status, 202);
  return init.sessionId;
}

/** Opens the session's GET stream and waits until the server holds `streams` streams. */
async function openStream(server: TestServer, sessionId: string, streams: number, lastEventId?: string): Promise<GetStream> {
  const stream = GetStream.open(server.url, sessionId, lastEventId === undefined ? {} : { lastEventId });
  await eventually(() => server.endpoint.stats.streams === streams, 3000, `${streams} open stream(s)`);
  return stream;
}

const errorBody = (id: number | string | null, code: number, message: string) => JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } });
const okBody = (id: number | string) => JSON.stringify({ jsonrpc: '2.0', id, result: {} });
const zeroStats = { streams: 0, slots: 0, principals: 0, sessions: 0, sessionSubscriptions: 0 };

/* L1: initialize */

test('L1: initialize (2025-03-26, 2025-06-18, 2025-11-25, unknown → newest) creates random sessions and advertises subscribe and list changes', async () => {
  await withServer({}, async ({ url, endpoint }) => {
    const capabilities = { tools: { listChanged: true }, prompts: { listChanged: true }, resources: { subscribe: true, listChanged: true } };
    const ids: string[] = [];
    for (const [asked, answered] of [['2025-03-26', '2025-03-26'], ['2025-06-18', '2025-06-18'], ['2025-11-25', '2025-11-25'], ['2024-11-05', '2025-11-25'], ['2024-01-01', '2025-11-25'], ['2026-07-28', '2025-11-25']]) {
      const init = await initialize(url, { protocolVersion: asked, id: 9 });
      assert.equal(init.status, 200);
      assert.equal(init.headers['content-type'], 'application/json');
      assert.match(init.sessionId, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      assert.ok(init.sessionId.replaceAll('-', '').length >= 32);
      assert.equal(
        init.body,
        JSON.stringify({ jsonrpc: '2.0', id: 9, result: { protocolVersion: answered, capabilities, serverInfo: { name: 'mcp-rx-streams', version: '0.1.0' } } }),
      );
      ids.push(init.sessionId);
    }
    assert.equal(new Set(ids).size, ids.length, 'every session id differs');
    assert.equal(endpoint.stats.sessions, 6);
    const initialized = await send(url, 'POST', sessionHeaders(ids[0]!), JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    assert.equal(initialized.status, 202);
    assert.equal(initialized.body, '');
    // initialize without a protocol version: a JSON-RPC error, no session.
    const bad = await send(url, 'POST', { ...INIT_HEADERS }, rpcBody(2, 'initialize', {}));
    assert.equal(bad.status, 200);
    assert.equal(bad.body, errorBody(2, -32602, 'initialize requires params.protocolVersion'));
    assert.equal(bad.headers['mcp-session-id'], undefined);
    assert.equal(endpoint.stats.sessions, 6);
  });
});

test('L1: the advertised capabilities follow the endpoint (resources only; serverInfo, instructions, extra capabilities)', async () => {
  const options = { capabilities: { resources: true }, serverInfo: { name: 'shop', version: '2.1.0' }, instructions: 'hi', extraCapabilities: { logging: {} } };
  await withServer(options, async ({ url }) => {
    const init = await initialize(url, { protocolVersion: '2025-06-18' });
    assert.deepEqual(init.json.result, {
      protocolVersion: '2025-06-18',
      capabilities: { logging: {}, resources: { subscribe: true, listChanged: true } },
      serverInfo: { name: 'shop', version: '2.1.0' },
      instructions: 'hi',
    });
  });
});

/* Era routing */

test('era routing: a session id makes a request legacy; listen in a session → -32601; a legacy version without a session → 400; modern listen still works', async () => {
  await withServer({}, async (server) => {
    const { url, hub } = server;
    const sid = await session(url);
    // Even with the modern protocol header, the session id makes it legacy.
    for (const version of ['2025-11-25', '2026-07-28']) {
      const listen = await send(url, 'POST', sessionHeaders(sid, { 'mcp-protocol-version': version }), listenBody(5, { toolsListChanged: true }));
      assert.equal(listen.status, 200);
      assert.equal(listen.body, errorBody(5, -32601, 'method not found: subscriptions/listen (legacy sessions use resources/subscribe)'));
    }
    const unknown = await call(url, sid, 6, 'no/such/method');
    assert.equal(unknown.status, 200, 'Streamable HTTP answers JSON-RPC errors with 200');
    assert.equal(unknown.body, errorBody(6, -32601, 'method not found: no/such/method'));
    const again = await call(url, sid, 7, 'initialize', { protocolVersion: '2025-11-25' });
    assert.equal(again.body, errorBody(7, -32600, 'this session is already initialized'));

    const noSession = await send(url, 'POST', { ...INIT_HEADERS, 'mcp-protocol-version': '2025-11-25' }, rpcBody(8, 'resources/subscribe', { uri: 'file:///a' }));
    assert.equal(noSession.status, 400);
    assert.equal(noSession.body, errorBody(8, -32600, 'Mcp-Session-Id header is required (send initialize first)'));

    // The modern era next to a live session with a GET stream.
    const get = await openStream(server, sid, 1);
    const listen = await SseConnection.open(url, listenBody('m', { toolsListChanged: true }), { ...LISTEN_HEADERS });
    assert.equal(listen.status, 200);
    await listen.until((c) => c.messages.length === 1, 3000, 'the ack');
    hub.notifyToolsChanged();
    await listen.until((c) => c.messages.length === 2, 3000, 'the modern notification');
    await get.untilId(1);
    assert.equal(get.withoutKeepAlives, frameText(1, listChangedMessage('tools')));
    assert.equal(listen.messages[1]!.method, 'notifications/tools/list_changed');
    assert.equal(server.endpoint.stats.streams, 2);
    listen.destroy();
    get.destroy();
  });
});

/* L10: session lookup and DELETE */

test('L10: missing session id → 400; unknown → 404; another principal → 403; Accept without text/event-stream → 406', async () => {
  const authenticate = (request: { header(name: string): string | undefined }): AuthInfo => ({ principal: request.header('x-user') ?? 'nobody', scopes: new Set() });
  await withServer({ authenticate }, async ({ url, endpoint }) => {
    const missing = 'Mcp-Session-Id header is required (send initialize first)';
    for (const method of ['GET', 'DELETE']) {
      const reply = await send(url, method, { accept: 'text/event-stream' });
      assert.equal(reply.status, 400, method);
      assert.equal(reply.body, errorBody(null, -32600, missing));
    }
    const unknownId = '0123456789abcdef0123456789abcdef';
    const notFound = errorBody(null, -32001, 'session not found: initialize a new session');
    for (const method of ['GET', 'DELETE']) {
      const reply = await send(url, method, { accept: 'text/event-stream', 'mcp-session-id': unknownId, 'x-user': 'alice' });
      assert.equal(reply.status, 404, method);
      assert.equal(reply.body, notFound);
    }
    const post404 = await call(url, unknownId, 1, 'resources/subscribe', { uri: 'file:///a' }, { 'x-user': 'alice' });
    assert.equal(post404.status, 404);

    const sid = await session(url, { 'x-user': 'alice' });
    const forbidden = errorBody(null, -32600, 'this session belongs to another principal');
    for (const method of ['GET', 'DELETE', 'POST']) {
      const reply = await send(url, method, sessionHeaders(sid, { 'x-user': 'mallory' }), method === 'POST' ? rpcBody(1, 'resources/subscribe', { uri: 'file:///a' }) : undefined);
      assert.equal(reply.status, 403, method);
      assert.equal(reply.body, forbidden);
    }
    assert.equal(endpoint.stats.sessions, 1, "mallory's DELETE did not end alice's session");

    for (const accept of ['application/json', 'text/event-stream;q=0', '*/*']) {
      const reply = await send(url, 'GET', { accept, 'mcp-session-id': sid, 'x-user': 'alice' });
      assert.equal(reply.status, 406, accept);
      assert.equal(reply.json.error.message, 'the GET stream requires Accept: text/event-stream');
    }
    assert.equal(endpoint.stats.streams, 0, 'a refused GET opens nothing');
  });
});

test('L9/L10: DELETE ends the session (204): its GET stream ends, its subscriptions and record are released, the id answers 404', async () => {
  const store = new MemorySessionStore();
  await withServer({ sessionStore: store }, async (server) => {
    const { url, hub, endpoint } = server;
    const sid = await session(url);
    const get = await openStream(server, sid, 1);
    assert.equal(okBody(1), (await call(url, sid, 1, 'resources/subscribe', { uri: 'file:///a' })).body);
    assert.deepEqual(endpoint.stats, { streams: 1, slots: 1, principals: 0, sessions: 1, sessionSubscriptions: 2 });
    assert.equal(hub.size.subscriptions, 4, 'tools, prompts, resources list changes and file:///a');
    assert.equal(store.size, 1);

    const del = await send(url, 'DELETE', { 'mcp-session-id': sid });
    assert.equal(del.status, 204);
    assert.equal(del.body, '');
    await get.untilEnded();
    assert.ok(get.endedCleanly, 'the GET stream ends cleanly');
    assert.equal(get.text, primingText(0), 'the GET stream carried nothing but its priming event');
    assert.deepEqual(endpoint.stats, zeroStats);
    assert.deepEqual(hub.size, { topics: 0, subscriptions: 0 });
    assert.equal(store.size, 0, 'the record is deleted');

    for (const method of ['GET', 'DELETE', 'POST']) {
      const reply = await send(url, method, sessionHeaders(sid), method === 'POST' ? rpcBody(2, 'resources/subscribe', { uri: 'file:///a' }) : undefined);
      assert.equal(reply.status, 404, method);
    }
  });
});

test('L10: with allowClientSessionDelete: false, DELETE → 405 with Allow: POST, GET and the session stays', async () => {
  await withServer({ allowClientSessionDelete: false }, async ({ url, endpoint }) => {
    const sid = await session(url);
    const del = await send(url, 'DELETE', { 'mcp-session-id': sid });
    assert.equal(del.status, 405);
    assert.equal(del.headers.allow, 'POST, GET');
    assert.equal(del.json.error.code, -32600);
    assert.equal(endpoint.stats.sessions, 1);
    assert.equal((await call(url, sid, 1, 'resources/unsubscribe', { uri: 'file:///a' })).body, okBody(1));
  });
});

/* L7: the GET stream's wire */

test('L7: the GET stream: SSE headers, frames `event: message\\nid: N\\ndata:`, keep-alives `:\\r\\n`', async () => {
  await withServer({ keepAliveInterval: 40 }, async (server) => {
    const sid = await session(server.url);
    const get = await openStream(server, sid, 1);
    const res = await get.response;
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'text/event-stream');
    assert.equal(res.headers['cache-control'], 'no-cache, no-transform');
    assert.equal(res.headers['x-accel-buffering'], 'no');
    // The priming event first (MCP 2025-11-25: an event id and an empty data field, and `retry`).
    await get.until((s) => s.text.startsWith('id: 0\nretry: 1000\ndata:\n\n:\r\n:\r\n'), 2000, 'the priming event, then two keep-alives');
    server.hub.notifyPromptsChanged();
    await get.untilId(1);
    assert.match(get.text, /^id: 0\nretry: 1000\ndata:\n\n(:\r\n)+event: message\nid: 1\ndata: \{"jsonrpc":"2\.0","method":"notifications\/prompts\/list_changed"\}\n\n(:\r\n)*$/);
    get.destroy();
  });
});

test('L7: the GET response head is sent at once, not held back until the first frame', async () => {
  // keepAliveInterval is 15 s by default: a quiet session's client waits that long for its headers.
  await withServer({}, async (server) => {
    const sid = await session(server.url);
    const get = GetStream.open(server.url, sid);
    const res = await within(get.response, 1000, 'the response head');
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'text/event-stream');
    get.destroy();
  });
});

/* L2: subscribe needs the GET stream */

test('L2: resources/subscribe before the GET stream → exactly -32602 "open the GET SSE stream before subscribing to resources"', async () => {
  await withServer({ subscribeStreamWait: 0 }, async ({ url, endpoint, hub }) => {
    const sid = await session(url);
    const reply = await call(url, sid, 3, 'resources/subscribe', { uri: 'file:///a' });
    assert.equal(reply.status, 200);
    assert.equal(reply.body, errorBody(3, -32602, 'open the GET SSE stream before subscribing to resources'));
    assert.equal(endpoint.stats.sessionSubscriptions, 0);
    assert.deepEqual(hub.size, { topics: 0, subscriptions: 0 });
  });
});

test('L2: with a subscribeStreamWait, a GET opened shortly after the subscribe lets it succeed; none within the wait → -32602', async () => {
  await withServer({}, async (server) => {
    const { url, hub } = server;
    const sid = await session(url);
    const pending = call(url, sid, 4, 'resources/subscribe', { uri: 'file:///a' });
    await sleep(50);
    const get = GetStream.open(url, sid);
    const reply = await pending;
    assert.equal(reply.body, okBody(4));
    hub.notifyResourceUpdated('file:///a');
    await get.untilId(1);
    assert.equal(get.withoutKeepAlives, frameText(1, updatedMessage('file:///a')));
    get.destroy();
  });
  await withServer({ subscribeStreamWait: 100 }, async ({ url }) => {
    const sid = await session(url);
    const started = Date.now();
    const reply = await call(url, sid, 5, 'resources/subscribe', { uri: 'file:///a' });
    assert.ok(Date.now() - started >= 90, 'it waited');
    assert.equal(reply.body, errorBody(5, -32602, 'open the GET SSE stream before subscribing to resources'));
  });
});

/* L3: every error, exactly */

test('L3: params.uri missing or not a string → -32602 "<method> requires params.uri" (subscribe and unsubscribe)', async () => {
  await withServer({}, async (server) => {
    const sid = await session(server.url);
    const get = await openStream(server, sid, 1);
    let id = 10;
    for (const method of ['resources/subscribe', 'resources/unsubscribe']) {
      for (const params of [undefined, {}, { uri: 42 }, { uri: null }, { uri: ['file:///a'] }, { url: 'file:///a' }]) {
        id++;
        const reply = await call(server.url, sid, id, method, params);
        assert.equal(reply.status, 200);
        assert.equal(reply.body, errorBody(id, -32602, `${method} requires params.uri`), `${method} ${JSON.stringify(params)}`);
      }
    }
    get.destroy();
  });
});

/** A provider for `db://` URIs: subscribable unless listed in `gone`, readable unless in `secret`. */
function dbProvider(hub: Hub, state: { gone?: Set<string>; secret?: Set<string> } = {}): ResourceProvider {
  return hubResources(hub, {
    subscribable: (uri) => uri.startsWith('db://') && !state.gone?.has(uri),
    canRead: (uri) => !state.secret?.has(uri),
  });
}

test('L3: not subscribable, permission denied, and every provider failure → the exact error, HTTP 200, nothing subscribed or recorded', async () => {
  await collecting<ErrorEvent>(channels.error, async (errors) => {
    const hub = new Hub();
    const store = new MemorySessionStore();
    const boom = (where: string) => new Error(`secret database detail (${where})`);
    const failing: ResourceProvider = {
      subscribable: (uri) => {
        if (uri === 'bad://subscribable-throws') throw boom('subscribable');
        return uri.startsWith('bad://');
      },
      canRead: (uri) => (uri === 'bad://canread-rejects' ? Promise.reject(boom('canRead')) : true),
      changes: (uri) => {
        if (uri === 'bad://changes-throws') throw boom('changes');
        if (uri === 'bad://source-errors') return throwError(() => boom('source'));
        return hub.topic({ topic: 'resource', uri });
      },
    };
    const providers = [failing, dbProvider(hub, { secret: new Set(['db://shop/Secret']) })];
    await withServer({ hub, sessionStore: store, resourceProviders: providers }, async (server) => {
      const { url, endpoint } = server;
      const sid = await session(url);
      const get = await openStream(server, sid, 1);
      const cases: [string, number, string][] = [
        ['file:///not-mine', -32602, 'resource is not subscribable: file:///not-mine'],
        ['db://shop/Secret', -32602, 'permission denied: db://shop/Secret'],
        ['bad://subscribable-throws', -32603, 'failed to subscribe: bad://subscribable-throws'],
        ['bad://canread-rejects', -32603, 'failed to subscribe: bad://canread-rejects'],
        ['bad://changes-throws', -32603, 'failed to subscribe: bad://changes-throws'],
        ['bad://source-errors', -32603, 'failed to subscribe: bad://source-errors'],
      ];
      let id = 20;
      for (const [uri, code, message] of cases) {
        const reply = await call(url, sid, ++id, 'resources/subscribe', { uri });
        assert.equal(reply.status, 200, uri);
        assert.equal(reply.body, errorBody(id, code, message));
      }
      assert.deepEqual(store.get(sid)!.subscriptions, [], 'no refused URI is recorded');
      assert.equal(endpoint.stats.sessionSubscriptions, 1, 'only the list-changed subscription');
      assert.deepEqual(hub.size, { topics: 0, subscriptions: 3 });
      // The raw errors went to the error channel, never to the client.
      const reported = errors.map((event) => (event.error as Error).message);
      for (const where of ['subscribable', 'canRead', 'changes', 'source']) assert.ok(reported.includes(`secret database detail (${where})`), where);
      // The providers are asked in order: the second one serves db:// URIs.
      assert.equal((await call(url, sid, 30, 'resources/subscribe', { uri: 'db://shop/Product' })).body, okBody(30));
      assert.equal((await call(url, sid, 31, 'resources/subscribe', { uri: 'bad://fine' })).body, okBody(31));
      assert.deepEqual(store.get(sid)!.subscriptions, ['db://shop/Product', 'bad://fine']);
      get.destroy();
    });
  });
});

/** A provider whose `subscribable` answers are given by hand, one gate per call. */
function gatedProvider(hub: Hub): { provider: ResourceProvider; gates: { uri: string; gate: Deferred<boolean> }[] } {
  const gates: { uri: string; gate: Deferred<boolean> }[] = [];
  const provider = hubResources(hub, {
    subscribable: (uri) => {
      const gate = deferred<boolean>();
      gates.push({ uri, gate });
      return gate.promise;
    },
  });
  return { provider, gates };
}

test('L3: cancelled during setup: the GET stream closed, an unsubscribe arrived, a newer subscribe arrived', async () => {
  const hub = new Hub();
  const store = new MemorySessionStore();
  const { provider, gates } = gatedProvider(hub);
  await withServer({ hub, sessionStore: store, resourceProviders: [provider] }, async (server) => {
    const { url, endpoint } = server;
    const sid = await session(url);
    const cancelled = (id: number, uri: string, reason: string) => errorBody(id, -32602, `resources/subscribe for ${uri} was cancelled: ${reason}`);

    // 1. The GET stream closes while the provider is deciding.
    let get = await openStream(server, sid, 1);
    const first = call(url, sid, 1, 'resources/subscribe', { uri: 'db://a' });
    await eventually(() => gates.length === 1, 3000, 'the provider to be asked');
    get.destroy();
    await eventually(() => endpoint.stats.streams === 0, 3000, 'the server to notice the drop');
    gates[0]!.gate.resolve(true);
    const reply1 = await first;
    assert.equal(reply1.status, 200);
    assert.equal(reply1.body, cancelled(1, 'db://a', 'the GET stream closed'));

    // 2. An unsubscribe for the URI arrives during setup; it answers {} at once.
    get = await openStream(server, sid, 1);
    const second = call(url, sid, 2, 'resources/subscribe', { uri: 'db://a' });
    await eventually(() => gates.length === 2, 3000, 'the provider to be asked');
    assert.equal((await call(url, sid, 3, 'resources/unsubscribe', { uri: 'db://a' })).body, okBody(3));
    gates[1]!.gate.resolve(true);
    assert.equal((await second).body, cancelled(2, 'db://a', 'resources/unsubscribe arrived'));

    // 3. A newer subscribe for the URI arrives during setup: the older is cancelled, the newer wins.
    const older = call(url, sid, 4, 'resources/subscribe', { uri: 'db://a' });
    await eventually(() => gates.length === 3, 3000, 'the provider to be asked');
    const newer = call(url, sid, 5, 'resources/subscribe', { uri: 'db://a' });
    await eventually(() => gates.length === 4, 3000, 'the provider to be asked again');
    gates[2]!.gate.resolve(true);
    assert.equal((await older).body, cancelled(4, 'db://a', 'a newer resources/subscribe for the URI arrived'));
    gates[3]!.gate.resolve(true);
    assert.equal((await newer).body, okBody(5));

    assert.deepEqual(store.get(sid)!.subscriptions, ['db://a'], 'only the winner is recorded');
    assert.equal(endpoint.stats.sessionSubscriptions, 2, 'one live subscription for db://a (plus list changes)');
    hub.notifyResourceUpdated('db://a');
    hub.notifyToolsChanged();
    await get.untilId(2);
    assert.equal(get.withoutKeepAlives, frameText(1, updatedMessage('db://a')) + frameText(2, listChangedMessage('tools')), 'one notification, not two');
    get.destroy();
  });
});

/* L4: success, replace, unsubscribe, the record */

test('L4: success {}; re-subscribe replaces (one notification per change); unsubscribe unknown → {}; the URI list is on the record', async () => {
  const store = new MemorySessionStore();
  await withServer({ sessionStore: store }, async (server) => {
    const { url, hub, endpoint } = server;
    const sid = await session(url);
    const get = await openStream(server, sid, 1);
    const a = 'file:///a.txt';
    const b = 'file:///b.txt';
    const reply = await call(url, sid, 1, 'resources/subscribe', { uri: a });
    assert.equal(reply.status, 200);
    assert.equal(reply.headers['content-type'], 'application/json');
    assert.equal(reply.body, '{"jsonrpc":"2.0","id":1,"result":{}}');
    assert.equal((await call(url, sid, 2, 'resources/subscribe', { uri: a })).body, okBody(2));
    assert.equal((await call(url, sid, 3, 'resources/subscribe', { uri: b })).body, okBody(3));
    assert.deepEqual(store.get(sid)!.subscriptions, [a, b], 'persisted once each, in order');
    assert.equal(endpoint.stats.sessionSubscriptions, 3);
    assert.equal(hub.size.topics, 2);

    hub.notifyResourceUpdated(a);
    hub.notifyResourceUpdated(b);
    await get.untilId(2);
    assert.equal(get.withoutKeepAlives, frameText(1, updatedMessage(a)) + frameText(2, updatedMessage(b)));

    assert.equal((await call(url, sid, 4, 'resources/unsubscribe', { uri: 'file:///never' })).body, okBody(4));
    assert.equal((await call(url, sid, 5, 'resources/unsubscribe', { uri: a })).body, okBody(5));
    assert.equal((await call(url, sid, 6, 'resources/unsubscribe', { uri: a })).body, okBody(6), 'twice is fine');
    assert.deepEqual(store.get(sid)!.subscriptions, [b]);
    assert.equal(endpoint.stats.sessionSubscriptions, 2);
    hub.notifyResourceUpdated(a);
    hub.notifyResourceUpdated(b);
    await get.untilId(3);
    assert.equal(get.withoutKeepAlives, frameText(1, updatedMessage(a)) + frameText(2, updatedMessage(b)) + frameText(3, updatedMessage(b)));
    get.destroy();
  });
});

/* L5/L6: record vs collection, omitCurrent, the notification, list changes */

test('L5/L6: record and collection URIs, omitCurrent, payload-less notifications/resources/updated, list changes on the GET stream', async () => {
  const hub = new Hub();
  // A table: a commit to Product/<key> is published for the record URI and for its collection.
  const commit = (key: string) => {
    hub.notifyResourceUpdated(`db://shop/Product/${key}`);
    hub.notifyResourceUpdated('db://shop/Product');
  };
  commit('1'); // before anyone subscribed: never delivered (omitCurrent)
  await withServer({ hub, resourceProviders: [dbProvider(hub)] }, async (server) => {
    const { url } = server;
    const sid = await session(url);
    const get = await openStream(server, sid, 1);
    assert.equal((await call(url, sid, 1, 'resources/subscribe', { uri: 'db://shop/Product' })).body, okBody(1));
    assert.equal((await call(url, sid, 2, 'resources/subscribe', { uri: 'db://shop/Product/7' })).body, okBody(2));
    // Nothing is sent at subscribe time: the first frame is the sentinel.
    hub.notifyResourcesChanged();
    await get.untilId(1);
    commit('42');
    await nextTurn(); // in one turn the second commit's collection update would be collapsed into the first's
    commit('7');
    hub.notifyToolsChanged();
    hub.notifyPromptsChanged();
    await get.untilId(6);
    assert.equal(
      get.withoutKeepAlives,
      'event: message\nid: 1\ndata: {"jsonrpc":"2.0","method":"notifications/resources/list_changed"}\n\n' +
        'event: message\nid: 2\ndata: {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"db://shop/Product"}}\n\n' +
        'event: message\nid: 3\ndata: {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"db://shop/Product/7"}}\n\n' +
        'event: message\nid: 4\ndata: {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"db://shop/Product"}}\n\n' +
        'event: message\nid: 5\ndata: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n\n' +
        'event: message\nid: 6\ndata: {"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}\n\n',
    );
    get.destroy();
  });
});

test('L6: only the list changes the endpoint advertises reach the GET stream', async () => {
  await withServer({ capabilities: { resources: true } }, async (server) => {
    const sid = await session(server.url);
    const get = await openStream(server, sid, 1);
    assert.equal(server.endpoint.stats.sessionSubscriptions, 1);
    assert.equal(server.hub.size.subscriptions, 1, 'resources list changes only');
    server.hub.notifyToolsChanged();
    server.hub.notifyPromptsChanged();
    server.hub.notifyResourcesChanged();
    await get.untilId(1);
    assert.equal(get.withoutKeepAlives, frameText(1, listChangedMessage('resources')));
    get.destroy();
  });
});

/* L7: event ids and Last-Event-ID replay */

test('L7: ids are per session and strictly increasing across reconnects; another session counts on its own', async () => {
  await withServer({}, async (server) => {
    const { url, hub } = server;
    const one = await session(url);
    const two = await session(url);
    let get = await openStream(server, one, 1);
    const other = await openStream(server, two, 2);
    hub.notifyToolsChanged();
    await nextTurn(); // two changes in one turn would be one frame
    hub.notifyToolsChanged();
    await get.untilId(2);
    get.destroy();
    await eventually(() => server.endpoint.stats.streams === 1, 3000, 'the drop to be noticed');
    get = await openStream(server, one, 2);
    hub.notifyPromptsChanged();
    await get.untilId(3);
    assert.equal(get.withoutKeepAlives, frameText(3, listChangedMessage('prompts')), 'the reconnect without Last-Event-ID continues at 3');
    await other.untilId(3);
    assert.deepEqual(other.ids, [1, 2, 3]);
    get.destroy();
    other.destroy();
  });
});

test('L7: 150 pushes, then Last-Event-ID 0 → ids 51..150 in order; non-numeric → the whole buffer; ≥ newest → nothing', async () => {
  await withServer({}, async (server) => {
    const { url, hub, endpoint } = server;
    const sid = await session(url);
    const tools = listChangedMessage('tools');
    const prompts = listChangedMessage('prompts');
    let get = await openStream(server, sid, 1);
    // One per turn: identical notifications in one turn are one frame.
    for (let i = 0; i < 150; i++) {
      hub.notifyToolsChanged();
      await nextTurn();
    }
    get.destroy();
    await eventually(() => endpoint.stats.streams === 0, 3000, 'the drop to be noticed');

    // Each reconnect replaces the one before; a sentinel (prompts) closes what to expect.
    const expectations: [string, string][] = [
      ['0', framesText(51, 150, () => tools) + frameText(151, prompts)],
      ['not-a-number', framesText(52, 150, () => tools) + frameText(151, prompts) + frameText(152, prompts)],
      ['140', framesText(141, 150, () => tools) + framesText(151, 153, () => prompts)],
      ['153', frameText(154, prompts)],
      ['99999', frameText(155, prompts)],
    ];
    for (const [lastEventId, expected] of expectations) {
      const previous = get;
      get = GetStream.open(url, sid, { lastEventId });
      await eventually(() => endpoint.stats.streams === 1 && (previous.ended || previous === get), 3000, 'the new stream');
      const replayed = expected.split('event: message').length - 2;
      if (replayed > 0) await get.untilId(Number(/id: (\d+)\ndata[^\n]*\n\n$/.exec(expected.slice(0, expected.lastIndexOf('event: message')))![1]));
      hub.notifyPromptsChanged();
      const newest = Number(/id: (\d+)\ndata[^\n]*\n\n$/.exec(expected)![1]);
      await get.untilId(newest);
      assert.equal(get.withoutKeepAlives, expected, `Last-Event-ID: ${JSON.stringify(lastEventId)}`);
    }
    get.destroy();
  });
});

/**
 * An asynchronous event log (as a shared store would be): appends resolve later, and a read
 * takes 30 ms and sees what was appended meanwhile, so replay and live frames overlap.
 */
const slowEventLog = (): EventLog => {
  const buffer = new ReplayBuffer(10_000);
  return {
    append: async (frame) => buffer.append(frame),
    after: async (lastEventId) => {
      await sleep(30);
      return buffer.after(lastEventId);
    },
  };
};

for (const mode of ['after a noticed drop', 'replacing a live stream', 'with an asynchronous event log'] as const) {
  test(`L7: no gap and no duplicate at the seam when changes are published while the client reconnects (${mode})`, async () => {
    // The buffer holds everything published here, so any gap or duplicate is the seam's fault.
    const options = mode === 'with an asynchronous event log' ? { eventLog: slowEventLog } : { replayBufferSize: 10_000 };
    await withServer(options, async (server) => {
      const { url, hub, endpoint } = server;
      const sid = await session(url);
      const tools = listChangedMessage('tools');
      const first = await openStream(server, sid, 1);
      let publishing = true;
      let published = 0;
      const publisher = (async () => {
        while (publishing) {
          hub.notifyToolsChanged();
          published++;
          await sleep(1);
        }
      })();
      await first.untilId(20);
      const seen = first.lastId!;
      if (mode !== 'replacing a live stream') {
        first.destroy();
        await eventually(() => endpoint.stats.streams === 0, 3000, 'the drop to be noticed');
      }
      const second = GetStream.open(url, sid, { lastEventId: String(seen) });
      await second.untilId(seen + 20);
      publishing = false;
      await publisher;
      await second.untilId(published);
      assert.equal(second.withoutKeepAlives, framesText(seen + 1, published, () => tools), `ids ${seen + 1}..${published}, each once`);
      if (mode === 'replacing a live stream') {
        await first.untilEnded();
        assert.ok(first.endedCleanly);
        const last = first.lastId!;
        assert.equal(first.withoutKeepAlives, framesText(1, last, () => tools), 'the replaced stream had no gap either');
      }
      second.destroy();
    });
  });
}

/* L9: grace period and replacement */

test('L9 beyond: after a noticed drop, changes made within the grace period arrive on the reconnect (Last-Event-ID)', async () => {
  await withServer({ sessionGracePeriod: 5_000 }, async (server) => {
    const { url, hub, endpoint } = server;
    const sid = await session(url);
    let get = await openStream(server, sid, 1);
    assert.equal((await call(url, sid, 1, 'resources/subscribe', { uri: 'file:///a' })).body, okBody(1));
    hub.notifyResourceUpdated('file:///a');
    await get.untilId(1);
    get.destroy();
    await eventually(() => endpoint.stats.streams === 0, 3000, 'the drop to be noticed');
    assert.equal(endpoint.stats.sessionSubscriptions, 2, 'the subscriptions survive the drop');
    // Committed while nobody is connected.
    hub.notifyResourceUpdated('file:///a');
    hub.notifyResourcesChanged();
    hub.notifyResourceUpdated('file:///b');
    get = GetStream.open(url, sid, { lastEventId: '1' });
    await get.untilId(3);
    hub.notifyResourceUpdated('file:///a');
    await get.untilId(4);
    assert.equal(
      get.withoutKeepAlives,
      frameText(2, updatedMessage('file:///a')) + frameText(3, listChangedMessage('resources')) + frameText(4, updatedMessage('file:///a')),
    );
    assert.equal(endpoint.stats.sessionSubscriptions, 2, 'nothing restored twice');
    assert.equal(hub.size.subscriptions, 4);
    get.destroy();
  });
});

test('L9: past the grace period the live subscriptions are released; the next GET restores them from the record', async () => {
  const store = new MemorySessionStore();
  await withServer({ sessionGracePeriod: 100, sessionStore: store }, async (server) => {
    const { url, hub, endpoint } = server;
    const sid = await session(url);
    let get = await openStream(server, sid, 1);
    assert.equal((await call(url, sid, 1, 'resources/subscribe', { uri: 'file:///a' })).body, okBody(1));
    hub.notifyResourceUpdated('file:///a');
    await get.untilId(1);
    get.destroy();
    await eventually(() => endpoint.stats.sessionSubscriptions === 0, 3000, 'the grace period to run out');
    assert.deepEqual(hub.size, { topics: 0, subscriptions: 0 });
    assert.deepEqual(store.get(sid)!.subscriptions, ['file:///a'], 'the record keeps the URI');
    assert.equal(endpoint.stats.sessions, 1, 'the session itself lives on');
    hub.notifyResourceUpdated('file:///a'); // nobody hears this one: it is not buffered

    get = GetStream.open(url, sid, { lastEventId: '1' });
    await eventually(() => endpoint.stats.sessionSubscriptions === 2, 3000, 'the restore');
    assert.equal(hub.size.subscriptions, 4);
    hub.notifyResourceUpdated('file:///a');
    await get.untilId(2);
    assert.equal(get.withoutKeepAlives, frameText(2, updatedMessage('file:///a')));
    get.destroy();
  });
});

test('L9: a second GET replaces the first: the first ends cleanly, the new one gets the live frames', async () => {
  await withServer({}, async (server) => {
    const { url, hub, endpoint } = server;
    const sid = await session(url);
    const first = await openStream(server, sid, 1);
    hub.notifyToolsChanged();
    await first.untilId(1);
    const second = GetStream.open(url, sid);
    await first.untilEnded();
    assert.ok(first.endedCleanly, "the first response ended ('end'), it was not cut");
    assert.equal(endpoint.stats.streams, 1);
    hub.notifyPromptsChanged();
    await second.untilId(2);
    assert.equal(second.withoutKeepAlives, frameText(2, listChangedMessage('prompts')));
    assert.equal(first.withoutKeepAlives, frameText(1, listChangedMessage('tools')));
    assert.equal(endpoint.stats.sessionSubscriptions, 1, 'list changes subscribed once');
    second.destroy();
    await eventually(() => endpoint.stats.streams === 0, 3000, 'the stream released');
    assert.equal(endpoint.stats.slots, 0);
  });
});

/* L8: restore after the stream opens */

/** A provider that counts concurrent `subscribable` calls, each taking `delay` ms. */
function countingProvider(hub: Hub) {
  const state = { delay: 0, inFlight: 0, maxInFlight: 0, calls: new Map<string, number>(), gone: new Set<string>(), failing: new Set<string>() };
  const provider: ResourceProvider = {
    subscribable: async (uri) => {
      state.calls.set(uri, (state.calls.get(uri) ?? 0) + 1);
      state.inFlight++;
      state.maxInFlight = Math.max(state.maxInFlight, state.inFlight);
      try {
        if (state.delay > 0) await sleep(state.delay);
        return !state.gone.has(uri);
      } finally {
        state.inFlight--;
      }
    },
    canRead: (uri) => (state.failing.has(uri) ? Promise.reject(new Error(`storage offline for ${uri}`)) : true),
    changes: (uri) => hub.topic({ topic: 'resource', uri }),
  };
  return { provider, state };
}

test('L8: restoring 20 persisted URIs runs at most 8 at once, drops a no-longer-subscribable URI, keeps a failing one and retries it on the next GET', async () => {
  await collecting<ErrorEvent>(channels.error, async (errors) => {
    const hub = new Hub();
    const store = new MemorySessionStore();
    const { provider, state } = countingProvider(hub);
    const uris = Array.from({ length: 20 }, (_, i) => `db://t/${i}`);
    await withServer({ hub, sessionStore: store, resourceProviders: [provider], sessionGracePeriod: 50 }, async (server) => {
      const { url, endpoint } = server;
      const sid = await session(url);
      let get = await openStream(server, sid, 1);
      const replies = await Promise.all(uris.map((uri, i) => call(url, sid, i, 'resources/subscribe', { uri })));
      replies.forEach((reply, i) => assert.equal(reply.body, okBody(i)));
      assert.equal(endpoint.stats.sessionSubscriptions, 21);
      get.destroy();
      await eventually(() => endpoint.stats.sessionSubscriptions === 0, 3000, 'the grace period to run out');
      assert.equal(store.get(sid)!.subscriptions.length, 20);

      state.delay = 20;
      state.maxInFlight = 0;
      state.calls.clear();
      state.gone.add(uris[3]!);
      state.failing.add(uris[7]!);
      get = await openStream(server, sid, 1);
      // The stream is open before the restore is done: a frame gets through at once.
      hub.notifyToolsChanged();
      await get.untilId(1);
      assert.ok(state.inFlight > 0, 'the restore is still running while the stream already delivers');
      await eventually(() => state.inFlight === 0 && state.calls.size === 20, 3000, 'the restore to finish');
      await eventually(() => endpoint.stats.sessionSubscriptions === 19, 3000, 'the restore to settle');
      assert.equal(state.maxInFlight, 8, 'eight at a time, never more');
      assert.deepEqual(store.get(sid)!.subscriptions, uris.filter((uri) => uri !== uris[3]), 'the gone URI left the record, the failing one stayed');
      const restoreErrors = errors.filter((event) => (event.error as Error).name === 'RestoreError').map((event) => (event.error as { uri: string }).uri);
      assert.deepEqual(restoreErrors, [uris[7]]);
      for (const uri of uris) hub.notifyResourceUpdated(uri);
      const expected = uris.filter((uri) => uri !== uris[3] && uri !== uris[7]);
      await get.untilId(1 + expected.length);
      assert.equal(get.withoutKeepAlives, frameText(1, listChangedMessage('tools')) + expected.map((uri, i) => frameText(2 + i, updatedMessage(uri))).join(''));

      // The next GET retries only what is on the record and not live.
      state.failing.clear();
      state.calls.clear();
      const previous = get;
      get = GetStream.open(url, sid);
      await previous.untilEnded();
      await eventually(() => endpoint.stats.sessionSubscriptions === 20, 3000, 'the retry');
      assert.deepEqual([...state.calls.keys()], [uris[7]]);
      hub.notifyResourceUpdated(uris[7]!);
      await get.untilId(20);
      assert.equal(get.withoutKeepAlives, frameText(20, updatedMessage(uris[7]!)));
      get.destroy();
    });
  });
});

test('L8: another endpoint sharing the session store serves the session and restores its record on GET', async () => {
  const store = new MemorySessionStore();
  await withServer({ sessionStore: store }, async (a) => {
    await withServer({ sessionStore: store }, async (b) => {
      const sid = await session(a.url);
      const get = await openStream(a, sid, 1);
      assert.equal((await call(a.url, sid, 1, 'resources/subscribe', { uri: 'file:///shared' })).body, okBody(1));
      get.destroy();
      const other = await openStream(b, sid, 1);
      await eventually(() => b.endpoint.stats.sessionSubscriptions === 2, 3000, 'the restore on b');
      b.hub.notifyResourceUpdated('file:///shared');
      await other.until((s) => s.frames.length === 1, 3000, 'the update on b');
      // The event id is the other node's business (its event log); the frame is exact otherwise.
      assert.equal(other.withoutKeepAlives, frameText(other.frames[0]!.id, updatedMessage('file:///shared')));
      other.destroy();
    });
  });
});

/* Eviction */

test('eviction: the prune sweep evicts sessions idle past sessionIdleTimeout (subscriptions released, 404); a live GET stream keeps its session', async () => {
  const store = new MemorySessionStore();
  await withServer({ sessionStore: store, sessionIdleTimeout: 200 }, async (server) => {
    const { url, hub, endpoint } = server;
    // dropped: subscribed, then its stream dropped (its subscriptions live on in the grace period).
    const dropped = await session(url);
    let get = await openStream(server, dropped, 1);
    assert.equal((await call(url, dropped, 1, 'resources/subscribe', { uri: 'file:///dropped' })).body, okBody(1));
    get.destroy();
    await eventually(() => endpoint.stats.streams === 0, 3000, 'the drop to be noticed');
    // quiet: never opened a stream. touched: asked on access.
    const quiet = await session(url);
    const touched = await session(url);
    // live: an open GET stream and a subscription.
    const live = await session(url);
    get = await openStream(server, live, 1);
    assert.equal((await call(url, live, 2, 'resources/subscribe', { uri: 'file:///live' })).body, okBody(2));
    assert.equal(endpoint.stats.sessions, 4);
    assert.equal(endpoint.stats.sessionSubscriptions, 4);

    await sleep(260);
    // A request to a session idle past the timeout finds it gone.
    const late = await call(url, touched, 3, 'resources/unsubscribe', { uri: 'file:///x' });
    assert.equal(late.status, 404);
    assert.equal(store.get(touched), undefined);

    await endpoint.pruneSessions();
    assert.equal(endpoint.stats.sessions, 1, 'only the live session is left');
    assert.equal(endpoint.stats.sessionSubscriptions, 2, "the live session's subscriptions only");
    assert.equal(hub.size.subscriptions, 4, "the live session's list changes and file:///live");
    assert.equal(hub.size.topics, 1);
    for (const sid of [dropped, quiet]) {
      assert.equal(store.get(sid), undefined);
      assert.equal((await send(url, 'GET', { accept: 'text/event-stream', 'mcp-session-id': sid })).status, 404);
      assert.equal((await call(url, sid, 4, 'resources/subscribe', { uri: 'file:///x' })).status, 404);
    }
    hub.notifyResourceUpdated('file:///live');
    await get.untilId(1);
    assert.equal(get.withoutKeepAlives, frameText(1, updatedMessage('file:///live')));
    assert.equal((await call(url, live, 5, 'resources/unsubscribe', { uri: 'file:///live' })).body, okBody(5));
    get.destroy();
  });
});

test('eviction: the periodic sweep (sessionPruneInterval) evicts a dropped session by itself and releases everything', async () => {
  await withServer({ sessionIdleTimeout: 100, sessionPruneInterval: 50 }, async (server) => {
    const { url, hub, endpoint } = server;
    const sid = await session(url);
    const get = await openStream(server, sid, 1);
    assert.equal((await call(url, sid, 1, 'resources/subscribe', { uri: 'file:///a' })).body, okBody(1));
    // A live stream keeps it through several sweeps.
    await sleep(250);
    assert.equal(endpoint.stats.sessions, 1);
    get.destroy();
    await eventually(() => endpoint.stats.sessions === 0, 2000, 'the sweep to evict the session');
    assert.deepEqual(endpoint.stats, zeroStats);
    assert.deepEqual(hub.size, { topics: 0, subscriptions: 0 });
    assert.equal((await call(url, sid, 2, 'resources/subscribe', { uri: 'file:///a' })).status, 404);
  });
});

/* Slow consumer */

test('slow consumer: a GET client that stops reading costs at most maxStreamQueue notifications; a healthy session gets everything', async () => {
  await collecting<DropEvent>(channels.drop, async (drops) => {
    await withServer({ maxStreamQueue: 20 }, async (server) => {
      const { url, hub, endpoint } = server;
      // Long URIs fill the socket buffers quickly; many of them defeat coalescing.
      const uris = Array.from({ length: 40 }, (_, i) => `file:///${'x'.repeat(4000)}/${i}`);
      const healthy = await session(url);
      const get = await openStream(server, healthy, 1);
      assert.equal((await call(url, healthy, 1, 'resources/subscribe', { uri: uris[0] })).body, okBody(1));
      const stalledId = await session(url);
      const stalled = rawGet(url, stalledId);
      stalled.pause();
      await eventually(() => endpoint.stats.streams === 2, 3000, 'the stalled stream to open');
      const replies = await Promise.all(uris.map((uri, i) => call(url, stalledId, i, 'resources/subscribe', { uri })));
      replies.forEach((reply, i) => assert.equal(reply.body, okBody(i)));
      const rounds = 80;
      for (let round = 0; round < rounds; round++) {
        for (const uri of uris) hub.notifyResourceUpdated(uri);
        await new Promise((resolve) => setImmediate(resolve));
      }
      await get.untilId(rounds, 5000);
      assert.equal(get.withoutKeepAlives, framesText(1, rounds, () => updatedMessage(uris[0]!)));
      assert.ok(drops.length > 0, 'the stalled stream dropped notifications');
      for (const drop of drops) {
        assert.equal(drop.topic, 'resource');
        assert.ok(drop.queueLength <= 20, `queue held ${drop.queueLength}`);
      }
      assert.equal(endpoint.stats.streams, 2, 'the stalled stream is not closed for it');
      stalled.destroy();
      get.destroy();
      await eventually(() => endpoint.stats.streams === 0, 3000, 'streams released');
    });
  });
});

test('slow consumer: pending notifications are coalesced (one per URI), so a stalled client with few URIs loses nothing', async () => {
  await collecting<DropEvent>(channels.drop, async (drops) => {
    await withServer({ maxStreamQueue: 20 }, async (server) => {
      const { url, hub, endpoint } = server;
      const uris = Array.from({ length: 5 }, (_, i) => `file:///${'y'.repeat(8_000)}/${i}`);
      const sid = await session(url);
      const stalled = rawGet(url, sid);
      stalled.pause();
      await eventually(() => endpoint.stats.streams === 1, 3000, 'the stalled stream to open');
      for (const [i, uri] of uris.entries()) assert.equal((await call(url, sid, i, 'resources/subscribe', { uri })).body, okBody(i));
      const rounds = 200;
      for (let round = 0; round < rounds; round++) {
        for (const uri of uris) hub.notifyResourceUpdated(uri);
        await new Promise((resolve) => setImmediate(resolve));
      }
      assert.equal(drops.length, 0, 'nothing dropped: the pending notifications coalesced');
      // Read again: the pending notifications arrive, then a sentinel.
      let text = '';
      stalled.setEncoding('utf8');
      stalled.on('data', (chunk: string) => (text += chunk));
      stalled.resume();
      hub.notifyToolsChanged();
      await eventually(() => text.includes('notifications/tools/list_changed'), 5000, 'the sentinel');
      const received = [...text.matchAll(/"uri":"file:\/\/\/y+\/(\d)"/g)].map((m) => m[1]);
      assert.ok(received.length < rounds * uris.length, `coalesced: ${received.length} of ${rounds * uris.length} delivered`);
      const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
      assert.ok(ids.every((id, i) => i === 0 || id > ids[i - 1]!), 'ids stay strictly increasing through coalescing');
      // Every URI's latest change is announced after the stall: the last five updates cover all five URIs.
      assert.deepEqual(new Set(received.slice(-5)), new Set(['0', '1', '2', '3', '4']));
      stalled.destroy();
      await eventually(() => endpoint.stats.streams === 0, 3000, 'streams released');
    });
  });
});

/* After everything */

test('leaks: after DELETE of every session, endpoint.stats is all zero and the hub holds no subscription', async () => {
  await withServer({}, async (server) => {
    const { url, hub, endpoint } = server;
    const ids = [await session(url), await session(url), await session(url)];
    const streams: GetStream[] = [];
    for (const [i, sid] of ids.entries()) {
      streams.push(await openStream(server, sid, i + 1));
      assert.equal((await call(url, sid, 1, 'resources/subscribe', { uri: `file:///${i}` })).body, okBody(1));
      assert.equal((await call(url, sid, 2, 'resources/subscribe', { uri: 'file:///common' })).body, okBody(2));
    }
    streams[1]!.destroy(); // one of them dropped, in its grace period
    await eventually(() => endpoint.stats.streams === 2, 3000, 'the drop to be noticed');
    assert.equal(endpoint.stats.sessionSubscriptions, 9);
    for (const sid of ids) assert.equal((await send(url, 'DELETE', { 'mcp-session-id': sid })).status, 204);
    await Promise.all(streams.map((stream) => stream.untilEnded()));
    assert.deepEqual(endpoint.stats, zeroStats);
    assert.deepEqual(hub.size, { topics: 0, subscriptions: 0 });
  });
});

/* Several nodes sharing one store; a node that does not serve deletion. */

test('a node holding a stale copy of a session does not evict the record another node keeps alive', async () => {
  const store = new MemorySessionStore();
  await withServer({ sessionStore: store, sessionIdleTimeout: 200 }, async (a) => {
    await withServer({ sessionStore: store, sessionIdleTimeout: 200 }, async (b) => {
      const sid = (await initialize(a.url)).sessionId; // a adopts it
      const get = await openStream(b, sid, 1); // then the client is served by b
      await sleep(260);
      await b.endpoint.pruneSessions(); // b touches the record: its stream is live
      await a.endpoint.pruneSessions(); // a's copy looks idle, the record does not
      assert.notEqual(store.get(sid), undefined, 'the record b keeps alive is still there');
      const reply = await send(a.url, 'POST', sessionHeaders(sid), rpcBody(1, 'resources/unsubscribe', { uri: 'file:///a' }));
      assert.equal(reply.status, 200, 'a still serves the session');
      get.destroy();
    });
  });
});

test('with allowClientSessionDelete: false, no 405 advertises DELETE in Allow', async () => {
  await withServer({ allowClientSessionDelete: false }, async ({ url }) => {
    const sid = await session(url);
    for (const headers of [{ 'mcp-session-id': sid }, {}] as Record<string, string>[]) {
      const reply = await send(url, 'PUT', headers);
      assert.equal(reply.status, 405);
      assert.equal(reply.headers.allow, 'POST, GET');
    }
  });
});

test.run();
