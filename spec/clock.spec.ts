// The one clock per scheduler (lib/clock.ts): one scheduled action for every entry, ties in the
// order entries were added, far deadlines approached in steps no longer than a timer can wait, the
// time read once per hub publish.
import { VirtualAction, VirtualTimeScheduler } from 'rxjs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { beginDispatch, Clock, endDispatch, MAX_TIMER_DELAY, type ClockEntry } from '../lib/clock.js';

const virtual = () => new VirtualTimeScheduler(VirtualAction, Number.POSITIVE_INFINITY);
const actions = (scheduler: VirtualTimeScheduler) => (scheduler as unknown as { actions: VirtualAction<unknown>[] }).actions;

function entry(name: string, fired: string[], now: () => number): ClockEntry {
  return { due: 0, slot: -1, seq: 0, fire: () => fired.push(`${now()} ${name}`) };
}

function advanceTo(scheduler: VirtualTimeScheduler, frame: number): void {
  scheduler.maxFrames = frame;
  scheduler.flush();
  scheduler.frame = frame;
}

test('one clock per scheduler, and one scheduled action however many entries', () => {
  const scheduler = virtual();
  const clock = Clock.of(scheduler);
  assert.is(Clock.of(scheduler), clock);
  assert.is.not(Clock.of(virtual()), clock);
  const fired: string[] = [];
  const entries = Array.from({ length: 1000 }, (_, i) => entry(`e${i}`, fired, () => scheduler.now()));
  entries.forEach((e, i) => clock.add(e, 10 + (i % 7)));
  assert.is(actions(scheduler).length, 1);
  assert.is(clock.size, 1000);
  advanceTo(scheduler, 100);
  assert.is(fired.length, 1000);
  assert.is(clock.size, 0);
  assert.is(actions(scheduler).length, 0, 'nothing scheduled once the heap is empty');
});

test('entries due at the same time fire in the order they were added; earlier ones first', () => {
  const scheduler = virtual();
  const clock = Clock.of(scheduler);
  const fired: string[] = [];
  const now = () => scheduler.now();
  clock.add(entry('b', fired, now), 20);
  clock.add(entry('a', fired, now), 10);
  clock.add(entry('c', fired, now), 20);
  const removed = entry('gone', fired, now);
  clock.add(removed, 15);
  clock.remove(removed);
  clock.remove(removed); // twice is nothing
  advanceTo(scheduler, 50);
  assert.equal(fired, ['10 a', '20 b', '20 c']);
});

test('a deadline beyond 2^31 - 1 ms is reached in steps no timer has to exceed', () => {
  const scheduler = virtual();
  const clock = Clock.of(scheduler);
  const fired: string[] = [];
  const far = 3 * MAX_TIMER_DELAY + 5;
  clock.add(entry('far', fired, () => scheduler.now()), far);
  const delays: number[] = [];
  for (let i = 0; i < 5 && fired.length === 0; i++) {
    const next = actions(scheduler)[0]!;
    delays.push(next.delay - scheduler.now());
    advanceTo(scheduler, next.delay);
  }
  assert.equal(fired, [`${far} far`]);
  assert.ok(delays.every((delay) => delay <= MAX_TIMER_DELAY), `delays ${delays.join(', ')}`);
});

test('an entry added while entries fire, already due, fires in the same run', () => {
  const scheduler = virtual();
  const clock = Clock.of(scheduler);
  const fired: string[] = [];
  const late = entry('late', fired, () => scheduler.now());
  clock.add({ due: 0, slot: -1, seq: 0, fire: (now) => { fired.push(`${now} first`); clock.add(late, now); } }, 5);
  advanceTo(scheduler, 10);
  assert.equal(fired, ['5 first', '5 late']);
});

test('during a hub publish the time is read once for every stream; outside it, every call reads it', () => {
  let reads = 0;
  const scheduler = virtual();
  const counting = Object.create(scheduler, { now: { value: () => (reads++, scheduler.now()) } });
  const clock = Clock.of(counting);
  reads = 0; // the clock read its origin
  clock.now();
  clock.now();
  assert.is(reads, 2);
  beginDispatch();
  for (let i = 0; i < 100; i++) clock.now();
  beginDispatch(); // a publish inside a publish shares the outer one's instant
  clock.now();
  endDispatch();
  endDispatch();
  assert.is(reads, 3);
  beginDispatch();
  clock.now();
  endDispatch();
  assert.is(reads, 4, 'the next publish reads the time again');
});

test('after() runs a callback once and can be cancelled', () => {
  const scheduler = virtual();
  const clock = Clock.of(scheduler);
  const calls: number[] = [];
  clock.after(30, () => calls.push(scheduler.now()));
  const cancelled = clock.after(10, () => calls.push(-1));
  cancelled.unsubscribe();
  advanceTo(scheduler, 100);
  assert.equal(calls, [30]);
});

test.run();
