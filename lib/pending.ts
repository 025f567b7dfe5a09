import { reportError } from './telemetry.js';

/**
 * A value that is not there yet, handed to whoever waits for it in the very call that settles it:
 * a thenable whose callbacks run synchronously inside {@link Pending.resolve} or
 * {@link Pending.reject}, in the order they were registered (at once when registered after).
 *
 * Why not a Promise: a cluster worker's event log answers the appends of one publish (one frame for
 * each of its thousands of sessions) with one reply; with a Promise per frame each session's frame
 * went out in a microtask of its own, behind a promise, its resolving functions and the promises
 * its two waiters' `then` made (issue 33's profile of legacy sessions on workers). With this the
 * reply's one continuation hands every frame on in a loop.
 *
 * Preconditions, for a producer: settle it once (later calls are ignored) and from a turn of its
 * own (a reply, a timer), never from inside a consumer's callback of the same chain. For a
 * consumer: accept that the callback may run before `wait` or `then` returns (when it is already
 * settled) or inside the producer's call; nothing here defers it. A rejection nobody waits for is
 * not reported (it is no Promise: nothing tracks unhandled rejections). A callback that throws is
 * reported on `channels.error` (`where: 'source'`) and the other waiters still run; the producer
 * never sees it. `spec/pending.spec.ts` holds these.
 * @internal
 */
export class Pending<T> implements PromiseLike<T> {
  #state: 0 | 1 | 2 = 0; // pending, fulfilled, rejected
  #value: T | undefined = undefined;
  #error: unknown = undefined;
  // One waiter is the common case (a legacy session's held frames): kept in two fields.
  #onValue: ((value: T) => void) | undefined = undefined;
  #onError: ((error: unknown) => void) | undefined = undefined;
  #more: Waiter<T>[] | undefined = undefined;

  /** True once resolved or rejected. */
  get settled(): boolean {
    return this.#state !== 0;
  }

  /** True once resolved: {@link value} holds the value. */
  get fulfilled(): boolean {
    return this.#state === 1;
  }

  /** The value, once {@link fulfilled}. */
  get value(): T | undefined {
    return this.#value;
  }

  /** The reason, once rejected. */
  get error(): unknown {
    return this.#error;
  }

  /**
   * Calls `onValue` or `onError` when this settles (now, if it has), without making anything to
   * chain on: the cheap way for a consumer that knows it holds a Pending.
   */
  wait(onValue: ((value: T) => void) | undefined, onError: ((error: unknown) => void) | undefined): void {
    if (onValue === undefined && onError === undefined) return;
    if (this.#state !== 0) this.#call(onValue, onError);
    else if (this.#onValue === undefined && this.#onError === undefined) {
      this.#onValue = onValue;
      this.#onError = onError;
    } else (this.#more ??= []).push({ onValue, onError });
  }

  /**
   * As a Promise's `then`, except that the callback runs synchronously when this settles (at once
   * if it has): a new Pending settled with what the callback returns (or adopts, when that is a
   * thenable), or rejected with what it throws. `await` and `Promise.resolve` take a Pending so.
   */
  then<R1 = T, R2 = never>(onValue?: ((value: T) => R1 | PromiseLike<R1>) | null, onError?: ((error: unknown) => R2 | PromiseLike<R2>) | null): Pending<R1 | R2> {
    const next = new Pending<R1 | R2>();
    const settleWith = (run: () => R1 | R2 | PromiseLike<R1 | R2>) => {
      let result: R1 | R2 | PromiseLike<R1 | R2>;
      try {
        result = run();
      } catch (error) {
        return next.reject(error);
      }
      if (typeof (result as { then?: unknown } | null)?.then === 'function') {
        (result as PromiseLike<R1 | R2>).then((value) => next.resolve(value), (error: unknown) => next.reject(error));
      } else next.resolve(result as R1 | R2);
    };
    this.wait(
      (value) => (onValue ? settleWith(() => onValue(value)) : next.resolve(value as unknown as R1)),
      (error) => (onError ? settleWith(() => onError(error)) : next.reject(error)),
    );
    return next;
  }

  /** Fulfills it with `value` and calls the waiting `onValue`s, in order; ignored once settled. */
  resolve(value: T): void {
    if (this.#state !== 0) return;
    this.#state = 1;
    this.#value = value;
    this.#wake();
  }

  /** Rejects it with `error` and calls the waiting `onError`s, in order; ignored once settled. */
  reject(error: unknown): void {
    if (this.#state !== 0) return;
    this.#state = 2;
    this.#error = error;
    this.#wake();
  }

  #wake(): void {
    const onValue = this.#onValue;
    const onError = this.#onError;
    const more = this.#more;
    this.#onValue = this.#onError = this.#more = undefined;
    if (onValue !== undefined || onError !== undefined) this.#call(onValue, onError);
    if (more !== undefined) for (const waiter of more) this.#call(waiter.onValue, waiter.onError);
  }

  /** Runs one waiter's callback; one that throws is reported and the others still run. */
  #call(onValue: ((value: T) => void) | undefined, onError: ((error: unknown) => void) | undefined): void {
    try {
      if (this.#state === 1) onValue?.(this.#value as T);
      else onError?.(this.#error);
    } catch (error) {
      reportError('source', error);
    }
  }
}

interface Waiter<T> {
  readonly onValue: ((value: T) => void) | undefined;
  readonly onError: ((error: unknown) => void) | undefined;
}
