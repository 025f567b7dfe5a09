import { test } from 'uvu';
import { endlessSyncSource } from '../helpers/syncSource.js';
import * as assert from 'uvu/assert';
import { NEVER, Observable, VirtualTimeScheduler, concat, count, filter, map, of, take } from 'rxjs';
import type { SchedulerLike } from 'rxjs';
import { closeWhen } from '../../operators/closeWhen.js';
import type { CloseNotice, CloseTrigger } from '../../operators/closeWhen.js';
import { keepAlive } from '../../operators/keepAlive.js';
import { tagSubscriptionId } from '../../operators/tagSubscriptionId.js';
import { expiresAt, idleTimeout, lifetimeCap, shutdown, superseded } from '../../operators/closeTriggers.js';
import { encodeFrame } from '../../lib/encode.js';
import { InvalidOptionError } from '../../lib/errors.js';
import { KEEP_ALIVE, controlFrame, isNotification, notificationFrame } from '../../lib/frame.js';
import type { CloseReason, Frame } from '../../lib/frame.js';
import type { JsonRpcId } from '../../lib/jsonrpc.js';
import { testScheduler } from '../helpers/marbles.js';

const HOUR = 3_600_000;
const HALF_HOUR = 1_800_000;
const notice: CloseNotice = { requestId: 7 };

const A = controlFrame({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: { toolsListChanged: true } } });
const n = notificationFrame({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }, 'tools');
const m = notificationFrame({ jsonrpc: '2.0', method: 'notifications/prompts/list_changed' }, 'prompts');

/** The exact closing frames of DESIGN M7, written out rather than built with the code under test. */
function cancelledFrame(reason: CloseReason, requestId: JsonRpcId = 7): Frame {
  return {
    type: 'message',
    message: { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId, reason } },
    priority: 'control',
    closeReason: reason,
  };
}
function resultFrame(reason: CloseReason, requestId: JsonRpcId = 7): Frame {
  return { type: 'message', message: { jsonrpc: '2.0', id: requestId, result: { resultType: 'complete' } }, priority: 'control', closeReason: reason };
}
function closing(reason: CloseReason) {
  return { A, n, m, c: cancelledFrame(reason), r: resultFrame(reason) };
}

const messagesOnly = filter((frame: Frame) => frame.type === 'message');

test('passes frames through and ends with the upstream, without closing frames', () => {
  testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
    const source = cold('   a-b|', { a: A, b: n });
    const lifetime = cold<CloseReason>('10m r', { r: 'max_lifetime' });
    expectObservable(source.pipe(closeWhen(() => lifetime, notice))).toBe('a-b|', { a: A, b: n });
    expectSubscriptions(lifetime.subscriptions).toBe('^--!');
  });
});

test('an upstream error passes through and unsubscribes the triggers', () => {
  const boom = new Error('boom');
  testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
    const source = cold('   a-#', { a: A }, boom);
    const lifetime = cold<CloseReason>('10m r', { r: 'max_lifetime' });
    expectObservable(source.pipe(closeWhen([() => lifetime], notice))).toBe('a-#', { a: A }, boom);
    expectSubscriptions(lifetime.subscriptions).toBe('^-!');
  });
});

test('closes after exactly 60m of lifetime: cancelled, result, completion', () => {
  const s = testScheduler();
  s.run(({ cold, expectObservable, expectSubscriptions }) => {
    expectObservable(NEVER.pipe(closeWhen(lifetimeCap(HOUR, s), notice))).toBe('60m (cr|)', closing('max_lifetime'));

    const source = cold('  A 10m n', closing('max_lifetime'));
    const expected = '     A 10m n 49m 59998ms (cr|)';
    const sourceSubs = '   ^ 10m - 49m 59998ms !';
    expectObservable(source.pipe(closeWhen(lifetimeCap(HOUR, s), notice))).toBe(expected, closing('max_lifetime'));
    expectSubscriptions(source.subscriptions).toBe(sourceSubs);
  });
});

test('on the wire: the closing frames are tagged and in the M7 order', () => {
  const s = testScheduler();
  s.run(({ cold, expectObservable }) => {
    const source = cold<Frame>('A', { A });
    const wire = source.pipe(keepAlive(15000, s), closeWhen(lifetimeCap(HOUR, s), notice), tagSubscriptionId(7), map(encodeFrame));
    const meta = '"_meta":{"io.modelcontextprotocol/subscriptionId":7}';
    expectObservable(wire.pipe(filter((text) => text !== ':\r\n'))).toBe('A 59m 59999ms (cr|)', {
      A: `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true},${meta}}}\n\n`,
      c: `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"max_lifetime",${meta}}}\n\n`,
      r: `event: message\ndata: {"jsonrpc":"2.0","id":7,"result":{"resultType":"complete",${meta}}}\n\n`,
    });
  });
});

test('a token that expires before the lifetime cap closes the stream first', () => {
  const s = testScheduler();
  s.run(({ cold, expectObservable }) => {
    const source = cold('A', closing('token_expired'));
    const triggers = [lifetimeCap(HOUR, s), expiresAt(HALF_HOUR, s)];
    expectObservable(source.pipe(closeWhen(triggers, notice))).toBe('A 29m 59999ms (cr|)', closing('token_expired'));
  });
});

test('the lifetime cap closes the stream when the token expires later', () => {
  const s = testScheduler();
  s.run(({ cold, expectObservable }) => {
    const source = cold('A', closing('max_lifetime'));
    const triggers = [expiresAt(HOUR + HALF_HOUR, s), lifetimeCap(HOUR, s)];
    expectObservable(source.pipe(closeWhen(triggers, notice))).toBe('A 59m 59999ms (cr|)', closing('max_lifetime'));
  });
});

test('a token already expired closes at once, after what the upstream emits on subscription', () => {
  const s = testScheduler();
  s.run(({ expectObservable }) => {
    const source = concat(of(A), NEVER);
    expectObservable(source.pipe(closeWhen(expiresAt(-5000, s), notice))).toBe('(Acr|)', closing('token_expired'));
  });
});

test('the clocks start when the stream opens', () => {
  const s = testScheduler();
  s.run(({ cold, expectObservable }) => {
    const source = cold('A', { A });
    const opened10mIn = '10m ^';
    // The token expires at 30m, whenever the stream opened: 20m after this one opened.
    expectObservable(source.pipe(closeWhen(expiresAt(HALF_HOUR, s), notice)), opened10mIn).toBe('10m A 19m 59999ms (cr|)', {
      A,
      c: cancelledFrame('token_expired'),
      r: resultFrame('token_expired'),
    });
    // Lifetime and idle windows count from the opening: 10m + 60m and 10m + 30m.
    expectObservable(source.pipe(closeWhen(lifetimeCap(HOUR, s), notice)), opened10mIn).toBe('10m A 59m 59999ms (cr|)', {
      A,
      c: cancelledFrame('max_lifetime'),
      r: resultFrame('max_lifetime'),
    });
    const idle = source.pipe(keepAlive(15000, s), closeWhen([lifetimeCap(HOUR, s), idleTimeout(HALF_HOUR, s)], notice), messagesOnly);
    expectObservable(idle, opened10mIn).toBe('10m A 29m 59999ms (cr|)', closing('idle_timeout'));
  });
});

test('a deadline beyond the longest timer is reached in steps, exactly on time', () => {
  const DAY = 24 * HOUR;
  for (const [name, trigger, due] of [
    ['expiresAt', (s: SchedulerLike) => expiresAt(30 * DAY + 5, s), 30 * DAY + 5],
    ['lifetimeCap', (s: SchedulerLike) => lifetimeCap(40 * DAY, s), 40 * DAY],
  ] as const) {
    const scheduler = new VirtualTimeScheduler();
    const closedAt: number[] = [];
    NEVER.pipe(closeWhen(trigger(scheduler), notice)).subscribe({ complete: () => closedAt.push(scheduler.now()) });
    assert.ok(scheduler.actions.every((action) => action.delay <= 2 ** 31 - 1), `${name}: a timer longer than 2^31 - 1 ms fires after 1 ms in Node`);
    scheduler.flush();
    assert.equal(closedAt, [due], name);
  }
});

test('idle: closes at the first keep-alive tick after 30m without a notification, not before', () => {
  const s = testScheduler();
  s.run(({ cold, expectObservable }) => {
    const source = cold('10s n', closing('idle_timeout'));
    const stream = source.pipe(keepAlive(15000, s), closeWhen([idleTimeout(HALF_HOUR, s), lifetimeCap(HOUR, s)], notice));
    // The last notification was at 10s: the tick at 30m is 5s short of the window, the one at 30m 15s closes.
    expectObservable(stream.pipe(messagesOnly)).toBe('10s n 30m 4999ms (cr|)', closing('idle_timeout'));
    expectObservable(stream.pipe(filter((frame) => frame.type === 'comment'), count())).toBe('30m 15s (t|)', { t: 120 });
  });
});

test('idle: control frames and keep-alives are not activity', () => {
  const s = testScheduler();
  s.run(({ cold, expectObservable }) => {
    const C = controlFrame({ jsonrpc: '2.0', id: 'ping-1', result: {} });
    const source = cold('A 10m C', { ...closing('idle_timeout'), C });
    const stream = source.pipe(keepAlive(15000, s), closeWhen([lifetimeCap(HOUR, s), idleTimeout(HALF_HOUR, s)], notice));
    // Nothing but the ack, a control frame at 10m and ticks: closed at the tick at 30m exactly.
    expectObservable(stream.pipe(messagesOnly)).toBe('A 10m C 19m 59998ms (cr|)', { ...closing('idle_timeout'), C });
  });
});

test('idle: each notification restarts the idle window', () => {
  const s = testScheduler();
  s.run(({ cold, expectObservable }) => {
    const source = cold('10s n 19m 49999ms m', closing('idle_timeout'));
    const stream = source.pipe(keepAlive(15000, s), closeWhen([lifetimeCap(HOUR, s), idleTimeout(HALF_HOUR, s)], notice));
    // Last notification at 20m: closed at 50m instead of 30m 15s.
    expectObservable(stream.pipe(messagesOnly)).toBe('10s n 19m 49999ms m 29m 59999ms (cr|)', closing('idle_timeout'));
  });
});

test('idle: checked only when a keep-alive tick passes, not on other frames', () => {
  const s = testScheduler();
  s.run(({ cold, expectObservable }) => {
    const C = controlFrame({ jsonrpc: '2.0', id: 'ping-1', result: {} });
    // The window ends at 30m 10s; the control frame at 30m 11s passes, the tick at 30m 15s closes.
    const source = cold('10s n 30m 1s C', { ...closing('idle_timeout'), C });
    const stream = source.pipe(keepAlive(15000, s), closeWhen([lifetimeCap(HOUR, s), idleTimeout(HALF_HOUR, s)], notice));
    expectObservable(stream.pipe(messagesOnly)).toBe('10s n 30m 1s C 3998ms (cr|)', { ...closing('idle_timeout'), C });
  });
});

test('idle: without keepAlive upstream it never fires', () => {
  const s = testScheduler();
  s.run(({ cold, expectObservable }) => {
    const source = cold('A', closing('max_lifetime'));
    expectObservable(source.pipe(closeWhen([idleTimeout(60_000, s), lifetimeCap(HOUR, s)], notice))).toBe(
      'A 59m 59999ms (cr|)',
      closing('max_lifetime'),
    );
  });
});

test('supersede: closes on the first signal with reason superseded', () => {
  testScheduler().run(({ cold, hot, expectObservable, expectSubscriptions }) => {
    const source = cold('A', closing('superseded'));
    const evict = hot('  10m x 5m x');
    expectObservable(source.pipe(closeWhen(superseded(evict), notice))).toBe('A 9m 59999ms (cr|)', closing('superseded'));
    expectSubscriptions(evict.subscriptions).toBe('^ 9m 59999ms !');
  });
});

test('shutdown: closes on the first signal with reason shutdown', () => {
  testScheduler().run(({ cold, hot, expectObservable }) => {
    const source = cold('A 1m n', closing('shutdown'));
    const stopping = hot('2m x');
    expectObservable(source.pipe(closeWhen(shutdown(stopping), notice))).toBe('A 1m n 59998ms (cr|)', closing('shutdown'));
  });
});

test("result-only mode sends only the listen result", () => {
  const s = testScheduler();
  s.run(({ cold, expectObservable }) => {
    const source = cold('A', closing('max_lifetime'));
    const stream = source.pipe(closeWhen(lifetimeCap(HOUR, s), { requestId: 7, mode: 'result-only' }));
    expectObservable(stream).toBe('A 59m 59999ms (r|)', closing('max_lifetime'));
  });
});

test('each trigger on its own: one reason, then completion; clocks start at subscription', () => {
  const s = testScheduler();
  s.run(({ cold, hot, expectObservable }) => {
    const reasons = { l: 'max_lifetime', t: 'token_expired', i: 'idle_timeout', s: 'superseded', x: 'shutdown' };
    const opened10mIn = '10m ^';
    expectObservable(lifetimeCap(HOUR, s)(NEVER), opened10mIn).toBe('70m (l|)', reasons);
    expectObservable(expiresAt(HOUR, s)(NEVER), opened10mIn).toBe('60m (t|)', reasons);
    const ticks = cold<Frame>('30m k 30m k', { k: KEEP_ALIVE });
    expectObservable(idleTimeout(HALF_HOUR, s)(ticks), opened10mIn).toBe('40m (i|)', reasons);
    const signal = hot('1m a 1m b');
    expectObservable(superseded(signal)(NEVER)).toBe('1m (s|)', reasons);
    expectObservable(shutdown(signal)(NEVER)).toBe('1m (x|)', reasons);
  });
});

test('a string request id is used verbatim in both closing frames', () => {
  testScheduler().run(({ cold, hot, expectObservable }) => {
    const source = cold('A', { A });
    expectObservable(source.pipe(closeWhen(superseded(hot('5ms x')), { requestId: '7' }))).toBe('A 4ms (cr|)', {
      A,
      c: cancelledFrame('superseded', '7'),
      r: resultFrame('superseded', '7'),
    });
  });
});

test('after closing, the upstream and every trigger are unsubscribed', () => {
  testScheduler().run(({ cold, hot, expectObservable, expectSubscriptions }) => {
    const source = cold('  A 1m n 9m n', closing('superseded'));
    const lifetime = cold<CloseReason>('20m r', { r: 'max_lifetime' });
    const silent = cold<CloseReason>('-');
    const evict = hot('    5m x');
    const triggers: CloseTrigger[] = [() => lifetime, superseded(evict), () => silent];
    expectObservable(source.pipe(closeWhen(triggers, notice))).toBe('A 1m n 3m 59998ms (cr|)', closing('superseded'));
    const closedAt5m = '^ 4m 59999ms !';
    expectSubscriptions(source.subscriptions).toBe(closedAt5m);
    expectSubscriptions(lifetime.subscriptions).toBe(closedAt5m);
    expectSubscriptions(evict.subscriptions).toBe(closedAt5m);
    expectSubscriptions(silent.subscriptions).toBe(closedAt5m);
  });
});

test('the triggers share a single subscription to the upstream', () => {
  const s = testScheduler();
  s.run(({ cold, expectObservable, expectSubscriptions }) => {
    const source = cold<Frame>('A 10s n 10s |', { A, n });
    const everyFrame: CloseTrigger = (upstream) => upstream.pipe(filter(() => false), map((): CloseReason => 'shutdown'));
    const stream = source.pipe(closeWhen([idleTimeout(HALF_HOUR, s), everyFrame, everyFrame], notice));
    expectObservable(stream).toBe('A 10s n 10s |', { A, n });
    expectSubscriptions(source.subscriptions).toBe('^ 10s - 10s !');
  });
});

test('triggers see the frames the upstream emits while it is being subscribed', () => {
  testScheduler().run(({ expectObservable }) => {
    const onFirstNotification: CloseTrigger = (upstream) => upstream.pipe(filter(isNotification), take(1), map((): CloseReason => 'shutdown'));
    // The frame a trigger closes on is replaced by the closing frames.
    const source = concat(of(A, n, m), NEVER);
    expectObservable(source.pipe(closeWhen(onFirstNotification, notice))).toBe('(Acr|)', closing('shutdown'));
  });
});

test('an empty trigger list never closes the stream', () => {
  testScheduler().run(({ cold, expectObservable }) => {
    expectObservable(cold('A 60m n|', { A, n }).pipe(closeWhen([], notice))).toBe('A 60m n|', { A, n });
  });
});

test('throws InvalidOptionError for bad triggers or a bad notice', () => {
  const invalid = (fn: () => unknown, message: string): void => {
    assert.throws(fn, (error: unknown) => error instanceof InvalidOptionError && error.message.startsWith(message), message);
  };
  const life = lifetimeCap(HOUR);
  invalid(() => closeWhen(42 as unknown as CloseTrigger, notice), 'closeWhen triggers must be');
  invalid(() => closeWhen([life, 'soon' as unknown as CloseTrigger], notice), 'closeWhen triggers must be');
  for (const requestId of [null, undefined, Number.NaN, Number.POSITIVE_INFINITY, {}, true]) {
    invalid(() => closeWhen(life, { requestId: requestId as unknown as JsonRpcId }), 'closeWhen notice.requestId must be');
  }
  invalid(() => closeWhen(life, { requestId: 7, mode: 'cancelled' as unknown as 'result-only' }), 'closeWhen notice.mode must be');
  closeWhen(life, { requestId: 0, mode: 'result-only' });
  closeWhen(life, { requestId: '', mode: 'cancelled-then-result' });
});

test('each close trigger throws InvalidOptionError naming its argument', () => {
  const invalid = (fn: () => unknown, message: string, value: unknown): void => {
    assert.throws(fn, (error: unknown) => error instanceof InvalidOptionError && error.message.startsWith(message), `${message} accepted ${String(value)}`);
  };
  for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '60000', undefined]) {
    invalid(() => lifetimeCap(bad as number), 'lifetimeCap ms must be a positive integer of milliseconds', bad);
    invalid(() => idleTimeout(bad as number), 'idleTimeout ms must be a positive integer of milliseconds', bad);
  }
  for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, '1700000000000', null]) {
    invalid(() => expiresAt(bad as number), 'expiresAt epochMs must be a finite number', bad);
  }
  for (const bad of [42, null, undefined, Promise.resolve(1)]) {
    invalid(() => superseded(bad as unknown as Observable<unknown>), 'superseded signal$ must be an Observable', bad);
    invalid(() => shutdown(bad as unknown as Observable<unknown>), 'shutdown signal$ must be an Observable', bad);
  }
  expiresAt(-1);
  expiresAt(0.5);
});

test('stops a synchronous source when unsubscribed', () => {
  const { source, emitted } = endlessSyncSource<Frame>(() => n);
  const scheduler = new VirtualTimeScheduler();
  const got: Frame[] = [];
  source.pipe(closeWhen([lifetimeCap(HOUR, scheduler), idleTimeout(HALF_HOUR, scheduler)], notice), take(3)).subscribe((frame) => got.push(frame));
  assert.equal(got, [n, n, n]);
  assert.ok(emitted() <= 3, `the source kept emitting after unsubscription: ${emitted()} frames`);
  assert.is(scheduler.actions.length, 0, 'the lifetime timer must be released');
});

test.run();
