// Failure is visible and bounded (issue 34): an upstream that stalls or dies does not stall the
// others; the acknowledgment waits for it up to ackTimeout, then fails open or closed; its
// subscribers are told by their era's means; it is opened again by policy, a legacy stream resumed
// with Last-Event-ID on its session, and after a new listen or session each URI hears one
// notifications/resources/updated (the documented rule), nothing more.
import { deepStrictEqual, ok, strictEqual } from 'node:assert';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { test } from 'uvu';
import { listen } from '../../adapters/client.js';
import { upstreamChannels, upstreamUri, type UpstreamStateEvent } from '../../adapters/upstream/index.js';
import type { JsonRpcMessage } from '../../lib/jsonrpc.js';
import { acknowledged, legacyClient, referenceUpstream, sleep, startGateway, until, uriOf } from '../helpers/gateway.js';
import { within } from '../helpers/wait.js';

const FAST = { initialDelay: 20, maxDelay: 100, jitter: 0 };

/** An HTTP server that takes requests and never answers them: a stalled upstream. */
async function stalledServer(): Promise<{ url: string; requests: () => number; close(): Promise<void> }> {
  let requests = 0;
  const server = http.createServer(() => void requests++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    requests: () => requests,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A port nothing listens on (yet). */
async function freePort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const methodOf = (message: JsonRpcMessage) => (message as { method?: string }).method;

for (const failMode of ['open', 'closed'] as const) {
  test(`an upstream that never answers: the ack waits ackTimeout for it, then ${failMode === 'open' ? 'honours' : 'leaves out'} its URI (fail-${failMode}); the healthy upstream's URI is honoured and heard meanwhile`, async () => {
    const healthy = await referenceUpstream({ 'a.txt': 'a' });
    const stalled = await stalledServer();
    const front = await startGateway({
      ackTimeout: 300,
      requestTimeout: 300,
      failMode,
      upstreams: [
        { name: 'one', url: healthy.server.url, era: 'modern', reconnect: FAST },
        { name: 'slow', url: stalled.url, era: 'modern', reconnect: FAST },
      ],
    });
    const a = upstreamUri('one', healthy.uri('a.txt'));
    const s = upstreamUri('slow', 'file:///s.txt');
    const messages: JsonRpcMessage[] = [];
    const started = Date.now();
    let ackedAt = 0;
    const subscription = listen({ url: front.url, notifications: { resourceSubscriptions: [a, s] } }).subscribe((message) => {
      if (messages.length === 0) ackedAt = Date.now();
      messages.push(message);
    });
    try {
      await until(() => messages.length === 1, 'the acknowledgment');
      ok(ackedAt - started >= 280, `the ack waited for the stalled upstream up to ackTimeout: ${ackedAt - started} ms`);
      deepStrictEqual(acknowledged(messages[0]), { resourceSubscriptions: failMode === 'open' ? [a, s] : [a] });
      ok(stalled.requests() >= 1, 'the stalled upstream was asked');
      healthy.server.hub.notifyResourceUpdated(healthy.uri('a.txt'));
      await until(() => messages.length === 2, 'the update of the healthy upstream');
      strictEqual(uriOf(messages[1]!), a);
      deepStrictEqual(front.gateway.stats.map((stats) => [stats.upstream, stats.state]), [['one', 'open'], ['slow', 'connecting']]);
      // A legacy client is answered by its era's means: {} (fail-open) or -32603 failed to subscribe (fail-closed).
      const legacy = await legacyClient(front.url);
      try {
        await until(() => front.endpoint.stats.streams === 2, 'the GET stream to open');
        const outcome = await legacy.client.subscribeResource({ uri: s }).then(
          (result) => result,
          (error: { code?: number; message?: string }) => [error.code, error.message],
        );
        deepStrictEqual(outcome, failMode === 'open' ? {} : [-32603, `MCP error -32603: failed to subscribe: ${s}`]);
        // A read of it is answered -32603 once requestTimeout has passed.
        const read = await legacy.client.readResource({ uri: s }).then(
          () => 'answered',
          (error: { code?: number; message?: string }) => [error.code, error.message],
        );
        deepStrictEqual(read, [-32603, `MCP error -32603: upstream unavailable: ${s}`]);
      } finally {
        await legacy.client.close();
      }
    } finally {
      subscription.unsubscribe();
      await front.close();
      await healthy.server.close();
      await stalled.close();
    }
  });
}

test('fail-open: a URI of an upstream that is down is honoured, and heard once the upstream comes up', async () => {
  const port = await freePort();
  const front = await startGateway({ ackTimeout: 200, failMode: 'open', upstreams: [{ name: 'late', url: `http://127.0.0.1:${port}/mcp`, era: 'modern', reconnect: FAST }] });
  const messages: JsonRpcMessage[] = [];
  let upstream: Awaited<ReturnType<typeof referenceUpstream>> | undefined;
  try {
    // The upstream's folder (and so its URI) is known before it runs.
    const folder = await referenceUpstream({ 'late.txt': 'x' });
    const dir = folder.dir;
    await folder.server.close();
    const uri = upstreamUri('late', folder.uri('late.txt'));
    const subscription = listen({ url: front.url, notifications: { resourceSubscriptions: [uri] } }).subscribe((message) => messages.push(message));
    try {
      await until(() => messages.length === 1, 'the acknowledgment');
      deepStrictEqual(acknowledged(messages[0]), { resourceSubscriptions: [uri] });
      strictEqual(front.gateway.stats[0]!.state, 'retrying');
      upstream = await referenceUpstream({}, port, dir);
      await until(() => front.gateway.stats[0]!.state === 'open', 'the upstream to be reached');
      upstream.server.hub.notifyResourceUpdated(folder.uri('late.txt'));
      await until(() => messages.length === 2, 'the update');
      strictEqual(uriOf(messages[1]!), uri);
    } finally {
      subscription.unsubscribe();
    }
  } finally {
    await front.close();
    await upstream?.server.close();
  }
});

for (const era of ['modern', 'legacy'] as const) {
  test(`an upstream speaking ${era} killed and restarted mid-stream: its subscribers hear resources/list_changed when it fails and when it is back, one resources/updated for their URI after it is back (the rule), then each later update once; the other upstream is not touched`, async () => {
    let upstream = await referenceUpstream({ 'a.txt': 'a' });
    const other = await referenceUpstream({ 'b.txt': 'b' });
    const front = await startGateway({
      upstreams: [
        { name: 'notes', url: upstream.server.url, era, reconnect: FAST },
        { name: 'other', url: other.server.url, era: 'modern', reconnect: FAST },
      ],
    });
    const a = upstreamUri('notes', upstream.uri('a.txt'));
    const b = upstreamUri('other', other.uri('b.txt'));
    const states: UpstreamStateEvent[] = [];
    const onState = (event: unknown) => void ((event as UpstreamStateEvent).upstream === 'notes' && states.push(event as UpstreamStateEvent));
    upstreamChannels.state.subscribe(onState);
    const messages: JsonRpcMessage[] = [];
    const subscription = listen({ url: front.url, notifications: { resourceSubscriptions: [a, b], resourcesListChanged: true } }).subscribe((message) => messages.push(message));
    const after = (from: number) => messages.slice(from).map((message) => `${methodOf(message)}${uriOf(message) === undefined ? '' : ` ${uriOf(message) === a ? 'a' : 'b'}`}`);
    try {
      await until(() => messages.length === 1 && front.gateway.stats[0]!.state === 'open', 'the acknowledgment');
      deepStrictEqual(acknowledged(messages[0]), { resourcesListChanged: true, resourceSubscriptions: [a, b] });
      upstream.server.hub.notifyResourceUpdated(upstream.uri('a.txt'));
      await until(() => messages.length === 2, 'the first update');

      // Killed: its connections cut at once, nothing more answered.
      upstream.server.server.closeAllConnections();
      await upstream.server.close();
      await until(() => after(2).includes('notifications/resources/list_changed'), 'the failure told');
      // Meanwhile the other upstream is served as before.
      other.server.hub.notifyResourceUpdated(other.uri('b.txt'));
      await until(() => after(2).includes('notifications/resources/updated b'), 'the other upstream\'s update');
      await sleep(150);
      // Waiting for its next attempt, or in one (connecting to nothing): not serving.
      ok(['retrying', 'connecting'].includes(front.gateway.stats[0]!.state), front.gateway.stats[0]!.state);

      upstream = await upstream.restart();
      await until(() => front.gateway.stats[0]!.state === 'open', 'the upstream back');
      await until(() => after(2).filter((entry) => entry === 'notifications/resources/list_changed').length === 2, 'the return told');
      await until(() => after(2).includes('notifications/resources/updated a'), 'the one update after the gap');
      const mark = messages.length;
      upstream.server.hub.notifyResourceUpdated(upstream.uri('a.txt'));
      upstream.server.hub.notifyResourceUpdated(upstream.uri('a.txt'));
      await sleep(20);
      upstream.server.hub.notifyResourceUpdated(upstream.uri('a.txt'));
      await until(() => after(mark).length >= 2, 'the updates after the restart');
      await sleep(150);
      // Two publishes in one turn are one notification (the coalescing rule), the third its own: nothing else.
      deepStrictEqual(after(mark), ['notifications/resources/updated a', 'notifications/resources/updated a']);
      deepStrictEqual(
        after(2).slice(0, mark - 2).sort(),
        ['notifications/resources/list_changed', 'notifications/resources/list_changed', 'notifications/resources/updated a', 'notifications/resources/updated b'],
        'during the outage: told twice, the other upstream\'s update, the one update of the rule',
      );
      ok(states.some((event) => event.previous === 'open' && event.state === 'retrying' && event.error instanceof Error), `states: ${states.map((event) => event.state).join(' ')}`);
      strictEqual(states.at(-1)!.state, 'open');
      ok(front.gateway.stats[0]!.reconnects >= 1);
      strictEqual(front.gateway.stats[1]!.reconnects, 0, 'the other upstream never reconnected');
    } finally {
      upstreamChannels.state.unsubscribe(onState);
      subscription.unsubscribe();
      await front.close();
      await Promise.all([upstream.server.close(), other.server.close()]);
    }
  });
}

test('a legacy upstream\'s GET stream cut: opened again on the same session with Last-Event-ID, the update published meanwhile replayed once, no update added', async () => {
  const upstream = await referenceUpstream({ 'a.txt': 'a' });
  const gets: { headers: http.IncomingHttpHeaders; socket: Socket }[] = [];
  upstream.server.server.on('request', (req: http.IncomingMessage) => {
    if (req.method === 'GET') gets.push({ headers: req.headers, socket: req.socket });
  });
  // A slow first retry: the update is published while the gateway has no stream.
  const front = await startGateway({ upstreams: [{ name: 'notes', url: upstream.server.url, era: 'legacy', reconnect: { initialDelay: 200, jitter: 0 } }] });
  const a = upstreamUri('notes', upstream.uri('a.txt'));
  const messages: JsonRpcMessage[] = [];
  const subscription = listen({ url: front.url, notifications: { resourceSubscriptions: [a] } }).subscribe((message) => messages.push(message));
  try {
    await until(() => messages.length === 1, 'the acknowledgment');
    upstream.server.hub.notifyResourceUpdated(upstream.uri('a.txt'));
    await until(() => messages.length === 2, 'the first update');
    strictEqual(gets.length, 1);
    gets[0]!.socket.destroy();
    await until(() => front.gateway.stats[0]!.state === 'retrying', 'the cut noticed');
    upstream.server.hub.notifyResourceUpdated(upstream.uri('a.txt'));
    await until(() => gets.length === 2 && front.gateway.stats[0]!.state === 'open', 'the GET again');
    strictEqual(gets[1]!.headers['mcp-session-id'], gets[0]!.headers['mcp-session-id'], 'the same session');
    ok(/^\d+$/.test(String(gets[1]!.headers['last-event-id'])), `Last-Event-ID: ${gets[1]!.headers['last-event-id']}`);
    await until(() => messages.length === 3, 'the replayed update');
    await sleep(150);
    deepStrictEqual(messages.slice(1).map(uriOf), [a, a], 'the update before the cut and the one replayed, nothing else');
  } finally {
    subscription.unsubscribe();
    await front.close();
    await upstream.server.close();
  }
});

test('a storm of identical list changes from an upstream is one downstream frame; the streams of a gateway hold no upstream stream when nothing needs one', async () => {
  // A 2026-07-28 upstream that acknowledges every listen and, on demand, writes 50 tools/list_changed in one chunk.
  const streams = new Set<http.ServerResponse>();
  let listens = 0;
  const fake = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk));
    req.on('end', () => {
      const { id, params } = JSON.parse(body) as { id: number; params: { notifications: Record<string, unknown> } };
      listens++;
      const notifications = { ...params.notifications };
      delete notifications.promptsListChanged;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications, _meta: { 'io.modelcontextprotocol/subscriptionId': id } } })}\n\n`);
      streams.add(res);
      res.on('close', () => streams.delete(res));
    });
  });
  await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
  const front = await startGateway({ upstreams: [{ name: 'fake', url: `http://127.0.0.1:${(fake.address() as AddressInfo).port}/mcp`, era: 'modern', reconnect: FAST }] });
  const messages: JsonRpcMessage[] = [];
  const subscription = listen({ url: front.url, notifications: { toolsListChanged: true } }).subscribe((message) => messages.push(message));
  try {
    await until(() => messages.length === 1 && streams.size === 1, 'the acknowledgment and the upstream list stream');
    const frame = `event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' })}\n\n`;
    for (const res of streams) res.write(frame.repeat(50));
    await until(() => messages.length === 2, 'the tools change');
    await sleep(100);
    strictEqual(messages.length, 2, 'one frame for the storm');
    deepStrictEqual(front.gateway.stats[0]!.framesIn, 51);
    strictEqual(listens, 1, 'the list stream only: no URI is held');
  } finally {
    subscription.unsubscribe();
    await front.close();
    fake.closeAllConnections();
    await new Promise((resolve) => fake.close(resolve));
  }
  await within(until(() => streams.size === 0, 'the upstream list stream closed with the gateway'), 2_000, 'close');
});

test.run();
