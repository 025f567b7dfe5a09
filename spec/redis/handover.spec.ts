// Nothing lost across a handover, between the nodes of a fleet (issue 31, items 2–4): endpoints on
// one real redis-server (RedisBus, RedisSessionStore, redisEventLogs, RedisSessionBus), in this
// process or (to be killed) in a child process, read by raw legacy clients ("id:" lines).
// - A node stopped gracefully hands its sessions' subscriptions to the fleet before it lets go; a
//   node killed has them taken up by another within the heartbeat, which logs the re-read signal
//   for the moment nobody held them: a reconnect with Last-Event-ID replays every change made
//   meanwhile, with consecutive ids.
// - A subscribe served by one node while its GET opens on the other answers {} in every order,
//   also when the claim reaches the first node while it reads the record.
// - A GET reconnecting on another node while the old one still logs (it heard the claim late) gets
//   every id in order; ids the log no longer holds are announced with the re-read signal.
import { strict as assert } from 'node:assert';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'uvu';
import { McpEndpoint } from '../../adapters/http/endpoint.js';
import type { McpEndpointOptions } from '../../adapters/http/options.js';
import { nodeHandler } from '../../adapters/http/node.js';
import { RedisBus } from '../../adapters/redis/bus.js';
import { redisEventLogs } from '../../adapters/redis/eventLog.js';
import { RedisSessionBus } from '../../adapters/redis/sessionBus.js';
import { RedisSessionStore } from '../../adapters/redis/sessionStore.js';
import { Hub } from '../../lib/hub.js';
import type { SessionBus, SessionStore } from '../../lib/session.js';
import { updated } from '../helpers/frames.js';
import { assertConsecutive, Changes, collapsed, gatedStore, heard, lateClaims, opened, quiet, report, rereadOf } from '../helpers/handover.js';
import { eventually } from '../helpers/http.js';
import { call, frameText, GetStream, initialize, listChangedMessage, nextTurn, sleep, updatedMessage } from '../helpers/legacy.js';
import { redisForSuite } from '../helpers/redis.js';
import { runFixture } from './fixtures/child.js';

const suite = redisForSuite(test);
const X = 'file:///srv/x.txt';
const Y = 'file:///srv/y.txt';
const Z = 'file:///srv/z.txt';
const HEARTBEAT = 600;

let prefixes = 0;
let closers: (() => Promise<void>)[] = [];
let changes: Changes | undefined;
test.after.each(async () => {
  await changes?.stop();
  changes = undefined;
  for (const close of closers.reverse()) await close().catch(() => undefined);
  closers = [];
});

interface FleetNode {
  readonly url: string;
  readonly hub: Hub;
  readonly endpoint: McpEndpoint;
  /** A graceful stop, as the reference server's: the endpoint's close (its sessions handed over) before the hub and the Redis parts. */
  close(): Promise<void>;
}

/**
 * Node `nodeId` of fleet `prefix` in this process; `wrap` may replace its session store or bus (a
 * store that answers late, a bus that hears claims late), `options` add to its endpoint's.
 */
async function node(
  prefix: string,
  nodeId: string,
  wrap: { store?: (store: SessionStore) => SessionStore; bus?: (bus: SessionBus) => SessionBus; heartbeatTtl?: number } = {},
  options: Partial<McpEndpointOptions> = {},
): Promise<FleetNode> {
  const redis = suite.server.url;
  const bus = new RedisBus({ redis, nodeId, channel: `${prefix}-hub` });
  const store = new RedisSessionStore({ redis, prefix });
  const eventLog = redisEventLogs({ redis, prefix, ...(options.replayBufferSize === undefined ? {} : { capacity: options.replayBufferSize }) });
  const sessionBus = new RedisSessionBus({ redis, nodeId, channel: `${prefix}-sessions`, heartbeatTtl: wrap.heartbeatTtl ?? HEARTBEAT });
  await Promise.all([bus.ready(), store.ready(), eventLog.ready(), sessionBus.ready()]);
  const hub = new Hub({ bus });
  const endpoint = new McpEndpoint({
    hub,
    capabilities: { tools: true, prompts: true, resources: true },
    sessionStore: wrap.store?.(store) ?? store,
    eventLog,
    sessionBus: wrap.bus?.(sessionBus) ?? sessionBus,
    sessionGracePeriod: 60_000,
    ...options,
  });
  const server = http.createServer(nodeHandler(endpoint));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      const handedOver = endpoint.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await handedOver;
      hub.close();
      await Promise.all([bus.close(), store.close(), eventLog.close(), sessionBus.close()]);
    })());
  closers.push(close);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, hub, endpoint, close };
}

/** A session on `url` with its GET stream there, subscribed to X, Y and Z. */
async function sessionOn(url: string): Promise<{ sessionId: string; get: GetStream }> {
  const { sessionId } = await initialize(url);
  const get = GetStream.open(url, sessionId);
  await get.until(opened, 3000, 'the GET stream');
  for (const [i, uri] of [X, Y, Z].entries()) assert.deepEqual((await call(url, sessionId, i + 2, 'resources/subscribe', { uri })).json.result, {});
  return { sessionId, get };
}

test('a node stopped gracefully while files change: another takes its session over before it lets go; the reconnect there replays every change, ids consecutive', async () => {
  const prefix = `handover${prefixes++}`;
  const a = await node(prefix, 'A');
  const b = await node(prefix, 'B');
  const { sessionId, get } = await sessionOn(a.url);
  changes = new Changes([X, Y, Z], (uri) => b.hub.notifyResourceUpdated(uri));
  await get.untilId(3);
  const seen = get.lastId!;
  await a.close();
  await get.untilEnded();
  await sleep(200); // changes while the client is away
  const resumed = GetStream.open(b.url, sessionId, { lastEventId: String(seen) });
  await sleep(150);
  await changes.stop();
  await sleep(150);
  assertConsecutive(resumed, seen + 1, 'the replay and the live frames');
  report('fleet, graceful stop', resumed, changes.published.length - seen);
  assert.deepEqual(collapsed(heard(resumed)), changes.published.slice(seen), 'every change made after the last one the client saw');
  resumed.destroy();
});

test('a node killed (SIGKILL) while files change: another takes its session up within the heartbeat, with the re-read signal; the reconnect replays it and every later change, ids consecutive', async () => {
  const prefix = `handover${prefixes++}`;
  const child = runFixture('node', [suite.server.url, prefix, 'A', String(HEARTBEAT)]);
  closers.push(() => child.kill());
  await child.waitFor('listening ', 10_000);
  const aUrl = /listening (\S+)/.exec(child.output())![1]!;
  const b = await node(prefix, 'B');
  const { sessionId, get } = await sessionOn(aUrl);
  changes = new Changes([X, Y, Z], (uri) => b.hub.notifyResourceUpdated(uri));
  await get.untilId(3);
  await child.kill();
  await get.untilEnded();
  const seen = get.lastId!;
  const killedAt = Date.now();
  await eventually(() => b.endpoint.stats.sessionSubscriptions === 4, 3000, 'b to take the session up');
  const tookUp = Date.now() - killedAt;
  assert.ok(tookUp < 3 * HEARTBEAT, `taken up within the heartbeat: ${tookUp} ms`);
  const from = changes.published.length;
  await sleep(200);
  const resumed = GetStream.open(b.url, sessionId, { lastEventId: String(seen) });
  await sleep(150);
  await changes.stop();
  await sleep(150);
  assertConsecutive(resumed, seen + 1, 'the replay and the live frames');
  const got = heard(resumed);
  const reread = got.indexOf('notifications/tools/list_changed') - 3;
  assert.ok(reread >= 0, `the re-read signal: ${got.join(' ')}`);
  assert.deepEqual(got.slice(reread, reread + 6), rereadOf([X, Y, Z]), 'resources/updated for each subscribed URI, list_changed for each list');
  const after = collapsed(got.slice(reread + 6));
  report('fleet, killed', resumed, changes.published.length - seen, { tookUpMs: tookUp });
  assert.deepEqual(after.slice(-(changes.published.length - from)), changes.published.slice(from), 'every change made after the take-up, in order');
  resumed.destroy();
});

test('a node killed and its client back on another node before the heartbeat expires (nobody took the session up): the GET there sends the re-read signal once its subscriptions are live, then every change, ids consecutive', async () => {
  const prefix = `handover${prefixes++}`;
  // A heartbeat of a minute (the same on every node): nobody finds A dead while the test runs.
  const child = runFixture('node', [suite.server.url, prefix, 'A', '60000']);
  closers.push(() => child.kill());
  await child.waitFor('listening ', 10_000);
  const aUrl = /listening (\S+)/.exec(child.output())![1]!;
  const b = await node(prefix, 'B', { heartbeatTtl: 60_000 });
  const { sessionId, get } = await sessionOn(aUrl);
  changes = new Changes([X, Y, Z], (uri) => b.hub.notifyResourceUpdated(uri));
  await get.untilId(3);
  await child.kill();
  await get.untilEnded();
  const seen = get.lastId!;
  await sleep(300); // changes nobody logs: A is dead, and alive for the fleet for a minute more
  const resumed = GetStream.open(b.url, sessionId, { lastEventId: String(seen) });
  await eventually(() => b.endpoint.stats.sessionSubscriptions === 4, 3000, 'the subscriptions restored on b');
  const from = changes.published.length;
  await sleep(200);
  await changes.stop();
  await sleep(150);
  report('fleet, killed, client back first', resumed, changes.published.length - seen);
  assertConsecutive(resumed, seen + 1, 'the replay and the live frames');
  const got = heard(resumed);
  const reread = got.indexOf('notifications/tools/list_changed') - 3;
  assert.ok(reread >= 0, `the re-read signal: ${got.join(' ')}`);
  assert.deepEqual(got.slice(reread, reread + 6), rereadOf([X, Y, Z]), 'resources/updated for each subscribed URI, list_changed for each list');
  const after = collapsed(got.slice(reread + 6));
  assert.deepEqual(after.slice(-(changes.published.length - from)), changes.published.slice(from), 'every change made once the subscriptions were live, in order');
  resumed.destroy();
});

test('a subscribe on one node while its GET opens on another, the claim reaching it while it reads the record: {} and live there', async () => {
  const prefix = `handover${prefixes++}`;
  let gate: ReturnType<typeof gatedStore> | undefined;
  const a = await node(prefix, 'A', { store: (store) => (gate = gatedStore(store)).store });
  const b = await node(prefix, 'B');
  const { sessionId } = await initialize(a.url);
  const read = gate!.holdGet(2);
  const subscribed = quiet(call(a.url, sessionId, 2, 'resources/subscribe', { uri: X }));
  await read.reached;
  const get = GetStream.open(b.url, sessionId);
  await get.until(opened, 3000, 'the GET stream on b');
  await eventually(() => a.endpoint.stats.sessions === 0, 2000, 'a to hear the claim');
  read.release();
  assert.deepEqual((await subscribed).json, { jsonrpc: '2.0', id: 2, result: {} });
  await eventually(() => b.endpoint.stats.sessionSubscriptions === 2, 2000, 'the subscription on b');
  a.hub.notifyResourceUpdated(X);
  await get.untilId(1);
  assert.equal(get.withoutKeepAlives, frameText(1, updatedMessage(X)));
  get.destroy();
});

test('a subscribe on one node while its GET opens on another, in either order and at every moment of the wait: {} and live there', async () => {
  const prefix = `handover${prefixes++}`;
  let gateA: ReturnType<typeof gatedStore> | undefined;
  let gateB: ReturnType<typeof gatedStore> | undefined;
  const a = await node(prefix, 'A', { store: (store) => (gateA = gatedStore(store)).store });
  const b = await node(prefix, 'B', { store: (store) => (gateB = gatedStore(store)).store });
  const timings = ['GET first, its claim recorded after the subscribe read the record', 'subscribe first, the GET during its wait', 'GET first'] as const;
  for (const [n, timing] of timings.entries()) {
    const { sessionId } = await initialize(a.url, { id: 10 + n });
    // The sessions of the earlier rounds keep theirs in their grace period: this one's are 2 more.
    const held = b.endpoint.stats.sessionSubscriptions;
    let get: GetStream;
    let subscribed: ReturnType<typeof call>;
    if (timing === 'GET first, its claim recorded after the subscribe read the record') {
      const claim = gateB!.holdClaim();
      get = GetStream.open(b.url, sessionId);
      await claim.reached;
      const read = gateA!.holdGet(2);
      subscribed = quiet(call(a.url, sessionId, 2, 'resources/subscribe', { uri: X }));
      await read.reached;
      read.release();
      await sleep(50);
      claim.release();
    } else if (timing === 'subscribe first, the GET during its wait') {
      subscribed = quiet(call(a.url, sessionId, 2, 'resources/subscribe', { uri: X }));
      await sleep(100);
      get = GetStream.open(b.url, sessionId);
    } else {
      get = GetStream.open(b.url, sessionId);
      await get.until(opened, 3000, 'the GET stream on b');
      subscribed = quiet(call(a.url, sessionId, 2, 'resources/subscribe', { uri: X }));
    }
    assert.deepEqual((await subscribed).json, { jsonrpc: '2.0', id: 2, result: {} }, timing);
    await get.until(opened, 3000, 'the GET stream on b');
    await eventually(() => b.endpoint.stats.sessionSubscriptions === held + 2, 3000, `the subscription on b (${timing})`);
    a.hub.notifyResourceUpdated(X);
    await get.untilId(1);
    assert.equal(get.withoutKeepAlives, frameText(1, updatedMessage(X)), timing);
    get.destroy();
  }
});

test('a reconnect on another node while the old one still logs (it hears the claim 300 ms late): every id, in order', async () => {
  const prefix = `handover${prefixes++}`;
  const a = await node(prefix, 'A', { bus: (bus) => lateClaims(bus, 300) });
  const b = await node(prefix, 'B');
  const { sessionId } = await initialize(a.url);
  const get = GetStream.open(a.url, sessionId);
  await get.until(opened, 3000, 'the GET stream on a');
  await call(a.url, sessionId, 2, 'resources/subscribe', { uri: X });
  for (let i = 0; i < 2; i++) {
    b.hub.notifyResourceUpdated(X);
    await nextTurn();
    await sleep(10);
  }
  await get.untilId(2);
  get.destroy();
  await eventually(() => a.endpoint.stats.streams === 0, 2000, 'a to notice the cut');
  const resumed = GetStream.open(b.url, sessionId, { lastEventId: '2' });
  await eventually(() => b.endpoint.stats.sessionSubscriptions === 2, 2000, 'the subscription restored on b');
  // a (grace period) and b both log these: b's stream must not skip a's ids.
  for (let i = 0; i < 4; i++) {
    b.hub.notifyResourceUpdated(X);
    await sleep(20);
  }
  await sleep(400); // a hears the claim and lets go
  b.hub.notifyResourceUpdated(X);
  await resumed.untilId(11);
  await sleep(50);
  assert.equal(resumed.primedWith, '2');
  assertConsecutive(resumed, 3, 'the reconnected stream');
  assert.equal(resumed.lastId, 11, 'four changes logged twice, then one by b alone');
  resumed.destroy();
});

test('ids the log no longer holds (another node logged more than it keeps since the stream last wrote): the stream writes what is kept, then the re-read signal', async () => {
  const prefix = `handover${prefixes++}`;
  const a = await node(prefix, 'A', {}, { replayBufferSize: 3 });
  const b = await node(prefix, 'B', {}, { replayBufferSize: 3 });
  const logs = redisEventLogs({ redis: suite.server.url, prefix, capacity: 3 });
  closers.push(() => logs.close());
  await logs.ready();
  const { sessionId } = await initialize(a.url);
  const get = GetStream.open(b.url, sessionId);
  await get.until(opened, 3000, 'the GET stream');
  await call(a.url, sessionId, 2, 'resources/subscribe', { uri: X });
  await eventually(() => b.endpoint.stats.sessionSubscriptions === 2, 3000, 'the subscription handed to b');
  b.hub.notifyResourceUpdated(X);
  await get.untilId(1);
  // Five frames logged for the session elsewhere (as a node in its grace period would), 2–6: the
  // log keeps 3, so once the next change (7) is logged it holds 5, 6 and 7, and 2–4 are gone.
  for (let i = 0; i < 5; i++) await logs(sessionId).append(updated(Y));
  b.hub.notifyResourceUpdated(X);
  await get.untilId(11);
  await sleep(50);
  const expected =
    frameText(1, updatedMessage(X)) +
    frameText(5, updatedMessage(Y)) +
    frameText(6, updatedMessage(Y)) +
    frameText(7, updatedMessage(X)) +
    // The re-read signal: resources/updated for each subscribed URI, list_changed for each list.
    frameText(8, updatedMessage(X)) +
    frameText(9, listChangedMessage('tools')) +
    frameText(10, listChangedMessage('prompts')) +
    frameText(11, listChangedMessage('resources'));
  assert.equal(get.withoutKeepAlives, expected);
  get.destroy();
});

test.run();
