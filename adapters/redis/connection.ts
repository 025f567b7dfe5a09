// Shared plumbing of the Redis adapters: how a connection to Redis (one server, a Sentinel-managed
// primary, a Redis Cluster: see target.ts) is opened and closed, and how options are checked.
import { randomUUID } from 'node:crypto';
import type { Cluster as IoCluster, ClusterOptions, Command, Redis as IoRedis, RedisOptions } from 'ioredis';
import { InvalidOptionError } from '../../lib/errors.js';
import { options as validOptions, positiveInteger } from '../../lib/validate.js';
import { requirePeer } from '../peer.js';
import { resolveTarget, type RedisTarget } from './target.js';
import { reportConnection, type RedisComponent } from './telemetry.js';

export type { RedisClusterTarget, RedisTarget } from './target.js';

// ioredis is an optional peer dependency of the package: loaded here, so that importing
// `mcp-rx-streams/redis` without it fails with an error naming it and the command to install it.
const { Redis, Cluster } = requirePeer<typeof import('ioredis')>('ioredis', 'mcp-rx-streams/redis');

/** A connection of an adapter: to one Redis (a lone server or a Sentinel-managed primary), or to a Redis Cluster. */
export type RedisConnection = IoRedis | IoCluster;

/** How often a Cluster connection reads the map of slots again, in milliseconds. */
const SLOTS_REFRESH_INTERVAL = 1000;

/** Connections being closed on purpose (`closeConnection`): their end is reported `closed`, not `lost`. */
const closing = new WeakSet<RedisConnection>();

/**
 * Opens one ioredis connection to `target` with the adapter's own settings on top: a `Redis`, or a
 * `Cluster` for a Redis Cluster (the settings go where a Cluster reads them, see below).
 *
 * Every connection gets an `error` listener (ioredis prints unhandled connection errors to the
 * console otherwise; the adapters count failures where the command fails instead) and reports its
 * `ready` / `lost` transitions on {@link redisChannels.connection}, and `closed` when it is closed
 * on purpose ({@link closeConnection}: a shutdown is not an outage).
 *
 * Behind Sentinels, a connection that loses its primary (it died, or was demoted: Redis closes its
 * clients' connections then) asks the Sentinels for the new one when it reconnects; one that gets
 * a `READONLY` reply, or a blocked read `UNBLOCKED` by the role change, reconnects too. On a
 * Cluster, a command is sent to the node of its key's slot and follows the slot when it moves (a
 * replica promoted after its primary failed); the map of slots is read again every second and
 * whenever a node cannot be reached; a connection whose commands are sent once (`sentOnce`) is a
 * {@link SentOnceCluster}.
 */
export function openConnection(target: RedisTarget, component: RedisComponent, role: string, overrides: RedisOptions): RedisConnection {
  const resolved = resolveTarget(target);
  let connection: RedisConnection;
  if (typeof resolved === 'object' && 'cluster' in resolved) {
    const options = clusterOptions(resolved.clusterOptions ?? {}, overrides);
    connection =
      overrides.enableOfflineQueue === false
        ? // Typed as the class it extends, whose options ioredis types per reply mapping (a subclass fixes it).
          new (SentOnceCluster as typeof Cluster)([...resolved.cluster], { ...options, enableOfflineQueue: true })
        : new Cluster([...resolved.cluster], options);
  } else if (typeof resolved === 'string') {
    connection = new Redis(resolved, overrides);
  } else {
    connection = new Redis({ ...(resolved.sentinels === undefined ? {} : { reconnectOnError: demoted }), ...resolved, ...overrides });
  }
  connection.on('error', () => undefined);
  if ('isCluster' in connection && connection.isCluster) {
    // A node that cannot be reached (it died): the failed commands are counted where they fail, and
    // the map of slots is read again at once, so that the next commands go to the nodes serving
    // now (a replica promoted since) instead of the dead one until the next periodic refresh.
    const cluster = connection as IoCluster;
    cluster.on('node error', () => cluster.refreshSlotsCache());
    // And every second, so that a node that died is out of the map within a second of its
    // replica's promotion, even for a connection that met no redirection since (key-less commands
    // such as PUBLISH go to any node). Not ioredis's `slotsRefreshInterval` (5 s by default): its
    // timer can outlive a Cluster closed during a refresh and keep the process alive.
    const refresh = setInterval(() => cluster.refreshSlotsCache(), SLOTS_REFRESH_INTERVAL).unref();
    cluster.once('end', () => clearInterval(refresh));
  }
  // ioredis emits `close` after every failed reconnection attempt too: report the transition once.
  let up = false;
  connection.on('ready', () => {
    up = true;
    reportConnection(component, role, 'ready');
  });
  connection.on('close', () => {
    if (!up) return;
    up = false;
    reportConnection(component, role, closing.has(connection) ? 'closed' : 'lost');
  });
  return connection;
}

/**
 * A Cluster whose commands are sent now or not at all, as `enableOfflineQueue: false` means for one
 * Redis: refused while the Cluster is not connected. ioredis's own `enableOfflineQueue: false` also
 * refuses a command whose node's connection is still being opened (its first command, or the
 * first after a failover, opens it), so that two commands in a row to a fresh node would see the
 * second fail; here that node's connection holds it (for at most `commandTimeout`) instead.
 */
class SentOnceCluster extends Cluster {
  override sendCommand(command: Command, stream?: unknown, node?: unknown): unknown {
    // While connecting, the Cluster asks a node `CLUSTER INFO` itself.
    if (this.status !== 'ready' && command.name !== 'cluster') {
      command.reject(new Error('Connection is closed.'));
      return command.promise;
    }
    return super.sendCommand(command, stream as never, node);
  }
}

/** Sentinel: replies of a primary that has just become a replica; reconnecting finds the new primary. */
function demoted(error: Error): boolean {
  return error.message.startsWith('READONLY') || error.message.startsWith('UNBLOCKED');
}

/**
 * The adapter's connection settings (written for one `Redis`) as `Cluster` options on top of the
 * caller's: the offline queue, auto-pipelining and the reconnection backoff are the Cluster's own;
 * the rest applies to each node's connection. A command whose node's connection closed under it
 * may have run: ioredis would send it again to the slot's next owner, so a connection whose
 * commands must not be sent twice or late (`autoResendUnfulfilledCommands: false`) turns that off.
 */
function clusterOptions(base: ClusterOptions, overrides: RedisOptions): ClusterOptions {
  // (replyMapping: ours are the defaults, and a Cluster types it per instance.)
  const { enableOfflineQueue, enableAutoPipelining, retryStrategy, replyMapping: _replyMapping, ...perNode } = overrides;
  return {
    // Refreshed by openConnection instead.
    slotsRefreshInterval: 0,
    ...base,
    ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }),
    ...(enableAutoPipelining === undefined ? {} : { enableAutoPipelining }),
    ...(retryStrategy === undefined ? {} : { clusterRetryStrategy: retryStrategy }),
    // Not retried after a CLUSTERDOWN either: a retry waits in a queue while newer commands pass
    // it, so that the commands of a slot would no longer run in the order they were sent.
    ...(perNode.autoResendUnfulfilledCommands === false ? { retryDelayOnFailover: 0, retryDelayOnClusterDown: 0 } : {}),
    redisOptions: { ...base.redisOptions, ...perNode },
  };
}

/**
 * The settings of a connection whose commands are sent now or not at all: ioredis neither queues a
 * command while offline nor sends one again after a reconnect, and a command waits at most
 * `commandTimeout` milliseconds (none: no limit). Each caller redoes failed work from its own
 * state, and says where it opens one why a command sent late or twice would do harm.
 */
export function sentOnce(commandTimeout: number | undefined, maxReconnectDelay: number): RedisOptions {
  return { enableOfflineQueue: false, autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 0, commandTimeout, retryStrategy: backoff(maxReconnectDelay) };
}

/**
 * The settings of a pub/sub subscriber connection: it waits for Redis as long as it takes (a
 * subscriber has no command to give up on). Its channels are subscribed again after every
 * reconnection by {@link subscribeChannels}, not by ioredis's `autoResubscribe`: ioredis 6.0 sends
 * that SUBSCRIBE without a rejection handler, so a connection closed (or lost again) while it is
 * in flight ended the process with an unhandled "Connection is closed" (redis/ioredis#2187).
 */
export function subscriberOptions(maxReconnectDelay: number): RedisOptions {
  return { autoResubscribe: false, maxRetriesPerRequest: null, retryStrategy: backoff(maxReconnectDelay) };
}

/**
 * Subscribes `connection` (made with {@link subscriberOptions}) to `channels` each time it becomes
 * ready, the first time and after every reconnection, each SUBSCRIBE with a rejection handler (a
 * failed one is redone at the next reconnection). A Redis Cluster's subscriber moves between nodes
 * and subscribes again by itself (with handlers): there it is subscribed once.
 * @returns resolves once `channels` are subscribed the first time; rejects when the connection
 *   ends (closed) before that.
 */
export function subscribeChannels(connection: RedisConnection, channels: readonly string[]): Promise<void> {
  if ('isCluster' in connection && connection.isCluster) return connection.subscribe(...channels).then(() => undefined);
  return new Promise<void>((resolve, reject) => {
    const subscribe = () => void connection.subscribe(...channels).then(() => resolve(), () => undefined);
    connection.on('ready', subscribe);
    connection.once('end', () => reject(new Error(`the Redis connection closed before ${channels.join(', ')} could be subscribed`)));
    if (connection.status === 'ready') subscribe();
  });
}

/** Resolves once `connection` is ready (at once when it already is). */
export function whenReady(connection: RedisConnection): Promise<void> {
  if (connection.status === 'ready') return Promise.resolve();
  return new Promise<void>((resolve) => connection.once('ready', () => resolve()));
}

/** Reconnect backoff: 25 ms doubling up to `max` milliseconds, forever. */
export function backoff(max: number): (times: number) => number {
  return (times) => Math.min(25 * 2 ** Math.min(times, 16), max);
}

/** Drops a connection at once, on purpose (one blocked in a command that would not return): reported `closed`. */
export function dropConnection(connection: RedisConnection): void {
  closing.add(connection);
  connection.disconnect();
}

/** Closes a connection: waits for the replies still due when it is up, drops it otherwise. */
export async function closeConnection(connection: RedisConnection): Promise<void> {
  closing.add(connection);
  if (connection.status === 'ready') {
    try {
      await connection.quit();
      return;
    } catch {
      // Fall through: the connection broke while quitting.
    }
  }
  connection.disconnect();
}

/**
 * The options object of a Redis class or factory (`name`): required, its keys among `known`.
 * @throws InvalidOptionError naming `<name> options`, or the unknown option.
 */
export function checkOptions<O extends { readonly redis: RedisTarget }>(name: string, options: unknown, known: readonly Exclude<keyof O & string, 'redis'>[]): void {
  validOptions(`${name} options`, options, ['redis', ...known], { like: "{ redis: 'redis://127.0.0.1:6379' }" });
}

/**
 * The `redis` option: a {@link RedisTarget}, checked before anything connects.
 * @throws InvalidOptionError naming `redis` (or the part of it) and saying how to write it.
 */
export function checkTarget(value: unknown): RedisTarget {
  return resolveTarget(value);
}

export function checkName(option: string, value: unknown, fallback: string): string {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || value === '' || /\s/.test(value)) {
    throw new InvalidOptionError(option, 'a non-empty string without whitespace', value);
  }
  return value;
}

export function checkNodeId(value: unknown): string {
  return checkName('nodeId', value, randomUUID());
}

export function checkMilliseconds(option: string, value: unknown, fallback: number, min = 1): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || (value as number) < min || (value as number) > 2_147_483_647) {
    throw new InvalidOptionError(option, `a positive integer of milliseconds (at least ${min})`, value);
  }
  return value as number;
}

export function checkCount(option: string, value: unknown, fallback: number): number {
  return value === undefined ? fallback : positiveInteger(option, value);
}

/**
 * `{value}`: a Redis Cluster hash tag, so that keys holding it are in one slot (only the part
 * between the first `{` and the next `}` is hashed). A `}` in `value` would end the tag early
 * and `%` escapes it, so both are percent-encoded: distinct values stay distinct keys. An empty
 * value would be no tag at all (`{}` hashes the whole key): it is written `{%}`, which no escaped
 * value can be.
 */
export function hashTag(value: string): string {
  return value === '' ? '{%}' : `{${value.replace(/[%}]/g, (c) => (c === '%' ? '%25' : '%7D'))}}`;
}

/**
 * A key next to `key`, in the same Redis Cluster slot: `key` + `suffix` when `key` has a hash tag
 * of its own, else `{key}` + `suffix` (whose tag hashes exactly like the whole of `key`).
 * @throws InvalidOptionError naming `option` when `key` has a `}` but no hash tag (no form of it
 *   can share its slot): the message says to give it a tag.
 */
export function keyBeside(option: string, key: string, suffix: string): string {
  const open = key.indexOf('{');
  const close = open < 0 ? -1 : key.indexOf('}', open + 1);
  if (close > open + 1) return `${key}${suffix}`;
  if (!key.includes('}')) return `{${key}}${suffix}`;
  throw new InvalidOptionError(option, 'a name whose braces, if any, enclose a Redis Cluster hash tag', key, `write e.g. "{${key.replace(/[{}]/g, '')}}" so that the keys next to it can share its slot`);
}

/**
 * Whether `error` only says that Redis is changing hands (a failover under way, a node or the
 * connection gone, a replica still loading): the work is redone once it has, so it is no news.
 */
export function isHandover(error: unknown): boolean {
  const message = error instanceof Error ? error.message : '';
  return /^(CLUSTERDOWN|TRYAGAIN|LOADING|MASTERDOWN|READONLY|UNBLOCKED|MOVED|ASK)\b/.test(message) || message === 'Connection is closed.' || message.startsWith('Too many Cluster redirections');
}
