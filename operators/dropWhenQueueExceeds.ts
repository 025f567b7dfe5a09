import { isObservable, Subscriber, type MonoTypeOperatorFunction, type Observable, type SchedulerLike, type Subscription } from 'rxjs';
import { Broadcast, type BroadcastTarget } from '../lib/broadcast.js';
import { Clock, type ClockEntry } from '../lib/clock.js';
import { InvalidOptionError, StalledStreamError } from '../lib/errors.js';
import { encodedByteLength } from '../lib/encode.js';
import { isNotification, type Frame, type MessageFrame } from '../lib/frame.js';
import { accountQueue } from '../lib/telemetry.js';
import { requireInterval } from './keepAlive.js';
import { DisposingStage, stageOperator } from './stage.js';

/**
 * How much a busy sink may have held for it: at most `notifications` undelivered notifications
 * and at most `bytes` bytes of frames as they will be written.
 */
export interface QueueLimits {
  /** The most notifications held, a positive integer count (the listen option `listenMaxQueue`; defaults to 1000 there). */
  readonly notifications: number;
  /**
   * The most bytes held, counted as the frames will be written (`encodedByteLength`), a positive
   * integer (the option `listenMaxQueueBytes`); defaults to 1 048 576 (1 MiB).
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
 *   listen option `listenMaxQueue`, which defaults to 1000); or {@link QueueLimits} with a byte
 *   budget as well. The byte budget defaults to 1 048 576 (1 MiB, {@link DEFAULT_QUEUE_BYTES}).
 * @param demand$ whether the sink can take more: `false` when it is busy, `true` when it drained.
 *   It may emit synchronously from inside the downstream `next`.
 * @param onDrop called with the dropped notification, the number of notifications held and the
 *   bytes held each time one is dropped; optional. If it throws, the stream errors with that error.
 * @throws InvalidOptionError when a limit is not a positive integer.
 * @see keepAlive
 * @see tagSubscriptionId
 */
export function dropWhenQueueExceeds(
  limit: number | QueueLimits,
  demand$: Observable<boolean>,
  onDrop?: DropHandler,
  options?: DropOptions,
): MonoTypeOperatorFunction<Frame> {
  if (!isObservable(demand$)) throw new InvalidOptionError('dropWhenQueueExceeds demand$', 'an Observable of booleans', demand$);
  const plan = queuePlan(limit, demand$, onDrop, options);
  return stageOperator(() => [new QueueStage(plan)]);
}

/** More of what {@link dropWhenQueueExceeds} does. */
export interface DropOptions {
  /**
   * Once the source has completed, how long the queued frames (say, a listen's closing frames)
   * may wait for a sink that takes nothing, in milliseconds, before the stream errors with
   * `StalledStreamError` (the adapter then drops the connection): a closed stream whose client
   * never reads would otherwise hold its slot forever. A non-negative integer; default: wait
   * forever. `0`: no wait at all, a stream that completes while frames are queued errors at once
   * and the queued frames are dropped. The endpoint's streams use `0`, so that a closed stream
   * (superseded, say) whose client is not reading gives its slot back at once (SECURITY.md: a
   * principal never holds more than its cap of slots, at any instant).
   */
  readonly stallGraceMs?: number;
  /** Where the grace period's time comes from; defaults to `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
}

/** What every stream of one `dropWhenQueueExceeds` shares. @internal */
export interface QueuePlan {
  readonly notifications: number;
  readonly bytes: number;
  /** `undefined`: always ready. */
  readonly demand$: Observable<boolean> | undefined;
  /** `demand$` is a {@link Broadcast}: streams attach to it instead of subscribing. */
  readonly directDemand: boolean;
  readonly onDrop: DropHandler | undefined;
  readonly stallGraceMs: number | undefined;
  readonly clock: Clock | undefined;
}

/** Validates the arguments of {@link dropWhenQueueExceeds} into a {@link QueuePlan}. @internal */
export function queuePlan(limit: number | QueueLimits, demand$: Observable<boolean> | undefined, onDrop?: DropHandler, options?: DropOptions): QueuePlan {
  const { notifications, bytes } = queueLimits(limit);
  if (demand$ !== undefined && !isObservable(demand$)) throw new InvalidOptionError('dropWhenQueueExceeds demand$', 'an Observable of booleans', demand$);
  const stallGraceMs = options?.stallGraceMs;
  if (stallGraceMs !== undefined && stallGraceMs !== 0) requireInterval('dropWhenQueueExceeds stallGraceMs', stallGraceMs);
  return {
    notifications,
    bytes,
    demand$,
    directDemand: demand$ instanceof Broadcast,
    onDrop,
    stallGraceMs,
    clock: stallGraceMs === undefined || stallGraceMs === 0 ? undefined : Clock.of(options?.scheduler),
  };
}

/**
 * The logic of {@link dropWhenQueueExceeds}: follows the sink's demand (attached to a
 * {@link Broadcast} directly, else subscribed), passes frames while the sink is ready and nothing
 * waits, else holds them in a {@link PendingFrames}; holds the source's completion until the queue
 * is written, at most for the stall grace period (the stage is its own entry on the clock then).
 * @internal
 */
export class QueueStage extends DisposingStage<Frame> implements BroadcastTarget, ClockEntry {
  due = 0;
  slot = -1;
  seq = 0;
  // One small integer for its yes/no states (idle streams are many): BUSY (the sink said it
  // cannot write), FLUSHING, COMPLETED (the source has, the queue has not), RELEASED.
  private flags = 0;
  private pending: PendingFrames | undefined;
  private demand: Subscription | undefined;

  constructor(private readonly plan: QueuePlan) {
    super();
  }

  override open(): void {
    const { plan } = this;
    if (plan.directDemand) (plan.demand$ as Broadcast<boolean>).attach(this);
    else if (plan.demand$ !== undefined) this.demand = plan.demand$.subscribe(new DemandSubscriber(this));
  }

  push(frame: Frame): void {
    if ((this.flags & BUSY) === 0 && (this.pending === undefined || this.pending.length === 0)) {
      this.out.push(frame);
      return;
    }
    const plan = this.plan;
    const pending = (this.pending ??= new PendingFrames(plan.notifications, plan.onDrop, plan.bytes));
    try {
      pending.offer(frame);
    } catch (error) {
      // `onDrop` (or the encoder measuring the frame) threw: the stream errors with that error.
      this.fail(error);
    }
  }

  onBroadcast(_source: Observable<unknown>, value: unknown): void {
    this.onDemand(value as boolean);
  }

  /** The sink's demand changed. */
  onDemand(canWrite: boolean): void {
    if (!canWrite) {
      this.flags |= BUSY;
      return;
    }
    this.flags &= ~BUSY;
    this.flush();
  }

  private flush(): void {
    // A sink that drains synchronously calls back into here from the `push` below: the loop that
    // is already running picks the new demand up, so the stack does not grow.
    const pending = this.pending;
    if ((this.flags & FLUSHING) !== 0 || pending === undefined) return;
    this.flags |= FLUSHING;
    try {
      while ((this.flags & (BUSY | RELEASED)) === 0 && pending.length > 0) this.out.push(pending.shift());
    } finally {
      this.flags &= ~FLUSHING;
    }
    if ((this.flags & (COMPLETED | RELEASED)) === COMPLETED && pending.length === 0) this.finish();
  }

  override end(): void {
    if (this.pending === undefined || this.pending.length === 0) return this.finish();
    const { clock, stallGraceMs } = this.plan;
    // No grace: the client is not reading now, so its closing frames are dropped with the rest.
    if (stallGraceMs === 0) return this.fire();
    // The source's completion waits for the queued frames, at most the grace period.
    this.flags |= COMPLETED;
    if (clock !== undefined) clock.add(this, clock.now() + stallGraceMs!);
  }

  /** The grace period ran out with frames still queued. */
  fire(): void {
    this.fail(new StalledStreamError({ graceMs: this.plan.stallGraceMs! }));
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
    if ((this.flags & RELEASED) !== 0) return;
    this.flags |= RELEASED;
    this.plan.clock?.remove(this);
    if (this.plan.directDemand) (this.plan.demand$ as Broadcast<boolean>).detach(this);
    this.demand?.unsubscribe();
    this.demand = undefined;
    this.pending?.clear();
  }

  demandError(error: unknown): void {
    this.fail(error);
  }
}

const BUSY = 1;
const FLUSHING = 2;
const COMPLETED = 4;
const RELEASED = 8;

// A bare Subscriber rather than an observer object: subscribing it allocates no SafeSubscriber.
class DemandSubscriber extends Subscriber<boolean> {
  constructor(private readonly stage: QueueStage) {
    super();
  }

  protected override _next(value: boolean): void {
    this.stage.onDemand(value);
  }

  protected override _error(error: unknown): void {
    this.unsubscribe();
    this.stage.demandError(error);
  }

  protected override _complete(): void {
    // The demand keeps its last value.
    this.unsubscribe();
  }
}

/** `limit` as both numbers, validated. @internal */
export function queueLimits(limit: number | QueueLimits): Required<QueueLimits> {
  const given = typeof limit === 'number' ? { notifications: limit } : limit;
  if (given === null || typeof given !== 'object') {
    throw new InvalidOptionError('dropWhenQueueExceeds limit', 'a positive integer count of notifications or { notifications, bytes }', limit);
  }
  const notifications = given.notifications;
  const bytes = given.bytes ?? DEFAULT_QUEUE_BYTES;
  if (!Number.isSafeInteger(notifications) || notifications <= 0) {
    throw new InvalidOptionError('dropWhenQueueExceeds limit', 'a positive integer count of notifications', notifications);
  }
  if (!Number.isSafeInteger(bytes) || bytes <= 0) {
    throw new InvalidOptionError('dropWhenQueueExceeds bytes', 'a positive integer count of bytes', bytes);
  }
  return { notifications, bytes };
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
        accountQueue(0, 0, 1);
        return false;
      }
      if (this.notifications >= this.limit || this.bytes + size > this.maxBytes) {
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
