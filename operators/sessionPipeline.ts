import { asyncScheduler, Observable, type MonoTypeOperatorFunction, type ObservableInput, type SchedulerLike } from 'rxjs';
import { Clock } from '../lib/clock.js';
import type { CloseReason, Frame } from '../lib/frame.js';
import type { EventLog } from '../lib/replayBuffer.js';
import { CloseStage, directSignals, requireEpochMs, requireObservable, type ClosePlan, type TriggerSpec } from './closeTriggers.js';
import { endingFrames } from './closeWhen.js';
import { queuePlan, QueueStage, type DropHandler, type QueueLimits } from './dropWhenQueueExceeds.js';
import { KeepAliveStage, requireInterval } from './keepAlive.js';
import { PrimeStage, requireRetry } from './primeStream.js';
import { ReplayStage } from './replayFrom.js';
import { restoreObservable, RestoreStage } from './restoreSubscriptions.js';
import { stageOperator, type Stage } from './stage.js';

/** What a legacy GET stream of a session is assembled from. */
export interface SessionPipelineInit {
  /** The `Last-Event-ID` request header: replayed after, and primed with (see `replayFrom`, `primeStream`). Absent: no replay. */
  readonly lastEventId?: string | undefined;
  /** The session's event log, the one its feed is stamped into (`withEventIds`). */
  readonly log: EventLog;
  /** The reconnection time sent as `retry:` in the priming event, in milliseconds (a non-negative integer; the endpoint's `reconnectDelay`, default 1000). */
  readonly reconnectDelay: number;
  /** Milliseconds between keep-alive comments (a positive integer; default 15 000 at the endpoint); also the stall grace period of a closed stream. */
  readonly keepAliveInterval: number;
  /** The stream's lifetime cap in milliseconds (a positive integer; default 3 600 000 at the endpoint): the stream ends then and its client reconnects. */
  readonly maxStreamLifetime: number;
  /** When the caller's credential expires, in milliseconds since the epoch: the stream ends then. Default: never. */
  readonly expiresAt?: number;
  /** Ends the stream when it emits (the principal's cap superseded it). */
  readonly supersede$?: Observable<unknown>;
  /** Ends the stream when it emits (the server stops). */
  readonly shutdown$?: Observable<unknown>;
  /** The most notifications and bytes held for a busy client (the endpoint's `listenMaxQueue` and `listenMaxQueueBytes`). */
  readonly queue: QueueLimits;
  /** The sink's demand (`false` busy, `true` ready). */
  readonly demand$: Observable<boolean>;
  /** Told about each notification dropped for a busy client. */
  readonly onDrop?: DropHandler;
  /** Re-establishes the session's persisted subscriptions once the stream is open (see `restoreSubscriptions`). */
  readonly restore?: {
    readonly uris: Iterable<string>;
    readonly subscribe: (uri: string) => ObservableInput<unknown>;
    /** At most this many at once; default 8. */
    readonly concurrency?: number;
    readonly onError?: (uri: string, error: unknown) => void;
  };
  /** Called once when a trigger (lifetime, token expiry, supersede, shutdown) ends the stream, before it completes. */
  readonly onClose?: (reason: CloseReason) => void;
  /** Where time comes from; defaults to `asyncScheduler`. Every stream on one scheduler shares one timer. */
  readonly scheduler?: SchedulerLike;
}

/**
 * The per-stream pipeline of a legacy GET SSE stream (DESIGN L7–L9) as one operator, applied to
 * the session's feed of frames already stamped with event ids (`withEventIds`):
 *
 * ```ts
 * replayFrom(lastEventId, log),             // only with a Last-Event-ID
 * primeStream(lastEventId, log, reconnectDelay),
 * keepAlive(keepAliveInterval, scheduler),
 * closeWhen([lifetimeCap(maxStreamLifetime), expiresAt(expiresAt), superseded(supersede$), shutdown(shutdown$)], 'end', onClose),
 * dropWhenQueueExceeds(queue, demand$, onDrop, { stallGraceMs: keepAliveInterval, scheduler }),
 * restoreSubscriptions(restore.uris, restore.subscribe, restore.concurrency, restore.onError),
 * ```
 *
 * fused: the same operators' stages under one subscriber, their time from the scheduler's one
 * shared clock. Piping those operators one by one gives the same frames at the same times.
 *
 * @example
 * feed$.pipe(sessionPipeline({ lastEventId, log, reconnectDelay: 1000, keepAliveInterval: 15_000,
 *   maxStreamLifetime: 3_600_000, queue: { notifications: 1000 }, demand$ }))
 *   .subscribe((frame) => res.write(encodeFrame(frame)));
 * @param init see {@link SessionPipelineInit}.
 * @throws InvalidOptionError when a number, the expiry or a signal is invalid.
 */
export function sessionPipeline(init: SessionPipelineInit): MonoTypeOperatorFunction<Frame> {
  const scheduler = init.scheduler ?? asyncScheduler;
  const clock = Clock.of(scheduler);
  requireRetry(init.reconnectDelay);
  requireInterval('sessionPipeline keepAliveInterval', init.keepAliveInterval);
  requireInterval('sessionPipeline maxStreamLifetime', init.maxStreamLifetime);
  if (init.expiresAt !== undefined) requireEpochMs('expiresAt epochMs', init.expiresAt);
  if (init.supersede$ !== undefined) requireObservable('superseded signal$', init.supersede$);
  if (init.shutdown$ !== undefined) requireObservable('shutdown signal$', init.shutdown$);
  const deadlines: (TriggerSpec & { kind: 'deadline' })[] = [{ kind: 'deadline', reason: 'max_lifetime', clock, after: init.maxStreamLifetime }];
  if (init.expiresAt !== undefined) deadlines.push({ kind: 'deadline', reason: 'token_expired', clock, at: init.expiresAt });
  const signals: Observable<unknown>[] = [];
  const signalReasons: CloseReason[] = [];
  if (init.supersede$ !== undefined) signals.push(init.supersede$), signalReasons.push('superseded');
  if (init.shutdown$ !== undefined) signals.push(init.shutdown$), signalReasons.push('shutdown');
  const close: ClosePlan = { deadlines, idle: undefined, signals, signalReasons, custom: [], closing: endingFrames(init.onClose), direct: directSignals(signals, init.demand$) };
  const queue = queuePlan(init.queue, init.demand$, init.onDrop, { stallGraceMs: init.keepAliveInterval, scheduler });
  const restore$ = init.restore === undefined ? undefined : restoreObservable(init.restore.uris, init.restore.subscribe, init.restore.concurrency, init.restore.onError);
  const { lastEventId, log, reconnectDelay, keepAliveInterval } = init;
  return stageOperator(() => {
    const stages: Stage<any, any>[] = [];
    // Without Last-Event-ID there is nothing to replay and no seam to cut: no replay stage.
    if (lastEventId !== undefined) stages.push(new ReplayStage(lastEventId, log));
    stages.push(new PrimeStage(lastEventId, log, reconnectDelay), new KeepAliveStage(keepAliveInterval, clock), new CloseStage(close), new QueueStage(queue));
    if (restore$ !== undefined) stages.push(new RestoreStage<Frame>(restore$));
    return stages;
  });
}
