import { test } from 'uvu';
import { endlessSyncSource } from '../helpers/syncSource.js';
import * as assert from 'uvu/assert';
import { of, take } from 'rxjs';
import { controlFrame, KEEP_ALIVE, type Frame } from '../../lib/frame.js';
import { ReplayBuffer } from '../../lib/replayBuffer.js';
import { withEventIds } from '../../operators/withEventIds.js';
import { testScheduler } from '../helpers/marbles.js';
import { asyncLog, updated, eventIds } from '../helpers/frames.js';


test('stamps message frames with increasing ids and passes comments without one', () => {
  testScheduler().run(({ cold, expectObservable }) => {
    const a = updated('file:///a');
    const b = updated('file:///b');
    const c = controlFrame({ jsonrpc: '2.0', method: 'notifications/message', params: {} });
    const source = cold<Frame>('-a-k-b-c|', { a, b, c, k: KEEP_ALIVE });
    const expected = '          -A-k-B-C|';
    expectObservable(source.pipe(withEventIds(new ReplayBuffer()))).toBe(expected, {
      A: { ...a, eventId: '1' },
      B: { ...b, eventId: '2' },
      C: { ...c, eventId: '3' },
      k: KEEP_ALIVE,
    });
  });
});

test('records every stamped frame in the log', () => {
  const log = new ReplayBuffer();
  const out: Frame[] = [];
  of<Frame[]>(updated('file:///a'), KEEP_ALIVE, updated('file:///b'))
    .pipe(withEventIds(log))
    .subscribe((frame) => out.push(frame));
  assert.equal(eventIds(out), ['1', ':', '2']);
  assert.is(log.lastId, 2);
  const replay = log.after('0');
  assert.equal(replay[0], out[0]);
  assert.equal(replay[1], out[2]);
});

test('keeps counting across subscriptions sharing one log (a reconnecting session)', () => {
  const log = new ReplayBuffer();
  const out: Frame[] = [];
  const frames$ = of<Frame[]>(updated('file:///a'), updated('file:///b')).pipe(withEventIds(log));
  frames$.subscribe((frame) => out.push(frame));
  frames$.subscribe((frame) => out.push(frame));
  assert.equal(eventIds(out), ['1', '2', '3', '4']);
});

test('stops a synchronous source when unsubscribed', () => {
  const { source, emitted } = endlessSyncSource<Frame>((i) => updated(`file:///r${i}`));
  const log = new ReplayBuffer();
  source.pipe(withEventIds(log), take(5)).subscribe();
  assert.ok(emitted() <= 6, `source kept emitting: ${emitted()}`);
  assert.ok(log.lastId <= 6);
});

test('with an asynchronous log, frames come out in arrival order even when later appends resolve first', async () => {
  const log = asyncLog(10, (n) => 20 - n * 5);
  const out: Frame[] = [];
  let completed = false;
  await new Promise<void>((resolve) => {
    of<Frame[]>(updated('file:///a'), KEEP_ALIVE, updated('file:///b'), updated('file:///c'))
      .pipe(withEventIds(log))
      .subscribe({ next: (frame) => out.push(frame), complete: () => ((completed = true), resolve()) });
    // Nothing can pass before the first append resolved: the keep-alive waits behind it.
    assert.equal(out, []);
  });
  assert.ok(completed);
  assert.equal(eventIds(out), ['1', ':', '2', '3']);
  assert.equal(
    out.map((frame) => (frame.type === 'message' ? (frame.message as unknown as { params: { uri: string } }).params.uri : ':')),
    ['file:///a', ':', 'file:///b', 'file:///c'],
  );
});

test('with an asynchronous log, a failed append errors the stream', async () => {
  const log = { append: () => Promise.reject(new Error('redis down')), after: () => [] };
  const error = await new Promise<unknown>((resolve) => of<Frame[]>(updated('file:///a')).pipe(withEventIds(log)).subscribe({ error: resolve }));
  assert.is((error as Error).message, 'redis down');
});

test.run();
