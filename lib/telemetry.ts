import diagnostics_channel from 'node:diagnostics_channel';
import type { FilterName } from './filter.js';
import type { CloseReason, TopicKind } from './frame.js';

/** Why a listen stream stopped: a server-side close reason, or the client going away. */
export type StopReason = CloseReason | 'client_closed' | 'error';

/** Published on {@link channels.start} when a listen stream opens. */
export interface StartEvent {
  /** Wall-clock time the stream opened, in milliseconds since the epoch (from the stream's scheduler). */
  readonly systemTime: number;
  /** How many resource URIs the stream honoured. */
  readonly resourceSubscriptions: number;
  readonly filters: readonly FilterName[];
}

/** Published on {@link channels.stop} when a listen stream ends, for any reason. */
export interface StopEvent {
  /** How long the stream lived, in milliseconds. */
  readonly duration: number;
  readonly filters: readonly FilterName[];
  readonly reason: StopReason;
}

/** Published on {@link channels.drop} when a slow consumer's queue is full and a notification is skipped. */
export interface DropEvent {
  /** Undelivered notifications held for the stream when this one was dropped. */
  readonly queueLength: number;
  /** Bytes of frames held for the stream when this one was dropped (bounded by `listenMaxQueueBytes`). */
  readonly queueBytes: number;
  readonly topic: TopicKind;
}

/** Published on {@link channels.error} when a subscriber or change source failed and delivery went on without it. */
export interface ErrorEvent {
  /** `adapter`: a stream's write path (encoding, the socket, a demand signal) threw; that stream was ended. */
  readonly where: 'hub' | 'source' | 'endpoint' | 'adapter';
  readonly error: unknown;
}

/**
 * The `node:diagnostics_channel` channels this library publishes on (DESIGN M11).
 *
 * Subscribing costs nothing when nobody listens: events are only built when
 * `channel.hasSubscribers` is true.
 *
 * @example
 * import { channels } from 'mcp-rx-streams';
 * channels.stop.subscribe((event) => console.log('stream stopped', event));
 */
export const channels = Object.freeze({
  start: diagnostics_channel.channel('mcp-rx-streams:subscription:start'),
  stop: diagnostics_channel.channel('mcp-rx-streams:subscription:stop'),
  drop: diagnostics_channel.channel('mcp-rx-streams:subscription:drop'),
  error: diagnostics_channel.channel('mcp-rx-streams:error'),
});

/** Process-wide totals of the queues held for slow consumers (see {@link queueTotals}). */
export interface QueueTotals {
  /** Bytes of frames held right now, over every stream of the process, as they will be written. */
  readonly bytes: number;
  /** Frames held right now, over every stream of the process. */
  readonly frames: number;
  /** Notifications discarded since the process started because an identical one was already held. */
  readonly coalesced: number;
}

const totals = { bytes: 0, frames: 0, coalesced: 0 };

/**
 * What the queues for slow consumers hold now, over every stream of the process, and how many
 * notifications were coalesced since it started: what a metrics bridge exports as gauges.
 *
 * @example
 * const { bytes, coalesced } = queueTotals();
 */
export function queueTotals(): QueueTotals {
  return { bytes: totals.bytes, frames: totals.frames, coalesced: totals.coalesced };
}

/** Adds to the process-wide queue totals (what a queue calls as frames come and go). @internal */
export function accountQueue(bytes: number, frames: number, coalesced = 0): void {
  totals.bytes += bytes;
  totals.frames += frames;
  totals.coalesced += coalesced;
}

/** Reports an isolated failure on {@link channels.error}. */
export function reportError(where: ErrorEvent['where'], error: unknown): void {
  if (channels.error.hasSubscribers) channels.error.publish({ where, error } satisfies ErrorEvent);
}
