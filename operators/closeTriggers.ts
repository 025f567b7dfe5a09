import { asyncScheduler, isObservable, Observable, Subject, Subscriber, type SchedulerLike, type Subscription } from 'rxjs';
import { Broadcast, type BroadcastTarget } from '../lib/broadcast.js';
import { Clock, type ClockEntry } from '../lib/clock.js';
import { InvalidOptionError } from '../lib/errors.js';
import type { CloseReason, Frame } from '../lib/frame.js';
import { Stage, StageChain } from './stage.js';

/**
 * Decides when a stream is closed: given the stream's frames, emits the reason to close it.
 *
 * `closeWhen` subscribes every trigger once, to the same shared upstream, and closes the
 * stream on the first reason any of them emits. A trigger that does not care about the frames
 * (a timer, an outside signal) ignores its argument.
 *
 * @example
 * // Close on maintenance; the frames are not needed.
 * const maintenance: CloseTrigger = () => maintenance$.pipe(take(1), map(() => 'shutdown' as const));
 * @param upstream the frames of the stream, shared with the other triggers; each frame reaches
 *   the triggers just before it is passed on.
 * @see closeWhen
 */
export type CloseTrigger = (upstream: Observable<Frame>) => Observable<CloseReason>;

/**
 * What a built-in trigger is, for `closeWhen` to run it as a few fields of its own stage instead
 * of a subscribed chain: a deadline on a clock, an idle window, or an outside signal.
 * @internal
 */
export type TriggerSpec =
  | { readonly kind: 'deadline'; readonly reason: CloseReason; readonly clock: Clock; readonly after?: number; readonly at?: number }
  | { readonly kind: 'idle'; readonly ms: number; readonly clock: Clock }
  | { readonly kind: 'signal'; readonly reason: CloseReason; readonly signal$: Observable<unknown> };

/** Where a built-in trigger keeps its {@link TriggerSpec}. @internal */
export const TRIGGER_SPEC: unique symbol = Symbol('mcp-rx-streams.closeTrigger');

/** A built-in trigger: callable like any {@link CloseTrigger}, and known to `closeWhen`. @internal */
export type BuiltInTrigger = CloseTrigger & { readonly [TRIGGER_SPEC]: TriggerSpec };

/** The spec of `trigger` if it is a built-in one. @internal */
export function triggerSpec(trigger: CloseTrigger): TriggerSpec | undefined {
  return (trigger as Partial<BuiltInTrigger>)[TRIGGER_SPEC];
}

function builtIn(spec: TriggerSpec): BuiltInTrigger {
  const plan = closePlan([], undefined);
  const own: ClosePlan = {
    ...plan,
    deadlines: spec.kind === 'deadline' ? [spec] : [],
    idle: spec.kind === 'idle' ? spec : undefined,
    signals: spec.kind === 'signal' ? [spec.signal$] : [],
    signalReasons: spec.kind === 'signal' ? [spec.reason] : [],
  };
  // Called on its own, a built-in trigger runs the same stage as inside closeWhen, emitting its reason.
  const trigger = ((upstream: Observable<Frame>) =>
    new Observable<CloseReason>((subscriber) => StageChain.run([new CloseStage(own)], subscriber, upstream))) as CloseTrigger;
  return Object.assign(trigger, { [TRIGGER_SPEC]: spec });
}

function requirePositiveInteger(option: string, value: number): void {
  if (!Number.isInteger(value) || value <= 0) throw new InvalidOptionError(option, 'a positive integer of milliseconds', value);
}

/** @internal */
export function requireObservable(option: string, value: unknown): void {
  if (!isObservable(value)) throw new InvalidOptionError(option, 'an Observable', value);
}

/** @internal */
export function requireEpochMs(option: string, value: unknown): void {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new InvalidOptionError(option, 'a finite number of milliseconds since the epoch', value);
  }
}

/**
 * Closes a stream with reason `max_lifetime` once it has been open for `ms`.
 *
 * The clock starts when `closeWhen` subscribes the trigger, i.e. when the stream opens. DESIGN
 * M7: the server closes every listen stream at its lifetime cap (default 1 hour).
 *
 * @example
 * frames$.pipe(closeWhen(lifetimeCap(60 * 60 * 1000), { requestId: 7 }));
 * @param ms the lifetime, in milliseconds; a positive integer (the server default is 3 600 000).
 * @param scheduler where time comes from; defaults to `asyncScheduler`.
 * @throws InvalidOptionError when `ms` is not a positive integer.
 * @see expiresAt
 * @see idleTimeout
 * @see closeWhen
 */
export function lifetimeCap(ms: number, scheduler: SchedulerLike = asyncScheduler): CloseTrigger {
  requirePositiveInteger('lifetimeCap ms', ms);
  return builtIn({ kind: 'deadline', reason: 'max_lifetime', clock: Clock.of(scheduler), after: ms });
}

/**
 * Closes a stream with reason `token_expired` when the clock reaches `epochMs`.
 *
 * Pass the bearer token's `exp` (in milliseconds) next to `lifetimeCap`: whichever comes first
 * closes the stream. A time already past closes the stream at once, but asynchronously, so the
 * stream's acknowledgment still goes first.
 *
 * @example
 * const exp = payload.exp * 1000; // JWT `exp` is in seconds
 * frames$.pipe(closeWhen([lifetimeCap(3_600_000), expiresAt(exp)], { requestId: 7 }));
 * @param epochMs the expiry, in milliseconds since the Unix epoch; any finite number.
 * @param scheduler where time comes from (`scheduler.now()` is compared with `epochMs`); defaults
 *   to `asyncScheduler`.
 * @throws InvalidOptionError when `epochMs` is not a finite number.
 * @see lifetimeCap
 * @see closeWhen
 */
export function expiresAt(epochMs: number, scheduler: SchedulerLike = asyncScheduler): CloseTrigger {
  requireEpochMs('expiresAt epochMs', epochMs);
  return builtIn({ kind: 'deadline', reason: 'token_expired', clock: Clock.of(scheduler), at: epochMs });
}

/**
 * Closes a stream with reason `idle_timeout` at the first keep-alive tick at least `ms` after the
 * last notification.
 *
 * Only notification frames count as activity; keep-alives, the acknowledgment and other control
 * frames do not. The clock starts when the stream opens. The check runs only when a comment frame
 * (a keep-alive tick from `keepAlive` upstream) passes, so the close comes up to one keep-alive
 * interval after the idle window ends, and never without `keepAlive` upstream. DESIGN M7: "idle
 * timeout (default 30 min without a delivered notification; keep-alives don't count; checked on
 * each keep-alive tick, so up to one interval late)".
 *
 * @example
 * frames$.pipe(keepAlive(15_000), closeWhen(idleTimeout(30 * 60 * 1000), { requestId: 7 }));
 * @param ms the idle window, in milliseconds; a positive integer (the server default is 1 800 000).
 * @param scheduler where time comes from; defaults to `asyncScheduler`.
 * @throws InvalidOptionError when `ms` is not a positive integer.
 * @see keepAlive
 * @see closeWhen
 */
export function idleTimeout(ms: number, scheduler: SchedulerLike = asyncScheduler): CloseTrigger {
  requirePositiveInteger('idleTimeout ms', ms);
  return builtIn({ kind: 'idle', ms, clock: Clock.of(scheduler) });
}

/**
 * Closes a stream with reason `superseded` on the first value of `signal$`.
 *
 * The per-principal cap (DESIGN M8) signals the oldest stream of a principal over the cap.
 * Only the first value counts; completing `signal$` without a value closes nothing.
 *
 * @example
 * const evict$ = new Subject<void>();
 * frames$.pipe(closeWhen(superseded(evict$), { requestId: 7 }));
 * evict$.next(); // cancelled(superseded), result, end of stream
 * @param signal$ emits when the stream is superseded; any value.
 * @throws InvalidOptionError when `signal$` is not an Observable.
 * @see shutdown
 * @see closeWhen
 */
export function superseded(signal$: Observable<unknown>): CloseTrigger {
  requireObservable('superseded signal$', signal$);
  return builtIn({ kind: 'signal', reason: 'superseded', signal$ });
}

/**
 * Closes a stream with reason `shutdown` on the first value of `signal$` (the server is stopping).
 *
 * Lets a graceful shutdown end every open stream with the closing frames instead of cutting the
 * sockets. Only the first value counts.
 *
 * @example
 * const stopping$ = new Subject<void>();
 * frames$.pipe(closeWhen([lifetimeCap(3_600_000), shutdown(stopping$)], { requestId: 7 }));
 * process.once('SIGTERM', () => stopping$.next());
 * @param signal$ emits when the server stops; any value.
 * @throws InvalidOptionError when `signal$` is not an Observable.
 * @see superseded
 * @see closeWhen
 */
export function shutdown(signal$: Observable<unknown>): CloseTrigger {
  requireObservable('shutdown signal$', signal$);
  return builtIn({ kind: 'signal', reason: 'shutdown', signal$ });
}

/**
 * What every stream of one `closeWhen` shares: the triggers sorted by kind, and what to send on
 * a close (`undefined`: emit the reason itself, which is how a trigger runs on its own).
 * @internal
 */
export interface ClosePlan {
  readonly deadlines: readonly Extract<TriggerSpec, { kind: 'deadline' }>[];
  /** The narrowest idle window (several idle triggers close at the narrowest one). */
  readonly idle: Extract<TriggerSpec, { kind: 'idle' }> | undefined;
  /** The outside signals, and (at the same index) the reason each closes with. */
  readonly signals: readonly Observable<unknown>[];
  readonly signalReasons: readonly CloseReason[];
  /** Triggers of your own: given the frames, subscribed. */
  readonly custom: readonly CloseTrigger[];
  /** Called as a method of the plan. */
  readonly closing: ((reason: CloseReason) => readonly Frame[]) | undefined;
  /** Signals attached to directly (distinct Broadcasts): bit i set for `signals[i]`. */
  readonly direct: number;
}

/** Sorts `triggers` into a {@link ClosePlan}. @internal */
export function closePlan(triggers: readonly CloseTrigger[], closing: ((reason: CloseReason) => readonly Frame[]) | undefined): ClosePlan {
  const deadlines: Extract<TriggerSpec, { kind: 'deadline' }>[] = [];
  const signals: Observable<unknown>[] = [];
  const signalReasons: CloseReason[] = [];
  const custom: CloseTrigger[] = [];
  let idle: Extract<TriggerSpec, { kind: 'idle' }> | undefined;
  for (const trigger of triggers) {
    const spec = triggerSpec(trigger);
    if (spec === undefined) custom.push(trigger);
    else if (spec.kind === 'deadline') deadlines.push(spec);
    else if (spec.kind === 'signal') {
      signals.push(spec.signal$);
      signalReasons.push(spec.reason);
    }
    else if (idle === undefined || spec.ms < idle.ms) idle = spec;
  }
  return { deadlines, idle, signals, signalReasons, custom, closing, direct: directSignals(signals) };
}

/**
 * Which of `signals` a stream attaches to directly: bit i for a {@link Broadcast} at index i that
 * is not also at an earlier index, nor one of `also` (an object passed twice is subscribed). @internal
 */
export function directSignals(signals: readonly Observable<unknown>[], also?: Observable<unknown>): number {
  let direct = 0;
  for (let i = 0; i < signals.length; i++) {
    const signal$ = signals[i];
    if (signal$ instanceof Broadcast && signal$ !== also && signals.indexOf(signal$) === i) direct |= 1 << i;
  }
  return direct;
}

/**
 * The logic of `closeWhen` and of every built-in trigger: it watches the frames (idle window,
 * your own triggers), holds the earliest deadline as its own entry on the shared {@link Clock}
 * and follows the outside signals; the first reason ends everything above it (the source, the
 * stages before) and sends the closing frames, then ends the stream.
 * @internal
 */
export class CloseStage extends Stage<Frame, Frame | CloseReason> implements ClockEntry, BroadcastTarget {
  due = 0;
  slot = -1;
  seq = 0;
  /** Why the stream was closed (`undefined` while open). */
  reason: CloseReason | undefined;
  private deadlineReason: CloseReason = 'max_lifetime';
  private lastActivity = 0;
  // Deadlines on another clock than the first one's, and subscribed signals and triggers.
  private others: (Subscription | DeadlineEntry)[] | undefined;
  private frames: Subject<Frame> | undefined;
  private chain: StageChain | undefined;
  // CLOSING and FAILED, in one small integer (idle streams are many).
  private state = 0;

  constructor(private readonly plan: ClosePlan) {
    super();
  }

  /** A signal or a trigger of your own errored. */
  get failed(): boolean {
    return (this.state & FAILED) !== 0;
  }

  /** It has closed, ended or been disposed: it passes and does nothing more. */
  private get closing(): boolean {
    return (this.state & CLOSING) !== 0;
  }

  override link(chain: StageChain): void {
    this.chain = chain;
  }

  /** Stops the source and the stages before this one; this one and those after go on. */
  private endUpstream(): void {
    this.chain?.cut(this);
  }

  override open(): void {
    const { deadlines, idle, signals, custom, direct } = this.plan;
    if (idle !== undefined) this.lastActivity = idle.clock.elapsed();
    // The deadlines on the first deadline's clock are one entry: the earliest (the first listed on a tie).
    const first = deadlines[0];
    if (first !== undefined) {
      const now = first.clock.now();
      let due = Number.POSITIVE_INFINITY;
      for (const deadline of deadlines) {
        const at = deadline.at ?? now + deadline.after!;
        if (deadline.clock !== first.clock) {
          (this.others ??= []).push(new DeadlineEntry(this, deadline.reason, deadline.clock, at));
        } else if (at < due) {
          due = at;
          this.deadlineReason = deadline.reason;
        }
      }
      first.clock.add(this, due);
    }
    for (let i = 0; i < signals.length && !this.closing; i++) {
      const signal$ = signals[i]!;
      if ((direct & (1 << i)) !== 0) (signal$ as Broadcast<unknown>).attach(this);
      else (this.others ??= []).push(signal$.subscribe(new SignalSubscriber(this, this.plan.signalReasons[i]!)));
    }
    if (custom.length > 0 && !this.closing) {
      const frames = (this.frames = new Subject<Frame>());
      for (let i = 0; i < custom.length && !this.closing; i++) {
        (this.others ??= []).push(custom[i]!(frames.asObservable()).subscribe(new SignalSubscriber(this, undefined)));
      }
    }
  }

  push(frame: Frame): void {
    if (this.closing) return;
    const idle = this.plan.idle;
    if (idle !== undefined) {
      if (frame.type === 'message' && frame.priority === 'notification') this.lastActivity = idle.clock.elapsed();
      // The check runs on each keep-alive tick; the close replaces that tick.
      else if (frame.type === 'comment' && idle.clock.elapsed() - this.lastActivity >= idle.ms) return this.close('idle_timeout');
    }
    if (this.frames !== undefined) {
      this.frames.next(frame);
      if (this.closing) return;
    }
    if (this.plan.closing !== undefined) this.out.push(frame);
  }

  /** The earliest deadline came. */
  fire(): void {
    this.close(this.deadlineReason);
  }

  onBroadcast(source: Observable<unknown>): void {
    const i = this.plan.signals.indexOf(source);
    if (i >= 0) this.close(this.plan.signalReasons[i]!);
  }

  /** A reason from a signal, a deadline or a trigger of your own. */
  close(reason: CloseReason): void {
    if (this.closing) return;
    this.state |= CLOSING;
    this.reason = reason;
    this.release();
    this.endUpstream();
    const { plan } = this;
    if (plan.closing === undefined) {
      this.out.push(reason);
    } else {
      for (const frame of plan.closing(reason)) this.out.push(frame);
    }
    this.out.end();
  }

  /** A signal or a trigger of your own errored: so does the stream. */
  signalError(error: unknown): void {
    if (this.closing) return;
    this.state |= CLOSING | FAILED;
    this.release();
    this.endUpstream();
    this.out.fail(error);
  }

  override end(): void {
    if (this.closing) return;
    this.state |= CLOSING;
    this.release();
    // A trigger on its own completes with the frames it watched; closeWhen ends the stream as it is.
    this.out.end();
  }

  override fail(error: unknown): void {
    if (this.closing) return;
    this.state |= CLOSING;
    this.release();
    this.out.fail(error);
  }

  override dispose(): void {
    this.state |= CLOSING;
    this.release();
  }

  private release(): void {
    const { deadlines, signals, direct } = this.plan;
    if (deadlines.length > 0) deadlines[0]!.clock.remove(this);
    if (direct !== 0) for (let i = 0; i < signals.length; i++) if ((direct & (1 << i)) !== 0) (signals[i] as Broadcast<unknown>).detach(this);
    const others = this.others;
    if (others !== undefined) {
      this.others = undefined;
      for (const other of others) other.unsubscribe();
    }
    this.frames = undefined;
  }
}

const CLOSING = 1;
const FAILED = 2;

/** A deadline on another clock than the stage's first one. */
class DeadlineEntry implements ClockEntry {
  due = 0;
  slot = -1;
  seq = 0;

  constructor(
    private readonly stage: CloseStage,
    private readonly reason: CloseReason,
    private readonly clock: Clock,
    at: number,
  ) {
    clock.add(this, at);
  }

  fire(): void {
    this.stage.close(this.reason);
  }

  unsubscribe(): void {
    this.clock.remove(this);
  }
}

// A bare Subscriber rather than an observer object: subscribing it allocates no SafeSubscriber.
class SignalSubscriber extends Subscriber<unknown> {
  constructor(
    private readonly stage: CloseStage,
    /** The reason this signal closes with; `undefined`: the values are reasons (a trigger of your own). */
    private readonly reason: CloseReason | undefined,
  ) {
    super();
  }

  protected override _next(value: unknown): void {
    this.stage.close(this.reason ?? (value as CloseReason));
  }

  protected override _error(error: unknown): void {
    this.unsubscribe();
    this.stage.signalError(error);
  }

  protected override _complete(): void {
    // Completing without a value closes nothing.
    this.unsubscribe();
  }
}
