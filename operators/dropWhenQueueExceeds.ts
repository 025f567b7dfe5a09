import type { MonoTypeOperatorFunction, Observable, SchedulerLike, Subscription } from 'rxjs';
import { follow, type Follower, unfollow } from '../lib/broadcast.js';
import { Clock, type ClockEntry } from '../lib/clock.js';
import { InvalidOptionError, StalledStreamError } from '../lib/errors.js';
import { encodedByteLength } from '../lib/encode.js';
import { isNotification, type Frame, type MessageFrame } from '../lib/frame.js';
import { accountQueue } from '../lib/telemetry.js';
import { callback, milliseconds, nonNegativeInteger, observable, oneOf, positiveInteger } from '../lib/validate.js';
import { DisposingStage, stageOperator } from './stage.js';

/**
 * How much a busy sink may have held for it: at most `notifications` undelivered notifications
 * and at most `bytes` bytes of frames as they will be written.
 */
export interface QueueLimits {
  /** The most notifications held, a positive integer count (the endpoint option `maxStreamQueue`; defaults to 1000 there). */
  readonly notifications: number;
  /**
   * The most bytes held, counted as the frames will be written (`encodedByteLength`), a positive
   * integer (the option `maxStreamQueueBytes`); defaults to 1 048 576 (1 MiB).
   */
  readonly bytes?: number;
}

/** The byte budget of a queue when none is given: 1 MiB. */
export const DEFAULT_QUEUE_BYTES = 1_048_576;

/**
 * Called each time a notification is dropped for a busy sink: with the dropped frame, the number
 * of notifications held (at most the limit) and the bytes held.
 */
export type DropHandler = (frame: MessageFrame, queueLength: number, queueBytes: number) => void;

/**
 * Holds frames for a busy sink, at most `limit` notifications and a byte budget of them,
 * coalescing identical pending notifications and never dropping a control frame.
 *
 * This is the boundary to the socket (DESIGN M10). While the sink is ready and nothing waits,
 * frames pass straight through. When `demand$` says `false` (the adapter's `write()` returned
 * false) message frames queue up in order: a notification whose `coalesceKey` is already
 * pending is discarded, because the pending one carries the same information (a payload-less
 * `notifications/resources/updated` for a URI already queued adds nothing); a notification
 * that finds `limit` notifications waiting, or that would take the frames held past the byte
 * budget, is dropped and reported to `onDrop`; control frames (acknowledgment, closing frames)
 * always queue and never count against the notification limit (their bytes do count, so
 * notifications after them find less room). Keep-alive comments are skipped while anything
 * waits: the queued frames will keep the connection busy anyway. When `demand$` says `true`
 * again (`'drain'`) the queue is written out in order, one frame at a time, stopping as soon as
 * the sink reports `false` again. Completion waits for the queue to empty; an error is forwarded
 * at once and discards the queue.
 *
 * The sink is assumed ready until `demand$` says otherwise. `demand$` is subscribed before the
 * source, so a synchronous initial value (say, a `BehaviorSubject(false)`) applies to the very
 * first frame. Its completion keeps the last value; its error errors the stream.
 *
 * @example
 * const demand$ = new BehaviorSubject(true);
 * frames$.pipe(dropWhenQueueExceeds({ notifications: 1000, bytes: 1 << 20 }, demand$, (frame, n) => console.warn('drop', frame.topic, n)))
 *   .subscribe((frame) => { if (!res.write(encodeFrame(frame))) demand$.next(false); });
 * res.on('drain', () => demand$.next(true));
 * @param limit the most notifications held for a busy sink, a positive integer count (the
 *   endpoint option `maxStreamQueue`, which defaults to 1000); or {@link QueueLimits} with a byte
 *   budget as well. The byte budget defaults to 1 048 576 (1 MiB, {@link DEFAULT_QUEUE_BYTES}).
 * @param demand$ whether the sink can take more: `false` when it is busy, `true` when it drained.
 *   It may emit synchronously from inside the downstream `next`.
 * @param onDrop called with the dropped notification, the number of notifications held and the
 *   bytes held each time one is dropped; optional. If it throws, the stream errors with that error.
 * @param options `stallGraceMs` and its `scheduler` (see {@link DropOptions}); optional.
 * @throws InvalidOptionError when a limit is not a positive integer, `demand$` not an Observable,
 *   `onDrop` not a function or `stallGraceMs` not a non-negative integer of milliseconds.
 * @see keepAlive
 * @see tagSubscriptionId
 */
export function dropWhenQueueExceeds(
  limit: number | QueueLimits,
  demand$: Observable<boolean>,
  onDrop?: DropHandler,
  options?: DropOptions,
): MonoTypeOperatorFunction<Frame> {
  const { notifications, bytes } = queueLimits(limit);
  const sinkDemand$ = observable<boolean>('dropWhenQueueExceeds demand$', demand$, 'booleans');
  const grace = options?.stallGraceMs;
  const plan = queuePlan({
    maxStreamQueue: notifications,
    maxStreamQueueBytes: bytes,
    onDrop: onDrop === undefined ? undefined : callback<DropHandler>('dropWhenQueueExceeds onDrop', onDrop),
    stallGraceMs: grace === undefined || nonNegativeInteger('dropWhenQueueExceeds stallGraceMs', grace, 'milliseconds') === 0 ? grace : milliseconds('dropWhenQueueExceeds stallGraceMs', grace),
    stalledEnd: options?.stalledEnd === undefined ? undefined : oneOf<StalledEnd>('dropWhenQueueExceeds stalledEnd', options.stalledEnd, STALLED_ENDS),
    scheduler: options?.scheduler,
  });
  return stageOperator(() => [new QueueStage(plan, sinkDemand$)]);
}

/** More of what {@link dropWhenQueueExceeds} does. */
export interface DropOptions {
  /**
   * Once the source has completed, how long the queued frames (say, a listen's closing frames)
   * may wait for a sink that takes nothing, in milliseconds, before the stream errors with
   * `StalledStreamError` (the adapter then drops the connection): a closed stream whose client
   * never reads would otherwise hold its slot forever. A non-negative integer; default: wait
   * forever. `0`: no wait at all, a stream that completes while frames are queued errors at once
   * and the queued frames are dropped (unless `stalledEnd` is `'control'`). The endpoint's streams use `0`, so that a closed stream
   * (superseded, say) whose client is not reading gives its slot back at once (SECURITY.md: a
   * principal never holds more than its cap of slots, at any instant).
   */
  readonly stallGraceMs?: number;
  /** Where the grace period's time comes from; defaults to `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
  /**
   * What a stream whose grace period ran out with frames still queued does (see `stallGraceMs`).
   * `'error'` (the default): it errors with `StalledStreamError` and the queued frames are dropped
   * with the connection the adapter then drops. `'control'`: its queued control frames (a listen's
   * closing frames) are passed on regardless of demand, into the sink's own buffer, its queued
   * notifications are discarded, and it completes. For a sink that many streams share (a message
   * channel: stdio, a WebSocket): dropping the connection would end every stream on it, and the
   * closing frames are how the peer learns that this one ended; what the sink then buffers is a few
   * control frames per closed stream, bounded by the requests that opened them.
   */
  readonly stalledEnd?: StalledEnd;
}

/** What a queue does when its grace period runs out with frames queued; see {@link DropOptions.stalledEnd}. */
export type StalledEnd = 'error' | 'control';

const STALLED_ENDS: readonly StalledEnd[] = ['error', 'control'];

/**
 * What the queue stages of one `dropWhenQueueExceeds`, or of one endpoint's streams, share; valid
 * by then. The limits keep the names of the endpoint options they come from. @internal
 */
export interface QueuePlan {
  /** The most notifications held (`maxStreamQueue`). */
  readonly maxStreamQueue: number;
  /** The most bytes held (`maxStreamQueueBytes`). */
  readonly maxStreamQueueBytes: number;
  readonly onDrop: DropHandler | undefined;
  /** See {@link DropOptions.stallGraceMs}: `undefined` waits forever, `0` not at all. */
  readonly stallGraceMs: number | undefined;
  /** Where a grace period other than 0 is timed. */
  readonly clock: Clock | undefined;
  /** See {@link DropOptions.stalledEnd}: `undefined` is `'error'`. */
  readonly stalledEnd: StalledEnd | undefined;
}

/** The plan of {@link dropWhenQueueExceeds}, from valid settings. @internal */
export function queuePlan(settings: {
  readonly maxStreamQueue: number;
  readonly maxStreamQueueBytes: number;
  readonly onDrop?: DropHandler | undefined;
  readonly stallGraceMs?: number | undefined;
  readonly stalledEnd?: StalledEnd | undefined;
  readonly scheduler?: SchedulerLike | undefined;
}): QueuePlan {
  const { maxStreamQueue, maxStreamQueueBytes, onDrop, stallGraceMs, stalledEnd } = settings;
  const timed = stallGraceMs !== undefined && stallGraceMs > 0;
  return { maxStreamQueue, maxStreamQueueBytes, onDrop, stallGraceMs, clock: timed ? Clock.of(settings.scheduler) : undefined, stalledEnd };
}

/**
 * The logic of {@link dropWhenQueueExceeds}: follows the sink's demand (see {@link follow}: a
 * Broadcast is attached to, anything else subscribed), passes frames while the sink is ready and nothing
 * waits, else holds them in a {@link PendingFrames}; holds the source's completion until the queue
 * is written, at most for the stall grace period (the stage is its own entry on the clock then).
 * @internal
 */
export class QueueStage extends DisposingStage<Frame> implements Follower, ClockEntry {
  due = 0;
  slot = -1;
  seq = 0;
  /** The sink said it cannot write. */
  private busy = false;
  /** Held frames are being written (a sink that drains inside `next` must not start a second loop). */
  private flushing = false;
  /** The source has completed; the queue has not been written yet. */
  private completed = false;
  /** Left the demand and the clock: passes nothing more. */
  private released = false;
  private pending: PendingFrames | undefined;
  /** The demand's subscription when it is not a Broadcast (see {@link follow}). */
  private demand: Subscription | undefined;

  /**
   * @param plan what the stream shares with the others.
   * @param demand$ this stream's sink demand; `undefined`: always ready.
   */
  constructor(
    private readonly plan: QueuePlan,
    private readonly demand$: Observable<boolean> | undefined,
  ) {
    super();
  }

  /** Frames held for the busy sink now. */
  get queuedFrames(): number {
    return this.pending?.length ?? 0;
  }

  /** Bytes of the frames held now, as they will be written. */
  get queuedBytes(): number {
    return this.pending?.bytes ?? 0;
  }

  /** Notifications dropped for this stream since it opened (its queue was full). */
  get dropped(): number {
    return this.pending?.dropped ?? 0;
  }

  /** Notifications discarded for this stream since it opened because an identical one was held. */
  get coalesced(): number {
    return this.pending?.coalesced ?? 0;
  }

  override open(): void {
    const { demand$ } = this;
    if (demand$ !== undefined) this.demand = follow(demand$, this);
  }

  push(frame: Frame): void {
    if (!this.busy && (this.pending === undefined || this.pending.length === 0)) {
      this.out.push(frame);
      return;
    }
    const plan = this.plan;
    const pending = (this.pending ??= new PendingFrames(plan.maxStreamQueue, plan.onDrop, plan.maxStreamQueueBytes));
    try {
      pending.offer(frame);
    } catch (error) {
      // `onDrop` (or the encoder measuring the frame) threw: the stream errors with that error.
      this.fail(error);
    }
  }

  /** The sink's demand changed (a demand's completion keeps its last value). */
  onBroadcast(_source: Observable<unknown>, canWrite: unknown): void {
    this.onDemand(canWrite as boolean);
  }

  /** The demand signal failed: so does the stream. */
  onError(error: unknown): void {
    this.fail(error);
  }

  private onDemand(canWrite: boolean): void {
    if (!canWrite) {
      this.busy = true;
      return;
    }
    this.busy = false;
    this.flush();
  }

  private flush(): void {
    // A sink that drains synchronously calls back into here from the `push` below: the loop that
    // is already running picks the new demand up, so the stack does not grow.
    const pending = this.pending;
    if (this.flushing || pending === undefined) return;
    this.flushing = true;
    try {
      while (!this.busy && !this.released && pending.length > 0) this.out.push(pending.shift());
    } finally {
      this.flushing = false;
    }
    if (this.completed && !this.released && pending.length === 0) this.finish();
  }

  override end(): void {
    if (this.pending === undefined || this.pending.length === 0) return this.finish();
    const { clock, stallGraceMs } = this.plan;
    // No grace: the client is not reading now, so its closing frames are dropped with the rest.
    if (stallGraceMs === 0) return this.fire();
    // The source's completion waits for the queued frames, at most the grace period.
    this.completed = true;
    if (clock !== undefined) clock.add(this, clock.now() + stallGraceMs!);
  }

  /** The grace period ran out with frames still queued. */
  fire(): void {
    if (this.plan.stalledEnd === 'control') return this.forceControl();
    this.fail(new StalledStreamError({ graceMs: this.plan.stallGraceMs! }));
  }

  /** `stalledEnd: 'control'`: the queued control frames go out whatever the demand, the notifications are discarded, and the stream completes. */
  private forceControl(): void {
    const pending = this.pending!;
    const control: Frame[] = [];
    while (pending.length > 0) {
      const frame = pending.shift();
      if (!isNotification(frame)) control.push(frame);
    }
    this.release();
    for (const frame of control) this.out.push(frame);
    this.out.end();
  }

  private finish(): void {
    this.release();
    this.out.end();
  }

  // fail() is DisposingStage's: release, then the error on.
  override dispose(): void {
    this.release();
  }

  /** Leaves the demand and the clock, drops what is queued; the stage passes nothing from then on. */
  private release(): void {
    if (this.released) return;
    this.released = true;
    this.plan.clock?.remove(this);
    const { demand$ } = this;
    if (demand$ !== undefined) unfollow(demand$, this, this.demand);
    this.demand = undefined;
    this.pending?.clear();
  }
}

/** `limit` as both numbers, validated (labels of {@link dropWhenQueueExceeds}). @internal */
export function queueLimits(limit: number | QueueLimits): Required<QueueLimits> {
  const given = typeof limit === 'number' ? { notifications: limit } : limit;
  if (given === null || typeof given !== 'object') {
    throw new InvalidOptionError('dropWhenQueueExceeds limit', 'a positive integer count of notifications or { notifications, bytes }', limit);
  }
  return {
    notifications: positiveInteger('dropWhenQueueExceeds limit', given.notifications, 'notifications'),
    bytes: positiveInteger('dropWhenQueueExceeds bytes', given.bytes ?? DEFAULT_QUEUE_BYTES, 'bytes'),
  };
}

/**
 * The frames held for a busy sink, with the rules of {@link dropWhenQueueExceeds}: keep-alive
 * comments are skipped, a notification whose `coalesceKey` is already held is discarded, one
 * that finds `limit` notifications held or would take the bytes held past `maxBytes` is dropped
 * (reported to `onDrop`), control frames are always held and never count against `limit`.
 * Allocates nothing until the first frame is held.
 * @internal
 */
export class PendingFrames {
  private queue: FrameQueue | undefined;
  // Keys of the notifications held: coalescing is a lookup, not a scan.
  private keys: Set<string> | undefined;
  private notifications = 0;
  /** Bytes of the frames held, as they will be written. */
  bytes = 0;
  /** Notifications dropped since the queue was made (never reset: the stream's total). */
  dropped = 0;
  /** Notifications discarded since the queue was made because an identical one was held. */
  coalesced = 0;

  constructor(
    private readonly limit: number,
    private readonly onDrop?: DropHandler,
    private readonly maxBytes: number = DEFAULT_QUEUE_BYTES,
  ) {}

  get length(): number {
    return this.queue === undefined ? 0 : this.queue.length;
  }

  /**
   * Holds `frame`, which cannot be written now, unless it is skipped (a comment), coalesced or
   * dropped. Returns whether it was held. Throws what `onDrop` or the encoder throws.
   */
  offer(frame: Frame): boolean {
    if (frame.type === 'comment') return false;
    const size = encodedByteLength(frame);
    if (frame.type === 'message' && frame.priority === 'notification') {
      const key = frame.coalesceKey;
      if (key !== undefined && this.keys?.has(key) === true) {
        this.coalesced++;
        accountQueue(0, 0, 1);
        return false;
      }
      if (this.notifications >= this.limit || this.bytes + size > this.maxBytes) {
        this.dropped++;
        this.onDrop?.(frame, this.notifications, this.bytes);
        return false;
      }
      if (key !== undefined) (this.keys ??= new Set()).add(key);
      this.notifications++;
    }
    this.bytes += size;
    accountQueue(size, 1);
    (this.queue ??= new FrameQueue()).push(frame, size);
    return true;
  }

  /** The oldest held frame; only call when `length > 0`. */
  shift(): Frame {
    const queue = this.queue!;
    const size = queue.headSize();
    this.bytes -= size;
    accountQueue(-size, -1);
    const frame = queue.shift();
    if (isNotification(frame)) {
      this.notifications--;
      if (frame.coalesceKey !== undefined) this.keys!.delete(frame.coalesceKey);
    }
    return frame;
  }

  clear(): void {
    if (this.queue !== undefined && this.queue.length > 0) accountQueue(-this.bytes, -this.queue.length);
    this.queue?.clear();
    this.keys?.clear();
    this.notifications = 0;
    this.bytes = 0;
  }
}

/**
 * A FIFO of frames and their sizes with O(1) push and shift: arrays read from a moving head,
 * compacted when half dead.
 */
class FrameQueue {
  private items: (Frame | undefined)[] = [];
  private sizes: number[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(frame: Frame, size: number): void {
    this.items.push(frame);
    this.sizes.push(size);
  }

  /** The size of the oldest frame; only call when `length > 0`. */
  headSize(): number {
    return this.sizes[this.head]!;
  }

  /** The oldest frame; only call when `length > 0`. */
  shift(): Frame {
    const frame = this.items[this.head]!;
    this.items[this.head++] = undefined;
    if (this.head === this.items.length) {
      this.clear();
    } else if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.sizes = this.sizes.slice(this.head);
      this.head = 0;
    }
    return frame;
  }

  clear(): void {
    this.items.length = 0;
    this.sizes.length = 0;
    this.head = 0;
  }
}
