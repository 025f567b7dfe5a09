import { asyncScheduler, isObservable, type MonoTypeOperatorFunction, type Observable, type ObservableInput, type SchedulerLike } from 'rxjs';
import { Broadcast } from '../lib/broadcast.js';
import { Clock } from '../lib/clock.js';
import { InvalidOptionError } from '../lib/errors.js';
import type { CloseReason, Frame } from '../lib/frame.js';
import type { EventLog } from '../lib/replayBuffer.js';
import { CloseStage, directSignals, requireEpochMs, requireObservable, type ClosePlan, type CloseTrigger, type TriggerSpec } from './closeTriggers.js';
import { queueLimits, QueueStage, type DropHandler, type QueueLimits, type QueuePlan } from './dropWhenQueueExceeds.js';
import { KeepAliveStage, requireInterval } from './keepAlive.js';
import { PrimeStage, requireRetry, type PrimePlan } from './primeStream.js';
import { ReplayStage } from './replayFrom.js';
import { restorePlan, RestoreStage, type RestorePlan } from './restoreSubscriptions.js';
import { stageOperator, type Stage } from './stage.js';

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
 * primeStream(lastEventId, log, reconnectDelay), // unless prime is false
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
  const plan = sessionPlan(init);
  // The restore's plan is the stage's own: the stream's plan does not keep it for the stream's life.
  const restore = init.restore === undefined ? undefined : restorePlan(init.restore.uris, init.restore.subscribe, init.restore.concurrency, init.restore.onError);
  const prime = init.prime !== false;
  return stageOperator(() => sessionStages(plan, restore, prime));
}

type Deadline = TriggerSpec & { kind: 'deadline' };

/** What the GET streams of one clock with the same numbers share (an endpoint's streams: one object). */
interface Settings {
  readonly clock: Clock;
  /** The lifetime cap, as a close plan's deadlines. */
  readonly lifetime: readonly Deadline[];
  readonly maxStreamLifetime: number;
  readonly keepAliveInterval: number;
  readonly reconnectDelay: number;
  readonly notifications: number;
  readonly bytes: number;
  readonly onDrop: DropHandler | undefined;
}

// The settings of the latest stream of each clock: reused while the next stream's are the same.
const latest = new WeakMap<Clock, Settings>();

function settingsFor(clock: Clock, init: SessionPipelineInit): Settings {
  const { notifications, bytes } = queueLimits(init.queue);
  const { maxStreamLifetime, keepAliveInterval, reconnectDelay, onDrop } = init;
  const last = latest.get(clock);
  if (
    last !== undefined &&
    last.maxStreamLifetime === maxStreamLifetime &&
    last.keepAliveInterval === keepAliveInterval &&
    last.reconnectDelay === reconnectDelay &&
    last.notifications === notifications &&
    last.bytes === bytes &&
    last.onDrop === onDrop
  ) {
    return last;
  }
  const lifetime = Object.freeze([Object.freeze({ kind: 'deadline' as const, reason: 'max_lifetime' as const, clock, after: maxStreamLifetime })]);
  const settings: Settings = Object.freeze({ clock, lifetime, maxStreamLifetime, keepAliveInterval, reconnectDelay, notifications, bytes, onDrop });
  latest.set(clock, settings);
  return settings;
}

// The order of the composition: superseded, then shutdown.
const SIGNAL_REASONS: readonly CloseReason[] = Object.freeze(['superseded', 'shutdown']);
const SHUTDOWN_ONLY: readonly CloseReason[] = Object.freeze(['shutdown']);
const NO_SIGNALS: readonly Observable<unknown>[] = Object.freeze([]);
const NO_TRIGGERS: readonly CloseTrigger[] = Object.freeze([]);
const NO_FRAMES: readonly Frame[] = Object.freeze([]);

/**
 * What every stage of one GET stream is built from, in one object: it is the close plan, the queue
 * plan and the prime plan of its stages as well (a stream holds one plan, not one per stage), and
 * what every stream of an endpoint shares is one {@link Settings} object.
 */
class SessionPlan implements ClosePlan, QueuePlan, PrimePlan {
  readonly deadlines: readonly Deadline[];
  readonly lastEventId: string | undefined;
  readonly log: EventLog;
  readonly demand$: Observable<boolean>;
  readonly #supersede$: Observable<unknown> | undefined;
  readonly #shutdown$: Observable<unknown> | undefined;
  readonly #onClose: ((reason: CloseReason) => void) | undefined;

  constructor(
    private readonly settings: Settings,
    init: SessionPipelineInit,
  ) {
    const { lifetime, clock } = settings;
    // The order of the composition: lifetime, then token expiry (a tie closes with the first).
    this.deadlines = init.expiresAt === undefined ? lifetime : [lifetime[0]!, { kind: 'deadline', reason: 'token_expired', clock, at: init.expiresAt }];
    this.#supersede$ = init.supersede$;
    this.#shutdown$ = init.shutdown$;
    this.demand$ = init.demand$;
    this.lastEventId = init.lastEventId;
    this.log = init.log;
    this.#onClose = init.onClose;
  }

  // The signals as the close stage reads them (when it opens, closes, or hears one): made when read,
  // so that an idle stream holds its two signals and no list of them.
  get signals(): readonly Observable<unknown>[] {
    const supersede$ = this.#supersede$;
    const shutdown$ = this.#shutdown$;
    return supersede$ !== undefined ? (shutdown$ !== undefined ? [supersede$, shutdown$] : [supersede$]) : shutdown$ !== undefined ? [shutdown$] : NO_SIGNALS;
  }
  get signalReasons(): readonly CloseReason[] {
    return this.#supersede$ !== undefined ? SIGNAL_REASONS : SHUTDOWN_ONLY;
  }
  get direct(): number {
    return directSignals(this.signals, this.demand$);
  }
  get directDemand(): boolean {
    return this.demand$ instanceof Broadcast;
  }
  get clock(): Clock {
    return this.settings.clock;
  }
  get keepAliveInterval(): number {
    return this.settings.keepAliveInterval;
  }
  get reconnectDelay(): number {
    return this.settings.reconnectDelay;
  }
  get notifications(): number {
    return this.settings.notifications;
  }
  get bytes(): number {
    return this.settings.bytes;
  }
  get onDrop(): DropHandler | undefined {
    return this.settings.onDrop;
  }
  get stallGraceMs(): number {
    return this.settings.keepAliveInterval;
  }
  get idle(): undefined {
    return undefined;
  }
  get custom(): readonly CloseTrigger[] {
    return NO_TRIGGERS;
  }

  /** A GET stream just ends on a close (its client reconnects), after telling `onClose`. */
  closing(reason: CloseReason): readonly Frame[] {
    this.#onClose?.(reason);
    return NO_FRAMES;
  }
}

function sessionPlan(init: SessionPipelineInit): SessionPlan {
  requireRetry(init.reconnectDelay);
  requireInterval('sessionPipeline keepAliveInterval', init.keepAliveInterval);
  requireInterval('sessionPipeline maxStreamLifetime', init.maxStreamLifetime);
  if (init.expiresAt !== undefined) requireEpochMs('expiresAt epochMs', init.expiresAt);
  if (init.supersede$ !== undefined) requireObservable('superseded signal$', init.supersede$);
  if (init.shutdown$ !== undefined) requireObservable('shutdown signal$', init.shutdown$);
  if (!isObservable(init.demand$)) throw new InvalidOptionError('dropWhenQueueExceeds demand$', 'an Observable of booleans', init.demand$);
  return new SessionPlan(settingsFor(Clock.of(init.scheduler ?? asyncScheduler), init), init);
}

function sessionStages(plan: SessionPlan, restore: RestorePlan | undefined, prime: boolean): Stage<any, any>[] {
  const stages: Stage<any, any>[] = [];
  // Without Last-Event-ID there is nothing to replay and no seam to cut: no replay stage.
  if (plan.lastEventId !== undefined) stages.push(new ReplayStage(plan.lastEventId, plan.log));
  if (prime) stages.push(new PrimeStage(plan));
  stages.push(new KeepAliveStage(plan.keepAliveInterval, plan.clock), new CloseStage(plan), new QueueStage(plan));
  if (restore !== undefined) stages.push(new RestoreStage<Frame>(restore));
  return stages;
}
