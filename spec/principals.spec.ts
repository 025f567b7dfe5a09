// PrincipalRegistry (DESIGN M8): the per-principal cap, with the oldest streams superseded.
import { strict as assert } from 'node:assert';
import { test } from 'uvu';
import { Broadcast } from '../lib/broadcast.js';
import { InvalidOptionError } from '../lib/errors.js';
import { PrincipalRegistry } from '../lib/principals.js';

test('over the cap, the oldest streams of that principal are told once and stop counting; other principals are untouched', () => {
  const registry = new PrincipalRegistry(2);
  const told: string[] = [];
  const admit = (principal: string, name: string) => {
    const admission = registry.admit(principal);
    admission.superseded$.subscribe({ next: () => told.push(name), complete: () => told.push(`${name} done`) });
    return admission;
  };
  admit('a', 'a1');
  const a2 = admit('a', 'a2');
  admit('b', 'b1');
  assert.deepEqual(told, []);
  admit('a', 'a3');
  assert.deepEqual(told, ['a1', 'a1 done']);
  assert.equal(registry.count('a'), 2);
  assert.equal(registry.count('b'), 1);
  a2.release();
  a2.release(); // idempotent
  assert.deepEqual(told, ['a1', 'a1 done', 'a2 done']);
  assert.equal(registry.count('a'), 1);
  assert.equal(registry.size, 2);
});

test('a released or displaced entry no longer counts, and its signal only completes for a late subscriber', () => {
  const registry = new PrincipalRegistry(1);
  const first = registry.admit('p');
  const second = registry.admit('p'); // displaces first
  first.release(); // displaced already: counts nothing, changes nothing
  assert.equal(registry.count('p'), 1);
  let values = 0;
  let completed = 0;
  first.superseded$.subscribe({ next: () => values++, complete: () => completed++ });
  assert.deepEqual([values, completed], [0, 1]);
  second.release();
  assert.equal(registry.count('p'), 0);
  assert.equal(registry.size, 0);
  // The principal comes back: a new group, and the old entries cannot touch it.
  const third = registry.admit('p');
  second.release();
  first.release();
  assert.equal(registry.count('p'), 1);
  third.release();
  assert.equal(registry.size, 0);
});

test('the supersede signal is a Broadcast a stream attaches to directly', () => {
  const registry = new PrincipalRegistry(1);
  const admission = registry.admit('p');
  assert.ok(admission.superseded$ instanceof Broadcast);
  const heard: unknown[] = [];
  (admission.superseded$ as Broadcast<void>).attach({ onBroadcast: (source) => heard.push(source) });
  registry.admit('p');
  assert.deepEqual(heard, [admission.superseded$]);
});

test('the cap must be a positive integer', () => {
  for (const cap of [0, -1, 1.5, Number.NaN]) {
    assert.throws(() => new PrincipalRegistry(cap), (error: unknown) => error instanceof InvalidOptionError);
  }
});

test.run();
