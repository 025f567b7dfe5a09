import type { MonoTypeOperatorFunction, Observable, ObservableInput, SchedulerLike } from 'rxjs';
import { Clock } from '../lib/clock.js';
import type { FilterName } from '../lib/filter.js';
import type { CloseReason, Frame } from '../lib/frame.js';
import type { EventLog } from '../lib/replayBuffer.js';
import type { StopReason } from '../lib/telemetry.js';
import { boolean, callback, epochMs, milliseconds, nonNegativeInteger, object, observable, positiveInteger } from '../lib/validate.js';
import { CloseStage, closePlan, type ClosePlan, type TriggerSpec } from './closeWhen.js';
import { queueLimits, QueueStage, queuePlan, type DropHandler, type QueueLimits, type QueuePlan } from './dropWhenQueueExceeds.js';
import { KeepAliveStage, keepAlivePlan, type KeepAlivePlan } from './keepAlive.js';
import { PrimeStage, primePlan, type PrimePlan } from './primeStream.js';
import { ReplayStage } from './replayFrom.js';
import { restorePlan, RestoreStage, type RestorePlan } from './restoreSubscriptions.js';
import { stageOperator, type Stage } from './stage.js';
import { type StreamStatus, type StreamWatcher, TelemetryStage } from './streamTelemetry.js';

/** What a legacy GET stream of a session is assembled from. */
export interface SessionPipelineInit {
  /** The `Last-Event-ID` request header: replayed after, and primed with (see `replayFrom`, `primeStream`). Absent: no replay. */
  readonly lastEventId?: string | undefined;
  /** The session's event log, the one its feed is stamped into (`withEventIds`). */
  readonly log: EventLog;
  /** The reconnection time sent as `retry:` in the priming event, in milliseconds (a non-negative integer; the endpoint's `reconnectDelay`, default 1000). */
  readonly reconnectDelay: number;
  /** Open with the priming event (`primeStream`); `false` leaves it out (a session on a revision before 2025-11-25). Default true. */
  readonly prime?: boolean;
  /** Milliseconds between keep-alive comments (a positive integer; default 15 000 at the endpoint). */
  readonly keepAliveInterval: number;
  /** The stream's lifetime cap in milliseconds (a positive integer; default 3 600 000 at the endpoint): the stream ends then and its client reconnects. */
  readonly maxStreamLifetime: number;
  /** When the caller's credential expires, in milliseconds since the epoch: the stream ends then. Default: never. */
  readonly expiresAt?: number;
  /** Ends the stream when it emits (the principal's cap superseded it). */
  readonly supersede$?: Observable<unknown>;
  /** Ends the stream when it emits (the server stops). */
  readonly shutdown$?: Observable<unknown>;
  /** The most notifications and bytes held for a busy client (the endpoint's `maxStreamQueue` and `maxStreamQueueBytes`). */
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
 * primeStream(lastEventId, log, reconnectDelay), // unless prime is false
 * keepAlive(keepAliveInterval, scheduler),
 * closeWhen([lifetimeCap(maxStreamLifetime), expiresAt(expiresAt), superseded(supersede$), shutdown(shutdown$)], 'end', onClose),
 * dropWhenQueueExceeds(queue, demand$, onDrop, { stallGraceMs: 0 }),
 * restoreSubscriptions(restore.uris, restore.subscribe, restore.concurrency, restore.onError),
 * ```
 *
 * fused: the same operators' stages under one subscriber, their time from the scheduler's one
 * shared clock. Piping those operators one by one gives the same frames at the same times. This
 * operator publishes no telemetry; the streams an endpoint serves (`sessionStages` with a watcher)
 * end with the telemetry stage a listen ends with too ({@link TelemetryStage}: `start` and `stop`,
 * era `legacy`).
 *
 * @example
 * feed$.pipe(sessionPipeline({ lastEventId, log, reconnectDelay: 1000, keepAliveInterval: 15_000,
 *   maxStreamLifetime: 3_600_000, queue: { notifications: 1000 }, demand$ }))
 *   .subscribe((frame) => res.write(encodeFrame(frame)));
 * @param init see {@link SessionPipelineInit}.
 * @throws InvalidOptionError naming it when a number, the expiry, a signal or a restore setting is invalid.
 */
export function sessionPipeline(init: SessionPipelineInit): MonoTypeOperatorFunction<Frame> {
  const given = object<SessionPipelineInit>('sessionPipeline init', init);
  const { notifications, bytes } = queueLimits(given.queue);
  // The public operator makes its plans for its one stream; an endpoint makes them once (sessionPlans).
  const plans = sessionPlans({
    keepAliveInterval: milliseconds('keepAliveInterval', given.keepAliveInterval),
    maxStreamLifetime: milliseconds('maxStreamLifetime', given.maxStreamLifetime),
    reconnectDelay: nonNegativeInteger('reconnectDelay', given.reconnectDelay, 'milliseconds'),
    maxStreamQueue: notifications,
    maxStreamQueueBytes: bytes,
    onDrop: given.onDrop === undefined ? undefined : callback<DropHandler>('onDrop', given.onDrop),
    onClose: given.onClose === undefined ? undefined : callback<(reason: CloseReason) => void>('onClose', given.onClose),
    shutdown$: given.shutdown$ === undefined ? undefined : observable('shutdown$', given.shutdown$),
    scheduler: given.scheduler,
  });
  const stream: SessionValues = {
    lastEventId: given.lastEventId,
    log: given.log,
    prime: given.prime === undefined ? undefined : boolean('prime', given.prime),
    expiresAt: given.expiresAt === undefined ? undefined : epochMs('expiresAt', given.expiresAt),
    supersede$: given.supersede$ === undefined ? undefined : observable('supersede$', given.supersede$),
    demand$: observable<boolean>('demand$', given.demand$, 'booleans'),
  };
  // The restore's plan is the stage's own: the stream's values do not keep it for the stream's life.
  const restore = given.restore;
  const restoring =
    restore === undefined
      ? undefined
      : restorePlan(
          restore.uris,
          callback<(uri: string) => ObservableInput<unknown>>('restore.subscribe', restore.subscribe),
          positiveInteger('restore.concurrency', restore.concurrency ?? 8),
          restore.onError === undefined ? undefined : callback<(uri: string, error: unknown) => void>('restore.onError', restore.onError),
        );
  return stageOperator(() => sessionStages(plans, stream, restoring));
}

/**
 * What the GET streams of one endpoint share: each operator's own plan, made once from the
 * endpoint's resolved options.
 * @internal
 */
export interface SessionPlans {
  readonly prime: PrimePlan;
  readonly keepAlive: KeepAlivePlan;
  /** The lifetime cap and the shutdown signal; a close just ends the stream (its client reconnects). */
  readonly close: ClosePlan;
  /** `maxStreamQueue`, `maxStreamQueueBytes`, no stall grace (a stream that ends while its client is not reading ends at once). */
  readonly queue: QueuePlan;
  /** The clock of every stream: their times for telemetry. */
  readonly clock: Clock;
}

/** The settings {@link sessionPlans} are made of, valid, under the endpoint options' names. @internal */
export interface SessionSettings {
  readonly keepAliveInterval: number;
  readonly maxStreamLifetime: number;
  readonly reconnectDelay: number;
  readonly maxStreamQueue: number;
  readonly maxStreamQueueBytes: number;
  readonly onDrop?: DropHandler | undefined;
  /** Told the reason when a trigger ends a stream (the public operator's `onClose`). */
  readonly onClose?: ((reason: CloseReason) => void) | undefined;
  readonly shutdown$?: Observable<unknown> | undefined;
  readonly scheduler?: SchedulerLike | undefined;
}

/**
 * The {@link SessionPlans} of valid settings: the plan functions of `primeStream`, `keepAlive`,
 * `closeWhen` and `dropWhenQueueExceeds`, called once.
 * @internal
 */
export function sessionPlans(settings: SessionSettings): SessionPlans {
  const { scheduler, shutdown$ } = settings;
  const clock = Clock.of(scheduler);
  // The order of the composition: lifetime, (the stream's token expiry), (its supersede), shutdown.
  const triggers: TriggerSpec[] = [{ kind: 'deadline', reason: 'max_lifetime', clock, after: settings.maxStreamLifetime }];
  if (shutdown$ !== undefined) triggers.push({ kind: 'signal', reason: 'shutdown', signal$: shutdown$ });
  return {
    prime: primePlan(settings.reconnectDelay),
    keepAlive: keepAlivePlan(settings.keepAliveInterval, scheduler),
    close: closePlan(triggers, 'end', { onClose: settings.onClose, clock }),
    queue: queuePlan({ maxStreamQueue: settings.maxStreamQueue, maxStreamQueueBytes: settings.maxStreamQueueBytes, onDrop: settings.onDrop, stallGraceMs: 0 }),
    clock,
  };
}

/** What is one GET stream's own. @internal */
export interface SessionValues {
  readonly lastEventId?: string | undefined;
  readonly log: EventLog;
  /** `false`: no priming event (a session on a revision before 2025-11-25). */
  readonly prime?: boolean | undefined;
  readonly expiresAt?: number | undefined;
  readonly supersede$?: Observable<unknown> | undefined;
  readonly demand$: Observable<boolean>;
  /**
   * Who keeps the stream (the endpoint's handle of it): what its telemetry says it listens to, and
   * told its status as it is assembled. Without one (the public {@link sessionPipeline}) the
   * stream publishes no telemetry.
   */
  readonly watcher?: SessionWatcher | undefined;
}

/**
 * What a GET stream's telemetry reads of the session it belongs to, and who is told its status
 * ({@link StreamStatus}: when it opened, its close and queue stages) as it is assembled (a
 * per-stream value). @internal
 */
export interface SessionWatcher extends StreamWatcher {
  /** What the stream listens to, as telemetry names it: the advertised list changes, and its resource subscriptions when it has any. */
  filters(): FilterName[];
  /** How many resource URIs the session is subscribed to. */
  resourceSubscriptions(): number;
  /** Why the endpoint ended the stream, when it did (`replaced`, `session_ended`). */
  readonly endReason: StopReason | undefined;
}

/**
 * The stages of one GET stream: the operators' own, in the order of the composition, each given
 * its share of the plans and its stream's values. What the endpoint serves and what
 * {@link sessionPipeline} runs.
 * @internal
 */
export function sessionStages(plans: SessionPlans, stream: SessionValues, restore: RestorePlan | undefined): Stage<any, any>[] {
  const stages: Stage<any, any>[] = [];
  // Without Last-Event-ID there is nothing to replay and no seam to cut: no replay stage.
  if (stream.lastEventId !== undefined) stages.push(new ReplayStage(stream.lastEventId, stream.log));
  if (stream.prime !== false) stages.push(new PrimeStage(plans.prime, stream.lastEventId, stream.log));
  const close = new CloseStage(plans.close, undefined, stream.expiresAt, stream.supersede$);
  const queue = new QueueStage(plans.queue, stream.demand$);
  stages.push(new KeepAliveStage(plans.keepAlive), close, queue);
  if (restore !== undefined) stages.push(new RestoreStage<Frame>(restore));
  if (stream.watcher !== undefined) stages.push(new SessionTelemetry(plans.clock, close, queue, stream.watcher));
  return stages;
}

/** A GET stream's telemetry stage ({@link TelemetryStage}): its session says what it listens to and why the endpoint ended it. */
class SessionTelemetry extends TelemetryStage {
  protected declare readonly watcher: SessionWatcher;

  protected get era(): 'legacy' {
    return 'legacy';
  }

  protected filters(): FilterName[] {
    return this.watcher.filters();
  }

  protected resourceSubscriptions(): number {
    return this.watcher.resourceSubscriptions();
  }

  protected override endReason(): StopReason | undefined {
    return this.watcher.endReason;
  }

  protected status(): StreamStatus {
    return this;
  }
}
