import { test } from 'uvu';
import { endlessSyncSource } from '../helpers/syncSource.js';
import * as assert from 'uvu/assert';
import { EMPTY, Observable, Subject, take } from 'rxjs';
import { KEEP_ALIVE, type Frame, type MessageFrame } from '../../lib/frame.js';
import { ReplayBuffer } from '../../lib/replayBuffer.js';
import { GapStage, replayFrom } from '../../operators/replayFrom.js';
import { stageOperator } from '../../operators/stage.js';
import { testScheduler } from '../helpers/marbles.js';
import { asyncLog, updated, eventIds } from '../helpers/frames.js';


/** A legacy session: a log of capacity 5 that has stamped `count` frames, and its live feed. */
function session(count: number, capacity = 5) {
  const log = new ReplayBuffer(capacity);
  const live = new Subject<Frame>();
  const stamped: MessageFrame[] = [];
  const publish = () => {
    const frame = log.append(updated(`file:///r${log.lastId + 1}`));
    stamped.push(frame);
    live.next(frame);
    return frame;
  };
  for (let i = 0; i < count; i++) publish();
  return { log, live, stamped, publish };
}

function collect(frames$: Observable<Frame>): { out: Frame[]; done: () => boolean } {
  const out: Frame[] = [];
  let completed = false;
  frames$.subscribe({ next: (frame) => out.push(frame), complete: () => (completed = true) });
  return { out, done: () => completed };
}

test('replays the frames after a numeric Last-Event-ID with their original ids, then live frames', () => {
  const { log, live, stamped, publish } = session(7);
  const { out } = collect(live.pipe(replayFrom('4', log)));
  assert.equal(eventIds(out), ['5', '6', '7']);
  assert.equal(out[0], stamped[4]);
  publish();
  publish();
  assert.equal(eventIds(out), ['5', '6', '7', '8', '9']);
});

test('replays everything kept when the Last-Event-ID is older than the buffer', () => {
  const { log, live } = session(7);
  assert.equal(eventIds(collect(live.pipe(replayFrom('1', log))).out), ['3', '4', '5', '6', '7']);
});

test('replays the whole buffer for a non-numeric Last-Event-ID', () => {
  const { log, live } = session(7);
  assert.equal(eventIds(collect(live.pipe(replayFrom('not-a-number', log))).out), ['3', '4', '5', '6', '7']);
});

test('replays nothing for a Last-Event-ID at or past the newest, and still passes live frames', () => {
  for (const lastEventId of ['7', '99']) {
    const { log, live, publish } = session(7);
    const { out } = collect(live.pipe(replayFrom(lastEventId, log)));
    assert.equal(out, []);
    publish();
    assert.equal(eventIds(out), ['8'], lastEventId);
  }
});

test('replays nothing without a Last-Event-ID', () => {
  for (const lastEventId of [undefined, null]) {
    const { log, live, publish } = session(7);
    const { out } = collect(live.pipe(replayFrom(lastEventId, log)));
    assert.equal(out, []);
    publish();
    assert.equal(eventIds(out), ['8']);
  }
});

test('writes the replay at subscription, then live frames it has not written, in virtual time', () => {
  testScheduler().run(({ hot, expectObservable }) => {
    const log = new ReplayBuffer(5);
    const [A, B, C] = ['a', 'b', 'c'].map((uri) => log.append(updated(`file:///${uri}`)));
    const D: Frame = { ...updated('file:///d'), eventId: '4' };
    const E: Frame = { ...updated('file:///e'), eventId: '5' };
    const n: Frame = updated('file:///no-id');
    const values = { A: A!, B: B!, C: C!, D, E, k: KEEP_ALIVE, n };
    const source = hot<Frame>('-C----k-D-nE|', values);
    const expected = '         (BC)--k-D-nE|';
    expectObservable(source.pipe(replayFrom('1', log))).toBe(expected, values);
  });
});

test('no duplicate and no gap when the feed emits, during subscription, frames that are also in the buffer', () => {
  const { log, live, stamped, publish } = session(7);
  const source = new Observable<Frame>((subscriber) => {
    // A feed that re-emits its two most recent frames, then goes live and publishes one at once.
    subscriber.next(stamped[5]!);
    subscriber.next(stamped[6]!);
    const subscription = live.subscribe(subscriber);
    publish();
    return subscription;
  });
  const { out } = collect(source.pipe(replayFrom('4', log)));
  assert.equal(eventIds(out), ['5', '6', '7', '8']);
  publish();
  assert.equal(eventIds(out), ['5', '6', '7', '8', '9']);
});

test('holds a live frame published while the replay is being written until after it', () => {
  const { log, live, publish } = session(5, 10);
  const out: Frame[] = [];
  live.pipe(replayFrom('2', log)).subscribe((frame) => {
    out.push(frame);
    if (out.length === 1) publish();
  });
  assert.equal(eventIds(out), ['3', '4', '5', '6']);
});

test('completes after the replay when the source completes', () => {
  const { log } = session(3);
  const result = collect(EMPTY.pipe(replayFrom('x', log)));
  assert.equal(eventIds(result.out), ['1', '2', '3']);
  assert.ok(result.done());
});

test('completes after the replay when the source completes while the replay is being written', () => {
  const { log, live } = session(3);
  const out: Frame[] = [];
  let completedAfter = -1;
  live.pipe(replayFrom('x', log)).subscribe({
    next: (frame) => {
      out.push(frame);
      if (out.length === 1) live.complete();
    },
    complete: () => (completedAfter = out.length),
  });
  assert.is(completedAfter, 3);
});

test('forwards an error from the feed', () => {
  const { log, live } = session(3);
  let error: unknown;
  live.pipe(replayFrom('x', log)).subscribe({ error: (e: unknown) => (error = e) });
  live.error(new Error('feed'));
  assert.is((error as Error).message, 'feed');
});

test('unsubscribing releases the feed', () => {
  testScheduler().run(({ hot, expectObservable, expectSubscriptions }) => {
    const log = new ReplayBuffer(5);
    const source = hot<Frame>('-k-k-k-', { k: KEEP_ALIVE });
    expectObservable(source.pipe(replayFrom(undefined, log)), '---!').toBe('-k-', { k: KEEP_ALIVE });
    expectSubscriptions(source.subscriptions).toBe('^--!');
  });
});

test('stops a synchronous source when unsubscribed', () => {
  const { source, emitted } = endlessSyncSource<Frame>((i) => ({ ...updated(`file:///r${i + 1}`), eventId: String(i + 1) }));
  const out: Frame[] = [];
  source.pipe(replayFrom('0', new ReplayBuffer(5)), take(5)).subscribe((frame) => out.push(frame));
  assert.equal(eventIds(out), ['1', '2', '3', '4', '5']);
  assert.ok(emitted() <= 6, `source kept emitting: ${emitted()}`);
});

test('with an asynchronous log: replay first, then live frames held meanwhile, no duplicate at the seam', async () => {
  const log = asyncLog(100);
  for (const uri of ['a', 'b', 'c']) await log.append(updated(`file:///${uri}`));
  const live = new Subject<Frame>();
  const out: Frame[] = [];
  live.pipe(replayFrom('1', log)).subscribe((frame) => out.push(frame));
  // Published while the log is being read: one the replay also holds (id 3), one it does not (id 4).
  live.next(log.buffer.after('2')[0]!);
  live.next(log.buffer.append(updated('file:///d')));
  assert.equal(out, []);
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(eventIds(out), ['2', '3', '4']);
});

test('with an asynchronous log, a failed read errors the stream', async () => {
  const log = { append: (frame: MessageFrame) => frame, after: () => Promise.reject(new Error('redis down')) };
  const error = await new Promise<unknown>((resolve) => new Subject<Frame>().pipe(replayFrom('0', log)).subscribe({ error: resolve }));
  assert.is((error as Error).message, 'redis down');
});

/* GapStage: the seam kept for a GET stream whose session's log other nodes append to (issue 31) */

const prime = (eventId: string): Frame => ({ type: 'prime', eventId, retry: 1000 });
const gaps = (log: { append: (frame: MessageFrame) => unknown; after: (id: string) => unknown }, onLost: () => void = () => undefined) =>
  stageOperator<Frame, Frame>(() => [new GapStage(log as never, onLost)]);
const idsOf = (frames: readonly Frame[]) => frames.map((frame) => (frame.type === 'comment' ? ':' : (frame.eventId ?? '-')));

test('GapStage: a frame whose id skips some waits while they are read from the log and written first; an id written already is skipped', () => {
  const log = new ReplayBuffer(10);
  const stamped = Array.from({ length: 6 }, (_, i) => log.append(updated(`file:///r${i + 1}`)));
  const live = new Subject<Frame>();
  let lost = 0;
  const { out } = collect(live.pipe(gaps(log, () => lost++)));
  live.next(prime('1'));
  live.next(stamped[3]!); // 4: 2 and 3 were logged by another node
  live.next(stamped[2]!); // 3, again
  live.next(KEEP_ALIVE);
  live.next(stamped[4]!);
  assert.equal(idsOf(out), ['1', '2', '3', '4', ':', '5']);
  assert.equal(out[1], log.after('1')[0], 'the frame as the log keeps it');
  assert.is(lost, 0);
});

test('GapStage: ids the log no longer holds are reported once per gap (after the frame that found it, what onLost sends comes after it), then the stream goes on', () => {
  const log = new ReplayBuffer(2);
  const stamped = Array.from({ length: 5 }, (_, i) => log.append(updated(`file:///r${i + 1}`)));
  const live = new Subject<Frame>();
  let lost = 0;
  const { out } = collect(
    live.pipe(
      gaps(log, () => {
        lost++;
        live.next(log.append(updated('file:///reread')));
      }),
    ),
  );
  live.next(prime('0'));
  live.next(stamped[4]!); // 5: 1-3 are gone, 4 is kept
  assert.equal(idsOf(out), ['0', '4', '5', '6']);
  assert.is(lost, 1);
});

test('GapStage: with an asynchronous log the frames after a gap, comments included, wait behind the read, in order; a failed read counts as lost', async () => {
  const log = asyncLog(100);
  const stamped: MessageFrame[] = [];
  for (let i = 0; i < 4; i++) stamped.push(await log.append(updated(`file:///r${i + 1}`)));
  const live = new Subject<Frame>();
  const { out } = collect(live.pipe(gaps(log)));
  live.next(prime('1'));
  live.next(stamped[2]!);
  live.next(KEEP_ALIVE);
  live.next(stamped[3]!);
  assert.equal(idsOf(out), ['1']);
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(idsOf(out), ['1', '2', '3', ':', '4']);

  let lost = 0;
  const failing = { append: (frame: MessageFrame) => frame, after: () => Promise.reject(new Error('redis down')) };
  const other = new Subject<Frame>();
  const { out: written } = collect(other.pipe(gaps(failing, () => lost++)));
  other.next(prime('1'));
  other.next({ ...updated('file:///x'), eventId: '4' });
  await new Promise((resolve) => setTimeout(resolve, 5));
  assert.equal(idsOf(written), ['1', '4']);
  assert.is(lost, 1);
});

test.run();
