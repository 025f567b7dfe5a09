// The `mcp-rx-streams/redis` entry: a fleet of servers on one Redis (issue 5).

/* Hub bus */
export { RedisBus } from './bus.js';
export type { RedisBusOptions, RedisBusStats } from './bus.js';

/* Watch lease */
export { RedisLease } from './lease.js';
export type { RedisLeaseOptions } from './lease.js';

/* Cluster-wide per-principal cap */
export { RedisPrincipalCap } from './principals.js';
export type { RedisPrincipalCapOptions, RedisPrincipalCapStats } from './principals.js';

/* Legacy sessions across the fleet: records, replay, commands */
export { RedisSessionStore } from './sessionStore.js';
export type { RedisSessionStoreOptions } from './sessionStore.js';
export { redisEventLogs } from './eventLog.js';
export type { RedisEventLogs, RedisEventLogsOptions } from './eventLog.js';
export { RedisSessionBus } from './sessionBus.js';
export type { RedisSessionBusOptions, RedisSessionBusStats } from './sessionBus.js';

/* Connections and telemetry */
export type { RedisClusterTarget, RedisTarget } from './target.js';
export { redisChannels } from './telemetry.js';
export type { ConnectionEvent, RedisComponent, ResyncEvent, UnrelayedEvent } from './telemetry.js';
