// The reference server as one node of a fleet on Redis (its `redis` option, `serve --redis`): the
// fleet's options and the Redis parts a node opens (hub bus, folder-watch lease, per-principal cap,
// session store and replay logs, session bus).
import { STREAM_LIMITS, type StreamLimits } from '../../lib/options.js';
import { option, readOptions, type OptionTable } from '../../lib/optionTable.js';
import { SESSION_OPTIONS, type SessionOptions } from '../../protocol/legacy/sessionOptions.js';
import { redactedUrl } from '../redactedUrl.js';
import type { RedisEventLogs } from '../redis/eventLog.js';
import type { RedisBus, RedisLease, RedisPrincipalCap, RedisSessionBus, RedisSessionStore } from '../redis/index.js';
import { checkRedisUrl } from '../redis/target.js';

/** The options of a reference server that is one node of a fleet (see `docs/fleet.md`). */
export interface FleetSettings {
  /**
   * Run as one node of a fleet on this Redis (a `redis://`, `redis+sentinel://` or
   * `redis+cluster://` URL, see `RedisTarget`): hub events, legacy sessions and their replay, the
   * per-principal cap and the folder watch are shared through it (see `docs/fleet.md`). Without it
   * everything stays in this process.
   */
  readonly redis?: string;
  /** This node's id in the fleet (no whitespace, no `:`); defaults to a random UUID. Only with `redis`. */
  readonly nodeId?: string;
  /**
   * Milliseconds the folder-watch lease outlives its holder's last renewal; defaults to 5000.
   * When the holder dies another node publishes the folder's changes after about 7/6 of it, first
   * announcing what changed meanwhile. Only with `redis`.
   */
  readonly watchLeaseTtl: number;
  /**
   * Milliseconds `startReferenceServer` waits for Redis before it fails; `0` starts at once and the
   * fleet connects in the background (local streams are served meanwhile, the `ready()` of the
   * fleet's parts settle when Redis answers). Defaults to 10 000. Only with `redis`.
   */
  readonly redisConnectTimeout: number;
}

/** Default of {@link FleetSettings.redisConnectTimeout}: 10 000 milliseconds. */
export const DEFAULT_REDIS_CONNECT_TIMEOUT = 10_000;


/**
 * {@link FleetSettings}, declared once (see `LISTEN_OPTIONS`): checked by `startReferenceServer`,
 * and `serve` flags (but `redisConnectTimeout`: `serve --redis` connects in the background and has
 * its own `--redis-timeout`).
 * @internal
 */
export const FLEET_SETTINGS: OptionTable<FleetSettings> = {
  redis: option.custom({
    placeholder: 'URL',
    shownDefault: 'none (one process)',
    description: 'run as one node of a fleet sharing this Redis: redis://host:port, redis+sentinel://sentinel:26379,…/mymaster (a Sentinel-managed primary) or redis+cluster://node:6379,… (a Redis Cluster); rediss… for TLS; see docs/fleet.md',
    check: checkRedisUrl,
    read: checkRedisUrl,
  }),
  nodeId: option.text({
    placeholder: 'ID',
    rule: { pattern: /^[^\s:]+$/, what: 'a non-empty name without whitespace or ":"' },
    shownDefault: 'a random UUID',
    description: "this node's name in the fleet (no whitespace, no \":\"); only with --redis",
  }),
  watchLeaseTtl: option.milliseconds({ min: 30, default: 5000, description: 'how long the folder-watch lease outlives its holder; only with --redis' }),
  redisConnectTimeout: option.milliseconds({
    min: 0,
    default: DEFAULT_REDIS_CONNECT_TIMEOUT,
    flag: false,
    description: 'how long startReferenceServer waits for Redis before it fails (0: it connects in the background)',
  }),
};

/** The Redis parts of a reference server running as a fleet node (`redis` option). */
export interface ReferenceFleet {
  readonly nodeId: string;
  /** Relays hub events between the nodes. */
  readonly bus: RedisBus;
  /** Held by the one node that publishes the folder's changes. */
  readonly lease: RedisLease;
  /** The fleet-wide per-principal cap (`maxListensPerPrincipal`). */
  readonly principals: RedisPrincipalCap;
  readonly sessionStore: RedisSessionStore;
  readonly eventLog: RedisEventLogs;
  /** Session commands between the nodes; its `connected$` says whether this node hears the fleet. */
  readonly sessionBus: RedisSessionBus;
}

/** The fleet parts, and whether this node publishes the folder's changes. @internal */
export interface Fleet extends ReferenceFleet {
  readonly view: ReferenceFleet;
  /**
   * This node holds the watch lease, or held it when Redis became unreachable and Redis is not
   * back yet: the lease lapses after 2/3 of its ttl without Redis, but nobody else can take it
   * meanwhile, and the bus's outbox relays what the holder publishes when Redis returns. (When only
   * this node lost Redis, another takes the lease after its ttl and both publish until this one is
   * back: a change may then reach a stream twice, never not at all.)
   */
  readonly publishes: boolean;
  close(): Promise<void>;
}

/** The Redis parts of a fleet node, connected (within `connectTimeout` milliseconds; 0: in the background). @internal */
export async function openFleet(
  redis: string,
  nodeId: string,
  watchLeaseTtl: number | undefined,
  root: string,
  limits: Partial<SessionOptions> & Partial<StreamLimits>,
  connectTimeout: number,
): Promise<Fleet> {
  // With their defaults (the values are valid: startReferenceServer or the CLI checked them).
  const { sessionIdleTimeout, sessionPruneInterval, replayBufferSize } = readOptions(SESSION_OPTIONS, limits);
  const { maxListensPerPrincipal } = readOptions(STREAM_LIMITS, limits);
  const { RedisBus, RedisLease, RedisPrincipalCap, RedisSessionBus, RedisSessionStore, redisEventLogs } = await import('../redis/index.js');
  // A node holding a session's GET stream refreshes the record once per prune interval: the margin.
  const ttl = Math.min(sessionIdleTimeout + sessionPruneInterval, 2_147_483_647);
  const parts: { close(): Promise<void> }[] = [];
  const open = <T extends { close(): Promise<void> }>(part: T): T => (parts.push(part), part);
  const close = async () => void (await Promise.all(parts.map((part) => part.close())));
  try {
    const bus = open(new RedisBus({ redis, nodeId }));
    const lease = open(new RedisLease({ redis, nodeId, key: `mcp-rx-streams:watch:${root}`, ...(watchLeaseTtl === undefined ? {} : { ttl: watchLeaseTtl }) }));
    const principals = open(new RedisPrincipalCap({ redis, nodeId, maxPerPrincipal: maxListensPerPrincipal }));
    const sessionStore = open(new RedisSessionStore({ redis, ttl }));
    const eventLog = open(redisEventLogs({ redis, ttl, capacity: replayBufferSize }));
    const sessionBus = open(new RedisSessionBus({ redis, nodeId }));
    if (connectTimeout > 0) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`Redis at ${redactedUrl(redis)} did not answer within ${connectTimeout} ms; is it running?`)), connectTimeout);
      });
      await Promise.race([Promise.all([bus.ready(), sessionStore.ready(), eventLog.ready(), sessionBus.ready()]), timeout]).finally(() => clearTimeout(timer));
    }
    const members = { nodeId, bus, lease, principals, sessionStore, eventLog, sessionBus };
    let carrying = false;
    sessionBus.connected$.subscribe((connected) => (carrying = !connected && (carrying || lease.held)));
    return {
      ...members,
      get publishes() {
        return lease.held || carrying;
      },
      close,
      view: members,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
