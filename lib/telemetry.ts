import diagnostics_channel from 'node:diagnostics_channel';
import type { FilterName } from './filter.js';
import type { CloseReason, TopicKind } from './frame.js';
import type { RefusalKind } from './refusal.js';

/**
 * Why a stream stopped: a server-side close reason, or the client going away (`client_closed`), or
 * a failure on its write path (`error`). A legacy GET stream also stops when a newer GET of its
 * session replaces it (`replaced`, on this node or another of the fleet) and when its session ends
 * (`session_ended`: `DELETE`, or the principal's least recently used session making room).
 */
export type StopReason = CloseReason | 'client_closed' | 'error' | 'replaced' | 'session_ended';

/** Which protocol era a stream belongs to: `modern` a `subscriptions/listen` stream (2026-07-28), `legacy` a session's GET stream. */
export type StreamEra = 'modern' | 'legacy';

/** Published on {@link channels.start} when a stream opens: a listen stream, or a legacy session's GET stream. */
export interface StartEvent {
  readonly era: StreamEra;
  /** Wall-clock time the stream opened, in milliseconds since the epoch (from the stream's scheduler). */
  readonly systemTime: number;
  /** How many resource URIs the stream honoured (legacy: the session's subscriptions when its GET stream opened). */
  readonly resourceSubscriptions: number;
  /** What the stream listens to (legacy: the list changes its session hears, and `resource_subscriptions` when it has some). */
  readonly filters: readonly FilterName[];
}

/** Published on {@link channels.stop} when a stream ends, for any reason. */
export interface StopEvent {
  readonly era: StreamEra;
  /** How long the stream lived, in milliseconds. */
  readonly duration: number;
  readonly filters: readonly FilterName[];
  readonly reason: StopReason;
}

/** Why a legacy session ended: `deleted` by its client (`DELETE`), `idle` past `sessionIdleTimeout`, `displaced` by a newer session of its principal beyond `maxSessionsPerPrincipal`, `revoked` by the application (`McpEndpoint.revoke`, `closeStream`). */
export type SessionEndReason = 'deleted' | 'idle' | 'displaced' | 'revoked';

/** Published on {@link channels.sessionCreated} when `initialize` creates a legacy session. */
export interface SessionCreatedEvent {
  /** The protocol revision negotiated (`2025-03-26`, `2025-06-18`, `2025-11-25`). */
  readonly protocolVersion: string;
}

/** Published on {@link channels.sessionEnded} when a node ends a legacy session (its record is removed). */
export interface SessionEndedEvent {
  readonly protocolVersion: string;
  readonly reason: SessionEndReason;
}

/**
 * One `subscriptions/listen` request as {@link channels.trace} follows it: the same object in every
 * {@link TraceEvent} of that request, so a tracer can keep its span under it (a `WeakMap`). It
 * carries the request's W3C trace context and nothing else: no URI, id or principal.
 */
export interface ListenTrace {
  /** `params._meta.traceparent` of the request, else its `traceparent` header; `undefined` when neither is a string. */
  readonly traceparent: string | undefined;
  /** `params._meta.tracestate`, else the `tracestate` header (taken from where `traceparent` came). */
  readonly tracestate: string | undefined;
  /** What carried the request: `http` (a POST), or `channel` (stdio, a WebSocket, an in-process pair). */
  readonly transport: 'http' | 'channel';
}

/**
 * Published on {@link channels.trace} as a listen request goes through the endpoint:
 * `admission` when the endpoint starts admitting it (after authentication); `refused` when it
 * answers without a stream (`status` the HTTP status, `code` the JSON-RPC error code);
 * `abandoned` when its client left before the stream opened; `start` when its stream opens and
 * `stop` when it ends (`event`: what {@link channels.start} and {@link channels.stop} carry).
 * Published only for requests admitted while the channel had a subscriber.
 */
export type TraceEvent =
  | { readonly phase: 'admission'; readonly listen: ListenTrace }
  | { readonly phase: 'refused'; readonly listen: ListenTrace; readonly refusal: RefusalKind | undefined; readonly code: number }
  | { readonly phase: 'abandoned'; readonly listen: ListenTrace }
  | { readonly phase: 'start'; readonly listen: ListenTrace; readonly event: StartEvent }
  | { readonly phase: 'stop'; readonly listen: ListenTrace; readonly event: StopEvent };

/** Published on {@link channels.drop} when a slow consumer's queue is full and a notification is skipped. */
export interface DropEvent {
  /** Undelivered notifications held for the stream when this one was dropped. */
  readonly queueLength: number;
  /** Bytes of frames held for the stream when this one was dropped (bounded by `maxStreamQueueBytes`). */
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
 * The `node:diagnostics_channel` channels this library publishes on (DESIGN M11): `start`, `stop`
 * ({@link StartEvent}, {@link StopEvent}: streams of both eras), `drop` ({@link DropEvent}),
 * `error` ({@link ErrorEvent}), `sessionCreated` and `sessionEnded` (legacy sessions), and
 * `trace` ({@link TraceEvent}: a listen request's trace context through admission, start and stop).
 * None carries a URI, a request or session id or a principal.
 *
 * Subscribing costs nothing when nobody listens: events are only built when
 * `channel.hasSubscribers` is true.
 *
 * @example
 * import { channels } from 'mcp-rx-streams';
 * channels.stop.subscribe((event) => console.log('stream stopped', event));
 * @see logTo
 */
export const channels = Object.freeze({
  start: diagnostics_channel.channel('mcp-rx-streams:subscription:start'),
  stop: diagnostics_channel.channel('mcp-rx-streams:subscription:stop'),
  drop: diagnostics_channel.channel('mcp-rx-streams:subscription:drop'),
  error: diagnostics_channel.channel('mcp-rx-streams:error'),
  sessionCreated: diagnostics_channel.channel('mcp-rx-streams:session:created'),
  sessionEnded: diagnostics_channel.channel('mcp-rx-streams:session:ended'),
  trace: diagnostics_channel.channel('mcp-rx-streams:listen:trace'),
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

/** Publishes `event` on {@link channels.trace} (its subscribers are checked by the caller, who built it). @internal */
export function reportTrace(event: TraceEvent): void {
  if (channels.trace.hasSubscribers) channels.trace.publish(event);
}
