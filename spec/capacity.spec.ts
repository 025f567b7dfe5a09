// Issue 24, item 4: a stream or session refused for capacity (HTTP 503) tells its client when to try
// again, in HTTP (`Retry-After`, whole seconds) and in JSON-RPC (`error.data.retryAfterMs`), so that
// clients back off instead of hammering; the endpoint's `capacityRetryAfter` sets it (default
// 5000 ms). A closed endpoint answers 503 saying it is shutting down, not that it is full, and gives
// no retry time (it does not know when, or whether, it is back). Byte-exact over loopback.
import { strict as assert } from 'node:assert';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import { startReferenceServer } from '../adapters/reference/server.js';
import { listenBody, LISTEN_HEADERS, post, SseConnection, startEndpoint } from './helpers/http.js';
import { initialize, send, sessionHeaders } from './helpers/legacy.js';

const STREAMS_FULL = 'server is at its stream capacity (maxStreams); retry later';
const SESSIONS_FULL = 'server is at its session capacity (maxSessions); retry later';
const SHUTTING_DOWN = 'server is shutting down; connect to another server or retry once it is back';

const busy = (id: number | null, message: string, retryAfterMs: number) =>
  JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32000, message, data: { retryAfterMs } } });

/** On a server of `maxStreams: 1`: a listen is held, the next one is refused with these retry times (byte-exact). */
async function assertSecondListenRefused(url: string, retryAfter: string, retryAfterMs: number): Promise<void> {
  const held = await SseConnection.open(url, listenBody(1, { toolsListChanged: true }));
  try {
    const refused = await post(url, listenBody(2, { toolsListChanged: true }));
    assert.equal(refused.status, 503);
    assert.equal(refused.headers['retry-after'], retryAfter);
    assert.equal(refused.body, busy(2, STREAMS_FULL, retryAfterMs));
  } finally {
    held.destroy();
  }
}

test('a listen refused at maxStreams: 503, Retry-After 5 (seconds) and data.retryAfterMs 5000 by default', async () => {
  const server = await startEndpoint({ maxStreams: 1 });
  try {
    await assertSecondListenRefused(server.url, '5', 5000);
  } finally {
    await server.close();
  }
});

test('capacityRetryAfter sets it: a legacy GET and an initialize refused for capacity say 1500 ms, Retry-After rounded up to 2 s', async () => {
  const server = await startEndpoint({ maxStreams: 1, maxSessions: 1, capacityRetryAfter: 1500 });
  try {
    const { sessionId } = await initialize(server.url);
    const held = await SseConnection.open(server.url, listenBody(1, { toolsListChanged: true }));
    const get = await send(server.url, 'GET', sessionHeaders(sessionId, { accept: 'text/event-stream' }));
    assert.equal(get.status, 503);
    assert.equal(get.headers['retry-after'], '2');
    assert.equal(get.body, busy(null, STREAMS_FULL, 1500));
    const init = await initialize(server.url, { id: 3 });
    assert.equal(init.status, 503);
    assert.equal(init.headers['retry-after'], '2');
    assert.equal(init.body, busy(3, SESSIONS_FULL, 1500));
    assert.equal(init.sessionId, undefined);
    held.destroy();
  } finally {
    await server.close();
  }
});

test('the reference server passes capacityRetryAfter on (serve --capacity-retry-after)', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'mcp-rx-capacity-'));
  const server = await startReferenceServer({ dir: path.join(dir, 'data'), port: 0, maxStreams: 1, capacityRetryAfter: 2000 });
  try {
    await assertSecondListenRefused(server.url, '2', 2000);
  } finally {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
});

test('capacityRetryAfter must be a positive integer of milliseconds', async () => {
  const { McpEndpoint } = await import('../adapters/http/endpoint.js');
  const { Hub } = await import('../lib/hub.js');
  new McpEndpoint({ hub: new Hub(), capacityRetryAfter: 1 }).close();
  for (const bad of [0, -1, 1.5, Number.NaN, '5000']) {
    assert.throws(() => new McpEndpoint({ hub: new Hub(), capacityRetryAfter: bad as number }), /capacityRetryAfter/);
  }
});

test('a closed endpoint: a listen, a GET and an initialize get 503 saying it is shutting down, with no retry time', async () => {
  const server = await startEndpoint();
  try {
    const { sessionId } = await initialize(server.url);
    server.endpoint.close();
    const listen = await post(server.url, listenBody(4, { toolsListChanged: true }), { ...LISTEN_HEADERS });
    const get = await send(server.url, 'GET', sessionHeaders(sessionId, { accept: 'text/event-stream' }));
    const init = await initialize(server.url, { id: 5 });
    for (const [reply, id] of [[listen, 4], [get, null], [init, 5]] as const) {
      assert.equal(reply.status, 503);
      assert.equal(reply.headers['retry-after'], undefined);
      assert.equal(reply.body, JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32000, message: SHUTTING_DOWN } }));
    }
    assert.equal(init.sessionId, undefined);
    assert.equal(server.endpoint.stats.sessions, 1, 'no session was opened after close');
  } finally {
    await server.close();
  }
});

test.run();
