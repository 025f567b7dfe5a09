// Broadcast: the allocation-free signal a stream attaches to (its demand, its supersede signal)
// and a plain Observable for everyone else.
import { strict as assert } from 'node:assert';
import type { Observable } from 'rxjs';
import { test } from 'uvu';
import { Broadcast, type BroadcastTarget } from '../lib/broadcast.js';

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

test.run();
