import { asyncScheduler, defer, isObservable, map, Observable, take } from 'rxjs';
import type { SchedulerAction, SchedulerLike } from 'rxjs';
import { InvalidOptionError } from './errors.js';
import { isNotification } from './frame.js';
import type { CloseReason, Frame } from './frame.js';

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

// Node fires a timer whose delay exceeds 2^31 - 1 ms after 1 ms instead: a far deadline (a token
// that expires next month) is approached in steps no longer than that.
const MAX_TIMER_DELAY = 2_147_483_647;

/** Emits once when `scheduler.now()` reaches `epochMs` (at once, asynchronously, if it already has), then completes. */
function at(epochMs: number, scheduler: SchedulerLike): Observable<unknown> {
  // One scheduled action, rescheduled while the clock is short of the deadline (a far deadline, a
  // timer that fired early), rather than a `defer`/`timer`/`repeat`/`first` chain per stream.
  const delayFrom = (now: number) => Math.min(Math.max(epochMs - now, 0), MAX_TIMER_DELAY);
  return new Observable<unknown>((subscriber) =>
    scheduler.schedule(function (this: SchedulerAction<undefined>) {
      const now = scheduler.now();
      if (now < epochMs) {
        this.schedule(undefined, delayFrom(now));
        return;
      }
      subscriber.next(now);
      subscriber.complete();
    }, delayFrom(scheduler.now())),
  );
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
  return () =>
    defer(() => at(scheduler.now() + ms, scheduler)).pipe(map((): CloseReason => 'max_lifetime'));
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
  return () => at(epochMs, scheduler).pipe(map((): CloseReason => 'token_expired'));
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
  // Hand-written rather than `tap` + `filter` + `map`: it sees every frame of the stream.
  return (upstream) =>
    new Observable<CloseReason>((subscriber) => {
      let lastActivity = scheduler.now();
      return upstream.subscribe({
        next: (frame) => {
          if (isNotification(frame)) lastActivity = scheduler.now();
          else if (frame.type === 'comment' && scheduler.now() - lastActivity >= ms) subscriber.next('idle_timeout');
        },
        error: (error: unknown) => subscriber.error(error),
        complete: () => subscriber.complete(),
      });
    });
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
  return () => signal$.pipe(take(1), map((): CloseReason => 'superseded'));
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
  return () => signal$.pipe(take(1), map((): CloseReason => 'shutdown'));
}
