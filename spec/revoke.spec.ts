// Ending streams from the application (issue 25, part 2): `endpoint.revoke(principal)` ends every
// listen stream of a principal with its closing frames (reason `revoked`) and every legacy session
// of it (GET stream ended, record removed, id 404); `closeStream(id)` ends one; the principal's
// signal carries the reason down to the close stage. On one node here; two nodes on a real Redis in
// spec/redis/revoke.spec.ts.
import { strict as assert } from 'node:assert';
import { BehaviorSubject, Subject } from 'rxjs';
import { test } from 'uvu';
import { McpEndpoint } from '../adapters/http/endpoint.js';
import type { EndpointRequest } from '../lib/context.js';
import { Broadcast } from '../lib/broadcast.js';
import { InvalidOptionError } from '../lib/errors.js';
import type { Frame } from '../lib/frame.js';
import { Hub } from '../lib/hub.js';
import { PrincipalRegistry } from '../lib/principals.js';
import { channels, type SessionEndedEvent, type StopEvent } from '../lib/telemetry.js';
import { listenStream } from '../operators/listenPipeline.js';
import { eventually, LISTEN_HEADERS, listenBody, SseConnection, withEndpoint } from './helpers/http.js';
import { call, GetStream, initialize, send, sessionHeaders } from './helpers/legacy.js';
import { closingText, toolsAckText } from './helpers/frames.js';
import { testScheduler } from './helpers/marbles.js';
import { collecting } from './helpers/telemetry.js';

const byHeader = (request: EndpointRequest) => ({ principal: `user:${request.header('x-principal') ?? 'anon'}`, scopes: new Set<string>() });
const as = (principal: string) => ({ ...LISTEN_HEADERS, 'x-principal': principal });

const ack = toolsAckText;
const closed = closingText;

async function openListen(url: string, id: number, principal: string): Promise<SseConnection> {
  const conn = await SseConnection.open(url, listenBody(id, { toolsListChanged: true }), as(principal));
  await conn.until((c) => c.text.includes('acknowledged'), 3000, `the ack of listen ${id}`);
  return conn;
}

/* The principal's signal carries the reason */

test('listenStream: a supersede$ value that is a close reason closes with it (revoked), any other value with superseded', () => {
  for (const [value, expected] of [['revoked', 'revoked'], [undefined, 'superseded'], ['nonsense', 'superseded'], ['token_expired', 'token_expired']] as const) {
    for (const signal$ of [new Subject<unknown>(), new Broadcast<unknown>()]) {
      const scheduler = testScheduler();
      scheduler.run(({ flush }) => {
        const frames: Frame[] = [];
        listenStream({ requestId: 3, filter: {}, hub: new Hub(), scheduler, supersede$: signal$ }).subscribe((f) => frames.push(f));
        scheduler.schedule(() => signal$.next(value), 1000);
        flush();
        const closing = frames.filter((f) => f.type === 'message').slice(1);
        assert.deepEqual(
          closing.map((f) => f.type === 'message' && [f.message, f.closeReason]),
          [
            [{ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 3, reason: expected } }, expected],
            [{ jsonrpc: '2.0', id: 3, result: { resultType: 'complete' } }, expected],
          ],
          `${String(value)} through a ${signal$.constructor.name}`,
        );
      });
    }
  }
});

test('PrincipalRegistry.revoke: every stream of the principal is told the reason and stops counting; others untouched', () => {
  const registry = new PrincipalRegistry(4);
  const told: string[] = [];
  const admit = (principal: string, name: string) => registry.admit(principal).superseded$.subscribe({ next: (reason) => told.push(`${name}:${String(reason)}`), complete: () => told.push(`${name} done`) });
  admit('a', 'a1');
  admit('a', 'a2');
  admit('b', 'b1');
  registry.revoke('a');
  assert.deepEqual(told, ['a1:revoked', 'a1 done', 'a2:revoked', 'a2 done']);
  assert.equal(registry.count('a'), 0);
  assert.equal(registry.count('b'), 1);
  assert.equal(registry.size, 1);
  registry.revoke('nobody');
  registry.revoke('b', 'token_expired');
  assert.deepEqual(told.slice(4), ['b1:token_expired', 'b1 done']);
  assert.equal(registry.size, 0);
});

/* endpoint.revoke on one node */

test('revoke: the principal\'s listens get cancelled(revoked) and the result, byte for byte; stop reason revoked; other principals untouched; slots given back', async () => {
  await collecting<StopEvent>(channels.stop, async (stops) => {
    await withEndpoint({ authenticate: byHeader }, async ({ url, endpoint }) => {
      const a1 = await openListen(url, 1, 'alice');
      const a2 = await openListen(url, 2, 'alice');
      const b = await openListen(url, 3, 'bob');
      assert.deepEqual(await endpoint.revoke('user:alice'), { streams: 2, sessions: 0 });
      await a1.until((c) => c.ended, 3000, 'the first listen to end');
      await a2.until((c) => c.ended, 3000, 'the second listen to end');
      assert.equal(a1.text, ack(1) + closed(1, 'revoked'));
      assert.equal(a2.text, ack(2) + closed(2, 'revoked'));
      assert.equal(b.ended, false);
      assert.deepEqual(
        stops.map((stop) => [stop.era, stop.reason]),
        [
          ['modern', 'revoked'],
          ['modern', 'revoked'],
        ],
      );
      assert.equal(endpoint.principals.count('user:alice'), 0);
      assert.equal(endpoint.stats.slots, 1);
      // Nothing left to end: idempotent.
      assert.deepEqual(await endpoint.revoke('user:alice'), { streams: 0, sessions: 0 });
      b.destroy();
    });
  });
});

test('revoke with another reason, and closeStream(id): the closing frames say that reason; an unknown id is false', async () => {
  await withEndpoint({ authenticate: byHeader }, async ({ url, endpoint }) => {
    const first = await openListen(url, 5, 'carol');
    const second = await openListen(url, 6, 'carol');
    const ids = endpoint.streams().map((stream) => stream.id);
    assert.equal(ids.length, 2);
    assert.equal(await endpoint.closeStream(ids[1]!), true);
    await second.until((c) => c.ended, 3000, 'the closed stream to end');
    assert.equal(second.text, ack(6) + closed(6, 'revoked'));
    assert.equal(first.ended, false);
    assert.equal(await endpoint.closeStream(ids[1]!), false, 'gone already');
    assert.equal(await endpoint.closeStream('listen-999'), false);
    await endpoint.revoke('user:carol', 'token_expired');
    await first.until((c) => c.ended, 3000, 'the revoked stream to end');
    assert.equal(first.text, ack(5) + closed(5, 'token_expired'));
    await eventually(() => endpoint.stats.slots === 0 && endpoint.stats.principals === 0, 3000, 'everything released');
  });
});

test('revoke and closeStream refuse a bad principal or reason with InvalidOptionError, ending nothing', async () => {
  await withEndpoint({ authenticate: byHeader }, async ({ url, endpoint }) => {
    const conn = await openListen(url, 1, 'dave');
    for (const [principal, reason] of [['', 'revoked'], [undefined, 'revoked'], ['user:dave', 'bogus'], ['user:dave', 7]] as const) {
      await assert.rejects(endpoint.revoke(principal as never, reason as never), InvalidOptionError);
    }
    await assert.rejects(endpoint.closeStream(endpoint.streams()[0]!.id, 'later' as never), /reason must be a close reason/);
    assert.equal(conn.ended, false);
    assert.equal(endpoint.stats.streams, 1);
    conn.destroy();
  });
});

test('revoke reaches a listen still being authorized: it opens and closes at once with revoked, its slot given back meanwhile', async () => {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  await withEndpoint({ authenticate: byHeader, subscribeHook: async () => (await gate, true) }, async ({ url, endpoint }) => {
    const pending = SseConnection.open(url, listenBody(8, { resourceSubscriptions: ['file:///a'] }), as('erin'));
    await eventually(() => endpoint.stats.slots === 1, 3000, 'the listen to take its slot');
    assert.deepEqual(await endpoint.revoke('user:erin'), { streams: 0, sessions: 0 });
    assert.equal(endpoint.stats.slots, 0, 'its slot is given back at once');
    release();
    const conn = await pending;
    await conn.until((c) => c.ended, 3000, 'the revoked listen to end');
    assert.match(conn.text, /"reason":"revoked"/);
    assert.equal(endpoint.stats.streams, 0);
  });
});

test('revoke ends the principal\'s legacy sessions: the GET stream ends, the id answers 404, another principal\'s session stays', async () => {
  await collecting<SessionEndedEvent>(channels.sessionEnded, async (ended) => {
    await collecting<StopEvent>(channels.stop, async (stops) => {
      await withEndpoint({ authenticate: byHeader }, async ({ url, endpoint }) => {
        const mine = await initialize(url, { headers: { 'x-principal': 'frank' } });
        const theirs = await initialize(url, { headers: { 'x-principal': 'gina' } });
        const get = GetStream.open(url, mine.sessionId, { headers: { 'x-principal': 'frank' } });
        await get.response;
        await eventually(() => endpoint.stats.streams === 1, 3000, 'the GET stream');
        const listen = await openListen(url, 4, 'frank');
        assert.deepEqual(await endpoint.revoke('user:frank'), { streams: 1, sessions: 1 });
        await get.until((g) => g.ended, 3000, 'the GET stream to end');
        await listen.until((c) => c.ended, 3000, 'the listen to end');
        const after = await call(url, mine.sessionId, 2, 'ping', undefined, { 'x-principal': 'frank' });
        assert.equal(after.status, 404);
        const other = await call(url, theirs.sessionId, 2, 'ping', undefined, { 'x-principal': 'gina' });
        assert.equal(other.status, 200);
        assert.deepEqual(ended, [{ protocolVersion: '2025-11-25', reason: 'revoked' }]);
        assert.deepEqual(stops.map((stop) => [stop.era, stop.reason]).sort(), [
          ['legacy', 'revoked'],
          ['modern', 'revoked'],
        ]);
        assert.deepEqual(endpoint.streams().map((stream) => [stream.era, stream.principal]), [['legacy', 'user:gina']]);
      });
    });
  });
});

test('closeStream(session id) ends that session as a revoke would; its id answers 404', async () => {
  await withEndpoint({ authenticate: byHeader }, async ({ url, endpoint }) => {
    const session = await initialize(url, { headers: { 'x-principal': 'hal' } });
    const get = GetStream.open(url, session.sessionId, { headers: { 'x-principal': 'hal' } });
    await get.response;
    assert.equal(await endpoint.closeStream(session.sessionId), true);
    await get.until((g) => g.ended, 3000, 'the GET stream to end');
    const again = await send(url, 'GET', { ...sessionHeaders(session.sessionId), accept: 'text/event-stream', 'x-principal': 'hal' });
    assert.equal(again.status, 404);
    assert.equal(await endpoint.closeStream(session.sessionId), false);
  });
});

test('a cap without revoke: the endpoint still ends the principal\'s open listens on its node', async () => {
  const registry = new PrincipalRegistry(4);
  const principals = { maxPerPrincipal: 4, get size() { return registry.size; }, count: (p: string) => registry.count(p), admit: (p: string) => registry.admit(p) };
  await withEndpoint({ principals, authenticate: byHeader }, async ({ url, endpoint }) => {
    const conn = await openListen(url, 9, 'ivy');
    assert.deepEqual(await endpoint.revoke('user:ivy'), { streams: 1, sessions: 0 });
    await conn.until((c) => c.ended, 3000, 'the listen to end');
    assert.equal(conn.text, ack(9) + closed(9, 'revoked'));
  });
});

test('a listen stream served in process (endpoint.handle, no socket) is revoked the same way', async () => {
  const endpoint = new McpEndpoint({ hub: new Hub(), authenticate: byHeader, capabilities: { tools: true } });
  const request: EndpointRequest = {
    method: 'POST',
    header: (name) => ({ 'content-type': 'application/json', accept: 'text/event-stream', 'x-principal': 'jo' } as Record<string, string>)[name],
    body: listenBody(1, { toolsListChanged: true }),
    remoteAddress: '127.0.0.1',
  } as EndpointRequest;
  const response = await endpoint.handle(request);
  assert.equal(response.kind, 'stream');
  const frames: Frame[] = [];
  let completed = false;
  if (response.kind === 'stream') response.open(new BehaviorSubject(true)).subscribe({ next: (f) => frames.push(f), complete: () => (completed = true) });
  await endpoint.revoke('user:jo');
  assert.ok(completed);
  assert.deepEqual(frames.map((f) => (f.type === 'message' ? f.closeReason : f.type)), [undefined, 'revoked', 'revoked']);
  endpoint.close();
});

test.run();
