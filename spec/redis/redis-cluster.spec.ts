// The fleet on a Redis Cluster (issue 31): three primaries with a replica each, made with
// `redis-server --cluster-enabled yes` and `redis-cli --cluster create`, the nodes given its
// redis+cluster:// URL. First where the parts' keys land (every script's keys in one slot), then the
// primary serving the hub stream is SIGKILLed while both nodes publish changes; its replica takes
// over and nothing is lost: see spec/helpers/haFleet.ts for the scenario and what it checks.
// Prints what the failover cost.
import { strict as assert } from 'node:assert';
import { Cluster } from 'ioredis';
import { test } from 'uvu';
import { sessionKeys } from '../../adapters/redis/sessionStore.js';
import { failoverScenario, startHaNode, type HaNode } from '../helpers/haFleet.js';
import { eventually, LISTEN_HEADERS, listenBody, SseConnection } from '../helpers/http.js';
import { GetStream, initialize } from '../helpers/legacy.js';
import { startRedisCluster, type RedisClusterSet } from '../helpers/redis.js';

let set: RedisClusterSet;
let raw: Cluster;
const nodes: HaNode[] = [];

test.before(async () => {
  set = await startRedisCluster({ primaries: 3, nodeTimeout: 1000 });
  raw = new Cluster([{ host: '127.0.0.1', port: set.ports[0]! }], { redisOptions: { maxRetriesPerRequest: 2 } });
  raw.on('error', () => undefined);
});

test.after(async () => {
  await Promise.all(nodes.splice(0).map((node) => node.close()));
  raw?.disconnect();
  await set?.close();
});

test("on a Redis Cluster every part's keys share a slot per script: the hub stream and its epoch, a principal's set and heartbeats, a session's record and log", async () => {
  for (const nodeId of ['A', 'B']) nodes.push(await startHaNode(nodeId, set.url, 'slots'));
  const [a, b] = nodes as [HaNode, HaNode];
  const listen = (node: HaNode, id: number) => SseConnection.open(node.server.url, listenBody(id, { toolsListChanged: true }), { ...LISTEN_HEADERS, 'x-principal': 'alice' });
  const [onA, onB] = [await listen(a, 1), await listen(b, 2)];
  a.server.hub.notifyToolsChanged();
  b.server.hub.notifyToolsChanged();
  for (const conn of [onA, onB]) await conn.until((c) => c.text.split('tools/list_changed').length === 3, 5000, 'both changes on both nodes');
  const { sessionId } = await initialize(a.server.url);
  const get = GetStream.open(b.server.url, sessionId);
  await get.response;
  await eventually(() => b.principals.stats.recorded === 1 && a.principals.stats.recorded === 1, 5000, 'both listens recorded');
  const { record, log } = sessionKeys('slots:session', sessionId);
  const together = [
    ['slots:hub', '{slots:hub}:epoch'],
    ['slots:cap:principal:{alice}', 'slots:cap:principal:{alice}:nodes'],
    [record, log],
  ];
  const slotOf = (key: string) => raw.call('CLUSTER', 'KEYSLOT', key) as Promise<number>;
  for (const keys of together) {
    const slots = await Promise.all(keys.map(slotOf));
    assert.equal(new Set(slots).size, 1, `${keys.join(' and ')} in one slot: ${slots.join(', ')}`);
    for (const key of keys.slice(0, 2)) if (key !== log) assert.equal(await raw.exists(key), 1, `${key} exists`);
  }
  // Spread over the cluster: not every part on one primary.
  const primaries = new Set(await Promise.all(together.map(([key]) => set.primaryOf(key!))));
  assert.ok(primaries.size >= 2, 'the parts are spread over the primaries');
  get.destroy();
  onA.destroy();
  onB.destroy();
  await Promise.all(nodes.splice(0).map((node) => node.close()));
});

test('a primary killed mid-stream, its replica taking over: every change reaches every listen stream once, the session keeps consecutive ids, cap, lease and session bus go on', async () => {
  for (const nodeId of ['A', 'B']) nodes.push(await startHaNode(nodeId, set.url, 'ha'));
  const [a, b] = nodes as [HaNode, HaNode];
  let old = 0;
  let now = 0;
  const report = await failoverScenario(
    a,
    b,
    async () => {
      old = await set.primaryOf('ha:hub');
      await set.kill(old);
    },
    async () => {
      now = await set.failedOver('ha:hub', old, 20_000);
    },
    async (principal) => {
      const key = `ha:cap:principal:{${principal}}`;
      return { set: await raw.zrange(key, '0', '-1', 'WITHSCORES'), beats: await raw.hgetall(`${key}:nodes`), time: await raw.call('TIME'), slotOn: await set.primaryOf(key), killed: old, promoted: now };
    },
  );
  process.stdout.write(`\n  Redis Cluster failover (127.0.0.1:${old} -> ${now}): ${JSON.stringify(report)}\n`);
});

test.run();
