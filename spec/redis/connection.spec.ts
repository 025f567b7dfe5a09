// redisChannels.connection against a real redis-server: an outage is `lost`, a part closed on
// purpose (a shutdown) is `closed`, so that nothing reports a clean shutdown as Redis going down.
import { strict as assert } from 'node:assert';
import { test } from 'uvu';
import { RedisBus } from '../../adapters/redis/bus.js';
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

test.run();
