import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Subject, take, type Observable } from 'rxjs';
import { InvalidOptionError } from '../../lib/errors.js';
import { KEEP_ALIVE, type Frame, type MessageFrame } from '../../lib/frame.js';
import { ReplayBuffer, type EventLog } from '../../lib/replayBuffer.js';
import { primeStream } from '../../operators/primeStream.js';
import { updated } from '../helpers/frames.js';
import { endlessSyncSource } from '../helpers/syncSource.js';

function logWith(count: number): ReplayBuffer {
  const log = new ReplayBuffer(10);
  for (let i = 0; i < count; i++) log.append(updated(`file:///${i}`));
  return log;
}

function collect(frames$: Observable<Frame>): { out: Frame[]; done: () => boolean; failed: () => unknown } {
  const out: Frame[] = [];
  let completed = false;
  let error: unknown;
  frames$.subscribe({ next: (frame) => out.push(frame), complete: () => (completed = true), error: (e: unknown) => (error = e) });
  return { out, done: () => completed, failed: () => error };
}

test('primes with the newest id when there is no Last-Event-ID, then passes the frames', () => {
  const live = new Subject<Frame>();
  const { out } = collect(live.pipe(primeStream(undefined, logWith(7), 1000)));
  assert.equal(out, [{ type: 'prime', eventId: '7', retry: 1000 }]);
  live.next(KEEP_ALIVE);
  assert.equal(out.length, 2);
  assert.is(out[1], KEEP_ALIVE);
});

test('a new session primes with 0', () => {
  const { out } = collect(new Subject<Frame>().pipe(primeStream(undefined, new ReplayBuffer(), 250)));
  assert.equal(out, [{ type: 'prime', eventId: '0', retry: 250 }]);
});

test('a decimal Last-Event-ID primes with itself, or with the newest id when it is past it; anything else with 0', () => {
  const cases: [string | null, string][] = [
    ['3', '3'],
    ['7', '7'],
    ['0', '0'],
    ['8', '7'], // from an earlier run of the server: later reconnects must not replay nothing forever
    ['123456789012345678901234567890', '7'],
    ['abc', '0'],
    ['', '0'],
    [' 3', '0'],
    [null, '7'],
  ];
  for (const [lastEventId, primed] of cases) {
    const { out } = collect(new Subject<Frame>().pipe(primeStream(lastEventId, logWith(7), 1000)));
    assert.equal(out, [{ type: 'prime', eventId: primed, retry: 1000 }], `Last-Event-ID ${JSON.stringify(lastEventId)}`);
  }
});

test('an asynchronous log: the frames wait for the priming event, in order, and so does a completion', async () => {
  let resolve!: (id: string) => void;
  const log: EventLog = {
    append: (frame: MessageFrame) => frame,
    after: () => [],
    newestId: () => new Promise<string>((r) => (resolve = r)),
  };
  const live = new Subject<Frame>();
  const { out, done } = collect(live.pipe(primeStream(undefined, log, 1000)));
  const a = updated('file:///a');
  live.next(a);
  live.next(KEEP_ALIVE);
  live.complete();
  assert.equal(out, []);
  assert.not.ok(done());
  resolve('41');
  await Promise.resolve();
  await Promise.resolve();
  assert.equal(out, [{ type: 'prime', eventId: '41', retry: 1000 }, a, KEEP_ALIVE]);
  assert.ok(done());
});

test('an asynchronous log that fails errors the stream', async () => {
  const log: EventLog = { append: (frame: MessageFrame) => frame, after: () => [], newestId: () => Promise.reject(new Error('redis down')) };
  const { out, failed } = collect(new Subject<Frame>().pipe(primeStream(undefined, log, 1000)));
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(out, []);
  assert.instance(failed(), Error);
  assert.is((failed() as Error).message, 'redis down');
});

test('a log without newestId primes with retry alone, unless the Last-Event-ID says where to resume', () => {
  const log: EventLog = { append: (frame: MessageFrame) => frame, after: () => [] };
  assert.equal(collect(new Subject<Frame>().pipe(primeStream(undefined, log, 1000))).out, [{ type: 'prime', retry: 1000 }]);
  assert.equal(collect(new Subject<Frame>().pipe(primeStream('5', log, 1000))).out, [{ type: 'prime', eventId: '5', retry: 1000 }]);
});

test('retry must be a non-negative integer of milliseconds', () => {
  for (const retry of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
    assert.throws(() => primeStream(undefined, new ReplayBuffer(), retry), (error: unknown) => error instanceof InvalidOptionError && /primeStream retry/.test((error as Error).message));
  }
  assert.ok(primeStream(undefined, new ReplayBuffer(), 0));
});

test('stops a synchronous source when unsubscribed', () => {
  const { source, emitted } = endlessSyncSource(() => KEEP_ALIVE as Frame);
  const out: Frame[] = [];
  source.pipe(primeStream(undefined, new ReplayBuffer(), 1000), take(3)).subscribe((frame) => out.push(frame));
  assert.is(out.length, 3);
  assert.is(out[0]!.type, 'prime');
  assert.is(emitted(), 2);
});

test.run();
