import { Observable, Subject, type Subscriber, type TeardownLogic } from 'rxjs';

/** What a {@link Broadcast} hands its values to directly. @internal */
export interface BroadcastTarget {
  onBroadcast(source: Observable<unknown>, value: unknown): void;
}

/**
 * A Subject-like signal (`next`, `complete`, never an error) that is also a plain Observable, with
 * a second, allocation-free way in: `attach(target)` registers an object that gets every value
 * through `target.onBroadcast(this, value)`. A listen stream attaches itself to its demand, its
 * supersede signal and the server's shutdown signal this way, instead of subscribing to three
 * Subjects (a subscriber, a subscription, a teardown closure and two arrays each, times 10 000
 * idle streams). Other consumers subscribe as usual. After `complete()`, a new subscriber only
 * gets the completion and a new target nothing, as with a completed Subject.
 * @internal
 */
export class Broadcast<T> extends Observable<T> {
  // One target is the common case (a stream's own demand or supersede signal): no Set for it.
  private one: BroadcastTarget | undefined;
  private many: Set<BroadcastTarget> | undefined;
  private subject: Subject<T> | undefined;
  private done = false;

  /** Registers `target` for the values to come (nothing once completed). */
  attach(target: BroadcastTarget): void {
    if (this.done) return;
    if (this.one === undefined && this.many === undefined) {
      this.one = target;
      return;
    }
    if (this.many === undefined) {
      this.many = new Set();
      this.many.add(this.one!);
      this.one = undefined;
    }
    this.many.add(target);
  }

  detach(target: BroadcastTarget): void {
    if (this.one === target) this.one = undefined;
    else this.many?.delete(target);
  }

  next(value: T): void {
    if (this.done) return;
    if (this.one !== undefined) this.one.onBroadcast(this, value);
    // A snapshot: targets attached while this value is delivered wait for the next one.
    else if (this.many !== undefined) for (const target of Array.from(this.many)) target.onBroadcast(this, value);
    this.subject?.next(value);
  }

  complete(): void {
    if (this.done) return;
    this.done = true;
    this.one = undefined;
    this.many = undefined;
    this.subject?.complete();
  }

  // Observable's own (internal, untyped) subscribe hook, which RxJS's Subject overrides the same
  // way: no subscribe function, hence no closure, per instance.
  protected _subscribe(subscriber: Subscriber<T>): TeardownLogic {
    if (this.done) {
      subscriber.complete();
      return undefined;
    }
    return (this.subject ??= new Subject<T>()).subscribe(subscriber);
  }
}
