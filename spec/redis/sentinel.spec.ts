// The fleet on Redis as people run it for high availability (issue 31): a primary with a replica
// and three Sentinels (Debian's `redis-server --sentinel`), the nodes given the Sentinels'
// redis+sentinel:// URL. The primary is SIGKILLed while both nodes publish changes; the Sentinels
// promote the replica, every part of each node follows it, and nothing is lost; then the old
// primary comes back as a replica and a failover is asked for (maintenance), with the same checks.
// See spec/helpers/haFleet.ts for the scenario and what it checks. Prints what each failover cost.
import { strict as assert } from 'node:assert';
import { test } from 'uvu';
import { failoverScenario, startHaNode, type HaNode } from '../helpers/haFleet.js';
import { startSentinelSet, type SentinelSet } from '../helpers/redis.js';

let set: SentinelSet;
const nodes: HaNode[] = [];

test.before(async () => {
  set = await startSentinelSet({ downAfter: 1000, failoverTimeout: 5000 });
});

test.after(async () => {
  await Promise.all(nodes.splice(0).map((node) => node.close()));
  await set?.close();
});

test('a Sentinel failover mid-stream: every change reaches every listen stream once, the session keeps consecutive ids, cap, lease and session bus follow the new primary', async () => {
  for (const nodeId of ['A', 'B']) nodes.push(await startHaNode(nodeId, set.url, 'ha'));
  const [a, b] = nodes as [HaNode, HaNode];
  let old = 0;
  const report = await failoverScenario(
    a,
    b,
    async () => {
      old = await set.primary();
      assert.equal(old, set.dataPorts[0]);
      await set.kill(old);
    },
    async () => {
      assert.equal(await set.failedOver(old, 20_000), set.dataPorts[1], 'the replica is the new primary');
    },
  );
  process.stdout.write(`\n  Sentinel failover: ${JSON.stringify(report)}\n`);
  await Promise.all(nodes.splice(0).map((node) => node.close()));
});

test('a failover asked for (SENTINEL FAILOVER, for maintenance) mid-stream: the same, and no legacy frame lost', async () => {
  // The primary killed above comes back empty, as a replica of the one that replaced it.
  await set.restartAsReplica(set.dataPorts[0]!);
  for (const nodeId of ['A', 'B']) nodes.push(await startHaNode(nodeId, set.url, 'planned'));
  const [a, b] = nodes as [HaNode, HaNode];
  const report = await failoverScenario(
    a,
    b,
    async () => {
      assert.equal(await set.failover(20_000), set.dataPorts[0], 'the replica is the new primary');
    },
    async () => undefined,
  );
  process.stdout.write(`\n  Sentinel failover asked for: ${JSON.stringify(report)}\n`);
  // The old primary stops taking writes while its replica catches up (CLIENT PAUSE): they wait
  // rather than fail.
  assert.equal(report.legacyMissed, 0, 'every change has its frame on the GET stream');
});

test.run();
