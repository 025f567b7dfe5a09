import { Pending } from '../lib/pending.js';
import { isThenable } from '../lib/replayBuffer.js';

const ignore = () => undefined;

/** Where {@link HeldFrames} hands what it held. @internal */
export interface HeldFramesSink<T> {
  /** The next value, in order. */
  onHeld(value: T): void;
  /** Everything held was passed and the end was asked for. */
  onHeldEnd(): void;
  /**
   * A promise among the values rejected (its value is skipped). To stop, the sink calls
   * {@link HeldFrames.stop}; otherwise the values after it go on.
   */
  onHeldError(error: unknown): void;
}

/**
 * Values handed on in the order they were pushed, each as soon as it and every value before it
 * are ready: a value is ready at once, a promise when it resolves. It is the one way a stage holds
 * its frames behind something asynchronous: the priming event's id read from a shared log
 * (`primeStream`), the frames a replay reads (`replayFrom`), the append that stamps an event id
 * (`withEventIds`, a legacy session's feed). A stage with nothing asynchronous in front passes its
 * frames straight on and never makes one (see {@link HeldFrames.empty}).
 * @internal
 */
export class HeldFrames<T> {
  private readonly items: (T | PromiseLike<T>)[] = [];
  // True while a value is being passed on, or while the head is a promise not yet settled.
  private draining = false;
  private ending = false;
  private stopped = false;
  // What a Pending head calls when it settles: made once (at the first), not per value.
  private waiters: [(value: T) => void, (error: unknown) => void] | undefined = undefined;

  constructor(private readonly sink: HeldFramesSink<T>) {}

  /** Nothing is held: a value that is ready may go straight to the sink instead of through here. */
  get empty(): boolean {
    return this.items.length === 0 && !this.draining;
  }

  push(item: T | PromiseLike<T>): void {
    if (this.stopped) return;
    // A promise behind another gets its handler only when it reaches the head; rejected before
    // that (a shared log's appends can fail out of order, e.g. while a Redis Cluster fails over),
    // Node would call it unhandled and end the process. Its rejection is read at the head. (A
    // Pending is no Promise: nothing reports it unhandled.)
    if (isThenable(item) && !(item instanceof Pending)) item.then(undefined, ignore);
    this.items.push(item);
    this.drain();
  }

  /** Asks for the end, which comes after every value held. */
  end(): void {
    if (this.stopped) return;
    this.ending = true;
    this.drain();
  }

  /** Drops what is held; nothing more reaches the sink. */
  stop(): void {
    this.stopped = true;
    this.items.length = 0;
  }

  private drain(): void {
    // A sink that pushes again from inside `pass` is served by the loop already running.
    if (this.draining) return;
    this.draining = true;
    const { items } = this;
    while (items.length > 0 && !this.stopped) {
      let head: T | PromiseLike<T> = items[0]!;
      if (head instanceof Pending) {
        // Settled already: taken here, not through a callback (which would run inside this loop).
        if (head.fulfilled) head = head.value as T;
        else if (head.settled) {
          items.shift();
          this.sink.onHeldError(head.error);
          continue;
        } else {
          const [onValue, onError] = (this.waiters ??= [(value: T) => this.settled(value, undefined, false), (error: unknown) => this.settled(undefined, error, true)]);
          head.wait(onValue, onError);
          // Stays draining until it settles: later values wait behind it.
          return;
        }
      } else if (isThenable(head)) {
        head.then(
          (value) => this.settled(value, undefined, false),
          (error: unknown) => this.settled(undefined, error, true),
        );
        // Stays draining until the promise settles: later values wait behind it.
        return;
      }
      items.shift();
      this.sink.onHeld(head as T);
    }
    this.draining = false;
    if (this.ending && items.length === 0 && !this.stopped) this.sink.onHeldEnd();
  }

  private settled(value: T | undefined, error: unknown, rejected: boolean): void {
    if (this.stopped) return;
    this.draining = false;
    if (rejected) {
      this.items.shift();
      this.sink.onHeldError(error);
    } else {
      this.items[0] = value as T;
    }
    this.drain();
  }
}
