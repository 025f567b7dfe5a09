// The reconnect policy of upstream streams (issue 34): exponential backoff with jitter under a
// ceiling, the count starting again after a success, in virtual time on an injected scheduler.
import { deepStrictEqual, strictEqual, throws } from 'node:assert';
import { take, VirtualTimeScheduler } from 'rxjs';
import { test } from 'uvu';
import { reconnect, reconnectDelay, resolveReconnectPolicy } from '../../adapters/upstream/reconnect.js';
import { InvalidOptionError } from '../../lib/errors.js';
import { testScheduler } from '../helpers/marbles.js';
import { endlessSyncSource } from '../helpers/syncSource.js';

const NO_JITTER = resolveReconnectPolicy('reconnect', { initialDelay: 10, maxDelay: 40, multiplier: 2, jitter: 0 });

test('a source that keeps failing is subscribed again after 10, 20, 40, then 40 ms (the ceiling)', () => {
  const s = testScheduler();
  const retries: [number, number][] = [];
  s.run(({ cold, expectObservable, expectSubscriptions }) => {
    const source = cold('#');
    const result = source.pipe(reconnect(NO_JITTER, { scheduler: s, onRetry: (_error, attempt, delay) => void retries.push([attempt, delay]) }));
    expectObservable(result, '^ 150ms !').toBe('');
    expectSubscriptions(source.subscriptions).toBe(['(^!)', '10ms (^!)', '30ms (^!)', '70ms (^!)', '110ms (^!)', '150ms (^!)']);
  });
  // The sixth failure, at 150 ms, schedules a seventh attempt that the unsubscription cancels.
  deepStrictEqual(retries, [[1, 10], [2, 20], [3, 40], [4, 40], [5, 40], [6, 40]]);
});

test('an attempt that gets a value starts the count again: each failure after one waits the first delay', () => {
  const s = testScheduler();
  s.run(({ cold, expectObservable, expectSubscriptions }) => {
    const source = cold('a#');
    expectObservable(source.pipe(reconnect(NO_JITTER, { scheduler: s })), '^ 40ms !').toBe('a 10ms a 10ms a 10ms a', { a: 'a' });
    expectSubscriptions(source.subscriptions).toBe(['^!', '11ms ^!', '22ms ^!', '33ms ^!']);
  });
});

test('values and completion pass through as they are', () => {
  const s = testScheduler();
  s.run(({ cold, expectObservable }) => {
    expectObservable(cold('a-b-|').pipe(reconnect(NO_JITTER, { scheduler: s }))).toBe('a-b-|');
  });
});

test('jitter takes a random share of each delay: with jitter 0.5, from half the step to the whole step', () => {
  const policy = resolveReconnectPolicy('reconnect', { initialDelay: 100, maxDelay: 1_000, multiplier: 3, jitter: 0.5 });
  deepStrictEqual([1, 2, 3, 4].map((attempt) => reconnectDelay(policy, attempt, () => 0)), [100, 300, 900, 1_000]);
  deepStrictEqual([1, 2, 3, 4].map((attempt) => reconnectDelay(policy, attempt, () => 0.999_999)), [50, 150, 450, 500]);
  deepStrictEqual([1, 2, 3, 4].map((attempt) => reconnectDelay(policy, attempt, () => 0.5)), [75, 225, 675, 750]);
});

test('the delays are timed on the scheduler given: many streams cut off together spread out', () => {
  const s = testScheduler();
  const policy = resolveReconnectPolicy('reconnect', { initialDelay: 100, maxDelay: 1_000, jitter: 1 });
  const randoms = [0.1, 0.6, 0.35];
  s.run(({ cold, expectObservable, expectSubscriptions }) => {
    const sources = randoms.map(() => cold('#'));
    sources.forEach((source, i) => expectObservable(source.pipe(reconnect(policy, { scheduler: s, random: () => randoms[i]! })), '^ 100ms !').toBe(''));
    expectSubscriptions(sources[0]!.subscriptions).toBe(['(^!)', '90ms (^!)']);
    expectSubscriptions(sources[1]!.subscriptions).toBe(['(^!)', '40ms (^!)']);
    expectSubscriptions(sources[2]!.subscriptions).toBe(['(^!)', '65ms (^!)']);
  });
});

test('stops a synchronous source when unsubscribed', () => {
  const { source, emitted } = endlessSyncSource((i) => i);
  const got: number[] = [];
  source.pipe(reconnect(NO_JITTER, { scheduler: new VirtualTimeScheduler() }), take(3)).subscribe((value) => got.push(value));
  deepStrictEqual(got, [0, 1, 2]);
  strictEqual(emitted() <= 3, true, `the source kept emitting after unsubscription: ${emitted()} values`);
});

test('the defaults, and a policy checked member by member with a message that says what to write', () => {
  deepStrictEqual(resolveReconnectPolicy('reconnect', undefined), { initialDelay: 500, maxDelay: 30_000, multiplier: 2, jitter: 0.5 });
  deepStrictEqual(resolveReconnectPolicy('reconnect', { initialDelay: 60_000 }).maxDelay, 60_000);
  const refused = (policy: unknown, message: RegExp) => throws(() => resolveReconnectPolicy('reconnect', policy as never), (error: unknown) => error instanceof InvalidOptionError && message.test(error.message));
  refused({ initialDelay: 0 }, /^reconnect\.initialDelay must be a positive integer of milliseconds, got 0$/);
  refused({ initialDelay: 100, maxDelay: 50 }, /^reconnect\.maxDelay must be at least reconnect\.initialDelay \(100 ms\), got 50$/);
  refused({ multiplier: 0.5 }, /^reconnect\.multiplier must be a number from 1 to 10, got 0\.5$/);
  refused({ jitter: 2 }, /^reconnect\.jitter must be a number from 0 to 1, got 2$/);
  refused({ initalDelay: 5 }, /^reconnect\.initalDelay must be one of the known options/);
  refused('fast', /^reconnect must be an object, got "fast"$/);
});

test.run();
