import { Subject, type Subscription, timer } from 'rxjs';
import { InvalidOptionError } from '../../lib/errors.js';
import { isCloseReason, type CloseReason } from '../../lib/frame.js';
import type { Admission, PrincipalCap } from '../../lib/principals.js';
import { checkCount, checkMilliseconds, checkName, checkNodeId, checkOptions, checkTarget, closeConnection, hashTag, openConnection, type RedisConnection, type RedisTarget, sentOnce, subscribeChannels, subscriberOptions } from './connection.js';

/** Options of {@link RedisPrincipalCap}. */
export interface RedisPrincipalCapOptions {
  /** The Redis every node of the fleet shares: a `redis://` URL or ioredis options. Required. */
  readonly redis: RedisTarget;
  /** Live listens per principal across the fleet before the oldest is superseded; defaults to 4. */
  readonly maxPerPrincipal?: number;
  /** This node's id, unique in the fleet (no whitespace, no `:`); defaults to a random UUID. */
  readonly nodeId?: string;
  /** Prefix of every key and channel this cap uses; the fleet must share it. Defaults to `mcp-rx-streams:cap`. */
  readonly prefix?: string;
  /**
   * How long a node's entries keep counting after its last heartbeat, in milliseconds; defaults to
   * 10 000. A node renews its heartbeat every third of it; a dead node's streams stop counting
   * at most this long after it died.
   */
  readonly heartbeatTtl?: number;
  /** Longest pause between reconnection attempts, in milliseconds; defaults to 1000. */
  readonly maxReconnectDelay?: number;
}

/** Counters of a {@link RedisPrincipalCap} since it was created. */
export interface RedisPrincipalCapStats {
  /** Admissions recorded in Redis (re-recordings after an outage included). */
  readonly recorded: number;
  /** Local streams superseded: by a newer stream on this node, or on another node through Redis. */
  readonly superseded: number;
  /** Local streams ended by a revoke of their principal: on this node, or on another node through Redis. */
  readonly revoked: number;
  /** Redis work not done (offline, error): recorded or removed again after (re)connecting. */
  readonly failures: number;
  /**
   * Heartbeats (one per principal this node has streams of, every `heartbeatTtl / 3`) that found
   * every stream this node had recorded for it still in Redis. After a failover, the first one
   * says this node's part of the fleet-wide count is whole again (a lost record is recorded again
   * by the heartbeat that notices it, and confirmed by the next).
   */
  readonly confirmedBeats: number;
}

interface Entry {
  readonly principal: string;
  readonly streamId: string;
  readonly signal: Subject<CloseReason>;
  /** When it was admitted, in milliseconds on this process's monotonic clock (`performance.now()`), later than any before it. */
  readonly admittedAt: number;
  /** Its score (see RECORD), made at its first record and kept: every later record of it (after an outage) sends the same. */
  score: string | undefined;
  /** Redis has acknowledged a record of it. */
  recorded: boolean;
  live: boolean;
}

// The keys of one principal share its Redis Cluster slot (a hash tag of the principal): its
// sorted set of streams and the hash of the heartbeats of the nodes that hold them.
// Heartbeats are expiry times in server milliseconds, compared to TIME inside the scripts.

/** TIME readings per connection, the shortest round trip's kept (see RedisPrincipalCap.#anchor). */
const CLOCK_SAMPLES = 5;

// Records one admission and applies the cap to the principal's streams fleet-wide, atomically.
// KEYS: the principal's sorted set, its heartbeat hash. ARGV: nodeId, member, score, cap,
// heartbeat ttl, channel prefix. Score = when the node admitted the stream, in microseconds on the
// Redis server's clock: the node's monotonic admission time plus the offset it read with TIME
// when it connected, the shortest of CLOCK_SAMPLES round trips (see RedisPrincipalCap.#anchor).
// So the oldest stream anywhere has the lowest score, also when its record came late (its node
// could not reach Redis then, or was still connecting), and a node's own streams are in the order
// it admitted them. Members of nodes whose
// heartbeat expired are dead and dropped first. Victims on other nodes are told on their node's
// channel (ARGV[6] .. nodeId); all victims are returned.
const RECORD = `
local zset, beats = KEYS[1], KEYS[2]
local node, member, score = ARGV[1], ARGV[2], ARGV[3]
local cap, ttl, channel = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('HSET', beats, node, string.format('%.0f', now + ttl))
redis.call('ZADD', zset, 'NX', score, member)
local alive = {}
for _, m in ipairs(redis.call('ZRANGE', zset, 0, -1)) do
  local n = string.match(m, '^(.*):[^:]*$')
  if alive[n] == nil then
    local expires = tonumber(redis.call('HGET', beats, n))
    alive[n] = expires ~= nil and expires > now
    if not alive[n] then redis.call('HDEL', beats, n) end
  end
  if not alive[n] then redis.call('ZREM', zset, m) end
end
local victims = {}
local over = redis.call('ZCARD', zset) - cap
if over > 0 then
  victims = redis.call('ZRANGE', zset, 0, over - 1)
  redis.call('ZREM', zset, unpack(victims))
  for _, m in ipairs(victims) do
    local n, id = string.match(m, '^(.*):([^:]*)$')
    if n ~= node then redis.call('PUBLISH', channel .. n, id) end
  end
end
redis.call('PEXPIRE', zset, ttl)
redis.call('PEXPIRE', beats, ttl)
return victims`;

// One node's heartbeat for one principal: renews its entry and both keys' expiry, and returns how
// many of the node's members (ARGV[3]…) the set still holds, so that the node records again what
// Redis lost (a failover to a replica that had not received it yet).
// KEYS: the principal's sorted set, its heartbeat hash. ARGV: nodeId, heartbeat ttl, members.
const BEAT = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('HSET', KEYS[2], ARGV[1], string.format('%.0f', now + tonumber(ARGV[2])))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
local held = 0
for i = 3, #ARGV do
  if redis.call('ZSCORE', KEYS[1], ARGV[i]) then held = held + 1 end
end
return held`;

type CapCommands = RedisConnection & {
  mcpRxCapRecord(set: string, beats: string, nodeId: string, member: string, score: string, cap: number, ttl: number, channel: string): Promise<string[]>;
  mcpRxCapBeat(set: string, beats: string, nodeId: string, ttl: number, ...members: string[]): Promise<number>;
};

/**
 * The per-principal cap with supersede (DESIGN M8) across a fleet: a principal's third listen on
 * node B, with a cap of 2, supersedes its oldest stream, wherever that is.
 *
 * Admission stays synchronous and always admits. Locally it works like `PrincipalRegistry` at
 * once (a burst on one node never holds more than the cap live, Redis or not); the fleet-wide
 * part follows asynchronously: the admission is recorded in the principal's sorted set in Redis
 * (score = the time of the admission on the Redis server's clock, member = `nodeId:streamId`) by a
 * script that, atomically, drops the members of dead nodes and removes the oldest members beyond
 * the cap, telling their nodes on pub/sub; those streams close with reason `superseded`.
 * `release()` removes the member. A stream admitted while its node could not reach Redis (an
 * outage, or a node still connecting) keeps its place: when its record comes late, its score is
 * still when it was admitted (the node's monotonic clock, set against the server's `TIME` each
 * time the node connects).
 *
 * What does not count forever: every `heartbeatTtl / 3` a node renews its heartbeat in each
 * principal it has streams of (a hash next to the principal's set) and the expiry of both; a dead
 * node's members are dropped at the principal's next admission once its heartbeat there expired,
 * and keys nobody refreshes expire. While Redis is unreachable the cap is per node; once Redis
 * answers again (a reconnection, or the next heartbeat when a Cluster moved the principal's slot
 * to a promoted replica) a node re-records its live streams (in their original order) and retries
 * the removals that failed, so the fleet-wide count converges again (superseding the oldest if
 * the outage let a principal exceed the cap). A heartbeat also notices members Redis lost (a
 * failover to a replica that had not received them) and records them again.
 *
 * On a Redis Cluster the keys of one principal share a slot (`<prefix>:principal:{<principal>}`
 * and `…:nodes`), and the scripts declare every key they touch.
 *
 * @example
 * const principals = new RedisPrincipalCap({ redis: 'redis://10.0.0.5:6379', maxPerPrincipal: 4 });
 * const endpoint = new McpEndpoint({ hub, principals, ... });
 * // on shutdown, after endpoint.close():
 * await principals.close();
 * @param options see {@link RedisPrincipalCapOptions}.
 * @throws InvalidOptionError naming `RedisPrincipalCap options` when `options` is not an object, else the option
 *   that is unknown, missing (`redis`) or has a value it cannot use (checked before connecting).
 * @see PrincipalRegistry
 */
export class RedisPrincipalCap implements PrincipalCap {
  readonly maxPerPrincipal: number;
  /** This node's id in the members it records. */
  readonly nodeId: string;
  readonly #prefix: string;
  readonly #heartbeatTtl: number;
  readonly #commands: CapCommands;
  readonly #subscriber: RedisConnection;
  /** Live local entries per principal, oldest first. */
  readonly #streams = new Map<string, Entry[]>();
  readonly #byId = new Map<string, Entry>();
  /** Members whose removal failed, by principal: retried once Redis answers again. */
  readonly #pendingRemovals = new Map<string, Set<string>>();
  /** Some admission could not be recorded: every live stream is recorded again once Redis answers. */
  #unrecorded = false;
  readonly #heartbeat: Subscription;
  #nextId = 0;
  #lastAdmittedAt = 0;
  /** The Redis server's clock less this process's monotonic clock, in µs; read at each connection. */
  #offsetMicros: number | undefined = undefined;
  #stats = { recorded: 0, superseded: 0, revoked: 0, failures: 0, confirmedBeats: 0 };
  #closing: Promise<void> | undefined;

  constructor(options: RedisPrincipalCapOptions) {
    checkOptions<RedisPrincipalCapOptions>('RedisPrincipalCap', options, ['maxPerPrincipal', 'nodeId', 'prefix', 'heartbeatTtl', 'maxReconnectDelay']);
    const redis = checkTarget(options.redis);
    this.maxPerPrincipal = checkCount('maxPerPrincipal', options.maxPerPrincipal, 4);
    this.nodeId = checkNodeId(options.nodeId);
    if (this.nodeId.includes(':')) throw new InvalidOptionError('nodeId', 'a string without ":" (it separates node and stream in members)', this.nodeId);
    this.#prefix = checkName('prefix', options.prefix, 'mcp-rx-streams:cap');
    this.#heartbeatTtl = checkMilliseconds('heartbeatTtl', options.heartbeatTtl, 10_000, 30);
    const maxReconnectDelay = checkMilliseconds('maxReconnectDelay', options.maxReconnectDelay, 1000);
    const commands = openConnection(redis, 'principals', 'commands', {
      // Failed work is redone from local state after reconnecting, never replayed from a queue.
      ...sentOnce(undefined, maxReconnectDelay),
    });
    commands.defineCommand('mcpRxCapRecord', { numberOfKeys: 2, lua: RECORD });
    commands.defineCommand('mcpRxCapBeat', { numberOfKeys: 2, lua: BEAT });
    this.#commands = commands as CapCommands;
    this.#subscriber = openConnection(redis, 'principals', 'subscriber', subscriberOptions(maxReconnectDelay));
    const channel = `${this.#prefix}:supersede:${this.nodeId}`;
    const revocations = this.#revokeChannel();
    this.#subscriber.on('message', (from: string, message: string) => {
      if (from === channel) this.#supersede(this.#byId.get(message));
      else if (from === revocations) this.#heardRevoke(message);
    });
    subscribeChannels(this.#subscriber, [channel, revocations]).catch(() => undefined);
    // Every (re)connection reads the server's clock, then re-records the live streams: those
    // admitted before it, or during an outage.
    this.#commands.on('ready', () => this.#anchor());
    this.#heartbeat = timer(this.#heartbeatTtl / 3, this.#heartbeatTtl / 3).subscribe(() => this.#beat());
  }

  /** Principals with at least one live stream on this node (for leak checks). */
  get size(): number {
    return this.#streams.size;
  }

  /** A snapshot of the counters; see {@link RedisPrincipalCapStats}. */
  get stats(): RedisPrincipalCapStats {
    return { ...this.#stats };
  }

  /** Live streams of `principal` on this node. */
  count(principal: string): number {
    return this.#streams.get(principal)?.length ?? 0;
  }

  /**
   * Admits a new stream for `principal` at once; supersedes this node's oldest streams of the
   * principal beyond the cap at once, and the fleet's oldest as soon as Redis has recorded it.
   * @param principal the principal's key (authenticated id or address bucket).
   */
  admit(principal: string): Admission {
    let list = this.#streams.get(principal);
    if (list === undefined) this.#streams.set(principal, (list = []));
    // Strictly later than the admission before it (1 µs at least): a node's order is never a tie.
    const admittedAt = (this.#lastAdmittedAt = Math.max(performance.now(), this.#lastAdmittedAt + 0.001));
    const entry: Entry = { principal, streamId: String(this.#nextId++), signal: new Subject<CloseReason>(), admittedAt, score: undefined, recorded: false, live: true };
    list.push(entry);
    this.#byId.set(entry.streamId, entry);
    // Removals of the locally displaced go out before the new record, on the same connection.
    for (const old of list.slice(0, Math.max(0, list.length - this.maxPerPrincipal))) this.#supersede(old);
    this.#record(entry);
    return {
      superseded$: entry.signal.asObservable(),
      release: () => this.#release(entry),
    };
  }

  /**
   * Ends every stream of `principal` on every node of the fleet, with `reason`: this node's at once
   * (each is told through its `superseded$` and stops counting), the other nodes' when they hear
   * it on the pub/sub channel `<prefix>:revoke`. Like a supersede, pub/sub keeps nothing: a node
   * that is cut off from Redis meanwhile does not hear it (its streams of the principal end at their
   * lifetime cap or token expiry, and `authenticate` refusing the credential keeps them from
   * coming back). Rejects only when the message could not be handed to Redis.
   * @param principal the principal's key (authenticated id or address bucket).
   * @param reason the close reason the streams end with; defaults to `'revoked'`.
   */
  revoke(principal: string, reason: CloseReason = 'revoked'): Promise<void> {
    this.#revokeHere(principal, reason);
    if (this.#closing !== undefined || this.#commands.status !== 'ready') {
      this.#stats.failures++;
      return Promise.reject(new Error(`the revoke of ${principal} could not reach the other nodes: Redis is not connected`));
    }
    return this.#commands.publish(this.#revokeChannel(), `${this.nodeId} ${JSON.stringify([principal, reason])}`).then(
      () => undefined,
      (error: unknown) => {
        this.#stats.failures++;
        throw error;
      },
    );
  }

  /**
   * Stops heartbeats, forgets this node's heartbeat in the principals it still has members of (they
   * stop counting at the principals' next admission) and closes the connections; idempotent. Call
   * after the endpoint has closed its streams, so their releases are sent first.
   */
  close(): Promise<void> {
    return (this.#closing ??= (async () => {
      this.#heartbeat.unsubscribe();
      if (this.#commands.status === 'ready') {
        const principals = new Set([...this.#streams.keys(), ...this.#pendingRemovals.keys()]);
        await Promise.all([...principals].map((principal) => this.#commands.hdel(this.#beatsKey(principal), this.nodeId).catch(() => undefined)));
      }
      await Promise.all([closeConnection(this.#commands), closeConnection(this.#subscriber)]);
    })());
  }

  #record(entry: Entry): void {
    if (this.#closing !== undefined) return void this.#stats.failures++;
    if (this.#commands.status !== 'ready') return this.#unrecordable();
    const { principal } = entry;
    // Not scored before the offset to the server's clock is known (read as the connection became
    // ready): recorded once it is.
    if (this.#offsetMicros === undefined) return void (this.#unrecorded = true);
    const channel = `${this.#prefix}:supersede:`;
    const score = (entry.score ??= String(Math.round(entry.admittedAt * 1000 + this.#offsetMicros)));
    this.#commands.mcpRxCapRecord(this.#setKey(principal), this.#beatsKey(principal), this.nodeId, this.#member(entry), score, this.maxPerPrincipal, this.#heartbeatTtl, channel).then(
      (victims) => {
        this.#stats.recorded++;
        entry.recorded = true;
        for (const member of victims) {
          const colon = member.lastIndexOf(':');
          if (member.slice(0, colon) === this.nodeId) this.#supersede(this.#byId.get(member.slice(colon + 1)));
        }
      },
      () => this.#unrecordable(),
    );
  }

  #unrecordable(): void {
    this.#stats.failures++;
    this.#unrecorded = true;
  }

  #supersede(entry: Entry | undefined): void {
    if (entry === undefined || !entry.live) return;
    this.#stats.superseded++;
    entry.signal.next('superseded');
    this.#release(entry);
  }

  /** Ends this node's streams of `principal` with `reason`: all stop counting before any is told. */
  #revokeHere(principal: string, reason: CloseReason): void {
    const list = this.#streams.get(principal);
    if (list === undefined) return;
    const ended = [...list];
    for (const entry of ended) this.#release(entry, false);
    for (const entry of ended) {
      this.#stats.revoked++;
      entry.signal.next(reason);
      entry.signal.complete();
    }
  }

  /** A revoke another node published: `<nodeId> <JSON [principal, reason]>`. */
  #heardRevoke(message: string): void {
    const space = message.indexOf(' ');
    if (space <= 0 || message.slice(0, space) === this.nodeId) return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(message.slice(space + 1));
    } catch {
      return;
    }
    if (!Array.isArray(parsed) || typeof parsed[0] !== 'string' || !isCloseReason(parsed[1])) return;
    this.#revokeHere(parsed[0], parsed[1]);
  }

  #revokeChannel(): string {
    return `${this.#prefix}:revoke`;
  }

  /** Stops counting `entry` here and in Redis; `complete`: completes its signal too (not yet when it is about to be told). */
  #release(entry: Entry, complete = true): void {
    if (!entry.live) return;
    entry.live = false;
    if (complete) entry.signal.complete();
    this.#byId.delete(entry.streamId);
    const list = this.#streams.get(entry.principal);
    if (list !== undefined) {
      const at = list.indexOf(entry);
      if (at >= 0) list.splice(at, 1);
      if (list.length === 0) this.#streams.delete(entry.principal);
    }
    this.#remove(entry.principal, this.#member(entry));
  }

  #remove(principal: string, member: string): void {
    const failed = () => {
      this.#stats.failures++;
      let members = this.#pendingRemovals.get(principal);
      if (members === undefined) this.#pendingRemovals.set(principal, (members = new Set()));
      members.add(member);
    };
    if (this.#commands.status !== 'ready') return failed();
    this.#commands.zrem(this.#setKey(principal), member).then(() => undefined, failed);
  }

  /**
   * Reads the Redis server's clock (TIME) against this process's monotonic clock, so that a score is
   * the admission's time on the server's clock whenever the record is sent; then redoes what
   * failed (see {@link #resync}). The offset is the server's time less the midpoint of the round
   * trip, off by at most half of it, so of {@link CLOCK_SAMPLES} readings one after the other the one
   * with the shortest round trip is kept: a reply that waited for a busy event loop (a node starting,
   * a burst of publishes) would otherwise shift every score this node makes by half that wait, and a
   * stream admitted a moment after another node's could count as older than it.
   */
  #anchor(): void {
    if (this.#closing !== undefined) return;
    this.#readClock().then(
      (offset) => {
        this.#offsetMicros = offset;
        this.#resync();
      },
      () => this.#unrecordable(),
    );
  }

  /** The offset of the server's clock to `performance.now()`, in microseconds (see {@link #anchor}). */
  async #readClock(): Promise<number> {
    let best = { roundTrip: Infinity, offset: 0 };
    for (let i = 0; i < CLOCK_SAMPLES; i++) {
      const sent = performance.now();
      const [seconds, micros] = await this.#commands.time();
      const received = performance.now();
      if (received - sent < best.roundTrip) {
        best = { roundTrip: received - sent, offset: Number(seconds) * 1_000_000 + Number(micros) - Math.round(((sent + received) / 2) * 1000) };
      }
    }
    return best.offset;
  }

  /** Redoes what failed: the removals, and the records of every live stream (in their order). */
  #resync(): void {
    if (this.#closing !== undefined) return;
    this.#unrecorded = false;
    const removals = [...this.#pendingRemovals];
    this.#pendingRemovals.clear();
    for (const [principal, members] of removals) for (const member of members) this.#remove(principal, member);
    for (const list of this.#streams.values()) for (const entry of [...list]) this.#record(entry);
  }

  /**
   * Renews this node's heartbeat in each principal it has streams of. Also where failed work is
   * redone when no reconnection announces that Redis answers again (a Cluster whose failed
   * primary's replica took over its slots: the Cluster connection itself stayed up).
   */
  #beat(): void {
    if (this.#commands.status !== 'ready') return;
    // The clock could not be read when the connection became ready: read it now, then redo.
    if (this.#offsetMicros === undefined) this.#anchor();
    else if (this.#unrecorded || this.#pendingRemovals.size > 0) this.#resync();
    for (const [principal, list] of this.#streams) {
      // Only those Redis has acknowledged: a record still on its way is not missing.
      const recorded = list.filter((entry) => entry.recorded);
      const members = recorded.map((entry) => this.#member(entry));
      this.#commands.mcpRxCapBeat(this.#setKey(principal), this.#beatsKey(principal), this.nodeId, this.#heartbeatTtl, ...members).then(
        (held) => {
          // Redis lost some of them (a failover): record them again, with their scores, if still live.
          if (held < members.length) {
            for (const entry of recorded) if (entry.live) this.#record(entry);
          } else this.#stats.confirmedBeats++;
        },
        () => void this.#stats.failures++,
      );
    }
  }

  #setKey(principal: string): string {
    return `${this.#prefix}:principal:${hashTag(principal)}`;
  }

  /** The heartbeats of the nodes holding streams of `principal`: in its set's slot. */
  #beatsKey(principal: string): string {
    return `${this.#setKey(principal)}:nodes`;
  }

  #member(entry: Entry): string {
    return `${this.nodeId}:${entry.streamId}`;
  }
}
