// The fleet on Redis as people run it for high availability (issue 31): a primary with a replica
// and three Sentinels (Debian's `redis-server --sentinel`), the nodes given the Sentinels'
// redis+sentinel:// URL. The primary is SIGKILLed while both nodes publish changes; the Sentinels
// promote the replica, every part of each node follows it, and nothing is lost: see
// spec/helpers/haFleet.ts for the scenario and what it checks. Prints what the failover cost.
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
  await Promise.all(nodes.map((node) => node.close()));
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
});

test.run();
