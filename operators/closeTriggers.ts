import { asyncScheduler, Observable, type SchedulerLike } from 'rxjs';
import { Clock } from '../lib/clock.js';
import type { CloseReason, Frame } from '../lib/frame.js';
import { epochMs as epochMsValid, observable, positiveInteger } from '../lib/validate.js';
import { type BuiltInTrigger, CloseStage, closePlan, type ClosePlan, type CloseTrigger, TRIGGER_SPEC, type TriggerSpec } from './closeWhen.js';
import { StageChain } from './stage.js';

export type { CloseTrigger };

function builtIn(spec: TriggerSpec): BuiltInTrigger {
  // Called on its own, a built-in trigger runs the same stage as inside closeWhen, emitting its reason.
  let plan: ClosePlan | undefined;
  const trigger: BuiltInTrigger = Object.assign(
    (upstream: Observable<Frame>) =>
      new Observable<CloseReason>((subscriber) => StageChain.run([new CloseStage((plan ??= closePlan([trigger], 'reason')))], subscriber, upstream)),
    { [TRIGGER_SPEC]: spec },
  );
  return trigger;
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
  return builtIn({ kind: 'deadline', reason: 'max_lifetime', clock: Clock.of(scheduler), after: positiveInteger('lifetimeCap ms', ms, 'milliseconds') });
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
  return builtIn({ kind: 'deadline', reason: 'token_expired', clock: Clock.of(scheduler), at: epochMsValid('expiresAt epochMs', epochMs) });
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
  return builtIn({ kind: 'idle', ms: positiveInteger('idleTimeout ms', ms, 'milliseconds'), clock: Clock.of(scheduler) });
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
  return builtIn({ kind: 'signal', reason: 'superseded', signal$: observable('superseded signal$', signal$) });
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
  return builtIn({ kind: 'signal', reason: 'shutdown', signal$: observable('shutdown signal$', signal$) });
}

