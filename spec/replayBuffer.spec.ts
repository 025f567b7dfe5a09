import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { InvalidOptionError } from '../lib/errors.js';
import { type MessageFrame } from '../lib/frame.js';
import { isThenable, ReplayBuffer, type EventLog } from '../lib/replayBuffer.js';
import { updated } from './helpers/frames.js';

const ids = (frames: readonly MessageFrame[]): (string | undefined)[] => frames.map((frame) => frame.eventId);

/** A buffer of capacity 5 that has seen `count` frames (ids 1..count). */
function filled(count: number, capacity = 5): ReplayBuffer {
  const log = new ReplayBuffer(capacity);
  for (let i = 1; i <= count; i++) log.append(updated(`file:///r${i}`));
  return log;
}

test('stamps strictly increasing decimal ids starting at 1, without touching the original', () => {
  const log = new ReplayBuffer();
  const original = updated('file:///a');
  assert.is(log.lastId, 0);
  const first = log.append(original);
  const second = log.append(updated('file:///b'));
  assert.is(first.eventId, '1');
  assert.is(second.eventId, '2');
  assert.is(original.eventId, undefined);
  assert.equal({ ...first, eventId: undefined }, { ...original, eventId: undefined });
  assert.is(log.lastId, 2);
});

test('replaces an id the frame already had', () => {
  const log = new ReplayBuffer();
  assert.is(log.append({ ...updated('file:///a'), eventId: '77' }).eventId, '1');
});

test('keeps only the last `capacity` frames', () => {
  const log = filled(7);
  assert.is(log.capacity, 5);
  assert.is(log.size, 5);
  assert.is(log.lastId, 7);
  assert.equal(ids(log.after('0')), ['3', '4', '5', '6', '7']);
});

test('defaults to a capacity of 100', () => {
  const log = new ReplayBuffer();
  for (let i = 1; i <= 150; i++) log.append(updated(`file:///r${i}`));
  assert.is(log.capacity, 100);
  assert.is(log.size, 100);
  assert.equal(ids(log.after('0'))[0], '51');
});

test('replays the frames after a numeric Last-Event-ID, as append returned them', () => {
  const log = new ReplayBuffer(5);
  const stamped = [1, 2, 3, 4].map((i) => log.append(updated(`file:///r${i}`)));
  const replay = log.after('2');
  assert.equal(ids(replay), ['3', '4']);
  assert.equal(replay[0], stamped[2]);
  assert.equal(replay[1], stamped[3]);
});

test('keeps the appended frames themselves, not a stamped copy each: one shared notification, many ids', () => {
  const log = new ReplayBuffer(3);
  const shared = updated('file:///shared');
  for (let i = 0; i < 5; i++) log.append(shared);
  const ring = (log as unknown as { ring: MessageFrame[] }).ring;
  assert.ok(ring.every((frame) => frame === shared), 'the ring holds the appended object');
  assert.equal(ids(log.after('0')), ['3', '4', '5']);
  assert.is(shared.eventId, undefined, 'the appended frame is not modified');
});

test('replays everything kept when the Last-Event-ID is older than the oldest kept frame', () => {
  assert.equal(ids(filled(7).after('1')), ['3', '4', '5', '6', '7']);
  assert.equal(ids(filled(7).after('2')), ['3', '4', '5', '6', '7']);
  assert.equal(ids(filled(7).after('3')), ['4', '5', '6', '7']);
});

test('replays the whole buffer for a non-numeric Last-Event-ID', () => {
  for (const id of ['abc', '', '-1', '4.5', ' 4', '0x4']) {
    assert.equal(ids(filled(7).after(id)), ['3', '4', '5', '6', '7'], JSON.stringify(id));
  }
});

test('replays nothing for a Last-Event-ID at or past the newest', () => {
  assert.equal(filled(7).after('7'), []);
  assert.equal(filled(7).after('8'), []);
  assert.equal(filled(7).after('99999999999999999999999'), []);
});

test('replays nothing without a Last-Event-ID', () => {
  assert.equal(filled(7).after(undefined), []);
  assert.equal(filled(7).after(null), []);
});

test('an empty buffer replays nothing', () => {
  const log = new ReplayBuffer(3);
  assert.is(log.size, 0);
  assert.equal(log.after('abc'), []);
  assert.equal(log.after('0'), []);
});

test('keeps working across many wraps of the ring', () => {
  const log = filled(1003, 10);
  assert.equal(ids(log.after('1000')), ['1001', '1002', '1003']);
  assert.equal(ids(log.after('x')), ['994', '995', '996', '997', '998', '999', '1000', '1001', '1002', '1003']);
});

test('rejects a capacity that is not a positive integer, naming replayBufferSize', () => {
  for (const capacity of [0, -1, 2.5, Number.NaN, Number.POSITIVE_INFINITY]) {
    assert.throws(
      () => new ReplayBuffer(capacity),
      (error: unknown) => error instanceof InvalidOptionError && /^replayBufferSize must be/.test(error.message),
    );
  }
});

test('is a synchronous EventLog', () => {
  const log: EventLog = new ReplayBuffer(2);
  const stamped = log.append(updated('file:///a'));
  const after = log.after('0');
  assert.not.ok(isThenable(stamped));
  assert.not.ok(isThenable(after));
  assert.is((stamped as MessageFrame).eventId, '1');
  assert.equal(ids(after as MessageFrame[]), ['1']);
});

test.run();
