import { test } from 'uvu';
import { endlessSyncSource } from '../helpers/syncSource.js';
import * as assert from 'uvu/assert';
import { defer, finalize, mergeMap, NEVER, of, take, throwError, timer } from 'rxjs';
import type { TestScheduler } from 'rxjs/testing';
import { InvalidOptionError } from '../../lib/errors.js';
import { restoreSubscriptions } from '../../operators/restoreSubscriptions.js';
import { testScheduler } from '../helpers/marbles.js';

const URIS = Array.from({ length: 20 }, (_, i) => `file:///r${i}`);

/** A `subscribe` that takes 10 ms of virtual time per URI and records what it saw. */
function slowSubscribe(scheduler: TestScheduler, fail: ReadonlySet<string> = new Set()) {
  const stats = { attempts: [] as [string, number][], inFlight: 0, maxInFlight: 0, settled: 0 };
  const subscribe = (uri: string) => {
    stats.attempts.push([uri, scheduler.now()]);
    stats.maxInFlight = Math.max(stats.maxInFlight, ++stats.inFlight);
    const work = fail.has(uri) ? timer(10).pipe(mergeMap(() => throwError(() => new Error(`no ${uri}`)))) : timer(10);
    return work.pipe(
      finalize(() => {
        stats.inFlight--;
        stats.settled++;
      }),
    );
  };
  return { stats, subscribe };
}

test('restores every URI, at most 8 at a time, emitting only what the source emits', () => {
  const scheduler = testScheduler();
  const { stats, subscribe } = slowSubscribe(scheduler);
  scheduler.run(({ cold, expectObservable }) => {
    const source = cold('a 40ms b|');
    const expected = '   a 40ms b|';
    expectObservable(source.pipe(restoreSubscriptions(URIS, subscribe))).toBe(expected);
  });
  assert.is(stats.maxInFlight, 8);
  assert.equal(
    stats.attempts.map(([uri]) => uri),
    URIS,
  );
  assert.equal(
    stats.attempts.map(([, at]) => at),
    [...Array(8).fill(0), ...Array(8).fill(10), ...Array(4).fill(20)],
  );
  assert.is(stats.inFlight, 0);
});

test('honours a smaller concurrency', () => {
  const scheduler = testScheduler();
  const { stats, subscribe } = slowSubscribe(scheduler);
  scheduler.run(({ cold, expectObservable }) => {
    expectObservable(cold('60ms |').pipe(restoreSubscriptions(URIS.slice(0, 5), subscribe, 2))).toBe('60ms |');
  });
  assert.is(stats.maxInFlight, 2);
  assert.equal(
    stats.attempts.map(([, at]) => at),
    [0, 0, 10, 10, 20],
  );
});

test('reports a failing URI and goes on with the others', () => {
  const scheduler = testScheduler();
  const failing = new Set([URIS[3]!, URIS[12]!]);
  const { stats, subscribe } = slowSubscribe(scheduler, failing);
  const errors: [string, string][] = [];
  const throwsAtOnce = (uri: string) => {
    if (uri === URIS[5]) throw new Error('sync');
    return subscribe(uri);
  };
  scheduler.run(({ cold, expectObservable }) => {
    const source = cold('a 40ms b|');
    const expected = '   a 40ms b|';
    const result = source.pipe(
      restoreSubscriptions(URIS, throwsAtOnce, 8, (uri, error) => errors.push([uri, (error as Error).message])),
    );
    expectObservable(result).toBe(expected);
  });
  assert.equal(errors, [
    [URIS[5]!, 'sync'],
    [URIS[3]!, `no ${URIS[3]}`],
    [URIS[12]!, `no ${URIS[12]}`],
  ]);
  assert.is(stats.attempts.length, 19);
  assert.is(stats.settled, 19);
});

test('unsubscribing cancels the restores in flight and those not started', () => {
  const scheduler = testScheduler();
  const { stats, subscribe } = slowSubscribe(scheduler);
  scheduler.run(({ hot, expectObservable, expectSubscriptions }) => {
    const source = hot('a 40ms b|');
    expectObservable(source.pipe(restoreSubscriptions(URIS, subscribe)), '15ms !').toBe('a');
    expectSubscriptions(source.subscriptions).toBe('^ 14ms !');
  });
  assert.is(stats.attempts.length, 16);
  assert.is(stats.settled, 16);
  assert.is(stats.inFlight, 0);
});

test('the stream ending cancels the restores still pending', () => {
  const scheduler = testScheduler();
  const { stats, subscribe } = slowSubscribe(scheduler);
  scheduler.run(({ cold, expectObservable }) => {
    expectObservable(cold('5ms |').pipe(restoreSubscriptions(URIS, subscribe))).toBe('5ms |');
  });
  assert.is(stats.attempts.length, 8);
  assert.is(stats.inFlight, 0);
});

test('subscribes the source before the first restore', () => {
  const order: string[] = [];
  const source = defer(() => {
    order.push('source');
    return NEVER;
  });
  const subscription = source
    .pipe(
      restoreSubscriptions(['file:///a', 'file:///b'], (uri) => {
        order.push(uri);
        return of(true);
      }),
    )
    .subscribe();
  subscription.unsubscribe();
  assert.equal(order, ['source', 'file:///a', 'file:///b']);
});

test('restores with promises, reporting a rejection', async () => {
  const errors: string[] = [];
  const attempted: string[] = [];
  let resolveAll!: () => void;
  const allSettled = new Promise<void>((resolve) => (resolveAll = resolve));
  const uris = ['file:///a', 'file:///b', 'file:///c'];
  const subscription = NEVER.pipe(
    restoreSubscriptions(
      uris,
      async (uri) => {
        attempted.push(uri);
        if (uri === 'file:///b') throw new Error('refused');
        if (uri === 'file:///c') resolveAll();
      },
      1,
      (uri) => errors.push(uri),
    ),
  ).subscribe();
  await allSettled;
  subscription.unsubscribe();
  assert.equal(attempted, uris);
  assert.equal(errors, ['file:///b']);
});

test('errors the stream when onError throws', () => {
  let error: unknown;
  NEVER.pipe(
    restoreSubscriptions(
      ['file:///a'],
      () => throwError(() => new Error('refused')),
      8,
      () => {
        throw new Error('handler');
      },
    ),
  ).subscribe({ error: (e: unknown) => (error = e) });
  assert.is((error as Error | undefined)?.message, 'handler');
});

test('rejects a concurrency that is not a positive integer, naming it', () => {
  for (const concurrency of [0, -1, 1.5, Number.NaN]) {
    assert.throws(
      () => restoreSubscriptions([], () => of(true), concurrency),
      (error: unknown) => error instanceof InvalidOptionError && /^restoreSubscriptions concurrency must be/.test(error.message),
    );
  }
});

test('stops a synchronous source when unsubscribed', () => {
  const { source, emitted } = endlessSyncSource<number>((i) => i);
  const out: number[] = [];
  source
    .pipe(
      restoreSubscriptions(['file:///a'], () => NEVER),
      take(5),
    )
    .subscribe((value) => out.push(value));
  assert.equal(out, [0, 1, 2, 3, 4]);
  assert.ok(emitted() <= 6, `source kept emitting: ${emitted()}`);
});

test.run();
