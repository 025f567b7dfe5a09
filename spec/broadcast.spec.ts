// Broadcast: the allocation-free signal a stream attaches to (its demand, its supersede signal)
// and a plain Observable for everyone else; follow/unfollow: attach to a Broadcast, else subscribe.
import { strict as assert } from 'node:assert';
import { BehaviorSubject, type Observable, of, Subject, Subscription, throwError } from 'rxjs';
import { test } from 'uvu';
import { Broadcast, type BroadcastTarget, follow, type Follower, unfollow } from '../lib/broadcast.js';
import { channels, type ErrorEvent } from '../lib/telemetry.js';
import { collecting } from './helpers/telemetry.js';

class Target implements BroadcastTarget {
  readonly got: unknown[] = [];
  constructor(private readonly also?: (source: Observable<unknown>, value: unknown) => void) {}
  onBroadcast(source: Observable<unknown>, value: unknown): void {
    this.got.push(value);
    this.also?.(source, value);
  }
}

test('one target, then several, each once; detached ones hear nothing more', () => {
  const signal = new Broadcast<number>();
  const a = new Target();
  const b = new Target();
  const c = new Target();
  signal.attach(a);
  signal.attach(a); // twice is once
  signal.next(1);
  signal.attach(b);
  signal.attach(c);
  signal.attach(b);
  signal.next(2);
  signal.detach(a);
  signal.next(3);
  signal.detach(b);
  signal.detach(c);
  signal.next(4);
  signal.attach(a);
  signal.next(5);
  assert.deepEqual(a.got, [1, 2, 5]);
  assert.deepEqual(b.got, [2, 3]);
  assert.deepEqual(c.got, [2, 3]);
});

test('a value is handed to the targets and the source is the Broadcast itself', () => {
  const signal = new Broadcast<string>();
  const sources: unknown[] = [];
  signal.attach(new Target((source) => sources.push(source)));
  signal.next('x');
  assert.equal(sources.length, 1);
  assert.equal(sources[0], signal);
});

test('a target attached while a value is delivered waits for the next one', () => {
  const signal = new Broadcast<number>();
  const late = new Target();
  const first = new Target(() => signal.attach(late));
  const second = new Target();
  signal.attach(first);
  signal.attach(second);
  signal.next(1);
  signal.next(2);
  assert.deepEqual(first.got, [1, 2]);
  assert.deepEqual(second.got, [1, 2]);
  assert.deepEqual(late.got, [2]);
});

test('subscribers get the values as with a Subject, targets first; completion ends both, and later ones get only the completion', () => {
  const signal = new Broadcast<number>();
  const order: string[] = [];
  signal.attach(new Target((_, value) => order.push(`target ${value}`)));
  let completed = 0;
  const subscription = signal.subscribe({ next: (value) => order.push(`subscriber ${value}`), complete: () => completed++ });
  signal.next(1);
  signal.complete();
  signal.complete(); // idempotent
  signal.next(2);
  assert.deepEqual(order, ['target 1', 'subscriber 1']);
  assert.equal(completed, 1);
  assert.equal(subscription.closed, true);
  let lateCompleted = 0;
  const late: number[] = [];
  signal.subscribe({ next: (value) => late.push(value), complete: () => lateCompleted++ });
  const target = new Target();
  signal.attach(target);
  signal.next(3);
  assert.deepEqual(late, []);
  assert.equal(lateCompleted, 1);
  assert.deepEqual(target.got, []);
});

test('a target that completes the Broadcast while hearing a value: the others of that value still hear it, nothing after', () => {
  const signal = new Broadcast<number>();
  const a = new Target(() => signal.complete());
  const b = new Target();
  signal.attach(a);
  signal.attach(b);
  signal.next(1);
  signal.next(2);
  assert.deepEqual(a.got, [1]);
  assert.deepEqual(b.got, [1]);
});

/** A follower that logs what it is told, with the source's name. */
class Log implements Follower {
  readonly seen: string[] = [];
  constructor(private readonly names: Map<Observable<unknown>, string>) {}
  onBroadcast(source: Observable<unknown>, value: unknown): void {
    this.seen.push(`${this.names.get(source) ?? 'unknown'} ${String(value)}`);
  }
  onError(error: unknown): void {
    this.seen.push(`error ${(error as Error).message}`);
  }
}

test('follow: a Broadcast is attached to (nothing returned, no subscriber made), unfollow detaches', () => {
  const signal = new Broadcast<number>();
  const log = new Log(new Map([[signal, 'b']]));
  assert.equal(follow(signal, log), undefined);
  signal.next(1);
  // Attached, not subscribed: the Broadcast made no Subject for a subscriber.
  assert.equal((signal as unknown as { subject: unknown }).subject, undefined);
  unfollow(signal, log);
  unfollow(signal, log); // idempotent
  signal.next(2);
  assert.deepEqual(log.seen, ['b 1']);
});

test('follow: another Observable is subscribed, its values told with the signal as source; unfollow unsubscribes', () => {
  const signal = new Subject<string>();
  const log = new Log(new Map([[signal, 's']]));
  const subscription = follow(signal, log);
  assert.ok(subscription instanceof Subscription);
  assert.equal(signal.observed, true);
  signal.next('a');
  unfollow(signal, log, subscription);
  unfollow(signal, log, subscription); // idempotent
  assert.equal(signal.observed, false);
  signal.next('b');
  assert.deepEqual(log.seen, ['s a']);
});

test('follow: a signal that emits while it is subscribed is told before follow returns; a completion is told to no one', () => {
  const current = new BehaviorSubject(false);
  const log = new Log(new Map<Observable<unknown>, string>([[current, 'demand']]));
  const subscription = follow(current, log);
  assert.deepEqual(log.seen, ['demand false']);
  current.complete();
  assert.equal(subscription!.closed, true);
  const once = of(7);
  const other = new Log(new Map([[once, 'once']]));
  assert.equal(follow(once, other)!.closed, true);
  assert.deepEqual(other.seen, ['once 7']);
});

test('follow: an error goes to onError, the subscription closed first; without onError it is reported on channels.error', async () => {
  const failing = new Subject<number>();
  const log = new Log(new Map([[failing, 'f']]));
  const subscription = follow(failing, log)!;
  failing.error(new Error('boom'));
  assert.deepEqual(log.seen, ['error boom']);
  assert.equal(subscription.closed, true);

  await collecting<ErrorEvent>(channels.error, async (events) => {
    const seen: unknown[] = [];
    const bare: Follower = { onBroadcast: (_source, value) => seen.push(value) };
    follow(throwError(() => new Error('lost')), bare);
    assert.deepEqual(seen, []);
    assert.equal(events.length, 1);
    assert.equal(events[0]!.where, 'source');
    assert.equal((events[0]!.error as Error).message, 'lost');
  });
});

test.run();
