// RedisBus against a real redis-server: two hubs ("nodes") in one process, each on its own bus
// and its own http.Server, with listen streams read byte for byte over loopback.
import { strict as assert } from 'node:assert';
import { test } from 'uvu';
import { RedisBus, type RedisBusOptions } from '../../adapters/redis/bus.js';
import { redisChannels, type ResyncEvent, type UnrelayedEvent } from '../../adapters/redis/telemetry.js';
import { InvalidOptionError } from '../../lib/errors.js';
import { Hub } from '../../lib/hub.js';
import { hubResources } from '../../lib/resources.js';
import { eventually, listenBody, SseConnection, startEndpoint, type TestServer } from '../helpers/http.js';
import { call, frameText, GetStream, initialize, listChangedMessage, updatedMessage } from '../helpers/legacy.js';
import { redisForSuite } from '../helpers/redis.js';
import { collecting } from '../helpers/telemetry.js';

// Persistent: a restart after a kill comes back with the stream, as a production Redis with an AOF does.
const suite = redisForSuite(test, { persistent: true });

interface Node {
  readonly bus: RedisBus;
  readonly server: TestServer;
}

async function withNodes(body: (a: Node, b: Node) => Promise<void>, options: Partial<RedisBusOptions> = {}): Promise<void> {
  const nodes: Node[] = [];
  const channel = `hub-${Math.random().toString(36).slice(2)}`;
  try {
    for (const nodeId of ['A', 'B']) {
      const bus = new RedisBus({ redis: suite.server.url, nodeId, channel, checkInterval: 200, ...options });
      nodes.push({ bus, server: await startEndpoint({ hub: new Hub({ bus }) }) });
      await bus.ready();
    }
    await body(nodes[0]!, nodes[1]!);
  } finally {
    for (const { bus, server } of nodes) {
      await server.close();
      server.hub.close();
      await bus.close();
    }
  }
}

const URI = 'file:///srv/data/a.txt';
const frame = (json: string) => `event: message\ndata: ${json}\n\n`;
const meta = (id: number) => `"_meta":{"io.modelcontextprotocol/subscriptionId":${id}}`;
const ack = (id: number) =>
  frame(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true,"resourceSubscriptions":["${URI}"]},${meta(id)}}}`);
const updated = (id: number, uri = URI) => frame(`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"${uri}",${meta(id)}}}`);
const toolsChanged = (id: number) => frame(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{${meta(id)}}}`);

async function listenOn(node: Node, id: number, uri = URI): Promise<SseConnection> {
  const conn = await SseConnection.open(node.server.url, listenBody(id, { toolsListChanged: true, resourceSubscriptions: [uri] }));
  await conn.until((c) => c.text.includes('acknowledged'), 2000, 'the ack');
  return conn;
}

async function listenMany(node: Node, id: number, uris: readonly string[]): Promise<SseConnection> {
  const conn = await SseConnection.open(node.server.url, listenBody(id, { toolsListChanged: true, resourceSubscriptions: uris }));
  await conn.until((c) => c.text.includes('acknowledged'), 2000, 'the ack');
  return conn;
}

const ackMany = (id: number, uris: readonly string[]) =>
  frame(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true,"resourceSubscriptions":${JSON.stringify(uris)}},${meta(id)}}}`);
const count = (text: string, part: string) => text.split(part).length - 1;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));


test('a notify on node A reaches a stream on A and a stream on B exactly once each, byte for byte', async () => {
  await withNodes(async (a, b) => {
    const onA = await listenOn(a, 1);
    const onB = await listenOn(b, 2);
    a.server.hub.notifyResourceUpdated(URI);
    // Published after the update on the same connection: once it is in, the update is too.
    a.server.hub.notifyToolsChanged();
    await onA.until((c) => c.text.includes('tools/list_changed'), 2000, 'tools on A');
    await onB.until((c) => c.text.includes('tools/list_changed'), 2000, 'tools on B');
    // A second round proves nothing of the first arrives twice late.
    b.server.hub.notifyResourceUpdated(URI);
    await onA.until((c) => count(c.text, 'resources/updated') === 2, 2000, 'the second update on A');
    await onB.until((c) => count(c.text, 'resources/updated') === 2, 2000, 'the second update on B');
    // Acknowledgments can come after the other node heard the appends (see the outbox test).
    await eventually(() => a.bus.stats.relayed === 2 && b.bus.stats.relayed === 1, 2000, 'the appends to be acknowledged');
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(onA.text, ack(1) + updated(1) + toolsChanged(1) + updated(1));
    assert.equal(onB.text, ack(2) + updated(2) + toolsChanged(2) + updated(2));
    assert.deepEqual(a.bus.stats, { relayed: 2, queued: 0, unrelayed: 0, received: 1, duplicates: 0, resyncs: 0, malformed: 0 });
    assert.deepEqual(b.bus.stats, { relayed: 1, queued: 0, unrelayed: 0, received: 2, duplicates: 0, resyncs: 0, malformed: 0 });
    onA.destroy();
    onB.destroy();
  });
});

test('Redis down (and back with its data): the publishes of A wait in its outbox and reach B after the restart, in order, exactly once', async () => {
  await withNodes(async (a, b) => {
    const uris = Array.from({ length: 200 }, (_, i) => `file:///srv/data/${i}.txt`);
    const onA = await listenOn(a, 1);
    const onB = await listenMany(b, 2, uris);
    await suite.server.stop();
    for (const uri of uris) a.server.hub.notifyResourceUpdated(uri);
    // Local streams first, without waiting for Redis.
    await eventually(() => a.bus.stats.queued === 200, 1000, 'the 200 publishes to be queued');
    await sleep(300);
    assert.equal(count(onB.text, 'resources/updated'), 0, 'nothing reaches B while Redis is down');
    await suite.server.restart();
    await onB.until((c) => count(c.text, 'resources/updated') === 200, 3000, 'the 200 updates on B');
    await sleep(200);
    assert.equal(onB.text, ackMany(2, uris) + uris.map((uri) => updated(2, uri)).join(''), 'every update once, in publishing order');
    assert.equal(b.bus.stats.resyncs, 0);
    assert.equal(a.bus.stats.unrelayed, 0);
    await eventually(() => a.bus.stats.relayed === 200, 2000, 'the 200 appends to be acknowledged');
    onA.destroy();
    onB.destroy();
  });
});

test('an outbox smaller than the outage: the oldest are dropped and reported, B resyncs its streams once (one frame per topic) and hears the rest', async () => {
  await withNodes(
    async (a, b) => {
      const uris = Array.from({ length: 20 }, (_, i) => `file:///srv/data/${i}.txt`);
      const onB = await listenMany(b, 2, uris);
      await collecting<UnrelayedEvent>(redisChannels.unrelayed, (reported) =>
        collecting<ResyncEvent>(redisChannels.resync, async (resyncs) => {
          a.server.hub.notifyResourceUpdated(uris[0]!); // B has seen A's seq 1
          await onB.until((c) => count(c.text, 'resources/updated') === 1, 2000, 'the first update on B');
          // B can hear an append before A hears Redis acknowledge it (with fsync on every write, a
          // write's reply waits for the disk, a read's does not). Killed in between, A would
          // rightly append it again (B skips the repeat), and the outbox would hold 21, not 20.
          await eventually(() => a.bus.stats.relayed === 1, 2000, "A's first append to be acknowledged");
          await suite.server.stop();
          for (const uri of uris) a.server.hub.notifyResourceUpdated(uri);
          await eventually(() => a.bus.stats.unrelayed === 15, 1000, 'fifteen dropped');
          assert.deepEqual(reported, Array.from({ length: 15 }, (_, i) => ({ topic: 'resource', reason: 'overflow', unrelayed: i + 1 })));
          await suite.server.restart();
          await eventually(() => b.bus.stats.received === 6, 3000, 'the five kept to reach B');
          await sleep(200);
          assert.deepEqual(resyncs, [{ reason: 'sequence', resyncs: 1 }]);
          // One frame per topic the stream listens to (the tools list and each URI), then the five
          // kept, unless they reached B in the resync's turn: identical notifications of one turn
          // are one frame (a storm collapses), and the resync already said each URI changed.
          const resync = toolsChanged(2) + uris.map((uri) => updated(2, uri)).join('');
          const kept = uris.slice(15).map((uri) => updated(2, uri)).join('');
          const head = ackMany(2, uris) + updated(2, uris[0]) + resync;
          assert.ok(onB.text.startsWith(head), 'the first update, then the resync');
          // What follows is the kept updates that came in a later turn than the resync, in order.
          const later = uris.slice(15).filter((uri) => onB.text.slice(head.length).includes(`"uri":"${uri}"`));
          assert.equal(onB.text.slice(head.length), later.map((uri) => updated(2, uri)).join(''));
          assert.ok(kept.endsWith(later.map((uri) => updated(2, uri)).join('')), 'the kept ones that were not collapsed are the last ones');
          onB.destroy();
        }),
      );
    },
    { maxOutbox: 5 },
  );
});

test('Redis loses its data (FLUSHALL): every node resyncs its streams once, then delivery carries on', async () => {
  await withNodes(async (a, b) => {
    const onA = await listenOn(a, 1);
    const onB = await listenOn(b, 2);
    await suite.raw.flushall();
    await eventually(() => a.bus.stats.resyncs === 1 && b.bus.stats.resyncs === 1, 3000, 'both nodes to resync');
    await onA.until((c) => c.text.endsWith(toolsChanged(1) + updated(1)), 1000, 'the resync on A');
    await onB.until((c) => c.text.endsWith(toolsChanged(2) + updated(2)), 1000, 'the resync on B');
    a.server.hub.notifyToolsChanged();
    await onB.until((c) => count(c.text, 'tools/list_changed') === 2, 2000, 'a later publish on B');
    await sleep(1300); // past a check interval: no second resync
    assert.equal(onA.text, ack(1) + toolsChanged(1) + updated(1) + toolsChanged(1));
    assert.equal(onB.text, ack(2) + toolsChanged(2) + updated(2) + toolsChanged(2));
    assert.deepEqual([a.bus.stats.resyncs, b.bus.stats.resyncs], [1, 1]);
    onA.destroy();
    onB.destroy();
  });
});

test('a resync reaches legacy GET streams alike: list_changed for each list and resources/updated for each subscribed URI, once, with ids', async () => {
  const channel = `hub-${Math.random().toString(36).slice(2)}`;
  const bus = new RedisBus({ redis: suite.server.url, nodeId: 'L', channel, checkInterval: 200 });
  const hub = new Hub({ bus });
  const server = await startEndpoint({ hub, resourceProviders: [hubResources(hub)] });
  try {
    await bus.ready();
    const { sessionId } = await initialize(server.url);
    const get = GetStream.open(server.url, sessionId);
    await sleep(100); // the GET stream attaches
    assert.deepEqual((await call(server.url, sessionId, 2, 'resources/subscribe', { uri: URI })).json, { jsonrpc: '2.0', id: 2, result: {} });
    await suite.raw.flushall();
    await eventually(() => bus.stats.resyncs === 1, 3000, 'the resync');
    await get.untilId(4);
    await sleep(300);
    const expected = [listChangedMessage('tools'), listChangedMessage('prompts'), listChangedMessage('resources'), updatedMessage(URI)];
    // The frames after the stream's opening (its priming event is the legacy stream's business).
    const text = get.withoutKeepAlives;
    assert.equal(text.slice(text.indexOf('event: message')), expected.map((message, i) => frameText(i + 1, message)).join(''));
    get.destroy();
  } finally {
    await server.close();
    hub.close();
    await bus.close();
  }
});

test('a node whose next entry was trimmed away resyncs; an entry appended twice is delivered once', async () => {
  await withNodes(async (a, b) => {
    const onB = await listenOn(b, 2);
    const entry = (seq: number) => ['m', `X/run ${seq} {"topic":"resource","uri":"${URI}"}`];
    await suite.raw.xadd(b.bus.channel, '*', ...entry(1));
    await suite.raw.xadd(b.bus.channel, '*', ...entry(1));
    await onB.until((c) => count(c.text, 'resources/updated') === 1, 2000, 'the update');
    await eventually(() => b.bus.stats.duplicates === 1, 1000, 'the duplicate to be skipped');
    // 50 entries of which B can read only the last 5: atomically appended and trimmed.
    const multi = suite.raw.multi();
    for (let seq = 2; seq <= 51; seq++) multi.xadd(b.bus.channel, '*', 'm', `X/run ${seq} {"topic":"prompts"}`);
    await multi.xtrim(b.bus.channel, 'MAXLEN', 5).exec();
    await eventually(() => b.bus.stats.resyncs === 1, 2000, 'B to resync');
    await eventually(() => b.bus.stats.received === 6, 1000, 'the 5 entries left');
    await sleep(100);
    assert.equal(onB.text, ack(2) + updated(2) + toolsChanged(2) + updated(2));
    assert.equal(b.bus.stats.resyncs, 1);
    onB.destroy();
  });
});

test('messages that are not events are counted and ignored; a node skips its own', async () => {
  await withNodes(async (a, b) => {
    const onB = await listenOn(b, 2);
    const malformed = [['x', 'y'], ['m', 'X/1 1 not-json'], ['m', 'X/1 2 {"topic":"resource"}'], ['m', 'X/1 three {"topic":"tools"}'],
      ['m', 'X/1 4 {"topic":"nope"}'], ['m', 'X/1 5 {"topic":"task","task":{}}'], ['m', 'X/1 6 null'], ['m', 'X/1 7 {"topic":"tools"}', 'x', 'y']];
    for (const fields of malformed) await suite.raw.xadd(a.bus.channel, '*', ...fields);
    // B's own entry (its origin) is skipped by B, delivered by A.
    b.server.hub.notifyResourceUpdated(URI);
    await eventually(() => a.bus.stats.received === 1, 2000, 'A to receive the event');
    await eventually(() => b.bus.stats.malformed === 8, 2000, 'B to read the malformed entries');
    assert.equal(a.bus.stats.malformed, 8);
    await sleep(50);
    assert.equal(count(onB.text, 'resources/updated'), 1, 'B delivered its own publish once');
    assert.deepEqual(b.bus.stats, { relayed: 1, queued: 0, unrelayed: 0, received: 0, duplicates: 0, resyncs: 0, malformed: 8 });
    onB.destroy();
  });
});

test('options are validated at construction, naming the option', () => {
  const cases: [Record<string, unknown>, string][] = [
    [{}, 'redis must be a redis:// URL or an ioredis options object, got undefined'],
    [{ redis: '' }, 'redis must be a redis:// URL or an ioredis options object, got ""'],
    [{ redis: suite.server.url, channel: '' }, 'channel must be a non-empty string without whitespace, got ""'],
    [{ redis: suite.server.url, nodeId: 'a b' }, 'nodeId must be a non-empty string without whitespace, got "a b"'],
    [{ redis: suite.server.url, maxReconnectDelay: 0 }, 'maxReconnectDelay must be a positive integer of milliseconds (at least 1), got 0'],
    [{ redis: suite.server.url, publishTimeout: 1.5 }, 'publishTimeout must be a positive integer of milliseconds (at least 1), got 1.5'],
    [{ redis: suite.server.url, maxLength: 0 }, 'maxLength must be a positive integer, got 0'],
    [{ redis: suite.server.url, maxOutbox: -1 }, 'maxOutbox must be a positive integer, got -1'],
    [{ redis: suite.server.url, checkInterval: '1000' }, 'checkInterval must be a positive integer of milliseconds (at least 1), got "1000"'],
  ];
  for (const [options, message] of cases) {
    assert.throws(() => new RedisBus(options as never), (error: unknown) => error instanceof InvalidOptionError && error.message === message);
  }
});

test.run();
