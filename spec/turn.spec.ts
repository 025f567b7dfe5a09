// lib/turn.ts on its own: currentTurn changes once the running turn is done; TurnBatch hands what
// one turn collected over once, at its end, asking for one callback a turn at most.
import { strict as assert } from 'node:assert';
import { test } from 'uvu';
import { currentTurn, TurnBatch } from '../lib/turn.js';

/** A `schedule` that holds the callbacks until `run()`: the end of the turn, by hand. */
class ManualTurns {
  readonly callbacks: (() => void)[] = [];
  asked = 0;
  readonly schedule = (callback: () => void): void => {
    this.asked++;
    this.callbacks.push(callback);
  };
  run(): void {
    const callbacks = this.callbacks.splice(0);
    for (const callback of callbacks) callback();
  }
}

test('currentTurn: the same number for the whole turn, another once it is done', async () => {
  const first = currentTurn();
  assert.equal(currentTurn(), first);
  await new Promise((resolve) => setImmediate(resolve));
  assert.notEqual(currentTurn(), first);
});

test('TurnBatch: the items of one turn go to deliver once, in order, duplicates kept, at its end (queueMicrotask by default)', async () => {
  const batches: string[][] = [];
  const batch = new TurnBatch<string>((items) => batches.push(items));
  batch.add('a');
  batch.add('b');
  batch.add('a');
  assert.deepEqual(batches, []);
  await Promise.resolve();
  assert.deepEqual(batches, [['a', 'b', 'a']]);
  batch.add('c');
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(batches, [['a', 'b', 'a'], ['c']]);
  assert.equal(batch.delivered, 2);
});

test('TurnBatch: one callback asked a turn at most, none in a turn that adds nothing', () => {
  const turns = new ManualTurns();
  const batches: number[][] = [];
  const batch = new TurnBatch<number>((items) => batches.push(items), turns.schedule);
  turns.run();
  assert.equal(turns.asked, 0);
  for (let i = 0; i < 1000; i++) batch.add(i);
  assert.equal(turns.asked, 1);
  turns.run();
  assert.equal(batches.length, 1);
  assert.equal(batches[0]!.length, 1000);
  turns.run();
  assert.equal(turns.asked, 1);
  assert.equal(batches.length, 1);
});

test('TurnBatch: flush hands the items over at once; what is added after goes with the callback already asked for', () => {
  const turns = new ManualTurns();
  const batches: string[][] = [];
  const batch = new TurnBatch<string>((items) => batches.push(items), turns.schedule);
  batch.add('a');
  batch.flush();
  assert.deepEqual(batches, [['a']]);
  assert.equal(batch.delivered, 1);
  batch.flush(); // nothing collected: nothing delivered, the count stays
  assert.equal(batch.delivered, 1);
  batch.add('b');
  assert.equal(turns.asked, 1);
  turns.run();
  assert.deepEqual(batches, [['a'], ['b']]);
  assert.equal(batch.delivered, 2);
});

test('TurnBatch: an item added while a batch is delivered goes in the next one, with a callback of its own', () => {
  const turns = new ManualTurns();
  const batches: string[][] = [];
  const batch = new TurnBatch<string>((items) => {
    batches.push(items);
    if (items[0] === 'first') batch.add('during');
  }, turns.schedule);
  batch.add('first');
  turns.run();
  assert.deepEqual(batches, [['first']]);
  assert.equal(turns.asked, 2);
  turns.run();
  assert.deepEqual(batches, [['first'], ['during']]);
});

test.run();
