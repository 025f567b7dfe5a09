import { test } from 'uvu';
import { endlessSyncSource } from '../helpers/syncSource.js';
import * as assert from 'uvu/assert';
import { EMPTY, Observable, Subject, concat, of, take, throwError } from 'rxjs';
import { ackThenNotify } from '../../operators/ackThenNotify.js';
import { controlFrame, notificationFrame } from '../../lib/frame.js';
import type { Frame } from '../../lib/frame.js';
import { testScheduler } from '../helpers/marbles.js';

const A = controlFrame({
  jsonrpc: '2.0',
  method: 'notifications/subscriptions/acknowledged',
  params: { notifications: { toolsListChanged: true } },
});
const a = notificationFrame({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }, 'tools');
const b = notificationFrame({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'file:///b' } }, 'resource');
const c = notificationFrame({ jsonrpc: '2.0', method: 'notifications/prompts/list_changed' }, 'prompts');
const values = { A, a, b, c };

test('emits the ack first, then the source frames as they come', () => {
  testScheduler().run(({ cold, expectObservable }) => {
    const source = cold('  -a-b|', values);
    expectObservable(source.pipe(ackThenNotify(A))).toBe('Aa-b|', values);
  });
});

test('subscribes to the source before emitting the ack (topics registered first)', () => {
  const log: string[] = [];
  const source = new Observable<Frame>(() => {
    log.push('source subscribed');
  });
  source.pipe(ackThenNotify(A)).subscribe((frame) => log.push(frame === A ? 'ack' : 'frame'));
  assert.equal(log, ['source subscribed', 'ack']);
});

test('a frame published right after the ack reaches the stream', () => {
  const topic = new Subject<Frame>();
  const got: Frame[] = [];
  let observedAtAck = false;
  topic.pipe(ackThenNotify(A)).subscribe((frame) => {
    got.push(frame);
    if (frame === A) {
      observedAtAck = topic.observed;
      topic.next(a); // published by whoever reacts to the ack
    }
  });
  assert.ok(observedAtAck, 'the topic must be subscribed when the ack goes out');
  assert.equal(got, [A, a]);
});

test('holds frames emitted during the subscription until after the ack, in order', () => {
  testScheduler().run(({ expectObservable }) => {
    const source = new Observable<Frame>((subscriber) => {
      subscriber.next(a);
      subscriber.next(b);
    });
    expectObservable(source.pipe(ackThenNotify(A))).toBe('(Aab)', values);
  });
});

test('synchronous frames then later ones keep their order after the ack', () => {
  testScheduler().run(({ cold, expectObservable }) => {
    const source = concat(of(a, b), cold('5ms c|', values));
    expectObservable(source.pipe(ackThenNotify(A))).toBe('(Aab)c|', values);
  });
});

test('a source that completes during the subscription: ack, frames, completion', () => {
  testScheduler().run(({ expectObservable }) => {
    expectObservable(of(a, b).pipe(ackThenNotify(A))).toBe('(Aab|)', values);
    expectObservable(EMPTY.pipe(ackThenNotify(A))).toBe('(A|)', values);
  });
});

test('a source that errors during the subscription: ack, frames, then the error', () => {
  const boom = new Error('boom');
  testScheduler().run(({ expectObservable }) => {
    const source = concat(of(a), throwError(() => boom));
    expectObservable(source.pipe(ackThenNotify(A))).toBe('(Aa#)', values, boom);
    expectObservable(throwError(() => boom).pipe(ackThenNotify(A))).toBe('(A#)', values, boom);
  });
});

test('an asynchronous error passes through after the ack', () => {
  const boom = new Error('boom');
  testScheduler().run(({ cold, expectObservable }) => {
    expectObservable(cold(' --a#', values, boom).pipe(ackThenNotify(A))).toBe('A-a#', values, boom);
  });
});

test('each subscription gets its own ack', () => {
  testScheduler().run(({ cold, expectObservable }) => {
    const stream = cold('-a|', values).pipe(ackThenNotify(A));
    expectObservable(concat(stream, stream)).toBe('AaAa|', values);
  });
});

test('unsubscribing unsubscribes the source', () => {
  testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
    const source = cold('      -a-b-c-|', values);
    expectObservable(source.pipe(ackThenNotify(A)), '----!').toBe('Aa-b', values);
    expectSubscriptions(source.subscriptions).toBe('^---!');
  });
});

test('stops a synchronous source when unsubscribed', () => {
  const { source, emitted } = endlessSyncSource<Frame>(() => a);
  const got: Frame[] = [];
  source.pipe(ackThenNotify(A), take(3)).subscribe((frame) => got.push(frame));
  assert.equal(got, [A, a, a]);
  assert.ok(emitted() <= 3, `the source kept emitting after unsubscription: ${emitted()} frames`);
});

test.run();
