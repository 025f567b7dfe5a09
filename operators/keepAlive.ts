import { asyncScheduler } from 'rxjs';
import type { MonoTypeOperatorFunction, SchedulerLike } from 'rxjs';
import { KEEP_ALIVE } from '../lib/frame.js';
import type { Frame } from '../lib/frame.js';
import { Clock, type ClockEntry } from '../lib/clock.js';
import { milliseconds } from '../lib/validate.js';
import { DisposingStage, stageOperator } from './stage.js';

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
 * const filter: ListenFilter = { toolsListChanged: true };
 * const ack = controlFrame(acknowledgedNotification(filter));
 * notifications(hub, filter)
 *   .pipe(ackThenNotify(ack), keepAlive(15_000), map(encodeFrame))
 *   .subscribe((text) => res.write(text));
 * // ack … 15 s … ":\r\n" … 15 s … ":\r\n" … (a tools/list_changed whenever one is published)
 * @param intervalMs time between keep-alives, in milliseconds; a positive integer no greater
 *   than 2 147 483 647 (the listen default is 15 000).
 * @param scheduler where time comes from; defaults to `asyncScheduler`.
 * @throws InvalidOptionError when `intervalMs` is not a positive integer of at most 2 147 483 647.
 * @see idleTimeout
 * @see closeWhen
 */
export function keepAlive(intervalMs: number, scheduler: SchedulerLike = asyncScheduler): MonoTypeOperatorFunction<Frame> {
  const plan = keepAlivePlan(milliseconds('keepAlive intervalMs', intervalMs), scheduler);
  return stageOperator(() => [new KeepAliveStage(plan)]);
}

/** What the keep-alive stages of one interval and one scheduler share (an endpoint's streams: one object). @internal */
export interface KeepAlivePlan {
  /** Milliseconds between ticks (the option `keepAliveInterval`); valid by then. */
  readonly keepAliveInterval: number;
  readonly clock: Clock;
}

/** The plan of {@link keepAlive}, from a valid interval. @internal */
export function keepAlivePlan(keepAliveInterval: number, scheduler?: SchedulerLike): KeepAlivePlan {
  return { keepAliveInterval, clock: Clock.of(scheduler) };
}

/**
 * The logic of {@link keepAlive}: the stage is its own entry on the shared {@link Clock}, due
 * `keepAliveInterval` after the subscription and then `keepAliveInterval` after each tick.
 * @internal
 */
export class KeepAliveStage extends DisposingStage<Frame> implements ClockEntry {
  due = 0;
  slot = -1;
  seq = 0;

  constructor(private readonly plan: KeepAlivePlan) {
    super();
  }

  override open(): void {
    const { clock, keepAliveInterval } = this.plan;
    clock.add(this, clock.now() + keepAliveInterval);
  }

  fire(now: number): void {
    // Due again one interval after this tick (a late tick does not bring a burst of catch-up ones).
    this.plan.clock.add(this, now + this.plan.keepAliveInterval);
    this.out.push(KEEP_ALIVE);
  }

  push(frame: Frame): void {
    this.out.push(frame);
  }

  override dispose(): void {
    this.plan.clock.remove(this);
  }
}
