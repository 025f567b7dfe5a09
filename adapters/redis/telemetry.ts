import diagnostics_channel from 'node:diagnostics_channel';
import type { HubEvent } from '../../lib/hub.js';

/** Which Redis adapter a telemetry event comes from. */
export type RedisComponent = 'bus' | 'lease' | 'principals' | 'sessions' | 'eventLog' | 'sessionBus';

/**
 * Published on {@link redisChannels.unrelayed} for each hub event a {@link RedisBus} could not
 * hand to Redis: it reached this node's streams, and maybe no other node's.
 */
export interface UnrelayedEvent {
  /** The event's topic kind (never its URI or task id). */
  readonly topic: HubEvent['topic'];
  /** `offline`: no connection to Redis at publish time; `error`: Redis did not acknowledge it (error, timeout, connection lost). */
  readonly reason: 'offline' | 'error';
  /** The bus's running total of unrelayed events, this one included. */
  readonly unrelayed: number;
}

/** Published on {@link redisChannels.connection} when a Redis connection becomes ready or is lost. */
export interface ConnectionEvent {
  readonly component: RedisComponent;
  /** The connection's job inside the component (`publisher`, `subscriber`, `commands`). */
  readonly role: string;
  readonly status: 'ready' | 'lost';
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
  connection: diagnostics_channel.channel('mcp-rx-streams:redis:connection'),
});

export function reportUnrelayed(event: UnrelayedEvent): void {
  if (redisChannels.unrelayed.hasSubscribers) redisChannels.unrelayed.publish(event);
}

export function reportConnection(component: RedisComponent, role: string, status: ConnectionEvent['status']): void {
  if (redisChannels.connection.hasSubscribers) redisChannels.connection.publish({ component, role, status } satisfies ConnectionEvent);
}
