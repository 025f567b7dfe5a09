import diagnostics_channel from 'node:diagnostics_channel';
import type { HubEvent } from '../../lib/hub.js';

/** Which Redis adapter a telemetry event comes from. */
export type RedisComponent = 'bus' | 'lease' | 'principals' | 'sessions' | 'eventLog' | 'sessionBus';

/**
 * Published on {@link redisChannels.unrelayed} for each hub event a {@link RedisBus} gave up on: it
 * reached this node's streams and no other node's (those resync when it was an `overflow`).
 */
export interface UnrelayedEvent {
  /** The event's topic kind (never its URI or task id). */
  readonly topic: HubEvent['topic'];
  /** `overflow`: dropped from a full outbox while Redis was unreachable; `error`: it could not be serialized. */
  readonly reason: 'overflow' | 'error';
  /** The bus's running total of unrelayed events, this one included. */
  readonly unrelayed: number;
}

/**
 * Published on {@link redisChannels.resync} (and a {@link RedisBus}'s `resync$`) each time a node
 * told its streams to re-read because it could not prove it saw every event.
 */
export interface ResyncEvent {
  /**
   * `trimmed`: entries after its last id were trimmed from the stream (it fell behind more than
   * `maxLength`); `sequence`: another node's events skipped numbers (its outbox overflowed);
   * `epoch`: Redis lost its data.
   */
  readonly reason: 'trimmed' | 'sequence' | 'epoch';
  /** The bus's running total of resyncs, this one included. */
  readonly resyncs: number;
}

/**
 * Published on {@link redisChannels.connection} when a Redis connection becomes ready, is lost
 * (Redis went away, the network broke: ioredis reconnects), or is `closed` on purpose (the part was
 * closed, at shutdown).
 */
export interface ConnectionEvent {
  readonly component: RedisComponent;
  /** The connection's job inside the component (`publisher`, `reader`, `subscriber`, `commands`). */
  readonly role: string;
  readonly status: 'ready' | 'lost' | 'closed';
}

/**
 * The `node:diagnostics_channel` channels of the Redis adapters. Like the core's channels they
 * never carry URIs, ids or principals, and cost nothing while nobody subscribes.
 *
 * @example
 * import { redisChannels } from 'mcp-rx-streams/redis';
 * redisChannels.unrelayed.subscribe((event) => metrics.increment('mcp.unrelayed', { topic: event.topic }));
 */
export const redisChannels = Object.freeze({
  unrelayed: diagnostics_channel.channel('mcp-rx-streams:redis:unrelayed'),
  resync: diagnostics_channel.channel('mcp-rx-streams:redis:resync'),
  connection: diagnostics_channel.channel('mcp-rx-streams:redis:connection'),
});

export function reportUnrelayed(event: UnrelayedEvent): void {
  if (redisChannels.unrelayed.hasSubscribers) redisChannels.unrelayed.publish(event);
}

export function reportResync(event: ResyncEvent): void {
  if (redisChannels.resync.hasSubscribers) redisChannels.resync.publish(event);
}

export function reportConnection(component: RedisComponent, role: string, status: ConnectionEvent['status']): void {
  if (redisChannels.connection.hasSubscribers) redisChannels.connection.publish({ component, role, status } satisfies ConnectionEvent);
}
