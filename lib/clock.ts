import { asyncScheduler, type SchedulerAction, type SchedulerLike, type Subscription } from 'rxjs';

/**
 * The longest delay a timer can be given: Node fires a timer whose delay exceeds 2^31 − 1 ms
 * after 1 ms instead. The {@link Clock} approaches a later deadline in steps no longer than this;
 * options that become one timer's delay are validated against it.
 */
export const MAX_TIMER_DELAY = 2_147_483_647;

/**
 * Something that is due at a time on a {@link Clock}: a keep-alive tick, a lifetime or token
 * deadline, a stall grace period. A stream's stages are their own entries (they implement this
 * interface), so a stream holds no timer and no extra object for its time.
 * @internal
 */
export interface ClockEntry {
  /**
   * When it is due, in milliseconds since the clock's origin (see {@link Clock.elapsed}: small
   * integers, which V8 stores in the object instead of boxing them); set by the clock.
   */
  due: number;
  /** Its place in the clock's heap; `-1` when not scheduled. Set by the clock, start it at `-1`. */
  slot: number;
  /** Order among entries due at the same time: the one added first fires first. Set by the clock. */
  seq: number;
  /** The time came; `now` is the scheduler's time when the clock ran. */
  fire(now: number): void;
}

// Publishes in progress (hub fan-outs), and a number that changes with each outermost one: while
// a publish is delivered the time cannot move, so every stream of a clock reads it once.
let dispatching = 0;
let dispatchSerial = 0;

/**
 * Marks the start of a synchronous delivery to many streams (the hub's fan-out of one publish):
 * until the matching {@link endDispatch}, {@link Clock.now} reads its scheduler once and hands
 * every stream the same time. Calls may nest.
 * @internal
 */
export function beginDispatch(): void {
  if (dispatching++ === 0) dispatchSerial++;
}

/** Ends what {@link beginDispatch} started. @internal */
export function endDispatch(): void {
  dispatching--;
}

const clocks = new WeakMap<SchedulerLike, Clock>();

/**
 * The one source of time of every stream on a scheduler: a heap of entries and a single scheduled
 * action on the scheduler, set for the earliest entry. Keep-alive ticks, idle checks, lifetime and
 * token deadlines, stall grace periods and the legacy timers of 10 000 streams cost one timer, and
 * adding or removing an entry is O(log n) with no allocation. Entries due at the same time fire in
 * the order they were added. Works with any `SchedulerLike`, so `TestScheduler` drives it in
 * virtual time; a deadline further away than {@link MAX_TIMER_DELAY} is approached in steps.
 *
 * There is one clock per scheduler ({@link Clock.of}): an endpoint's streams, which share its
 * injected scheduler, share its clock.
 * @internal
 */
export class Clock {
  /** The clock of `scheduler` (created on first use, kept while the scheduler lives). */
  static of(scheduler: SchedulerLike = asyncScheduler): Clock {
    let clock = clocks.get(scheduler);
    if (clock === undefined) clocks.set(scheduler, (clock = new Clock(scheduler)));
    return clock;
  }

  readonly scheduler: SchedulerLike;
  private readonly heap: ClockEntry[] = [];
  private seq = 0;
  private action: Subscription | undefined;
  /** When the scheduled action is set to run; `Infinity` when none is. */
  private wakeAt = Number.POSITIVE_INFINITY;
  private running = false;
  private serial = -1;
  private cached = 0;

  /** The scheduler's time when the clock was made; entries keep their times relative to it. */
  readonly origin: number;

  private constructor(scheduler: SchedulerLike) {
    this.scheduler = scheduler;
    this.origin = scheduler.now();
  }

  /**
   * Milliseconds since the clock's origin (`now() - origin`): what a stream keeps of a time (a
   * deadline, its last activity), a small integer for the first 12 days of a process where an
   * epoch time would be a boxed double per field.
   */
  elapsed(): number {
    return small(this.now() - this.origin);
  }

  /** The scheduler's time in milliseconds; read once per publish while a publish is delivered. */
  now(): number {
    if (dispatching === 0) return this.scheduler.now();
    if (this.serial !== dispatchSerial) {
      this.serial = dispatchSerial;
      this.cached = this.scheduler.now();
    }
    return this.cached;
  }

  /** How many entries are scheduled (for tests and leak checks). */
  get size(): number {
    return this.heap.length;
  }

  /** Schedules `entry` at `due`, a time of the scheduler (moves it if it was scheduled). */
  add(entry: ClockEntry, due: number): void {
    if (entry.slot >= 0) this.remove(entry);
    due = small(due - this.origin);
    entry.due = due;
    entry.seq = this.seq++;
    entry.slot = this.heap.length;
    this.heap.push(entry);
    this.up(entry.slot);
    if (!this.running && due < this.wakeAt) this.wake();
  }

  /**
   * Calls `fn` once, `ms` milliseconds from now (a session's grace period, say): one small entry
   * on the clock instead of a timer of its own. Unsubscribe to cancel.
   */
  after(ms: number, fn: () => void): { unsubscribe(): void } {
    return new OneShot(this, this.now() + ms, fn);
  }

  /**
   * Calls `fn` once at `due`, a time of the scheduler (a deadline on a clock other than its
   * stream's, say). Unsubscribe to cancel.
   */
  at(due: number, fn: () => void): { unsubscribe(): void } {
    return new OneShot(this, due, fn);
  }

  /** Unschedules `entry`; nothing if it is not scheduled. */
  remove(entry: ClockEntry): void {
    const slot = entry.slot;
    if (slot < 0) return;
    entry.slot = -1;
    const last = this.heap.pop()!;
    if (last !== entry) {
      this.heap[slot] = last;
      last.slot = slot;
      this.down(slot);
      this.up(last.slot);
    }
    if (this.heap.length === 0 && !this.running) this.sleep();
  }

  private sleep(): void {
    this.action?.unsubscribe();
    this.action = undefined;
    this.wakeAt = Number.POSITIVE_INFINITY;
  }

  /** (Re)sets the scheduled action for the earliest entry. */
  private wake(action?: SchedulerAction<Clock>): void {
    const first = this.heap[0];
    if (first === undefined) {
      if (action === undefined) this.sleep();
      else this.action = undefined;
      this.wakeAt = Number.POSITIVE_INFINITY;
      return;
    }
    const now = this.scheduler.now() - this.origin;
    const delay = Math.min(Math.max(first.due - now, 0), MAX_TIMER_DELAY);
    this.wakeAt = first.due;
    if (action !== undefined) {
      // Rescheduling the running action with the same delay keeps its interval timer.
      this.action = action.schedule(this, delay);
      return;
    }
    this.action?.unsubscribe();
    this.action = this.scheduler.schedule(run, delay, this);
  }

  /** The scheduled action ran: fires every entry that is due, then sets the action for the next. */
  onRun(action: SchedulerAction<Clock>): void {
    this.running = true;
    try {
      const now = this.scheduler.now();
      const elapsed = now - this.origin;
      // Entries added while these fire with a time already past fire in this run too.
      for (let first = this.heap[0]; first !== undefined && first.due <= elapsed; first = this.heap[0]) {
        this.remove(first);
        first.fire(now);
      }
    } finally {
      this.running = false;
      this.wake(action);
    }
  }

  private less(a: ClockEntry, b: ClockEntry): boolean {
    return a.due < b.due || (a.due === b.due && a.seq < b.seq);
  }

  private up(slot: number): void {
    const heap = this.heap;
    const entry = heap[slot]!;
    while (slot > 0) {
      const parentSlot = (slot - 1) >> 1;
      const parent = heap[parentSlot]!;
      if (!this.less(entry, parent)) break;
      heap[slot] = parent;
      parent.slot = slot;
      slot = parentSlot;
    }
    heap[slot] = entry;
    entry.slot = slot;
  }

  private down(slot: number): void {
    const heap = this.heap;
    const length = heap.length;
    const entry = heap[slot]!;
    for (;;) {
      const left = 2 * slot + 1;
      if (left >= length) break;
      const right = left + 1;
      const child = right < length && this.less(heap[right]!, heap[left]!) ? right : left;
      if (!this.less(heap[child]!, entry)) break;
      heap[slot] = heap[child]!;
      heap[slot]!.slot = slot;
      slot = child;
    }
    heap[slot] = entry;
    entry.slot = slot;
  }
}

/**
 * `ms` as a small integer when it is one: the difference of two epoch times is computed as a double,
 * which a field would hold boxed (a heap number per stream); `| 0` makes it a small integer V8 keeps
 * in the object. A time beyond ±24 days of the origin stays as it is.
 */
function small(ms: number): number {
  const int = ms | 0;
  return int === ms ? int : ms;
}

/** What {@link Clock.after} returns. */
class OneShot implements ClockEntry {
  due = 0;
  slot = -1;
  seq = 0;

  constructor(
    private readonly clock: Clock,
    due: number,
    private readonly fn: () => void,
  ) {
    clock.add(this, due);
  }

  fire(): void {
    this.fn();
  }

  unsubscribe(): void {
    this.clock.remove(this);
  }
}

function run(this: SchedulerAction<Clock>, clock?: Clock): void {
  clock!.onRun(this);
}
