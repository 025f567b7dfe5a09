// lib/pending.ts: a thenable settled in its producer's call, and HeldFrames, which takes a settled
// one at the head without a callback. The preconditions its doc states, held here.
import { strict as assert } from 'node:assert';
import { test } from 'uvu';
import { Pending } from '../lib/pending.js';
import { channels } from '../lib/telemetry.js';
import { HeldFrames, type HeldFramesSink } from '../operators/heldFrames.js';

test('waiters run inside resolve, in the order they were registered; one registered after runs at once', () => {
  const pending = new Pending<number>();
  const seen: string[] = [];
  pending.wait((value) => seen.push(`a${value}`), undefined);
  pending.wait((value) => seen.push(`b${value}`), undefined);
  pending.wait((value) => seen.push(`c${value}`), undefined);
  assert.equal(seen.length, 0);
  pending.resolve(7);
  assert.deepEqual(seen, ['a7', 'b7', 'c7'], 'synchronously, in order');
  pending.wait((value) => seen.push(`late${value}`), undefined);
  assert.equal(seen.at(-1), 'late7', 'at once when already settled');
  assert.equal(pending.fulfilled, true);
  assert.equal(pending.value, 7);
});

test('settled once: a later resolve or reject is ignored; a rejection reaches the onError waiters only', () => {
  const pending = new Pending<number>();
  const seen: unknown[] = [];
  pending.wait((value) => seen.push(['value', value]), (error) => seen.push(['error', (error as Error).message]));
  pending.reject(new Error('no'));
  pending.resolve(1);
  pending.reject(new Error('again'));
  assert.deepEqual(seen, [['error', 'no']]);
  assert.equal(pending.settled, true);
  assert.equal(pending.fulfilled, false);
  assert.equal((pending.error as Error).message, 'no');
});

test('a waiter that throws is reported on channels.error; the others still run and resolve returns', () => {
  const reported: unknown[] = [];
  const onError = (event: unknown) => reported.push(event);
  channels.error.subscribe(onError);
  try {
    const pending = new Pending<string>();
    const seen: string[] = [];
    pending.wait(() => {
      throw new Error('a broken waiter');
    }, undefined);
    pending.wait((value) => seen.push(value), undefined);
    pending.resolve('x');
    assert.deepEqual(seen, ['x']);
    assert.equal(reported.length, 1);
    assert.equal(((reported[0] as { error: Error }).error).message, 'a broken waiter');
  } finally {
    channels.error.unsubscribe(onError);
  }
});

test('then chains like a promise, synchronously; await and Promise.resolve adopt it', async () => {
  const pending = new Pending<number>();
  const chained = pending.then((n) => n + 1).then((n) => {
    if (n > 1) throw new Error(`too big: ${n}`);
    return n;
  });
  const caught = chained.then(undefined, (error: unknown) => (error as Error).message);
  let seen: unknown;
  caught.then((value) => (seen = value));
  pending.resolve(1);
  assert.equal(seen, 'too big: 2', 'settled within resolve');
  const other = new Pending<string>();
  setTimeout(() => other.resolve('awaited'), 1);
  assert.equal(await other, 'awaited');
  const failing = new Pending<string>();
  setTimeout(() => failing.reject(new Error('refused')), 1);
  await assert.rejects(Promise.resolve(failing), /refused/);
  // A callback's thenable result is adopted.
  const outer = new Pending<number>();
  const adopted = outer.then(() => Promise.resolve('from a promise'));
  outer.resolve(0);
  assert.equal(await adopted, 'from a promise');
});

test('HeldFrames: Pending values pass in push order whatever order they settle in; a rejected one goes to onHeldError and the rest go on', () => {
  const got: unknown[] = [];
  const sink: HeldFramesSink<string> = {
    onHeld: (value) => got.push(value),
    onHeldEnd: () => got.push('end'),
    onHeldError: (error) => got.push(`error ${(error as Error).message}`),
  };
  const held = new HeldFrames(sink);
  const [a, b, c, d] = [new Pending<string>(), new Pending<string>(), new Pending<string>(), new Pending<string>()];
  held.push(a);
  held.push(b);
  held.push('plain');
  held.push(c);
  held.push(d);
  held.end();
  // Settled before the head: held, then taken straight from the Pending once the head is done.
  d.resolve('d');
  c.reject(new Error('c failed'));
  b.resolve('b');
  assert.equal(got.length, 0);
  a.resolve('a');
  assert.deepEqual(got, ['a', 'b', 'plain', 'error c failed', 'd', 'end']);
});

test('HeldFrames: many Pendings settled at once behind the head pass in one loop, without a call stack per value', () => {
  const got: number[] = [];
  const held = new HeldFrames<number>({ onHeld: (value) => got.push(value), onHeldEnd: () => undefined, onHeldError: () => undefined });
  const pendings = Array.from({ length: 20_000 }, () => new Pending<number>());
  for (const pending of pendings) held.push(pending);
  for (let i = pendings.length - 1; i >= 1; i--) pendings[i]!.resolve(i);
  pendings[0]!.resolve(0);
  assert.equal(got.length, 20_000);
  assert.equal(got[19_999], 19_999);
});

test.run();
