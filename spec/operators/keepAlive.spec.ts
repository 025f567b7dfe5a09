import { test } from 'uvu';
import { endlessSyncSource } from '../helpers/syncSource.js';
import * as assert from 'uvu/assert';
import { NEVER, Subject, VirtualTimeScheduler, take } from 'rxjs';
import { keepAlive } from '../../operators/keepAlive.js';
import { InvalidOptionError } from '../../lib/errors.js';
import { KEEP_ALIVE, notificationFrame } from '../../lib/frame.js';
import type { Frame } from '../../lib/frame.js';
import { testScheduler } from '../helpers/marbles.js';

const a = notificationFrame({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }, 'tools');
const b = notificationFrame({ jsonrpc: '2.0', method: 'notifications/prompts/list_changed' }, 'prompts');
const values = { a, b, k: KEEP_ALIVE };

test('a keep-alive every 15s from subscription, the first at 15s', () => {
  const s = testScheduler();
  s.run(({ expectObservable }) => {
    const unsub = '     ^ 60s !';
    const expected = '   15s k 14999ms k 14999ms k 14999ms k';
    expectObservable(NEVER.pipe(keepAlive(15000, s)), unsub).toBe(expected, values);
  });
});

test('interleaves keep-alives with the frames on a fixed cadence', () => {
  const s = testScheduler();
  s.run(({ cold, expectObservable }) => {
    const source = cold('a 19999ms             b 19999ms           |', values);
    const expected = '   a 14999ms k 4999ms  b 9999ms  k 9999ms  |';
    const bound = '    ^ 60s !'; // only stops a broken implementation that would tick forever
    expectObservable(source.pipe(keepAlive(15000, s)), bound).toBe(expected, values);
  });
});

test('completion ends the stream and the ticks', () => {
  const s = testScheduler();
  s.run(({ cold, expectObservable }) => {
    // The unsubscription at 60s only stops a broken implementation that would tick forever.
    expectObservable(cold<Frame>('20s |').pipe(keepAlive(15000, s)), '^ 60s !').toBe('15s k 4999ms |', values);
    expectObservable(cold<Frame>('|').pipe(keepAlive(15000, s)), '^ 60s !').toBe('|', values);
  });
});

test('an error passes through and ends the ticks', () => {
  const boom = new Error('boom');
  const s = testScheduler();
  s.run(({ cold, expectObservable }) => {
    expectObservable(cold('20s #', values, boom).pipe(keepAlive(15000, s)), '^ 60s !').toBe('15s k 4999ms #', values, boom);
  });
});

test('releases its timer on completion, error and unsubscription', () => {
  const ends: Record<string, (source: Subject<Frame>, subscription: { unsubscribe(): void }) => void> = {
    completion: (source) => source.complete(),
    error: (source) => source.error(new Error('boom')),
    unsubscription: (_source, subscription) => subscription.unsubscribe(),
  };
  for (const [name, end] of Object.entries(ends)) {
    const scheduler = new VirtualTimeScheduler();
    const source = new Subject<Frame>();
    const got: Frame[] = [];
    const subscription = source.pipe(keepAlive(1000, scheduler)).subscribe({ next: (f) => got.push(f), error: () => {} });
    try {
      scheduler.maxFrames = 3500;
      scheduler.flush();
      assert.is(got.length, 3, `${name}: ticks at 1000, 2000, 3000 on the given scheduler`);
      assert.is(scheduler.actions.length, 1, `${name}: the interval is scheduled`);
      end(source, subscription);
      assert.is(scheduler.actions.length, 0, `${name}: the interval must be released`);
    } finally {
      subscription.unsubscribe();
    }
  }
});

test('throws InvalidOptionError naming intervalMs for anything but a positive integer', () => {
  for (const bad of [0, -5, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 31, '15000', undefined]) {
    assert.throws(
      () => keepAlive(bad as number),
      (error: unknown) =>
        error instanceof InvalidOptionError && error.message.startsWith('keepAlive intervalMs must be a positive integer of milliseconds'),
      `accepted ${String(bad)}`,
    );
  }
  keepAlive(1);
  keepAlive(2 ** 31 - 1);
});

test('stops a synchronous source when unsubscribed', () => {
  const { source, emitted } = endlessSyncSource<Frame>(() => a);
  const got: Frame[] = [];
  source.pipe(keepAlive(15000, new VirtualTimeScheduler()), take(3)).subscribe((frame) => got.push(frame));
  assert.equal(got, [a, a, a]);
  assert.ok(emitted() <= 3, `the source kept emitting after unsubscription: ${emitted()} frames`);
});

test.run();
