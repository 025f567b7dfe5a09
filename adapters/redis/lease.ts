import { performance } from 'node:perf_hooks';
import { BehaviorSubject, exhaustMap, fromEvent, merge, timer, type Observable, type Subscription } from 'rxjs';
import { checkMilliseconds, checkName, checkNodeId, checkOptions, checkTarget, closeConnection, openConnection, type RedisConnection, type RedisTarget, sentOnce } from './connection.js';

/** Options of {@link RedisLease}. */
export interface RedisLeaseOptions {
  /** The Redis every contender shares: a `redis://` URL or ioredis options. Required. */
  readonly redis: RedisTarget;
  /** The Redis key naming the lease (e.g. one per watched folder); defaults to `mcp-rx-streams:lease`. */
  readonly key?: string;
  /** This contender's id, unique among them (no whitespace); defaults to a random UUID. */
  readonly nodeId?: string;
  /**
   * How long the lease outlives its holder's last renewal, in milliseconds; defaults to 5000, at
   * least 30. The holder renews every `ttl / 3`; when it dies, another contender holds the lease
   * within about `ttl + ttl / 3`.
   */
  readonly ttl?: number;
}

// Takes the lease when it is free, keeps it when it is ours: one script for acquire and renew.
const CLAIM = `
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if holder then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1`;

// Deletes the lease only if it is still ours (a late release must not free a successor's lease).
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

/**
 * A named lease in Redis that one contender holds at a time, e.g. "who watches this folder".
 *
 * Every contender tries every `ttl / 3` milliseconds to claim the key (`SET NX PX ttl` when free;
 * compare-and-extend when it already holds it). The holder renews for as long as it lives; when it
 * dies its key expires after `ttl` and the next contender's attempt takes it. `close()` releases
 * it at once (compare-and-delete), so a graceful handover takes one period.
 *
 * The holder gives the lease up on its own before Redis could hand it to someone else: when no
 * renewal has succeeded for `2 ttl / 3` (Redis unreachable, a slow reply), `held$` turns `false`,
 * one third of a ttl before the key can expire. Two holders at once are thus avoided as long as
 * the process is not paused for longer than that margin (a lease is not a fencing token: a job
 * that must never run twice needs one).
 *
 * @example
 * const lease = new RedisLease({ redis: 'redis://10.0.0.5:6379', key: 'mcp:watch:/srv/data' });
 * lease.held$.pipe(switchMap((held) => (held ? files.changes() : EMPTY))).subscribe(publish);
 * // on shutdown:
 * await lease.close();
 * @param options see {@link RedisLeaseOptions}.
 * @throws InvalidOptionError naming `RedisLease options` when `options` is not an object, else the option
 *   that is unknown, missing (`redis`) or has a value it cannot use (checked before connecting).
 */
export class RedisLease {
  /** This contender's id, the value stored under the key while it holds the lease. */
  readonly nodeId: string;
  /** The Redis key of the lease. */
  readonly key: string;
  /** Milliseconds the lease outlives its holder's last renewal. */
  readonly ttl: number;
  /** `true` while this contender holds the lease; emits the current value on subscribe, then each change; completes on `close()`. */
  readonly held$: Observable<boolean>;
  readonly #held = new BehaviorSubject(false);
  readonly #connection: RedisConnection;
  readonly #period: number;
  readonly #attempts: Subscription;
  /** `performance.now()` before which Redis will not hand the lease to anyone else. */
  #validUntil = 0;
  #closing: Promise<void> | undefined;

  constructor(options: RedisLeaseOptions) {
    checkOptions<RedisLeaseOptions>('RedisLease', options, ['key', 'nodeId', 'ttl']);
    const redis = checkTarget(options.redis);
    this.nodeId = checkNodeId(options.nodeId);
    this.key = checkName('key', options.key, 'mcp-rx-streams:lease');
    this.ttl = checkMilliseconds('ttl', options.ttl, 5000, 30);
    this.#period = Math.floor(this.ttl / 3);
    this.held$ = this.#held.asObservable();
    this.#connection = openConnection(redis, 'lease', 'commands', {
      // An attempt is made now or not at all: a claim queued while offline and sent later would
      // take the lease behind this contender's back.
      ...sentOnce(this.#period, this.#period),
    });
    this.#attempts = merge(timer(0, this.#period), fromEvent(this.#connection, 'ready'))
      .pipe(exhaustMap(() => this.#claim()))
      .subscribe();
  }

  /** Whether this contender holds the lease now. */
  get held(): boolean {
    return this.#held.value;
  }

  /** Stops contending and releases the lease if held (`held$` emits `false`, then completes); idempotent. */
  close(): Promise<void> {
    return (this.#closing ??= (async () => {
      this.#attempts.unsubscribe();
      const held = this.#held.value;
      this.#set(false);
      this.#held.complete();
      if (held && this.#connection.status === 'ready') {
        await this.#connection.eval(RELEASE, 1, this.key, this.nodeId).catch(() => undefined);
      }
      await closeConnection(this.#connection);
    })());
  }

  async #claim(): Promise<void> {
    if (this.#closing !== undefined) return;
    const sentAt = performance.now();
    try {
      const won = await this.#connection.eval(CLAIM, 1, this.key, this.nodeId, this.ttl);
      if (this.#closing !== undefined) return;
      if (won === 1) this.#validUntil = sentAt + this.ttl;
      this.#set(won === 1);
    } catch {
      // Unknown outcome: give the lease up unless the next attempt still comes, with half a
      // period to spare, before Redis could hand it to someone else.
      if (this.#closing === undefined && performance.now() + 1.5 * this.#period >= this.#validUntil) this.#set(false);
    }
  }

  #set(held: boolean): void {
    if (this.#held.value !== held) this.#held.next(held);
  }
}
