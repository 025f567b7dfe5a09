import { performance } from 'node:perf_hooks';
import { BehaviorSubject, exhaustMap, fromEvent, merge, Subject, switchMap, timer, type Observable, type Subscription } from 'rxjs';
import { checkMilliseconds, checkName, checkNodeId, checkOptions, checkTarget, closeConnection, keyBeside, openConnection, type RedisConnection, type RedisTarget, sentOnce } from './connection.js';

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
   * least 30. Every contender tries every `ttl / 6`; when the holder dies, another contender holds
   * the lease within about `ttl + ttl / 6` and 200 ms.
   */
  readonly ttl?: number;
}

/** How long the holders' state outlives the last holder, in milliseconds: a day. */
const STATE_TTL = 86_400_000;
/** The longest wait between two reconnection attempts while Redis is away, in milliseconds. */
const MAX_RECONNECT_DELAY = 100;
/**
 * Milliseconds a contender that finds the lease free waits before it takes it (a period at most):
 * time for the one that held it last, back from the same outage, to take it back first.
 */
const FREE_GRACE = 200;
/** Entries of the state sent in one script at most, so that a large save never holds Redis long. */
const SAVE_CHUNK = 1000;
/** The field every saved state holds, so that an empty state is told from none (a field name nobody else uses). */
const MARKER = '';

// Keeps the lease when it is ours, takes it when it is free and ARGV[4] is '1' (else answers 2):
// one script for acquire and renew. The holders' state lives STATE_TTL after the last renewal.
const CLAIM = `
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
if holder then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
elseif ARGV[4] == '1' then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
else
  return 2
end
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1`;

// Deletes the lease only if it is still ours (a late release must not free a successor's lease).
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

// Merges entries into the holders' state unless another contender holds the lease (one that lost
// it must not write over what the new holder records). ARGV: the node id, the state's ttl, the
// number N of fields to set, N field/value pairs, then the fields to delete.
const SAVE = `
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
local sets = tonumber(ARGV[3])
redis.call('HSET', KEYS[2], '', '1')
for i = 4, 3 + 2 * sets, 2 do redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1]) end
for i = 4 + 2 * sets, #ARGV do redis.call('HDEL', KEYS[2], ARGV[i]) end
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return 1`;

/**
 * A named lease in Redis that one contender holds at a time, e.g. "who watches this folder", with
 * a state its holders hand over to each other (what the last one did, for the next to carry on).
 *
 * Every contender tries every `ttl / 6` milliseconds to claim the key (`SET PX ttl` when free;
 * compare-and-extend when it already holds it), and at once each time its connection is ready
 * again. The holder renews for as long as it lives; when it dies its key expires after `ttl`, and
 * a contender whose attempt finds it free takes it with another attempt 200 ms later (a period at
 * most): within about `ttl + ttl / 6` and 200 ms. The contender that held it last takes it back at
 * once: after an outage long enough for the key to expire, the holder that carried on meanwhile
 * gets it back, its state saved before anyone else reads it. `close()` releases the lease at once
 * (compare-and-delete), so a graceful handover takes a period and 200 ms at most.
 *
 * The holder gives the lease up on its own before Redis could hand it to someone else: `held$`
 * turns `false` when `2 ttl / 3` have passed since the last renewal that succeeded was sent (Redis
 * unreachable, a slow reply), one third of a ttl before the key can expire. Two holders at once are
 * thus avoided as long as the process is not paused for longer than that margin (a lease is not a
 * fencing token: a job that must never run twice needs one). A Redis that restarts with its data
 * (AOF, RDB) keeps the key and its expiry, so a holder that reaches it again within the margin
 * keeps the lease without a break: with renewals every `ttl / 6` and reconnection attempts every
 * 100 ms at most, an outage up to about `ttl / 2` long passes unseen.
 *
 * The state ({@link RedisLease.saveState}, {@link RedisLease.state}) is a hash of strings beside
 * the key (`{<key>}:state`, in the key's Redis Cluster slot), kept for a day after the last
 * renewal. Only a contender that holds the lease, or finds it free, writes it: one that lost the
 * lease to another never overwrites what the new holder records.
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
  readonly #stateKey: string;
  readonly #connection: RedisConnection;
  readonly #period: number;
  /** Milliseconds between finding the lease free and taking it, for all but its last holder. */
  readonly #grace: number;
  readonly #attempts: Subscription;
  /** Gives the lease up when no renewal succeeded in time. */
  #lapse: NodeJS.Timeout | undefined;
  /** State entries saved here and not yet in Redis (`null`: delete), in the order saved. */
  #unsaved = new Map<string, string | null>();
  /** The save under way, if any: saves go one after the other. */
  #saving: Promise<void> = Promise.resolve();
  /**
   * Whether this contender held the lease last, as far as it knows: it takes the lease as soon as
   * it finds it free; the others with an attempt {@link FREE_GRACE} later.
   */
  #heldLast = false;
  /** When (`performance.now()`) the attempts began to find the lease free, if the last one did. */
  #freeSince: number | undefined;
  /** An attempt found the lease free and did not take it: another one follows after the grace. */
  readonly #foundFree = new Subject<void>();
  #saveSoon: NodeJS.Immediate | undefined;
  #closing: Promise<void> | undefined;

  constructor(options: RedisLeaseOptions) {
    checkOptions<RedisLeaseOptions>('RedisLease', options, ['key', 'nodeId', 'ttl']);
    const redis = checkTarget(options.redis);
    this.nodeId = checkNodeId(options.nodeId);
    this.key = checkName('key', options.key, 'mcp-rx-streams:lease');
    this.ttl = checkMilliseconds('ttl', options.ttl, 5000, 30);
    this.#stateKey = stateKey(this.key);
    this.#period = Math.max(1, Math.floor(this.ttl / 6));
    this.held$ = this.#held.asObservable();
    this.#connection = openConnection(redis, 'lease', 'commands', {
      // An attempt is made now or not at all: a claim queued while offline and sent later would
      // take the lease behind this contender's back.
      ...sentOnce(this.#period, Math.min(this.#period, MAX_RECONNECT_DELAY)),
    });
    this.#grace = Math.min(this.#period, FREE_GRACE);
    const grace = this.#grace;
    this.#attempts = merge(timer(0, this.#period), fromEvent(this.#connection, 'ready'), this.#foundFree.pipe(switchMap(() => timer(grace))))
      .pipe(exhaustMap(() => this.#claim()))
      .subscribe();
  }

  /** Whether this contender holds the lease now. */
  get held(): boolean {
    return this.#held.value;
  }

  /**
   * The state its holders saved ({@link RedisLease.saveState}), as a new holder reads it to carry
   * on: sends this contender's own unsaved entries first. Resolves `undefined` when no holder ever
   * saved any (or Redis lost it: a restart without persistence, `FLUSHALL`, a day without a holder).
   * @throws (as a rejection) the Redis error when Redis does not answer.
   */
  async state(): Promise<Map<string, string> | undefined> {
    await this.#save();
    const fields = await this.#connection.hgetall(this.#stateKey);
    if (!Object.hasOwn(fields, MARKER)) return undefined;
    const state = new Map(Object.entries(fields));
    state.delete(MARKER);
    return state;
  }

  /**
   * Merges `entries` into the holders' state (a `null` value deletes the field): sent at the end of
   * this turn, after the commands issued in it, and kept (the newest value of each field) while
   * Redis is unreachable, until a later renewal gets through. Dropped once another contender holds
   * the lease: its state is its own.
   * @param entries field names (non-empty strings) and their values.
   */
  saveState(entries: Iterable<readonly [string, string | null]>): void {
    if (this.#closing !== undefined) return;
    for (const [field, value] of entries) {
      if (field === MARKER) continue;
      this.#unsaved.delete(field);
      this.#unsaved.set(field, value);
    }
    this.#saveSoon ??= setImmediate(() => {
      this.#saveSoon = undefined;
      void this.#save();
    });
  }

  /** Stops contending, sends the unsaved state, releases the lease if held (`held$` emits `false`, then completes); idempotent. */
  close(): Promise<void> {
    return (this.#closing ??= (async () => {
      this.#attempts.unsubscribe();
      clearTimeout(this.#lapse);
      clearImmediate(this.#saveSoon);
      const held = this.#held.value;
      this.#set(false);
      this.#held.complete();
      if (this.#connection.status === 'ready') {
        await this.#save(true);
        if (held) await this.#connection.eval(RELEASE, 1, this.key, this.nodeId).catch(() => undefined);
      }
      await closeConnection(this.#connection);
    })());
  }

  async #claim(): Promise<void> {
    if (this.#closing !== undefined) return;
    // What this contender published while Redis was away goes to the state before anyone can take over.
    if (this.#unsaved.size > 0) await this.#save();
    const sentAt = performance.now();
    const take = this.#heldLast || (this.#freeSince !== undefined && sentAt - this.#freeSince >= this.#grace);
    let won: unknown;
    try {
      won = await this.#connection.eval(CLAIM, 2, this.key, this.#stateKey, this.nodeId, this.ttl, STATE_TTL, take ? '1' : '0');
    } catch {
      // Unknown outcome: the lease lapses when its deadline comes, unless a later attempt renews it.
      return;
    }
    if (this.#closing !== undefined) return;
    if (won === 2) {
      this.#freeSince ??= sentAt;
      this.#foundFree.next();
    } else this.#freeSince = undefined;
    if (won !== 1) {
      if (won === 0) {
        this.#heldLast = false;
        this.#unsaved.clear();
      }
      clearTimeout(this.#lapse);
      return this.#set(false);
    }
    this.#heldLast = true;
    // Redis set the key's expiry `ttl` after it ran the script, so after `sentAt`: give the lease
    // up a third of a ttl before that (a reply later than the margin renews nothing here).
    const deadline = sentAt + this.ttl - Math.ceil(this.ttl / 3);
    const left = deadline - performance.now();
    if (left <= 0) return;
    clearTimeout(this.#lapse);
    this.#lapse = setTimeout(() => this.#set(false), left);
    this.#set(true);
    if (this.#unsaved.size > 0) void this.#save();
  }

  /** Sends the unsaved entries, after any save under way; keeps them when Redis does not take them. */
  #save(closing = false): Promise<void> {
    this.#saving = this.#saving.then(async () => {
      if ((this.#closing !== undefined && !closing) || this.#unsaved.size === 0) return;
      const entries = [...this.#unsaved];
      this.#unsaved = new Map();
      for (let from = 0; from < entries.length; from += SAVE_CHUNK) {
        const chunk = entries.slice(from, from + SAVE_CHUNK);
        const sets = chunk.filter((entry): entry is [string, string] => entry[1] !== null);
        const deletes = chunk.filter(([, value]) => value === null).map(([field]) => field);
        let saved: unknown;
        try {
          saved = await this.#connection.eval(SAVE, 2, this.key, this.#stateKey, this.nodeId, STATE_TTL, sets.length, ...sets.flat(), ...deletes);
        } catch {
          // Redis away: keep what was not sent, behind what was saved since (newer values win).
          for (const [field, value] of entries.slice(from)) if (!this.#unsaved.has(field)) this.#unsaved.set(field, value);
          return;
        }
        // Another contender holds the lease: the state is its to record.
        if (saved !== 1) return void this.#unsaved.clear();
      }
    });
    return this.#saving;
  }

  #set(held: boolean): void {
    if (this.#held.value !== held) this.#held.next(held);
  }
}

/** The key of the holders' state: beside `key`, in its Redis Cluster slot when any form of it can be. */
function stateKey(key: string): string {
  try {
    return keyBeside('key', key, ':state');
  } catch {
    // A `}` but no hash tag (a folder named so): fine on one Redis; a Redis Cluster needs a tagged key.
    return `${key}:state`;
  }
}
