import { Observable, Subject, Subscriber, type Subscription, type TeardownLogic } from 'rxjs';
import { reportError } from './telemetry.js';

/** What a {@link Broadcast} hands its values to directly. @internal */
export interface BroadcastTarget {
  onBroadcast(source: Observable<unknown>, value: unknown): void;
}

/**
 * A Subject-like signal (`next`, `complete`, never an error) that is also a plain Observable, with
 * a second, allocation-free way in: `attach(target)` registers an object that gets every value
 * through `target.onBroadcast(this, value)`. A listen stream attaches itself to its demand, its
 * supersede signal and the server's shutdown signal this way ({@link follow} makes the choice),
 * instead of subscribing to three Subjects (a subscriber, a subscription, a teardown closure and
 * two arrays each, times 10 000 idle streams). Other consumers subscribe as usual. After `complete()`, a new subscriber only
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

/**
 * What {@link follow} hands a signal's values to: `onBroadcast(signal$, value)` (the signal
 * itself as `source`, whether attached or subscribed), and, when the signal is not a Broadcast,
 * its error to `onError`. A follower without `onError` has the error reported on `channels.error`
 * (`where: 'source'`). A completion is told to no one: the signal just stops.
 * @internal
 */
export interface Follower extends BroadcastTarget {
  onError?(error: unknown): void;
}

/**
 * Follows `signal$` on `target`'s behalf: attaches `target` to it when it is a {@link Broadcast},
 * else subscribes one small subscriber that hands its values on. {@link unfollow} undoes either.
 *
 * The one place that makes this choice. A listen stream follows its demand, its principal's
 * signal and the server's shutdown signal; our own signals are Broadcasts, so at 10 000 idle
 * streams that is no subscriber, no subscription and no closure each (attaching allocates
 * nothing), while any other Observable a caller passes still works. What the first case returns
 * is `undefined` (there is nothing to keep), which keeps a stream that follows several signals
 * from needing a list of them.
 *
 * The two cases differ in one thing: a target that follows the same signal twice is attached
 * once (told each value once; the first `unfollow` detaches it) but subscribed twice (told each
 * value twice; each subscription unsubscribed on its own). A target that tells its signals apart
 * by `source`, as a close stage does, needs no more.
 *
 * @example
 * class Stream implements Follower {
 *   #watch: Subscription | undefined;
 *   constructor(private readonly shutdown$: Observable<void>) {
 *     this.#watch = follow(shutdown$, this);
 *   }
 *   onBroadcast(_source: Observable<unknown>, _value: unknown): void {
 *     this.close();
 *   }
 *   close(): void {
 *     unfollow(this.shutdown$, this, this.#watch);
 *     this.#watch = undefined;
 *   }
 * }
 * @param signal$ the signal; a Broadcast is attached to, any other Observable subscribed.
 * @param target told each value (see {@link Follower}).
 * @returns the subscription when it subscribed (a signal that emits or ends while it is
 *   subscribed is told before this returns), `undefined` when it attached.
 * @see unfollow
 * @internal
 */
export function follow(signal$: Observable<unknown>, target: Follower): Subscription | undefined {
  if (signal$ instanceof Broadcast) {
    signal$.attach(target);
    return undefined;
  }
  return signal$.subscribe(new FollowSubscriber(signal$, target));
}

/**
 * Stops what `follow(signal$, target)` started: detaches `target` from a Broadcast, else
 * unsubscribes `subscription`. Idempotent.
 * @param signal$ the signal given to {@link follow}.
 * @param target the target given to {@link follow}.
 * @param subscription what {@link follow} returned; `undefined` when the caller unsubscribes it
 *   itself (together with its other subscriptions, say) or when it attached.
 * @internal
 */
export function unfollow(signal$: Observable<unknown>, target: Follower, subscription?: Subscription): void {
  if (signal$ instanceof Broadcast) signal$.detach(target);
  else subscription?.unsubscribe();
}

/** The subscriber {@link follow} subscribes a signal that is not a Broadcast with: one object, no closures. */
class FollowSubscriber extends Subscriber<unknown> {
  constructor(
    private readonly signal$: Observable<unknown>,
    private readonly target: Follower,
  ) {
    super();
  }

  protected override _next(value: unknown): void {
    this.target.onBroadcast(this.signal$, value);
  }

  protected override _error(error: unknown): void {
    this.unsubscribe();
    const { target } = this;
    if (target.onError !== undefined) target.onError(error);
    else reportError('source', error);
  }

  protected override _complete(): void {
    this.unsubscribe();
  }
}
