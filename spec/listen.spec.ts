import { strict as assert } from 'node:assert';
import { Subject } from 'rxjs';
import { test } from 'uvu';
import { encodeFrame } from '../lib/encode.js';
import { InvalidOptionError } from '../lib/errors.js';
import type { Frame } from '../lib/frame.js';
import { Hub } from '../lib/hub.js';
import { listenStream } from '../operators/listenPipeline.js';
import { StalledStreamError } from '../lib/errors.js';
import { channels, type StopEvent } from '../lib/telemetry.js';
import { testScheduler } from './helpers/marbles.js';

const wire = (frames: Frame[]) => frames.map(encodeFrame).join('');

test('the whole stream in virtual time: ack, notifications, keep-alives, the 1 h close with cancelled then result', () => {
  const scheduler = testScheduler();
  scheduler.run(({ flush }) => {
    const hub = new Hub();
    const frames: Frame[] = [];
    let completedAt = -1;
    const options = { listenIdleTimeout: 7_200_000 };
    listenStream({ requestId: 7, filter: { toolsListChanged: true, resourceSubscriptions: ['file:///a'] }, hub, scheduler, options }).subscribe({
      next: (f) => frames.push(f),
      complete: () => (completedAt = scheduler.now()),
    });
    hub.notifyResourceUpdated('file:///a');
    hub.notifyResourceUpdated('file:///b');
    scheduler.schedule(() => hub.notifyToolsChanged(), 20_000);
    flush();
    assert.equal(completedAt, 3_600_000);
    const tag = ',"_meta":{"io.modelcontextprotocol/subscriptionId":7}}}';
    const keepAlives = frames.filter((f) => f.type === 'comment').length;
    assert.equal(keepAlives, 239, 'one keep-alive every 15 s for an hour, the last tick replaced by the close');
    assert.equal(
      wire(frames.filter((f) => f.type === 'message')),
      `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true,"resourceSubscriptions":["file:///a"]}${tag}\n\n` +
        `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a"${tag}\n\n` +
        `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7}}}\n\n` +
        `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"max_lifetime"${tag}\n\n` +
        `event: message\ndata: {"jsonrpc":"2.0","id":7,"result":{"resultType":"complete"${tag}\n\n`,
    );
    assert.deepEqual(hub.size, { topics: 0, subscriptions: 0 }, 'registrations released at the end');
  });
});

test('the default idle timeout closes at the first keep-alive tick after 30 min without a notification', () => {
  const scheduler = testScheduler();
  scheduler.run(({ flush }) => {
    const hub = new Hub();
    const reasons: string[] = [];
    let completedAt = -1;
    listenStream({ requestId: 1, filter: { toolsListChanged: true }, hub, scheduler }).subscribe({
      next: (f) => f.type === 'message' && f.closeReason && reasons.push(f.closeReason),
      complete: () => (completedAt = scheduler.now()),
    });
    scheduler.schedule(() => hub.notifyToolsChanged(), 20_000);
    flush();
    // Last notification at 20 s: the window ends at 1 820 s, the next tick is at 1 830 s.
    assert.equal(completedAt, 1_830_000);
    assert.deepEqual(reasons, ['idle_timeout', 'idle_timeout']);
  });
});

test('topics are registered before the ack: a publish made while the ack is being written is delivered after it', () => {
  const hub = new Hub();
  const methods: string[] = [];
  const subscription = listenStream({ requestId: 1, filter: { toolsListChanged: true }, hub }).subscribe((f) => {
    if (f.type !== 'message') return;
    const method = (f.message as { method: string }).method;
    methods.push(method);
    // Synchronously inside the ack's write: the topic must already be registered.
    if (method === 'notifications/subscriptions/acknowledged') hub.notifyToolsChanged();
  });
  assert.deepEqual(methods, ['notifications/subscriptions/acknowledged', 'notifications/tools/list_changed']);
  subscription.unsubscribe();
  assert.deepEqual(hub.size, { topics: 0, subscriptions: 0 });
});

test('token expiry before the lifetime cap closes with token_expired and reports it in telemetry', () => {
  const stops: StopEvent[] = [];
  const onStop = (e: unknown) => stops.push(e as StopEvent);
  channels.stop.subscribe(onStop);
  const scheduler = testScheduler();
  scheduler.run(({ flush }) => {
    const frames: Frame[] = [];
    listenStream({ requestId: 'x', filter: {}, hub: new Hub(), scheduler, expiresAt: 90_000 }).subscribe((f) => frames.push(f));
    flush();
    const closing = frames.filter((f) => f.type === 'message').slice(-2);
    assert.deepEqual(closing.map((f) => f.type === 'message' && f.closeReason), ['token_expired', 'token_expired']);
  });
  channels.stop.unsubscribe(onStop);
  assert.deepEqual(stops, [{ era: 'modern', duration: 90_000, filters: [], reason: 'token_expired' }]);
});

test('an empty filter still opens a stream that lives until a close reason', () => {
  const scheduler = testScheduler();
  scheduler.run(({ flush }) => {
    let completedAt = -1;
    const supersede$ = new Subject<void>();
    listenStream({ requestId: 1, filter: {}, hub: new Hub(), scheduler, supersede$ }).subscribe({ complete: () => (completedAt = scheduler.now()) });
    scheduler.schedule(() => supersede$.next(), 5_000);
    flush();
    assert.equal(completedAt, 5_000);
  });
});

test('a busy sink: notifications queue up to maxStreamQueue, the rest are dropped with telemetry; the closing frames follow the queue', () => {
  const drops: unknown[] = [];
  const onDrop = (e: unknown) => drops.push(e);
  channels.drop.subscribe(onDrop);
  const hub = new Hub();
  const demand$ = new Subject<boolean>();
  const frames: Frame[] = [];
  const uris = Array.from({ length: 10 }, (_, i) => `file:///${i}`);
  const shutdown$ = new Subject<void>();
  listenStream({ requestId: 1, filter: { resourceSubscriptions: uris }, hub, demand$, shutdown$, options: { maxStreamQueue: 4 } }).subscribe((f) => frames.push(f));
  demand$.next(false);
  for (const uri of uris) hub.notifyResourceUpdated(uri);
  hub.notifyResourceUpdated(uris[0]!); // coalesced with the pending one: not a drop
  assert.equal(frames.length, 1, 'only the ack went out before the sink got busy');
  demand$.next(true);
  shutdown$.next();
  const methods = frames.map((f) => (f.type === 'message' ? ((f.message as { method?: string }).method ?? 'result') : 'comment'));
  assert.deepEqual(methods, [
    'notifications/subscriptions/acknowledged',
    ...Array(4).fill('notifications/resources/updated'),
    'notifications/cancelled',
    'result',
  ]);
  assert.equal(drops.length, 6);
  // The bytes held are those the four queued notifications take on the wire.
  const queued = frames.slice(1, 5).reduce((sum, f) => sum + Buffer.byteLength(encodeFrame(f)), 0);
  assert.deepEqual(drops[0], { queueLength: 4, queueBytes: queued, topic: 'resource' });
  channels.drop.unsubscribe(onDrop);
});

test('a stream that closes while its client is not reading errors at once: its closing frames are dropped with the queue (the slot goes back now)', () => {
  const scheduler = testScheduler();
  scheduler.run(({ flush }) => {
    const demand$ = new Subject<boolean>();
    let failedAt = -1;
    let failure: unknown;
    const frames: Frame[] = [];
    listenStream({ requestId: 1, filter: {}, hub: new Hub(), scheduler, demand$, options: { maxStreamLifetime: 60_000, keepAliveInterval: 10_000 } }).subscribe({
      next: (f) => frames.push(f),
      error: (e) => {
        failure = e;
        failedAt = scheduler.now();
      },
    });
    scheduler.schedule(() => demand$.next(false), 1);
    flush();
    assert.ok(failure instanceof StalledStreamError);
    assert.equal(failedAt, 60_000, 'at the close itself, not one keep-alive interval later');
    assert.deepEqual((failure as StalledStreamError).info, { graceMs: 0 });
    assert.equal(frames.length, 1, 'the ack only: no closing frame was written');
  });
  // The same close with a client that drained before it: the closing frames, then completion.
  const healthy = testScheduler();
  healthy.run(({ flush }) => {
    const demand$ = new Subject<boolean>();
    let outcome = '';
    const frames: Frame[] = [];
    listenStream({ requestId: 1, filter: {}, hub: new Hub(), scheduler: healthy, demand$, options: { maxStreamLifetime: 60_000, keepAliveInterval: 10_000 } }).subscribe({
      next: (f) => frames.push(f),
      error: () => (outcome = 'error'),
      complete: () => (outcome = 'complete'),
    });
    healthy.schedule(() => demand$.next(false), 1);
    healthy.schedule(() => demand$.next(true), 55_000);
    flush();
    assert.equal(outcome, 'complete');
    assert.equal(frames.filter((f) => f.type === 'message').length, 3, 'ack, cancelled, result');
  });
});

test('invalid options throw at construction, naming the option', () => {
  assert.throws(() => listenStream({ requestId: 1, filter: {}, hub: new Hub(), options: { keepAliveInterval: -5 } }), (e: unknown) => {
    assert.ok(e instanceof InvalidOptionError);
    assert.match((e as Error).message, /^keepAliveInterval must be a positive integer of milliseconds, got -5$/);
    return true;
  });
});

test.run();
