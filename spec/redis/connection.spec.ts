// redisChannels.connection against a real redis-server: an outage is `lost`, a part closed on
// purpose (a shutdown) is `closed`, so that nothing reports a clean shutdown as Redis going down.
import { strict as assert } from 'node:assert';
import { test } from 'uvu';
import { RedisBus } from '../../adapters/redis/bus.js';
import { checkTarget, hashTag, keyBeside } from '../../adapters/redis/connection.js';
import { InvalidOptionError } from '../../lib/errors.js';
import { RedisSessionBus } from '../../adapters/redis/sessionBus.js';
import { redisChannels, type ConnectionEvent } from '../../adapters/redis/telemetry.js';
import { eventually } from '../helpers/http.js';
import { redisForSuite } from '../helpers/redis.js';
import { collecting } from '../helpers/telemetry.js';

const suite = redisForSuite(test);

test('a connection lost to an outage is lost, then ready again; closing the part reports closed, never lost', async () => {
  await collecting<ConnectionEvent>(redisChannels.connection, async (events) => {
    const bus = new RedisSessionBus({ redis: suite.server.url, nodeId: 'n', maxReconnectDelay: 50 });
    await bus.ready();
    const statuses = () => events.filter((event) => event.role === 'subscriber').map((event) => event.status);
    assert.deepEqual(statuses(), ['ready']);
    await suite.server.stop();
    await eventually(() => statuses().length === 2, 3000, 'the outage');
    await suite.server.restart();
    await eventually(() => statuses().length === 3, 5000, 'the reconnection');
    // The publisher reconnects on its own backoff: both up again before the close.
    await eventually(() => events.filter((event) => event.role === 'publisher').at(-1)?.status === 'ready', 5000, "the publisher's reconnection");
    await bus.close();
    await eventually(() => statuses().length === 4, 3000, 'the close');
    assert.deepEqual(statuses(), ['ready', 'lost', 'ready', 'closed']);
    assert.deepEqual(
      events.filter((event) => event.role === 'publisher').map((event) => event.status).slice(-1),
      ['closed'],
    );
  });
});

test('a hub bus closed: its reader, blocked in XREAD and dropped rather than asked to quit, reports closed too', async () => {
  await collecting<ConnectionEvent>(redisChannels.connection, async (events) => {
    const bus = new RedisBus({ redis: suite.server.url, nodeId: 'n' });
    await bus.ready();
    await eventually(() => events.filter((event) => event.status === 'ready').length === 2, 3000, 'both connections');
    await bus.close();
    await eventually(() => events.length === 4, 3000, 'both closes');
    assert.deepEqual(events.filter((event) => event.status !== 'ready').map((event) => [event.role, event.status]).sort(), [
      ['publisher', 'closed'],
      ['reader', 'closed'],
    ]);
  });
});

test('redis+sentinel:// and redis+cluster:// URLs are read as ioredis Sentinel and Cluster settings; redis:// is left to ioredis', () => {
  assert.equal(checkTarget('redis://:pw@10.0.0.5:6379/2'), 'redis://:pw@10.0.0.5:6379/2');
  assert.deepEqual(checkTarget('redis+sentinel://10.0.0.5,10.0.0.6:26380,[::1]:26381/mymaster'), {
    sentinels: [{ host: '10.0.0.5', port: 26379 }, { host: '10.0.0.6', port: 26380 }, { host: '::1', port: 26381 }],
    name: 'mymaster',
  });
  assert.deepEqual(checkTarget('rediss+sentinel://app:p%40ss@s1:26379/cache/3?sentinelPassword=sp'), {
    sentinels: [{ host: 's1', port: 26379 }],
    name: 'cache',
    db: 3,
    username: 'app',
    password: 'p@ss',
    sentinelPassword: 'sp',
    tls: {},
    sentinelTLS: {},
    enableTLSForSentinelMode: true,
  });
  assert.deepEqual(checkTarget('redis+cluster://:secret@10.0.0.5:7000,10.0.0.6'), {
    cluster: [{ host: '10.0.0.5', port: 7000 }, { host: '10.0.0.6', port: 6379 }],
    clusterOptions: { redisOptions: { password: 'secret' } },
  });
  assert.deepEqual(checkTarget('REDIS+CLUSTER://n1:7000/'), { cluster: [{ host: 'n1', port: 7000 }], clusterOptions: {} });
  const options = { sentinels: [{ host: 's1', port: 26379 }], name: 'mymaster' };
  assert.equal(checkTarget(options), options);
  const cluster = { cluster: [{ host: 'n1', port: 7000 }] };
  assert.equal(checkTarget(cluster), cluster);
});

test('a target that cannot work is refused before connecting, saying how to write it (without the password)', () => {
  const cases: [unknown, string][] = [
    ['redis-sentinel://s1:26379/mymaster', 'redis must be a redis://, redis+sentinel:// or redis+cluster:// URL, got "redis-sentinel://s1:26379/mymaster": write a Sentinel set as redis+sentinel://10.0.0.5:26379,10.0.0.6:26379,10.0.0.7:26379/mymaster'],
    ['http://:pw@h:1', 'redis must be a redis://, redis+sentinel:// or redis+cluster:// URL, got "http://:***@h:1": use redis:// or rediss:// for one server, redis+sentinel://10.0.0.5:26379,10.0.0.6:26379,10.0.0.7:26379/mymaster for Sentinel, redis+cluster://10.0.0.5:6379,10.0.0.6:6379,10.0.0.7:6379 for a Redis Cluster'],
    ['redis+sentinel://:pw@s1:26379', "redis must be a redis+sentinel:// URL whose path is /<primary name>[/<db>], got \"redis+sentinel://:***@s1:26379\": write redis+sentinel://10.0.0.5:26379,10.0.0.6:26379,10.0.0.7:26379/mymaster (mymaster: the name in the Sentinels' `sentinel monitor` line)"],
    ['redis+sentinel://s1/m/x', "redis must be a redis+sentinel:// URL whose path is /<primary name>[/<db>], got \"redis+sentinel://s1/m/x\": write redis+sentinel://10.0.0.5:26379,10.0.0.6:26379,10.0.0.7:26379/mymaster (mymaster: the name in the Sentinels' `sentinel monitor` line)"],
    ['redis+sentinel://s1/m?timeout=5', 'redis must be a redis+sentinel:// URL whose only query parameters are sentinelPassword and sentinelUsername, got "redis+sentinel://s1/m?timeout=5": timeout is not read here: pass ioredis options { sentinels, name, ... } for more'],
    ['redis+sentinel://s1:99999/m', 'redis must be a list of host[:port] addresses separated by commas, got "redis+sentinel://s1:99999/m": "s1:99999" is not one; write redis+sentinel://10.0.0.5:26379,10.0.0.6:26379,10.0.0.7:26379/mymaster'],
    ['redis+cluster://n1,,n2', 'redis must be a list of host[:port] addresses separated by commas, got "redis+cluster://n1,,n2": "" is not one; write redis+cluster://10.0.0.5:6379,10.0.0.6:6379,10.0.0.7:6379'],
    ['redis+cluster://n1:7000/1', 'redis must be a redis+cluster:// URL without a path, got "redis+cluster://n1:7000/1": a Redis Cluster has only database 0: write redis+cluster://10.0.0.5:6379,10.0.0.6:6379,10.0.0.7:6379'],
    ['redis+cluster://n1:7000?x=1', 'redis must be a redis+cluster:// URL without query parameters, got "redis+cluster://n1:7000?x=1": x is not read here: pass { cluster: [...], clusterOptions } for more ioredis Cluster options'],
    [{ sentinels: [{ host: 's1', port: 26379 }] }, "redis.name must be the name of the primary the Sentinels watch (their `sentinel monitor <name> …` line), e.g. 'mymaster', got undefined"],
    [{ sentinels: [], name: 'm' }, "redis.sentinels must be a non-empty array of Sentinel addresses such as [{ host: '10.0.0.5', port: 26379 }], got []"],
    [{ cluster: [] }, "redis.cluster must be a non-empty array of cluster nodes such as [{ host: '10.0.0.5', port: 6379 }], got []"],
    [null, 'redis must be a redis:// URL or an ioredis options object, got null'],
  ];
  for (const [target, message] of cases) {
    assert.throws(() => checkTarget(target), (error: unknown) => error instanceof InvalidOptionError && error.message === message, message);
  }
  // The parts check it at construction, like every other option.
  assert.throws(() => new RedisBus({ redis: 'redis+cluster://' }), InvalidOptionError);
});

test('hash tags: the keys next to a key share its Redis Cluster slot, whatever the name holds', () => {
  assert.equal(hashTag('alice'), '{alice}');
  assert.equal(hashTag('a}b%c'), '{a%7Db%25c}', 'a } cannot end the tag early; % is escaped so distinct names stay distinct');
  assert.equal(hashTag(''), '{%}', 'never {}, which is no tag at all');
  assert.equal(keyBeside('channel', 'mcp-rx-streams:hub', ':epoch'), '{mcp-rx-streams:hub}:epoch');
  assert.equal(keyBeside('channel', 'app:{hub}', ':epoch'), 'app:{hub}:epoch');
  assert.throws(
    () => keyBeside('channel', 'a}b', ':epoch'),
    (error: unknown) => error instanceof InvalidOptionError && error.message === 'channel must be a name whose braces, if any, enclose a Redis Cluster hash tag, got "a}b": write e.g. "{ab}" so that the keys next to it can share its slot',
  );
});

test.run();
