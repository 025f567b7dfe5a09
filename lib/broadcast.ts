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
  // Two fields, as a stream holds one or two of these (its demand, the entry it was admitted with):
  // its targets (one, the common case, with no Set for it; a Set of them; none) or COMPLETED, and
  // the Subject of its subscribers, made for the first.
  private targets: BroadcastTarget | Targets | typeof COMPLETED | undefined = undefined;
  private subject: Subject<T> | undefined = undefined;

  /** Registers `target` for the values to come (nothing once completed). */
  attach(target: BroadcastTarget): void {
    const targets = this.targets;
    if (targets === COMPLETED || targets === target) return;
    if (targets === undefined) this.targets = target;
    else if (targets instanceof Targets) targets.add(target);
    else this.targets = new Targets([targets, target]);
  }

  detach(target: BroadcastTarget): void {
    const targets = this.targets;
    if (targets === target) this.targets = undefined;
    else if (targets instanceof Targets) targets.delete(target);
  }

  next(value: T): void {
    const targets = this.targets;
    if (targets === COMPLETED) return;
    // A snapshot: targets attached while this value is delivered wait for the next one.
    if (targets instanceof Targets) for (const target of Array.from(targets)) target.onBroadcast(this, value);
    else if (targets !== undefined) targets.onBroadcast(this, value);
    this.subject?.next(value);
  }

  complete(): void {
    if (this.targets === COMPLETED) return;
    this.targets = COMPLETED;
    this.subject?.complete();
  }

  // Observable's own (internal, untyped) subscribe hook, which RxJS's Subject overrides the same
  // way: no subscribe function, hence no closure, per instance.
  protected _subscribe(subscriber: Subscriber<T>): TeardownLogic {
    if (this.targets === COMPLETED) {
      subscriber.complete();
      return undefined;
    }
    return (this.subject ??= new Subject<T>()).subscribe(subscriber);
  }
}

/** A Broadcast's targets when there are several. */
class Targets extends Set<BroadcastTarget> {}

/** What a completed Broadcast holds in place of its targets. */
const COMPLETED: unique symbol = Symbol('completed');
