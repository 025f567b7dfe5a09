// Shared plumbing of the Redis adapters: how a connection is opened and options are checked.
import { randomUUID } from 'node:crypto';
import type { Redis as IoRedis, RedisOptions } from 'ioredis';
import { InvalidOptionError } from '../../lib/errors.js';
import { options as validOptions, positiveInteger } from '../../lib/validate.js';
import { requirePeer } from '../peer.js';
import { reportConnection, type RedisComponent } from './telemetry.js';

// ioredis is an optional peer dependency of the package: loaded here, so that importing
// `mcp-rx-streams/redis` without it fails with an error naming it and the command to install it.
const { Redis } = requirePeer<typeof import('ioredis')>('ioredis', 'mcp-rx-streams/redis');
type Redis = IoRedis;

/** Where Redis is: a `redis://` / `rediss://` URL, or ioredis connection options. */
export type RedisTarget = string | RedisOptions;

/** Connections being closed on purpose (`closeConnection`): their end is reported `closed`, not `lost`. */
const closing = new WeakSet<Redis>();

/**
 * Opens one ioredis connection to `target` with the adapter's own settings on top.
 *
 * Every connection gets an `error` listener (ioredis prints unhandled connection errors to the
 * console otherwise; the adapters count failures where the command fails instead) and reports its
 * `ready` / `lost` transitions on {@link redisChannels.connection}, and `closed` when it is closed
 * on purpose ({@link closeConnection}: a shutdown is not an outage).
 */
export function openConnection(target: RedisTarget, component: RedisComponent, role: string, overrides: RedisOptions): Redis {
  const connection = typeof target === 'string' ? new Redis(target, overrides) : new Redis({ ...target, ...overrides });
  connection.on('error', () => undefined);
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
 * The settings of a connection whose commands are sent now or not at all: ioredis neither queues a
 * command while offline nor sends one again after a reconnect, and a command waits at most
 * `commandTimeout` milliseconds (none: no limit). Each caller redoes failed work from its own
 * state, and says where it opens one why a command sent late or twice would do harm.
 */
export function sentOnce(commandTimeout: number | undefined, maxReconnectDelay: number): RedisOptions {
  return { enableOfflineQueue: false, autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 0, commandTimeout, retryStrategy: backoff(maxReconnectDelay) };
}

/**
 * The settings of a pub/sub subscriber connection: it subscribes its channels again after every
 * reconnection, and waits for Redis as long as it takes (a subscriber has no command to give up on).
 */
export function subscriberOptions(maxReconnectDelay: number): RedisOptions {
  return { autoResubscribe: true, maxRetriesPerRequest: null, retryStrategy: backoff(maxReconnectDelay) };
}

/** Resolves once `connection` is ready (at once when it already is). */
export function whenReady(connection: Redis): Promise<void> {
  if (connection.status === 'ready') return Promise.resolve();
  return new Promise<void>((resolve) => connection.once('ready', () => resolve()));
}

/** Reconnect backoff: 25 ms doubling up to `max` milliseconds, forever. */
export function backoff(max: number): (times: number) => number {
  return (times) => Math.min(25 * 2 ** Math.min(times, 16), max);
}

/** Drops a connection at once, on purpose (one blocked in a command that would not return): reported `closed`. */
export function dropConnection(connection: Redis): void {
  closing.add(connection);
  connection.disconnect();
}

/** Closes a connection: waits for the replies still due when it is up, drops it otherwise. */
export async function closeConnection(connection: Redis): Promise<void> {
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

export function checkTarget(value: unknown): RedisTarget {
  if (typeof value === 'string' ? value === '' : value === null || typeof value !== 'object') {
    throw new InvalidOptionError('redis', 'a redis:// URL or an ioredis options object', value);
  }
  return value as RedisTarget;
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
