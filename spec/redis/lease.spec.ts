// RedisLease against a real redis-server: contenders in this process and, for a holder that
// dies without a word, in a child process killed with SIGKILL.
import { strict as assert } from 'node:assert';
import { test } from 'uvu';
import { RedisLease } from '../../adapters/redis/lease.js';
import { InvalidOptionError } from '../../lib/errors.js';
import { eventually } from '../helpers/http.js';
import { redisForSuite } from '../helpers/redis.js';
import { runFixture } from './fixtures/child.js';

const suite = redisForSuite(test);

const TTL = 600;
let keys = 0;
const freshKey = () => `lease-${keys++}`;
const holders = (leases: readonly RedisLease[]) => leases.filter((lease) => lease.held).map((lease) => lease.nodeId);

test('one contender holds the lease at a time; closing the holder hands it over within a period', async () => {
  const key = freshKey();
  const leases = ['n1', 'n2', 'n3'].map((nodeId) => new RedisLease({ redis: suite.server.url, key, nodeId, ttl: TTL }));
  const changes: string[] = [];
  for (const lease of leases) lease.held$.subscribe((held) => changes.push(`${lease.nodeId}:${held}`));
  try {
    await eventually(() => holders(leases).length === 1, 2000, 'a holder');
    // Over three renewal periods: the holder keeps it, nobody else ever holds it.
    await new Promise((resolve) => setTimeout(resolve, TTL + 100));
    const [first] = holders(leases);
    assert.deepEqual(holders(leases), [first]);
    assert.equal(await suite.raw.get(key), first);
    assert.deepEqual(changes.filter((c) => c.endsWith(':true')), [`${first}:true`]);

    const holder = leases.find((lease) => lease.nodeId === first)!;
    const closedAt = Date.now();
    await holder.close();
    assert.equal(holder.held, false);
    assert.notEqual(await suite.raw.get(key), first, 'released with compare-and-delete');
    const rest = leases.filter((lease) => lease !== holder);
    await eventually(() => holders(rest).length === 1, 2000, 'a new holder');
    assert.ok(Date.now() - closedAt <= TTL / 3 + 150, `handed over after ${Date.now() - closedAt} ms`);
    assert.equal(await suite.raw.get(key), holders(rest)[0]);
    assert.equal(changes.filter((c) => c.endsWith(':true')).length, 2);
  } finally {
    await Promise.all(leases.map((lease) => lease.close()));
  }
});

test('a holder killed with SIGKILL loses the lease to a survivor within ttl + ttl/3', async () => {
  const key = freshKey();
  const ttl = 1000;
  const child = runFixture('leaseHolder', [suite.server.url, key, String(ttl), 'doomed']);
  let survivor: RedisLease | undefined;
  try {
    // A child process under a loaded machine can take seconds to start: not what is measured here.
    await child.waitFor('held\n', 15_000);
    survivor = new RedisLease({ redis: suite.server.url, key, nodeId: 'survivor', ttl });
    await new Promise((resolve) => setTimeout(resolve, ttl / 2));
    assert.equal(survivor.held, false, 'the survivor waits while the child renews');
    const killedAt = Date.now();
    await child.kill();
    await eventually(() => survivor!.held, 3000, 'the survivor to take the lease');
    const after = Date.now() - killedAt;
    assert.ok(after <= ttl + ttl / 3 + 200, `taken over after ${after} ms`);
    assert.equal(await suite.raw.get(key), 'survivor');
  } finally {
    await child.kill();
    await survivor?.close();
  }
});

test('a holder cut off from Redis gives the lease up before it can expire, and someone holds it again after Redis returns', async () => {
  const key = freshKey();
  const leases = ['x', 'y'].map((nodeId) => new RedisLease({ redis: suite.server.url, key, nodeId, ttl: TTL }));
  try {
    await eventually(() => holders(leases).length === 1, 2000, 'a holder');
    const stoppedAt = Date.now();
    await suite.server.stop();
    await eventually(() => holders(leases).length === 0, TTL, 'the holder to give up');
    assert.ok(Date.now() - stoppedAt < TTL, `gave up after ${Date.now() - stoppedAt} ms, before its key could expire`);
    await suite.server.restart();
    await eventually(() => holders(leases).length === 1, 2000, 'a holder after the restart');
  } finally {
    await Promise.all(leases.map((lease) => lease.close()));
  }
});

test("the holders' state: what a holder saves, the next one reads; a contender that does not hold the lease cannot write over it", async () => {
  const key = freshKey();
  const stateKey = `{${key}}:state`;
  const [a, b] = ['a', 'b'].map((nodeId) => new RedisLease({ redis: suite.server.url, key, nodeId, ttl: TTL }));
  let c: RedisLease | undefined;
  try {
    await eventually(() => holders([a!, b!]).length === 1, 2000, 'a holder');
    const [holder, next] = a!.held ? [a!, b!] : [b!, a!];
    assert.equal(await holder.state(), undefined, 'nothing saved yet');
    holder.saveState([['one', '1'], ['two', '2'], ['three', '3']]);
    holder.saveState([['two', null], ['three', '3b']]);
    assert.deepEqual(await holder.state(), new Map([['one', '1'], ['three', '3b']]), 'its own saves first');
    assert.equal(await suite.raw.hget(stateKey, 'one'), '1', "beside the lease's key, in its hash slot");
    assert.ok((await suite.raw.pttl(stateKey)) > 3_600_000, 'kept long after the lease');
    holder.saveState([['four', '4']]);
    await holder.close();
    await eventually(() => next.held, 2000, 'the next holder');
    assert.deepEqual(await next.state(), new Map([['one', '1'], ['three', '3b'], ['four', '4']]), 'saved before the release');
    // A contender that does not hold the lease: its entries are refused, and dropped.
    c = new RedisLease({ redis: suite.server.url, key, nodeId: 'c', ttl: TTL });
    c.saveState([['one', 'from c']]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(await c.state(), new Map([['one', '1'], ['three', '3b'], ['four', '4']]));
    next.saveState([['five', '5']]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal((await c.state())?.get('five'), '5', "the holder's are taken");
    await suite.raw.del(stateKey);
    assert.equal(await next.state(), undefined, 'lost with Redis: none');
  } finally {
    await Promise.all([a!.close(), b!.close(), c?.close()]);
  }
});

test('held$ replays the current value, completes on close; options are validated', async () => {
  const lease = new RedisLease({ redis: suite.server.url, key: freshKey(), ttl: TTL });
  try {
    await eventually(() => lease.held, 2000, 'the lease');
    const seen: boolean[] = [];
    let completed = false;
    lease.held$.subscribe({ next: (held) => seen.push(held), complete: () => (completed = true) });
    await lease.close();
    assert.deepEqual(seen, [true, false]);
    assert.ok(completed);
  } finally {
    await lease.close();
  }
  const cases: [Record<string, unknown>, string][] = [
    [{ redis: suite.server.url, ttl: 29 }, 'ttl must be a positive integer of milliseconds (at least 30), got 29'],
    [{ redis: suite.server.url, key: '' }, 'key must be a non-empty string without whitespace, got ""'],
    [{ redis: 42 }, 'redis must be a redis:// URL or an ioredis options object, got 42'],
  ];
  for (const [options, message] of cases) {
    assert.throws(() => new RedisLease(options as never), (error: unknown) => error instanceof InvalidOptionError && error.message === message);
  }
});

test.run();
