// operators/heldFrames.ts on its own: values out in push order, each once it and all before it are
// ready; the end after the last of them; a rejected promise skipped (or the sink stops it); stop()
// drops what is held; a sink that pushes from inside onHeld is served in order by the running loop.
import { strict as assert } from 'node:assert';
import { test } from 'uvu';
import { HeldFrames, type HeldFramesSink } from '../../operators/heldFrames.js';

class Sink implements HeldFramesSink<string> {
  readonly seen: string[] = [];
  held!: HeldFrames<string>;
  stopOnError = false;
  onHeld(value: string): void {
    this.seen.push(value);
  }
  onHeldEnd(): void {
    this.seen.push('|');
  }
  onHeldError(error: unknown): void {
    this.seen.push(`#${(error as Error).message}`);
    if (this.stopOnError) this.held.stop();
  }
}

function deferred(): { promise: Promise<string>; resolve: (value: string) => void; reject: (error: Error) => void } {
  let resolve!: (value: string) => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<string>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

test('ready values pass at once; empty says when nothing is held', () => {
  const sink = new Sink();
  const held = (sink.held = new HeldFrames(sink));
  assert.ok(held.empty);
  held.push('a');
  held.push('b');
  held.end();
  assert.deepEqual(sink.seen, ['a', 'b', '|']);
  assert.ok(held.empty);
});

test('values wait behind a promise, in order, and the end after them', async () => {
  const sink = new Sink();
  const held = (sink.held = new HeldFrames(sink));
  const first = deferred();
  const third = deferred();
  held.push(first.promise);
  held.push('b');
  held.push(third.promise);
  held.push('d');
  held.end();
  assert.deepEqual(sink.seen, []);
  assert.ok(!held.empty);
  third.resolve('c');
  await settle();
  assert.deepEqual(sink.seen, [], 'the later promise waits for the earlier one');
  first.resolve('a');
  await settle();
  assert.deepEqual(sink.seen, ['a', 'b', 'c', 'd', '|']);
  assert.ok(held.empty);
});

test('a rejected promise is skipped after telling the sink, the values after it go on; or the sink stops', async () => {
  const sink = new Sink();
  const held = (sink.held = new HeldFrames(sink));
  const failing = deferred();
  held.push(failing.promise);
  held.push('b');
  failing.reject(new Error('append failed'));
  await settle();
  assert.deepEqual(sink.seen, ['#append failed', 'b']);

  const stopping = new Sink();
  stopping.stopOnError = true;
  const stopped = (stopping.held = new HeldFrames(stopping));
  const bad = deferred();
  stopped.push(bad.promise);
  stopped.push('b');
  stopped.end();
  bad.reject(new Error('read failed'));
  await settle();
  assert.deepEqual(stopping.seen, ['#read failed'], 'nothing after the stop, no end');
});

test('a promise rejected while it waits behind another is not an unhandled rejection: the sink hears it in its turn', async () => {
  const unhandled: unknown[] = [];
  const listener = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', listener);
  try {
    const sink = new Sink();
    const held = (sink.held = new HeldFrames(sink));
    const first = deferred();
    const second = deferred();
    held.push(first.promise);
    held.push(second.promise);
    second.reject(new Error('late'));
    await settle();
    await settle();
    assert.deepEqual(unhandled, []);
    first.resolve('a');
    await settle();
    assert.deepEqual(sink.seen, ['a', '#late']);
  } finally {
    process.off('unhandledRejection', listener);
  }
});

test('stop drops what is held; a promise that settles after it reaches nobody', async () => {
  const sink = new Sink();
  const held = (sink.held = new HeldFrames(sink));
  const waiting = deferred();
  held.push(waiting.promise);
  held.push('b');
  held.stop();
  waiting.resolve('a');
  held.push('c');
  held.end();
  await settle();
  assert.deepEqual(sink.seen, []);
});

test('a value pushed from inside onHeld joins the end of the line: order kept, stack flat', () => {
  const seen: string[] = [];
  let held!: HeldFrames<string>;
  const sink: HeldFramesSink<string> = {
    onHeld: (value) => {
      seen.push(value);
      if (value === 'a') {
        assert.ok(!held.empty, 'not empty while a value is being passed');
        held.push('a2');
      }
    },
    onHeldEnd: () => seen.push('|'),
    onHeldError: () => assert.fail('no error'),
  };
  held = new HeldFrames(sink);
  held.push('a');
  held.push('b');
  held.end();
  assert.deepEqual(seen, ['a', 'a2', 'b', '|']);
});

test.run();
