import { test } from 'uvu';
import { endlessSyncSource } from '../helpers/syncSource.js';
import * as assert from 'uvu/assert';
import { BehaviorSubject, NEVER, of, Subject, take } from 'rxjs';
import { InvalidOptionError, StalledStreamError } from '../../lib/errors.js';
import { controlFrame, KEEP_ALIVE, notificationFrame, type Frame, type MessageFrame } from '../../lib/frame.js';
import { dropWhenQueueExceeds } from '../../operators/dropWhenQueueExceeds.js';
import { testScheduler } from '../helpers/marbles.js';
import { updated } from '../helpers/frames.js';

const toolsChanged = (): MessageFrame =>
  notificationFrame({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }, 'tools');
const cancelled = (reason: string): MessageFrame =>
  controlFrame({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, reason } });
const uriOf = (frame: Frame): unknown =>
  frame.type === 'message' && 'params' in frame.message ? frame.message.params?.['uri'] : ':';

const T = { t: true, f: false };
const F: Record<string, Frame> = {
  a: updated('file:///a'),
  b: updated('file:///b'),
  c: updated('file:///c'),
  d: updated('file:///d'),
  k: KEEP_ALIVE,
};

test('passes frames straight through while the sink is ready', () => {
  testScheduler().run(({ hot, cold, expectObservable }) => {
    const demand = hot<boolean>('------------', T);
    const source = cold<Frame>('-a-k-b-c-|', F);
    const expected = '          -a-k-b-c-|';
    expectObservable(source.pipe(dropWhenQueueExceeds(10, demand))).toBe(expected, F);
  });
});

test('holds frames while the sink is busy and writes them in order when it drains', () => {
  testScheduler().run(({ hot, expectObservable }) => {
    const demand = hot<boolean>('t-f-----t-------', T);
    const source = hot<Frame>('  -a-b-c-------d-|', F);
    const expected = '           -a------(bc)-d-|';
    expectObservable(source.pipe(dropWhenQueueExceeds(10, demand))).toBe(expected, F);
  });
});

test('skips keep-alives while the sink is busy', () => {
  testScheduler().run(({ hot, expectObservable }) => {
    const demand = hot<boolean>('--f----t-----', T);
    const source = hot<Frame>('  k--ak-k--k-|', F);
    const expected = '           k------a-k-|';
    expectObservable(source.pipe(dropWhenQueueExceeds(10, demand))).toBe(expected, F);
  });
});

test('completes only after the held frames are written', () => {
  testScheduler().run(({ hot, expectObservable }) => {
    const demand = hot<boolean>('--f-----t---', T);
    const source = hot<Frame>('  -a-b|', F);
    const expected = '           -a------(b|)';
    expectObservable(source.pipe(dropWhenQueueExceeds(10, demand))).toBe(expected, F);
  });
});

test('stallGraceMs: a completion that waits longer than the grace for a busy sink errors with StalledStreamError', () => {
  testScheduler().run(({ hot, expectObservable }) => {
    const demand = hot<boolean>('--f---------------', T);
    const source = hot<Frame>('  -a-b|', F);
    // Completed at 4 with b held; the sink never drains: 10 frames later, the error.
    const expected = '           -a------------#';
    expectObservable(source.pipe(dropWhenQueueExceeds(10, demand, undefined, { stallGraceMs: 10 }))).toBe(expected, F, new StalledStreamError({ graceMs: 10 }));
  });
  testScheduler().run(({ hot, expectObservable }) => {
    const demand = hot<boolean>('--f-----t---------', T);
    const source = hot<Frame>('  -a-b|', F);
    const expected = '           -a------(b|)';
    expectObservable(source.pipe(dropWhenQueueExceeds(10, demand, undefined, { stallGraceMs: 10 }))).toBe(expected, F);
  });
});

test('stallGraceMs 0: a completion while frames are held errors at once, dropping them; with nothing held it completes', () => {
  testScheduler().run(({ hot, expectObservable }) => {
    const demand = hot<boolean>('--f-----t---', T);
    const source = hot<Frame>('  -a-b|', F);
    const expected = '           -a--#';
    expectObservable(source.pipe(dropWhenQueueExceeds(10, demand, undefined, { stallGraceMs: 0 }))).toBe(expected, F, new StalledStreamError({ graceMs: 0 }));
  });
  testScheduler().run(({ hot, expectObservable }) => {
    // Busy, but nothing held when the source completes (the keep-alive is skipped): it completes.
    const demand = hot<boolean>('--f-----t---', T);
    const source = hot<Frame>('  -a-k|', F);
    const expected = '           -a--|';
    expectObservable(source.pipe(dropWhenQueueExceeds(10, demand, undefined, { stallGraceMs: 0 }))).toBe(expected, F);
  });
  for (const stallGraceMs of [-1, 1.5, Number.NaN]) {
    assert.throws(
      () => dropWhenQueueExceeds(10, NEVER, undefined, { stallGraceMs }),
      (error: unknown) => error instanceof InvalidOptionError && /^dropWhenQueueExceeds stallGraceMs must be/.test(error.message),
    );
  }
});

test("stalledEnd 'control': a stalled completion passes the held control frames on whatever the demand, discards the notifications, completes", () => {
  const G: Record<string, Frame> = { ...F, x: cancelled('shutdown'), y: cancelled('result') };
  testScheduler().run(({ hot, expectObservable }) => {
    // Busy from 2: a, then b held, then the closing frames x and y held behind it; completed at 8.
    const demand = hot<boolean>('--f------------', T);
    const source = hot<Frame>('  -a-b-x-y|', G);
    const expected = '           -a------(xy|)';
    expectObservable(source.pipe(dropWhenQueueExceeds(10, demand, undefined, { stallGraceMs: 0, stalledEnd: 'control' }))).toBe(expected, G);
  });
  testScheduler().run(({ hot, expectObservable }) => {
    // With a grace period: the closing frames wait for it, then go out the same way.
    const demand = hot<boolean>('--f------------', T);
    const source = hot<Frame>('  -a-x-b|', G);
    const expected = '           -a----------(x|)';
    expectObservable(source.pipe(dropWhenQueueExceeds(10, demand, undefined, { stallGraceMs: 6, stalledEnd: 'control' }))).toBe(expected, G);
  });
  assert.throws(
    () => dropWhenQueueExceeds(10, NEVER, undefined, { stalledEnd: 'drop' as never }),
    (error: unknown) => error instanceof InvalidOptionError && /^dropWhenQueueExceeds stalledEnd must be/.test(error.message),
  );
});

test('forwards an error at once, discarding held frames', () => {
  testScheduler().run(({ hot, expectObservable }) => {
    const demand = hot<boolean>('--f-----t---', T);
    const source = hot<Frame>('  -a-b-#', F, new Error('boom'));
    const expected = '           -a---#';
    expectObservable(source.pipe(dropWhenQueueExceeds(10, demand))).toBe(expected, F, new Error('boom'));
  });
});

test('errors when demand$ errors', () => {
  testScheduler().run(({ hot, expectObservable }) => {
    const demand = hot<boolean>('--f-#', T, new Error('socket'));
    const source = hot<Frame>('  -a-b---', F);
    const expected = '           -a--#';
    expectObservable(source.pipe(dropWhenQueueExceeds(10, demand))).toBe(expected, F, new Error('socket'));
  });
});

test('unsubscribing releases demand$ and the source', () => {
  testScheduler().run(({ hot, expectObservable, expectSubscriptions }) => {
    const demand = hot<boolean>('--f-----t---', T);
    const source = hot<Frame>('  -a-b-c------', F);
    const unsub = '             ----!';
    const expected = '           -a---';
    expectObservable(source.pipe(dropWhenQueueExceeds(10, demand)), unsub).toBe(expected, F);
    expectSubscriptions(demand.subscriptions).toBe('^---!');
    expectSubscriptions(source.subscriptions).toBe('^---!');
  });
});

test('subscribes demand$ before the source, so a synchronous initial false holds the first frame', () => {
  const demand = new BehaviorSubject(false);
  const received: Frame[] = [];
  let completed = false;
  of(F['a']!, F['b']!)
    .pipe(dropWhenQueueExceeds(10, demand))
    .subscribe({ next: (frame) => received.push(frame), complete: () => (completed = true) });
  assert.equal(received.length, 0);
  assert.is(completed, false);
  demand.next(true);
  assert.equal(received.map(uriOf), ['file:///a', 'file:///b']);
  assert.is(completed, true);
});

test('drops the 1001st held notification, reports it, and writes the 1000 it held in order', () => {
  const demand = new BehaviorSubject(false);
  const source = new Subject<Frame>();
  const drops: [MessageFrame, number][] = [];
  const received: Frame[] = [];
  source
    .pipe(dropWhenQueueExceeds(1000, demand, (frame, queueLength) => drops.push([frame, queueLength])))
    .subscribe((frame) => received.push(frame));
  const frames = Array.from({ length: 1001 }, (_, i) => updated(`file:///r${i}`));
  for (const frame of frames) source.next(frame);
  assert.equal(received.length, 0);
  assert.is(drops.length, 1);
  assert.is(drops[0]![0], frames[1000]);
  assert.is(drops[0]![1], 1000);
  demand.next(true);
  assert.is(received.length, 1000);
  assert.ok(received.every((frame, i) => frame === frames[i]));
});

test('coalesces a notification identical to one still held, without counting or reporting it', () => {
  const demand = new BehaviorSubject(false);
  const source = new Subject<Frame>();
  const drops: MessageFrame[] = [];
  const received: Frame[] = [];
  source.pipe(dropWhenQueueExceeds(2, demand, (frame) => drops.push(frame))).subscribe((frame) => received.push(frame));
  source.next(updated('file:///a'));
  source.next(updated('file:///b'));
  source.next(updated('file:///a'));
  source.next(updated('file:///a'));
  assert.is(drops.length, 0);
  demand.next(true);
  assert.equal(received.map(uriOf), ['file:///a', 'file:///b']);
});

test('holds a notification again once the identical one it matched has been written', () => {
  const demand = new BehaviorSubject(false);
  const source = new Subject<Frame>();
  const received: Frame[] = [];
  source.pipe(dropWhenQueueExceeds(10, demand)).subscribe((frame) => received.push(frame));
  source.next(updated('file:///a'));
  demand.next(true);
  demand.next(false);
  source.next(updated('file:///a'));
  demand.next(true);
  assert.equal(received.map(uriOf), ['file:///a', 'file:///a']);
});

test('never coalesces notifications without a coalesceKey', () => {
  const demand = new BehaviorSubject(false);
  const source = new Subject<Frame>();
  const received: Frame[] = [];
  source.pipe(dropWhenQueueExceeds(10, demand)).subscribe((frame) => received.push(frame));
  source.next(toolsChanged());
  source.next(toolsChanged());
  demand.next(true);
  assert.is(received.length, 2);
});

test('never drops a control frame, and control frames do not count toward the limit', () => {
  const demand = new BehaviorSubject(false);
  const source = new Subject<Frame>();
  const drops: MessageFrame[] = [];
  const received: Frame[] = [];
  source.pipe(dropWhenQueueExceeds(2, demand, (frame) => drops.push(frame))).subscribe((frame) => received.push(frame));
  const c1 = cancelled('one');
  const c2 = cancelled('two');
  const c3 = cancelled('three');
  source.next(c1);
  source.next(updated('file:///a'));
  source.next(updated('file:///b'));
  source.next(c2);
  source.next(updated('file:///c'));
  source.next(c3);
  assert.equal(drops.map(uriOf), ['file:///c']);
  demand.next(true);
  assert.equal(received.map((frame) => (frame === c1 ? 'c1' : frame === c2 ? 'c2' : frame === c3 ? 'c3' : uriOf(frame))), [
    'c1',
    'file:///a',
    'file:///b',
    'c2',
    'c3',
  ]);
});

test('stops writing held frames as soon as the sink turns busy again (a sink taking 2 per drain)', () => {
  const demand = new BehaviorSubject(false);
  const source = new Subject<Frame>();
  const received: Frame[] = [];
  let sinceDrain = 0;
  source.pipe(dropWhenQueueExceeds(10, demand)).subscribe((frame) => {
    received.push(frame);
    if (++sinceDrain === 2) demand.next(false);
  });
  for (const uri of ['a', 'b', 'c', 'd', 'e']) source.next(updated(`file:///${uri}`));
  const drain = () => {
    sinceDrain = 0;
    demand.next(true);
  };
  drain();
  assert.equal(received.map(uriOf), ['file:///a', 'file:///b']);
  drain();
  assert.equal(received.map(uriOf), ['file:///a', 'file:///b', 'file:///c', 'file:///d']);
  source.next(updated('file:///f'));
  assert.is(received.length, 4);
  drain();
  assert.equal(received.map(uriOf), ['file:///a', 'file:///b', 'file:///c', 'file:///d', 'file:///e', 'file:///f']);
});

test('does not re-enter the flush when the sink drains synchronously inside next', () => {
  const demand = new BehaviorSubject(false);
  const source = new Subject<Frame>();
  const frames = Array.from({ length: 5000 }, (_, i) => updated(`file:///r${i}`));
  const received: Frame[] = [];
  let depth = 0;
  let maxDepth = 0;
  source.pipe(dropWhenQueueExceeds(5000, demand)).subscribe((frame) => {
    maxDepth = Math.max(maxDepth, ++depth);
    received.push(frame);
    demand.next(false);
    demand.next(true);
    depth--;
  });
  for (const frame of frames) source.next(frame);
  demand.next(true);
  assert.is(maxDepth, 1);
  assert.is(received.length, 5000);
  assert.ok(received.every((frame, i) => frame === frames[i]));
});

test('skips a keep-alive that arrives while frames are still held, even with the sink ready', () => {
  const demand = new BehaviorSubject(false);
  const source = new Subject<Frame>();
  const received: Frame[] = [];
  source.pipe(dropWhenQueueExceeds(10, demand)).subscribe((frame) => {
    received.push(frame);
    if (frame === F['a']) source.next(KEEP_ALIVE);
  });
  source.next(F['a']!);
  source.next(F['b']!);
  demand.next(true);
  assert.equal(received.map(uriOf), ['file:///a', 'file:///b']);
});

test('errors the stream when onDrop throws', () => {
  const source = new Subject<Frame>();
  let error: unknown;
  source
    .pipe(
      dropWhenQueueExceeds(1, of(false), () => {
        throw new Error('telemetry');
      }),
    )
    .subscribe({ error: (e: unknown) => (error = e) });
  source.next(F['a']!);
  assert.is(error, undefined);
  source.next(F['b']!);
  assert.instance(error, Error);
  assert.is((error as Error).message, 'telemetry');
});

test('rejects a limit that is not a positive integer, naming it', () => {
  for (const limit of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
    assert.throws(
      () => dropWhenQueueExceeds(limit, NEVER),
      (error: unknown) => error instanceof InvalidOptionError && /^dropWhenQueueExceeds limit must be/.test(error.message),
    );
  }
});

test('stops a synchronous source when unsubscribed', () => {
  const { source, emitted } = endlessSyncSource<Frame>((i) => updated(`file:///r${i}`));
  const received: Frame[] = [];
  source.pipe(dropWhenQueueExceeds(10, NEVER), take(5)).subscribe((frame) => received.push(frame));
  assert.is(received.length, 5);
  assert.ok(emitted() <= 6, `source kept emitting: ${emitted()}`);
});

test.run();
