// RedisBus against a real redis-server: two hubs ("nodes") in one process, each on its own bus
// and its own http.Server, with listen streams read byte for byte over loopback.
import { strict as assert } from 'node:assert';
import { Redis } from 'ioredis';
import { test } from 'uvu';
import { RedisBus } from '../../adapters/redis/bus.js';
import { redisChannels, type UnrelayedEvent } from '../../adapters/redis/telemetry.js';
import { InvalidOptionError } from '../../lib/errors.js';
import { Hub } from '../../lib/hub.js';
import { eventually, listenBody, SseConnection, startEndpoint, type TestServer } from '../helpers/http.js';
import { redisForSuite } from '../helpers/redis.js';

const suite = redisForSuite(test);

interface Node {
  readonly bus: RedisBus;
  readonly server: TestServer;
}

async function withNodes(body: (a: Node, b: Node) => Promise<void>, channel = `hub-${Math.random().toString(36).slice(2)}`): Promise<void> {
  const nodes: Node[] = [];
  try {
    for (const nodeId of ['A', 'B']) {
      const bus = new RedisBus({ redis: suite.server.url, nodeId, channel });
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

const count = (text: string, part: string) => text.split(part).length - 1;

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
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(onA.text, ack(1) + updated(1) + toolsChanged(1) + updated(1));
    assert.equal(onB.text, ack(2) + updated(2) + toolsChanged(2) + updated(2));
    assert.deepEqual(a.bus.stats, { relayed: 2, unrelayed: 0, received: 1, malformed: 0 });
    assert.deepEqual(b.bus.stats, { relayed: 1, unrelayed: 0, received: 2, malformed: 0 });
    onA.destroy();
    onB.destroy();
  });
});

test('Redis down: local streams keep receiving, unrelayed publishes are counted and reported, and nothing stale arrives after the restart', async () => {
  await withNodes(async (a, b) => {
    const onA = await listenOn(a, 1);
    const onB = await listenOn(b, 2);
    const reported: UnrelayedEvent[] = [];
    const onUnrelayed = (event: unknown) => reported.push(event as UnrelayedEvent);
    redisChannels.unrelayed.subscribe(onUnrelayed);
    try {
      await suite.server.stop();
      await eventually(() => a.bus.stats.unrelayed > 0 || (a.server.hub.notifyToolsChanged(), false), 2000, 'a publish to fail');
      const failedBefore = a.bus.stats.unrelayed;
      for (let i = 0; i < 5; i++) a.server.hub.notifyResourceUpdated(URI);
      await onA.until((c) => count(c.text, 'resources/updated') === 5, 1000, 'five local updates on A');
      await eventually(() => a.bus.stats.unrelayed === failedBefore + 5, 1000, 'five more unrelayed');
      assert.deepEqual(reported.slice(-5), [1, 2, 3, 4, 5].map((i) => ({ topic: 'resource', reason: 'offline', unrelayed: failedBefore + i })));

      const restarted = Date.now();
      await suite.server.restart();
      // Cross-node delivery resumes on the same buses, hubs and streams: probe until B hears A.
      const probe = 'file:///probe';
      const onBProbe = await listenOn(b, 3, probe);
      await eventually(() => onBProbe.text.includes(probe) || (a.server.hub.notifyResourceUpdated(probe), false), 2000, 'cross-node delivery to resume');
      const resumedAfter = Date.now() - restarted;
      assert.ok(resumedAfter < 2000, `resumed after ${resumedAfter} ms`);
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.equal(count(onB.text, 'resources/updated'), 0, 'no update published during the outage reached B, then or later');
      assert.equal(count(onB.text, 'tools/list_changed'), 0);
      onA.destroy();
      onB.destroy();
      onBProbe.destroy();
    } finally {
      redisChannels.unrelayed.unsubscribe(onUnrelayed);
    }
  });
});

test('messages that are not events are counted and ignored; a node skips its own', async () => {
  await withNodes(async (a, b) => {
    const onB = await listenOn(b, 2);
    const raw = new Redis(suite.server.url);
    try {
      for (const message of ['garbage', 'X not-json', 'X {"topic":"resource"}', 'X {"topic":"nope"}', 'X {"topic":"task","task":{}}', 'X null']) {
        await raw.publish(a.bus.channel, message);
      }
      // Looks like B's own message: B must not deliver it, A must.
      await raw.publish(a.bus.channel, `B {"topic":"resource","uri":"${URI}"}`);
      await eventually(() => a.bus.stats.received === 1, 2000, 'A to receive the forged event');
      assert.equal(a.bus.stats.malformed, 6);
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.equal(count(onB.text, 'resources/updated'), 0);
      assert.deepEqual(b.bus.stats, { relayed: 0, unrelayed: 0, received: 0, malformed: 6 });
      onB.destroy();
    } finally {
      raw.disconnect();
    }
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
  ];
  for (const [options, message] of cases) {
    assert.throws(() => new RedisBus(options as never), (error: unknown) => error instanceof InvalidOptionError && error.message === message);
  }
});

test.run();
