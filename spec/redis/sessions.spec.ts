// The legacy-session adapters against a real redis-server: RedisSessionStore, redisEventLogs and
// RedisSessionBus on their own, then two endpoints ("nodes") in this process sharing a session
// through them, with GET streams read byte for byte over loopback.
import { strict as assert } from 'node:assert';
import { firstValueFrom, filter } from 'rxjs';
import { test } from 'uvu';
import { redisEventLogs } from '../../adapters/redis/eventLog.js';
import { RedisBus } from '../../adapters/redis/bus.js';
import { RedisSessionBus } from '../../adapters/redis/sessionBus.js';
import { RedisSessionStore, sessionKeys } from '../../adapters/redis/sessionStore.js';
import { encodeFrame } from '../../lib/encode.js';
import { InvalidOptionError } from '../../lib/errors.js';
import { notificationFrame } from '../../lib/frame.js';
import { Hub } from '../../lib/hub.js';
import type { SessionCommand } from '../../lib/session.js';
import { updated } from '../helpers/frames.js';
import { eventually, startEndpoint, type TestServer } from '../helpers/http.js';
import { call, frameText, GetStream, initialize, send, sessionHeaders, sleep, updatedMessage } from '../helpers/legacy.js';
import { redisForSuite } from '../helpers/redis.js';

const suite = redisForSuite(test);

let prefixes = 0;
const freshPrefix = () => `sessions${prefixes++}`;
const record = (id: string) => ({ id, principal: 'p', protocolVersion: '2025-11-25', subscriptions: ['file:///a', 'file:///b'], lastActivity: 1000 });

test('RedisSessionStore: create, get, update (streamNode set and cleared), delete; a missing record stays missing', async () => {
  const prefix = freshPrefix();
  const store = new RedisSessionStore({ redis: suite.server.url, prefix, ttl: 60_000 });
  try {
    await store.ready();
    await store.create(record('s1'));
    const got = await store.get('s1');
    assert.deepEqual(got, { ...record('s1'), streamNode: null });
    assert.ok(Object.isFrozen(got) && Object.isFrozen(got!.subscriptions));
    await store.update('s1', { subscriptions: ['file:///b', 'file:///c'], streamNode: 'node-a' });
    assert.deepEqual(await store.get('s1'), { ...record('s1'), subscriptions: ['file:///b', 'file:///c'], streamNode: 'node-a' });
    await store.update('s1', { lastActivity: 2000, streamNode: null });
    assert.deepEqual(await store.get('s1'), { ...record('s1'), subscriptions: ['file:///b', 'file:///c'], lastActivity: 2000, streamNode: null });
    await store.update('missing', { lastActivity: 5, streamNode: 'x' });
    assert.equal(await store.get('missing'), undefined);
    assert.equal(await suite.raw.exists(sessionKeys(prefix, 'missing').record), 0, 'an update does not create a record');
    assert.deepEqual(store.idleSince(Number.MAX_SAFE_INTEGER), [], 'Redis evicts by itself');
    await store.delete('s1');
    await store.delete('s1');
    assert.equal(await store.get('s1'), undefined);
  } finally {
    await store.close();
  }
});

test('RedisSessionStore: takeUp makes a node the keeper only if the one it names is (forgetting a GET stream there), one of several wins; keptBy finds the sessions a node or its workers keep', async () => {
  const prefix = freshPrefix();
  const store = new RedisSessionStore({ redis: suite.server.url, prefix, ttl: 60_000 });
  try {
    await store.ready();
    for (const id of ['s1', 's2', 's3', 's4']) await store.create(record(id));
    await store.update('s1', { streamNode: 'm/1', keeper: 'm/1', scopes: ['read:x'] });
    await store.update('s2', { keeper: 'm/2' });
    await store.update('s3', { keeper: 'mx' });
    const kept = await store.keptBy('m');
    assert.deepEqual(kept.map(({ id, keeper }) => `${id} ${keeper}`).sort(), ['s1 m/1', 's2 m/2']);
    assert.deepEqual(await store.keptBy('m/2'), [{ id: 's2', keeper: 'm/2' }]);
    assert.equal(await store.takeUp('s1', 'm/2', 'n'), false, 'not its keeper');
    const racing = await Promise.all(['n', 'o', 'p'].map((node) => store.takeUp('s1', 'm/1', node)));
    assert.deepEqual(racing.filter(Boolean).length, 1, 'one of the nodes that try wins');
    const won = ['n', 'o', 'p'][racing.indexOf(true)]!;
    assert.deepEqual(await store.get('s1'), { ...record('s1'), streamNode: null, keeper: won, scopes: ['read:x'] });
    assert.equal(await store.takeUp('s1', won, null), true, 'a keeper lets go');
    assert.equal((await store.get('s1'))!.keeper, undefined);
    assert.equal(await store.takeUp('s4', null, 'n'), true, 'a session nobody keeps');
    assert.equal(await store.takeUp('missing', null, 'n'), false);
    assert.equal(await suite.raw.exists(sessionKeys(prefix, 'missing').record), 0);
  } finally {
    await store.close();
  }
});

test('RedisSessionBus: a node whose heartbeat expires is handed, once, to one live node as left; a node that leaves is counted out at once', async () => {
  const channel = `sessions-${freshPrefix()}`;
  const heard: [string, string, SessionCommand][] = [];
  const buses = ['A', 'B', 'C'].map((nodeId) => new RedisSessionBus({ redis: suite.server.url, nodeId, channel, heartbeatTtl: 600 }));
  const leftC = () => heard.filter(([, , command]) => command.kind === 'left' && command.node === 'C');
  try {
    for (const bus of buses) {
      bus.connect((id, command) => heard.push([bus.nodeId, id, command]));
      await bus.ready();
    }
    await sleep(250); // every one has beaten
    const [a, b, c] = buses as [RedisSessionBus, RedisSessionBus, RedisSessionBus];
    await c.close(); // dies: its heartbeat stops, nobody is told
    await eventually(() => leftC().length > 0, 3000, 'the death of C to be noticed');
    await sleep(700);
    assert.equal(leftC().length, 1, `by one node only: ${JSON.stringify(heard)}`);
    const [[by, id]] = leftC() as [[string, string, SessionCommand]];
    assert.ok(by === 'A' || by === 'B');
    assert.equal(id, '');
    assert.equal(heard.length, 1, `A and B are alive: ${JSON.stringify(heard)}`);
    assert.equal(a.stats.departed + b.stats.departed, 1);
    assert.equal(await a.leave(), 1, 'B is alive');
    await sleep(700);
    assert.equal(heard.length, 1, 'a node that left is nobody\'s to take up');
    assert.equal(await b.leave(), 0);
  } finally {
    await Promise.all(buses.map((bus) => bus.close()));
  }
});

test('RedisSessionStore: the record expires ttl after its last update, so Redis evicts idle sessions by itself', async () => {
  const prefix = freshPrefix();
  const store = new RedisSessionStore({ redis: suite.server.url, prefix, ttl: 10_000 });
  const brief = new RedisSessionStore({ redis: suite.server.url, prefix, ttl: 100 });
  try {
    await Promise.all([store.ready(), brief.ready()]);
    await store.create(record('s1'));
    const key = sessionKeys(prefix, 's1').record;
    const created = await suite.raw.pttl(key);
    assert.ok(created > 9000 && created <= 10_000, `pttl ${created}`);
    await sleep(60);
    const before = await suite.raw.pttl(key);
    await store.update('s1', { lastActivity: 2000 });
    const after = await suite.raw.pttl(key);
    assert.ok(after > before + 40 && after <= 10_000, `an update refreshes the expiry: ${before} → ${after}`);

    await brief.create(record('s2'));
    const start = Date.now();
    await waitUntil(async () => (await brief.get('s2')) === undefined, 2000, 'Redis to evict the record');
    assert.ok(Date.now() - start >= 80, 'not before its ttl');
  } finally {
    await Promise.all([store.close(), brief.close()]);
  }
});

test('redisEventLogs: concurrent appends get 1, 2, 3… in list order; after() per L7; frames replay byte for byte', async () => {
  const prefix = freshPrefix();
  const store = new RedisSessionStore({ redis: suite.server.url, prefix });
  const logs = redisEventLogs({ redis: suite.server.url, prefix, capacity: 5 });
  try {
    await Promise.all([store.ready(), logs.ready()]);
    await store.create(record('s1'));
    const log = logs('s1');
    const tools = notificationFrame({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }, 'tools', 'tools');
    const sent = [updated('file:///a b\n"c"'), tools, ...Array.from({ length: 6 }, (_, i) => updated(`file:///${i}`))];
    const stamped = await Promise.all(sent.map((frame) => log.append(frame)));
    assert.deepEqual(stamped.map((frame) => frame.eventId), ['1', '2', '3', '4', '5', '6', '7', '8']);
    assert.deepEqual(stamped.map((frame) => frame.message), sent.map((frame) => frame.message));

    // Capacity 5: ids 4..8 are kept, in order.
    const all = await log.after('x');
    assert.deepEqual(all.map((frame) => frame.eventId), ['4', '5', '6', '7', '8']);
    assert.deepEqual(all.map(encodeFrame), stamped.slice(3).map(encodeFrame), 'written exactly as the first time');
    assert.deepEqual(all.map((frame) => [frame.priority, frame.topic, frame.coalesceKey]), stamped.slice(3).map((frame) => ['notification', frame.topic, frame.coalesceKey]));
    assert.deepEqual(await log.after(undefined), []);
    assert.deepEqual(await log.after(null), []);
    assert.deepEqual((await log.after('6')).map((frame) => frame.eventId), ['7', '8']);
    assert.deepEqual((await log.after('0')).map((frame) => frame.eventId), ['4', '5', '6', '7', '8']);
    assert.deepEqual(await log.after('8'), []);
    assert.deepEqual(await log.after('99999999999999999999'), []);

    // The first two frames, kept in a capacity-100 log, replay byte for byte too (odd URI, no coalesce key).
    const wide = redisEventLogs({ redis: suite.server.url, prefix, capacity: 100 });
    try {
      await wide.ready();
      await store.create(record('s2'));
      const first = [await wide('s2').append(sent[0]!), await wide('s2').append(sent[1]!)];
      assert.deepEqual((await wide('s2').after('')).map(encodeFrame), first.map(encodeFrame));
      assert.equal(encodeFrame((await wide('s2').after('1'))[0]!), frameText(2, { jsonrpc: '2.0', method: 'notifications/tools/list_changed' }));
    } finally {
      await wide.close();
    }

    // The counter lives in the record: it carries on after record updates, and goes with it.
    await store.update('s1', { lastActivity: 5 });
    assert.equal((await log.append(updated('file:///z'))).eventId, '9');
    assert.equal((await store.get('s1'))?.lastActivity, 5, 'the counter does not disturb the record');
    await store.delete('s1');
    assert.equal(await suite.raw.exists(sessionKeys(prefix, 's1').record, sessionKeys(prefix, 's1').log), 0);
    assert.deepEqual(await log.after('0'), []);
  } finally {
    await Promise.all([store.close(), logs.close()]);
  }
});

test('redisEventLogs: both keys expire ttl after the last append (never shortening a longer record ttl)', async () => {
  const prefix = freshPrefix();
  const store = new RedisSessionStore({ redis: suite.server.url, prefix, ttl: 60_000 });
  const logs = redisEventLogs({ redis: suite.server.url, prefix, ttl: 10_000 });
  const brief = redisEventLogs({ redis: suite.server.url, prefix, ttl: 100 });
  try {
    await Promise.all([store.ready(), logs.ready(), brief.ready()]);
    const { record: recordKey, log: logKey } = sessionKeys(prefix, 's1');
    await store.create(record('s1'));
    await logs('s1').append(updated('file:///a'));
    assert.ok((await suite.raw.pttl(recordKey)) > 59_000, 'the record keeps its longer ttl');
    const logTtl = await suite.raw.pttl(logKey);
    assert.ok(logTtl > 9000 && logTtl <= 10_000, `log pttl ${logTtl}`);
    // A log without a record (a session deleted meanwhile) cleans up after itself.
    await brief('gone').append(updated('file:///a'));
    const { record: goneRecord, log: goneLog } = sessionKeys(prefix, 'gone');
    assert.equal(await store.get('gone'), undefined, 'a counter alone is no record');
    await waitUntil(async () => (await suite.raw.exists(goneRecord, goneLog)) === 0, 2000, 'the stray keys to expire');
  } finally {
    await Promise.all([store.close(), logs.close(), brief.close()]);
  }
});

test('RedisSessionBus: commands reach the other nodes once, never the sender; malformed messages are counted and ignored', async () => {
  const channel = `sessions-${freshPrefix()}`;
  const buses = ['A', 'B'].map((nodeId) => new RedisSessionBus({ redis: suite.server.url, nodeId, channel }));
  const heard: [string, string, SessionCommand][] = [];
  try {
    for (const bus of buses) {
      bus.connect((id, command) => heard.push([bus.nodeId, id, command]));
      await bus.ready();
    }
    const [a, b] = buses as [RedisSessionBus, RedisSessionBus];
    assert.equal(a.connected, true);
    await a.publish('s1', { kind: 'claimed', node: 'A' });
    await b.publish('s1', { kind: 'subscribe', uri: 'file:///x' });
    await a.publish('s2', { kind: 'unsubscribe', uri: 'file:///y' });
    for (const message of ['garbage', 'X not-json', 'X ["s1"]', 'X ["s1",{"kind":"claimed"}]', 'X ["s1",{"kind":"nope"}]', 'X [1,{"kind":"ended"}]']) {
      await suite.raw.publish(channel, message);
    }
    await suite.raw.publish(channel, 'X ["s3",{"kind":"ended"}]');
    await eventually(() => heard.length === 5, 2000, 'five deliveries');
    await sleep(50);
    // Per publisher in order; the two receivers of the forged command in any order.
    const byReceiver = (node: string) => heard.filter(([receiver]) => receiver === node);
    assert.deepEqual(byReceiver('A'), [
      ['A', 's1', { kind: 'subscribe', uri: 'file:///x' }],
      ['A', 's3', { kind: 'ended' }],
    ]);
    assert.deepEqual(byReceiver('B'), [
      ['B', 's1', { kind: 'claimed', node: 'A' }],
      ['B', 's2', { kind: 'unsubscribe', uri: 'file:///y' }],
      ['B', 's3', { kind: 'ended' }],
    ]);
    assert.deepEqual(a.stats, { published: 2, failed: 0, received: 2, malformed: 6, departed: 0 });
    assert.deepEqual(b.stats, { published: 1, failed: 0, received: 3, malformed: 6, departed: 0 });
  } finally {
    await Promise.all(buses.map((bus) => bus.close()));
  }
});

/** Two endpoints on one Redis: hubs on a RedisBus, sessions in RedisSessionStore, redisEventLogs and RedisSessionBus. */
async function fleet(body: (a: TestServer, b: TestServer, prefix: string) => Promise<void>): Promise<void> {
  const prefix = freshPrefix();
  const closers: (() => Promise<void>)[] = [];
  const servers: TestServer[] = [];
  try {
    for (const nodeId of ['A', 'B']) {
      const bus = new RedisBus({ redis: suite.server.url, nodeId, channel: `${prefix}-hub` });
      const sessionStore = new RedisSessionStore({ redis: suite.server.url, prefix });
      const eventLog = redisEventLogs({ redis: suite.server.url, prefix });
      const sessionBus = new RedisSessionBus({ redis: suite.server.url, nodeId, channel: `${prefix}-sessions` });
      closers.push(() => bus.close(), () => sessionStore.close(), () => eventLog.close(), () => sessionBus.close());
      await Promise.all([bus.ready(), sessionStore.ready(), eventLog.ready(), sessionBus.ready()]);
      const server = await startEndpoint({ hub: new Hub({ bus }), sessionStore, eventLog, sessionBus, subscribeStreamWait: 0 });
      servers.push(server);
    }
    await body(servers[0]!, servers[1]!, prefix);
  } finally {
    for (const server of servers) {
      await server.close();
      server.hub.close();
    }
    await Promise.all(closers.map((close) => close()));
  }
}

const X = 'file:///srv/x.txt';
const Y = 'file:///srv/y.txt';

test('fleet: a subscribe POSTed on B reaches the GET on A; after a cut, a reconnect on B replays exactly the 10 missed frames with their ids, then live', async () => {
  await fleet(async (a, b, prefix) => {
    const { sessionId } = await initialize(a.url);
    let get = GetStream.open(a.url, sessionId);
    await eventually(() => a.endpoint.stats.streams === 1, 2000, 'the GET stream on A');
    assert.deepEqual((await call(a.url, sessionId, 2, 'resources/subscribe', { uri: X })).json.result, {});
    // Served on B, established on A (the record says A holds the stream).
    assert.equal((await call(b.url, sessionId, 3, 'resources/subscribe', { uri: Y })).body, JSON.stringify({ jsonrpc: '2.0', id: 3, result: {} }));
    await eventually(() => a.endpoint.stats.sessionSubscriptions === 3, 2000, 'the remote subscribe on A');
    assert.equal(b.endpoint.stats.sessionSubscriptions, 0);
    b.hub.notifyResourceUpdated(Y); // published on B, relayed to A's hub
    await get.untilId(1);
    assert.equal(get.withoutKeepAlives, frameText(1, updatedMessage(Y)));

    get.destroy();
    await eventually(() => a.endpoint.stats.streams === 0, 2000, 'A to notice the cut');
    // Published on B while nobody is connected: A's grace subscriptions log them in Redis.
    // One at a time: identical notifications reaching a session in one turn are one frame.
    for (let i = 0; i < 10; i++) {
      b.hub.notifyResourceUpdated(i % 2 === 0 ? X : Y);
      await sleep(30);
    }
    const counter = sessionKeys(prefix, sessionId).record;
    await waitUntil(async () => Number(await suite.raw.hget(counter, 'lastEventId')) === 11, 2000, 'the 10 frames to be logged');

    get = GetStream.open(b.url, sessionId, { lastEventId: '1' });
    await get.untilId(11);
    await eventually(() => b.endpoint.stats.sessionSubscriptions === 3 && a.endpoint.stats.sessionSubscriptions === 0, 2000, 'the handover to B');
    a.hub.notifyResourceUpdated(X); // published on A, relayed to B's hub: live on B now
    await get.untilId(12);
    let expected = '';
    for (let id = 2; id <= 11; id++) expected += frameText(id, updatedMessage(id % 2 === 0 ? X : Y));
    expected += frameText(12, updatedMessage(X));
    await sleep(50);
    assert.equal(get.withoutKeepAlives, expected);
    assert.equal(await suite.raw.hget(counter, 'lastEventId'), '12', 'A logs nothing more: one id per change');
    assert.equal((await suite.raw.hgetall(counter)).streamNode, 'B');

    // DELETE on A ends the stream on B and removes the session's keys.
    assert.equal((await send(a.url, 'DELETE', sessionHeaders(sessionId))).status, 204);
    await get.untilEnded();
    assert.ok(get.endedCleanly);
    assert.equal(await suite.raw.exists(counter, sessionKeys(prefix, sessionId).log), 0);
    await eventually(() => b.endpoint.stats.sessions === 0 && b.endpoint.stats.slots === 0, 2000, 'B to forget the session');
    assert.equal((await call(b.url, sessionId, 9, 'ping')).status, 404);
  });
});

test('RedisSessionBus: while Redis is down publish rejects (counted) and connected$ is false; it reconnects by itself', async () => {
  const bus = new RedisSessionBus({ redis: suite.server.url, nodeId: 'A', channel: `sessions-${freshPrefix()}`, maxReconnectDelay: 100 });
  try {
    await bus.ready();
    await suite.server.stop();
    await firstValueFrom(bus.connected$.pipe(filter((up) => !up)));
    await assert.rejects(bus.publish('s1', { kind: 'ended' }));
    assert.equal(bus.stats.failed, 1);
    await suite.server.restart();
    await firstValueFrom(bus.connected$.pipe(filter((up) => up)));
    for (const deadline = Date.now() + 2000; ; await sleep(20)) {
      try {
        await bus.publish('s1', { kind: 'ended' });
        break;
      } catch (error) {
        if (Date.now() > deadline) throw error;
      }
    }
    assert.equal(bus.stats.published, 1);
  } finally {
    await bus.close();
  }
});

/** Polls `predicate` every 10 ms until it holds, failing after `ms`. */
async function waitUntil(predicate: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

test('options are validated at construction, naming the option', () => {
  const cases: [() => unknown, string][] = [
    [() => new RedisSessionStore({} as never), 'redis must be a redis:// URL or an ioredis options object, got undefined'],
    [() => new RedisSessionStore({ redis: suite.server.url, ttl: 0 }), 'ttl must be a positive integer of milliseconds (at least 1), got 0'],
    [() => new RedisSessionStore({ redis: suite.server.url, prefix: 'a b' }), 'prefix must be a non-empty string without whitespace, got "a b"'],
    [() => new RedisSessionStore({ redis: suite.server.url, commandTimeout: 1.5 }), 'commandTimeout must be a positive integer of milliseconds (at least 1), got 1.5'],
    [() => redisEventLogs({ redis: '' }), 'redis must be a redis:// URL or an ioredis options object, got ""'],
    [() => redisEventLogs({ redis: suite.server.url, capacity: 0 }), 'capacity must be a positive integer, got 0'],
    [() => redisEventLogs({ redis: suite.server.url, ttl: -1 }), 'ttl must be a positive integer of milliseconds (at least 1), got -1'],
    [() => new RedisSessionBus({ redis: suite.server.url, nodeId: '' }), 'nodeId must be a non-empty string without whitespace, got ""'],
    [() => new RedisSessionBus({ redis: suite.server.url, publishTimeout: 0 }), 'publishTimeout must be a positive integer of milliseconds (at least 1), got 0'],
    [() => new RedisSessionBus({ redis: suite.server.url, heartbeatTtl: 20 }), 'heartbeatTtl must be a positive integer of milliseconds (at least 30), got 20'],
  ];
  for (const [construct, message] of cases) {
    assert.throws(construct, (error: unknown) => error instanceof InvalidOptionError && error.message === message, message);
  }
});

test.run();
