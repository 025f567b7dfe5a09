import type { Redis } from 'ioredis';
import type { HubBus, HubEvent } from '../../lib/hub.js';
import { reportError } from '../../lib/telemetry.js';
import { backoff, checkMilliseconds, checkName, checkNodeId, checkTarget, closeConnection, openConnection, type RedisTarget } from './connection.js';
import { reportUnrelayed } from './telemetry.js';

/** Options of {@link RedisBus}. */
export interface RedisBusOptions {
  /** The Redis every node of the fleet shares: a `redis://` URL or ioredis options. Required. */
  readonly redis: RedisTarget;
  /** The pub/sub channel the fleet's hubs share; defaults to `mcp-rx-streams:hub`. */
  readonly channel?: string;
  /** This node's id, unique in the fleet (no whitespace); defaults to a random UUID. */
  readonly nodeId?: string;
  /** Longest pause between reconnection attempts, in milliseconds; defaults to 1000. */
  readonly maxReconnectDelay?: number;
  /**
   * How long a publish may wait for Redis's acknowledgment before it counts as unrelayed, in
   * milliseconds; defaults to 2000.
   */
  readonly publishTimeout?: number;
}

/** Counters of a {@link RedisBus} since it was created. */
export interface RedisBusStats {
  /** Local events Redis acknowledged (handed to every node subscribed at that moment). */
  readonly relayed: number;
  /** Local events that could not be handed to Redis (offline, error, timeout): other nodes may have missed them. */
  readonly unrelayed: number;
  /** Events from other nodes delivered to this node's hub. */
  readonly received: number;
  /** Messages on the channel that were not a well-formed event, ignored. */
  readonly malformed: number;
}

const EVENT_TOPICS = new Set(['tools', 'prompts', 'resources', 'resource', 'task']);

/**
 * A {@link HubBus} on Redis pub/sub: `notify*` on any node reaches the matching streams of every
 * node, exactly once each.
 *
 * The hub serves its own streams first and then calls `publish`, which never waits: the event is
 * sent as `<nodeId> <compact JSON>` on one channel, on a publisher connection, and every node's
 * subscriber connection hands the events of *other* nodes to its hub (a node skips its own, so the
 * publishing node's streams are not served twice).
 *
 * Delivery across nodes is at most once, never late. The publisher runs without ioredis's offline
 * queue and never resends: a publish while Redis is unreachable fails at once, and one Redis does
 * not acknowledge within `publishTimeout` (or whose connection drops) fails too. Each failure is
 * counted in {@link RedisBus.stats} (`unrelayed`) and published on `redisChannels.unrelayed`,
 * never claimed delivered, and never replayed when Redis comes back (a queued `resources/updated`
 * from an hour ago would be noise, and the sources have moved on). A publish counted unrelayed
 * because its acknowledgment was lost may still have reached other nodes. Both connections
 * reconnect by themselves (backoff up to `maxReconnectDelay`), the subscriber re-subscribes, and
 * cross-node delivery resumes without anything being recreated. Pub/sub keeps nothing: a node
 * that is down or reconnecting misses what was published meanwhile.
 *
 * @example
 * const bus = new RedisBus({ redis: 'redis://10.0.0.5:6379' });
 * const hub = new Hub({ bus });
 * await bus.ready();              // optional: cross-node delivery is live from here on
 * hub.notifyToolsChanged();       // this node's streams at once, the other nodes' via Redis
 * // on shutdown:
 * hub.close();
 * await bus.close();
 * @param options see {@link RedisBusOptions}.
 * @see Hub
 */
export class RedisBus implements HubBus {
  /** This node's id: messages carrying it are skipped by this node's subscriber. */
  readonly nodeId: string;
  /** The pub/sub channel. */
  readonly channel: string;
  readonly #publisher: Redis;
  readonly #subscriber: Redis;
  readonly #prefix: string;
  readonly #deliverers = new Set<(event: HubEvent) => void>();
  readonly #subscribed: Promise<unknown>;
  #stats = { relayed: 0, unrelayed: 0, received: 0, malformed: 0 };
  #closing: Promise<void> | undefined;

  constructor(options: RedisBusOptions) {
    const redis = checkTarget(options?.redis);
    this.nodeId = checkNodeId(options.nodeId);
    this.channel = checkName('channel', options.channel, 'mcp-rx-streams:hub');
    const maxReconnectDelay = checkMilliseconds('maxReconnectDelay', options.maxReconnectDelay, 1000);
    const publishTimeout = checkMilliseconds('publishTimeout', options.publishTimeout, 2000);
    this.#prefix = `${this.nodeId} `;
    this.#publisher = openConnection(redis, 'bus', 'publisher', {
      // No offline queue, no resend, no retry: a publish is relayed now or counted as not relayed.
      enableOfflineQueue: false,
      autoResendUnfulfilledCommands: false,
      maxRetriesPerRequest: 0,
      commandTimeout: publishTimeout,
      retryStrategy: backoff(maxReconnectDelay),
    });
    this.#subscriber = openConnection(redis, 'bus', 'subscriber', {
      // The subscriber only ever sends SUBSCRIBE: queueing it until the first connect is harmless,
      // and ioredis re-subscribes after every reconnection.
      autoResubscribe: true,
      maxRetriesPerRequest: null,
      retryStrategy: backoff(maxReconnectDelay),
    });
    this.#subscriber.on('message', (channel: string, message: string) => {
      if (channel === this.channel) this.#receive(message);
    });
    this.#subscribed = this.#subscriber.subscribe(this.channel);
    this.#subscribed.catch(() => undefined);
  }

  /** A snapshot of the counters; see {@link RedisBusStats}. */
  get stats(): RedisBusStats {
    return { ...this.#stats };
  }

  /**
   * Resolves once both connections are up and the channel is subscribed: events published on
   * other nodes from then on reach this node. Needed only where a test or a startup sequence
   * must not miss the first events; the hub works before it (relaying what it can).
   */
  async ready(): Promise<void> {
    await this.#subscribed;
    if (this.#publisher.status !== 'ready') {
      await new Promise<void>((resolve) => this.#publisher.once('ready', () => resolve()));
    }
  }

  /** Relays an event this node's hub has already delivered locally; never waits, never throws. */
  publish(event: HubEvent): void {
    if (this.#closing !== undefined) return;
    let message: string;
    try {
      message = this.#prefix + JSON.stringify(event);
    } catch {
      // A task status that cannot be serialized (a cycle, a BigInt) reached local streams only.
      return this.#unrelayed(event, 'error');
    }
    if (this.#publisher.status !== 'ready') return this.#unrelayed(event, 'offline');
    this.#publisher.publish(this.channel, message).then(
      () => void this.#stats.relayed++,
      () => this.#unrelayed(event, 'error'),
    );
  }

  /** Starts handing other nodes' events to `deliver`; returns the function that stops it. */
  connect(deliver: (event: HubEvent) => void): () => void {
    const entry = (event: HubEvent) => deliver(event);
    this.#deliverers.add(entry);
    return () => void this.#deliverers.delete(entry);
  }

  /** Closes both connections (waiting for the acknowledgments still due); idempotent. */
  close(): Promise<void> {
    return (this.#closing ??= Promise.all([closeConnection(this.#publisher), closeConnection(this.#subscriber)]).then(() => undefined));
  }

  #unrelayed(event: HubEvent, reason: 'offline' | 'error'): void {
    reportUnrelayed({ topic: event.topic, reason, unrelayed: ++this.#stats.unrelayed });
  }

  #receive(message: string): void {
    if (message.startsWith(this.#prefix)) return;
    const space = message.indexOf(' ');
    const event = space > 0 ? parseEvent(message.slice(space + 1)) : undefined;
    if (event === undefined) {
      this.#stats.malformed++;
      return;
    }
    this.#stats.received++;
    for (const deliver of this.#deliverers) {
      try {
        deliver(event);
      } catch (error) {
        reportError('hub', error);
      }
    }
  }
}

function parseEvent(json: string): HubEvent | undefined {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== 'object') return undefined;
  const event = value as { topic?: unknown; uri?: unknown; task?: { taskId?: unknown } | null };
  if (typeof event.topic !== 'string' || !EVENT_TOPICS.has(event.topic)) return undefined;
  if (event.topic === 'resource' && typeof event.uri !== 'string') return undefined;
  if (event.topic === 'task' && (event.task === null || typeof event.task !== 'object' || typeof event.task.taskId !== 'string')) return undefined;
  return value as HubEvent;
}
