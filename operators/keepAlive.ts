import { asyncScheduler, interval, Observable } from 'rxjs';
import type { MonoTypeOperatorFunction, SchedulerLike } from 'rxjs';
import { InvalidOptionError } from '../lib/errors.js';
import { KEEP_ALIVE } from '../lib/frame.js';
import type { Frame } from '../lib/frame.js';

// Node fires a timer whose delay exceeds 2^31 - 1 ms after 1 ms instead: a longer interval would
// flood the socket with keep-alives.
const MAX_TIMER_DELAY = 2_147_483_647;


/**
 * Interleaves a keep-alive comment (`:\r\n`) every `intervalMs` with the source's frames, for as
 * long as the source runs.
 *
 * The ticks keep proxies and clients from timing out an otherwise silent stream. The first one
 * comes `intervalMs` after subscription, then one every `intervalMs`, regardless of the traffic
 * in between. The stream completes or errors with the source, and the timer is released on every
 * end (completion, error, unsubscription). Keep-alives are not activity: `idleTimeout` counts
 * only notifications, and uses the ticks as its clock.
 *
 * MCP 2026-07-28 `subscriptions/listen`, DESIGN M5: "Then the notifications, with `:\r\n`
 * keep-alive comments between (default every 15 000 ms)."
 *
 * @example
 * hub.frames(filter).pipe(ackThenNotify(ack), keepAlive(15_000), map(encodeFrame));
 * // ack … 15 s … ":\r\n" … 15 s … ":\r\n" …
 * @param intervalMs time between keep-alives, in milliseconds; a positive integer no greater
 *   than 2 147 483 647 (the listen default is 15 000).
 * @param scheduler where time comes from; defaults to `asyncScheduler`.
 * @throws InvalidOptionError when `intervalMs` is not a positive integer of at most 2 147 483 647.
 * @see idleTimeout
 * @see closeWhen
 */
export function keepAlive(intervalMs: number, scheduler: SchedulerLike = asyncScheduler): MonoTypeOperatorFunction<Frame> {
  if (!Number.isInteger(intervalMs) || intervalMs <= 0 || intervalMs > MAX_TIMER_DELAY) {
    throw new InvalidOptionError('keepAlive intervalMs', 'a positive integer of milliseconds (at most 2147483647)', intervalMs);
  }
  // Hand-written rather than `merge(materialize…)`: this sits on the per-frame path of every stream,
  // and the subscriber handed straight to the source costs no allocation per frame. The source's
  // end ends the subscriber, which releases the ticks; unsubscribing stops a synchronous source.
  return (source) =>
    new Observable<Frame>((subscriber) => {
      subscriber.add(interval(intervalMs, scheduler).subscribe(() => subscriber.next(KEEP_ALIVE)));
      source.subscribe(subscriber);
    });
}
