// lib/subscribers.ts on its own: BareSubscriber hands values, the error and the completion to its
// receiver with its tag, unsubscribing itself first on the two ends; LeanSubscriber holds its
// first teardown in a field and runs it after RxJS's own, once, reporting a throw.
import { strict as assert } from 'node:assert';
import { Observable, Subject } from 'rxjs';
import { test } from 'uvu';
import { BareSubscriber, LeanSubscriber, type SubscriptionReceiver } from '../lib/subscribers.js';
import { channels, type ErrorEvent } from '../lib/telemetry.js';
import { collecting } from './helpers/telemetry.js';

class Log implements SubscriptionReceiver<number, string> {
  readonly seen: string[] = [];
  onValue(value: number, tag: string): void {
    this.seen.push(`${tag} value ${value}`);
  }
  onError(error: unknown, tag: string): void {
    this.seen.push(`${tag} error ${(error as Error).message}`);
  }
  onComplete(tag: string): void {
    this.seen.push(`${tag} complete`);
  }
}

test('BareSubscriber: values, then the end, each with its tag; the source is torn down before the end is told', () => {
  const log = new Log();
  let tornDown = 0;
  const source = new Subject<number>();
  const watched = new Observable<number>((subscriber) => {
    const inner = source.subscribe(subscriber);
    return () => {
      tornDown++;
      log.seen.push('teardown');
      inner.unsubscribe();
    };
  });
  const subscriber = new BareSubscriber(log, 'a');
  watched.subscribe(subscriber);
  source.next(1);
  source.next(2);
  source.complete();
  assert.deepEqual(log.seen, ['a value 1', 'a value 2', 'teardown', 'a complete']);
  assert.equal(tornDown, 1);
  assert.ok(subscriber.closed);

  const failing = new Log();
  const errors = new Subject<number>();
  new Observable<number>((subscriber) => {
    const inner = errors.subscribe(subscriber);
    return () => {
      failing.seen.push('teardown');
      inner.unsubscribe();
    };
  }).subscribe(new BareSubscriber(failing, 'b'));
  errors.next(3);
  errors.error(new Error('boom'));
  assert.deepEqual(failing.seen, ['b value 3', 'teardown', 'b error boom']);
});

test('BareSubscriber: a receiver without onComplete just stops; unsubscribing stops the values', () => {
  const seen: number[] = [];
  const receiver: SubscriptionReceiver<number, undefined> = { onValue: (value) => void seen.push(value), onError: () => assert.fail('no error') };
  const source = new Subject<number>();
  const subscriber = new BareSubscriber(receiver, undefined);
  source.subscribe(subscriber);
  source.next(1);
  subscriber.unsubscribe();
  source.next(2);
  source.complete();
  assert.deepEqual(seen, [1]);
  assert.equal(source.observed, false);
});

class Sink<T> extends LeanSubscriber<T> {}

test('LeanSubscriber: the first teardown is held, later ones go to RxJS; on unsubscribe RxJS\'s run first, then the held one, each once', () => {
  const order: string[] = [];
  const sink = new Sink<number>();
  sink.add({ unsubscribe: () => order.push('held') });
  sink.add(() => order.push('second'));
  sink.add(() => order.push('third'));
  sink.unsubscribe();
  sink.unsubscribe();
  assert.deepEqual(order, ['second', 'third', 'held']);
  // Added once closed: runs at once, as RxJS does.
  sink.add(() => order.push('late'));
  assert.deepEqual(order, ['second', 'third', 'held', 'late']);
});

test('LeanSubscriber: a held teardown that throws is reported on channels.error and does not stop the unsubscribe', async () => {
  await collecting<ErrorEvent>(channels.error, async (errors) => {
    const sink = new Sink<number>();
    let second = false;
    sink.add(() => {
      throw new Error('teardown failed');
    });
    sink.add(() => (second = true));
    sink.unsubscribe();
    assert.ok(sink.closed);
    assert.ok(second);
    assert.deepEqual(errors.map((event) => [event.where, (event.error as Error).message]), [['adapter', 'teardown failed']]);
  });
});

test('LeanSubscriber as a stream\'s sink: the pipeline\'s teardown runs when the sink ends', () => {
  const order: string[] = [];
  const sink = new (class extends LeanSubscriber<number> {
    protected override _next(value: number): void {
      order.push(`next ${value}`);
    }
  })();
  new Observable<number>((subscriber) => {
    subscriber.next(1);
    subscriber.complete();
    return () => order.push('pipeline teardown');
  }).subscribe(sink);
  assert.deepEqual(order, ['next 1', 'pipeline teardown']);
});

test.run();
