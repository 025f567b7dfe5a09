// The streams the endpoint serves are the operator composition, fused (issue 12): random scripts of
// publishes, demand changes, signals, clock advances and client departures give the same frames at
// the same virtual times through the assembled operators (`listenPipeline`, `sessionPipeline`) and through
// the public operators piped one by one.
import fc from 'fast-check';
import { identity, Observable, Subject, VirtualAction, VirtualTimeScheduler, type MonoTypeOperatorFunction, type Subscription } from 'rxjs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Broadcast } from '../../lib/broadcast.js';
import { encodeFrame } from '../../lib/encode.js';
import { acknowledgedNotification, type ListenFilter } from '../../lib/filter.js';
import { controlFrame, notificationFrame, type Frame } from '../../lib/frame.js';
import { Hub } from '../../lib/hub.js';
import { notifications } from '../../lib/notifications.js';
import { ReplayBuffer } from '../../lib/replayBuffer.js';
import { ackThenNotify } from '../../operators/ackThenNotify.js';
import { expiresAt, idleTimeout, lifetimeCap, shutdown, superseded } from '../../operators/closeTriggers.js';
import { closeWhen } from '../../operators/closeWhen.js';
import { dropWhenQueueExceeds } from '../../operators/dropWhenQueueExceeds.js';
import { keepAlive } from '../../operators/keepAlive.js';
import { listenPipeline } from '../../operators/listenPipeline.js';
import { primeStream } from '../../operators/primeStream.js';
import { replayFrom } from '../../operators/replayFrom.js';
import { sessionPipeline } from '../../operators/sessionPipeline.js';
import { tagSubscriptionId } from '../../operators/tagSubscriptionId.js';
import { withEventIds } from '../../operators/withEventIds.js';

type Step =
  | { readonly kind: 'publish'; readonly topic: 'tools' | 'prompts' | 'a' | 'b' | 'c'; readonly times: number }
  | { readonly kind: 'demand'; readonly ready: boolean }
  | { readonly kind: 'supersede' }
  | { readonly kind: 'shutdown' }
  | { readonly kind: 'advance'; readonly ms: number }
  | { readonly kind: 'leave' };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('publish' as const), topic: fc.constantFrom('tools' as const, 'prompts' as const, 'a' as const, 'b' as const, 'c' as const), times: fc.integer({ min: 1, max: 4 }) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('demand' as const), ready: fc.boolean() }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'supersede' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'shutdown' as const }) },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 120 }) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'leave' as const }) },
);

interface Setup {
  readonly keepAliveInterval: number;
  readonly listenIdleTimeout: number;
  readonly maxStreamLifetime: number;
  readonly maxStreamQueue: number;
  readonly maxStreamQueueBytes: number;
  readonly closeNotice: 'cancelled-then-result' | 'result-only';
  readonly expiresAt: number | undefined;
  readonly requestId: number | string;
  /** Signals as Broadcasts (attached to directly, as the endpoint does) or as Subjects (subscribed). */
  readonly broadcasts: boolean;
  readonly lastEventId: string | undefined;
  readonly steps: readonly Step[];
}

const setup: fc.Arbitrary<Setup> = fc.record({
  keepAliveInterval: fc.integer({ min: 1, max: 60 }),
  listenIdleTimeout: fc.integer({ min: 1, max: 300 }),
  maxStreamLifetime: fc.integer({ min: 1, max: 800 }),
  maxStreamQueue: fc.integer({ min: 1, max: 6 }),
  maxStreamQueueBytes: fc.constantFrom(1_048_576, 400, 250),
  closeNotice: fc.constantFrom('cancelled-then-result' as const, 'result-only' as const),
  expiresAt: fc.option(fc.integer({ min: -10, max: 900 }), { nil: undefined }),
  requestId: fc.oneof(fc.integer({ min: 0, max: 9 }), fc.constantFrom('7', 'listen-1')),
  broadcasts: fc.boolean(),
  lastEventId: fc.option(fc.constantFrom('0', '1', '3', '99', 'x'), { nil: undefined }),
  steps: fc.array(step, { maxLength: 40 }),
});

const FILTER: ListenFilter = { toolsListChanged: true, promptsListChanged: true, resourceSubscriptions: ['file:///a', 'file:///b'] };

/** What a sink saw: each frame's bytes, the completion or the error, with the virtual time. */
type Seen = string[];

interface Signals {
  readonly demand$: Subject<boolean> | Broadcast<boolean>;
  readonly supersede$: Subject<void> | Broadcast<void>;
  readonly shutdown$: Subject<void> | Broadcast<void>;
}

/** Plays `steps` against the stream `build` makes, on a fresh hub and virtual clock. */
function play(input: Setup, build: (hub: Hub, scheduler: VirtualTimeScheduler, signals: Signals) => Observable<Frame>): Seen {
  const scheduler = new VirtualTimeScheduler(VirtualAction, Number.POSITIVE_INFINITY);
  const hub = new Hub();
  const signals: Signals = input.broadcasts
    ? { demand$: new Broadcast<boolean>(), supersede$: new Broadcast<void>(), shutdown$: new Broadcast<void>() }
    : { demand$: new Subject<boolean>(), supersede$: new Subject<void>(), shutdown$: new Subject<void>() };
  const seen: Seen = [];
  const at = () => scheduler.now();
  let subscription: Subscription | undefined = build(hub, scheduler, signals).subscribe({
    next: (frame) => seen.push(`${at()} ${JSON.stringify(encodeFrame(frame))}`),
    error: (error: unknown) => seen.push(`${at()} error ${(error as Error).name}`),
    complete: () => seen.push(`${at()} complete`),
  });
  const advance = (ms: number) => {
    const target = scheduler.now() + ms;
    scheduler.maxFrames = target;
    scheduler.flush();
    scheduler.frame = target;
  };
  for (const s of input.steps) {
    switch (s.kind) {
      case 'publish':
        for (let i = 0; i < s.times; i++) {
          if (s.topic === 'tools') hub.notifyToolsChanged();
          else if (s.topic === 'prompts') hub.notifyPromptsChanged();
          else hub.notifyResourceUpdated(`file:///${s.topic}`);
        }
        break;
      case 'demand':
        signals.demand$.next(s.ready);
        break;
      case 'supersede':
        signals.supersede$.next();
        break;
      case 'shutdown':
        signals.shutdown$.next();
        break;
      case 'advance':
        advance(s.ms);
        break;
      case 'leave':
        subscription?.unsubscribe();
        subscription = undefined;
        seen.push(`${at()} left`);
        break;
    }
  }
  advance(2_000);
  subscription?.unsubscribe();
  // Nothing of either stream may still hold time: its clock is empty once the stream is gone.
  seen.push(`hub ${JSON.stringify(hub.size)}`);
  return seen;
}

const listenOptions = (input: Setup) => ({
  keepAliveInterval: input.keepAliveInterval,
  listenIdleTimeout: input.listenIdleTimeout,
  maxStreamLifetime: input.maxStreamLifetime,
  maxStreamQueue: input.maxStreamQueue,
  maxStreamQueueBytes: input.maxStreamQueueBytes,
  closeNotice: input.closeNotice,
});

function assembledListen(input: Setup) {
  return (hub: Hub, scheduler: VirtualTimeScheduler, signals: Signals) =>
    notifications(hub, FILTER).pipe(
      listenPipeline({
        requestId: input.requestId,
        filter: FILTER,
        options: listenOptions(input),
        expiresAt: input.expiresAt,
        supersede$: signals.supersede$,
        shutdown$: signals.shutdown$,
        demand$: signals.demand$,
        scheduler,
      }),
    );
}

/**
 * Between two operators: a plain Observable in between, so that each stage operator runs alone,
 * one subscriber each (piped directly onto one another, stage operators fuse at assembly).
 */
const apart = (): MonoTypeOperatorFunction<Frame> => (source) => new Observable<Frame>((subscriber) => source.subscribe(subscriber));
const together = (): MonoTypeOperatorFunction<Frame> => identity;

function pipedListen(input: Setup, between: () => MonoTypeOperatorFunction<Frame>) {
  return (hub: Hub, scheduler: VirtualTimeScheduler, signals: Signals) =>
    notifications(hub, FILTER).pipe(
      ackThenNotify(controlFrame(acknowledgedNotification(FILTER))),
      between(),
      keepAlive(input.keepAliveInterval, scheduler),
      between(),
      closeWhen(
        [
          lifetimeCap(input.maxStreamLifetime, scheduler),
          ...(input.expiresAt === undefined ? [] : [expiresAt(input.expiresAt, scheduler)]),
          idleTimeout(input.listenIdleTimeout, scheduler),
          superseded(signals.supersede$),
          shutdown(signals.shutdown$),
        ],
        { requestId: input.requestId, mode: input.closeNotice },
      ),
      between(),
      tagSubscriptionId(input.requestId),
      between(),
      dropWhenQueueExceeds({ notifications: input.maxStreamQueue, bytes: input.maxStreamQueueBytes }, signals.demand$, undefined, {
        stallGraceMs: 0,
      }),
    );
}

/** A legacy session's feed: the hub's notifications stamped with event ids, some already logged. */
function sessionFeed(hub: Hub, log: ReplayBuffer): Observable<Frame> {
  for (let i = 0; i < 4; i++) log.append(notificationFrame({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }, 'tools', 'tools'));
  return notifications(hub, FILTER).pipe(withEventIds(log));
}

function assembledSession(input: Setup) {
  return (hub: Hub, scheduler: VirtualTimeScheduler, signals: Signals) => {
    const log = new ReplayBuffer(3);
    return sessionFeed(hub, log).pipe(
      sessionPipeline({
        lastEventId: input.lastEventId,
        log,
        reconnectDelay: 1000,
        keepAliveInterval: input.keepAliveInterval,
        maxStreamLifetime: input.maxStreamLifetime,
        expiresAt: input.expiresAt,
        supersede$: signals.supersede$,
        shutdown$: signals.shutdown$,
        queue: { notifications: input.maxStreamQueue, bytes: input.maxStreamQueueBytes },
        demand$: signals.demand$,
        scheduler,
      }),
    );
  };
}

function pipedSession(input: Setup, between: () => MonoTypeOperatorFunction<Frame>) {
  return (hub: Hub, scheduler: VirtualTimeScheduler, signals: Signals) => {
    const log = new ReplayBuffer(3);
    const feed = sessionFeed(hub, log).pipe(between());
    return (input.lastEventId === undefined ? feed : feed.pipe(replayFrom(input.lastEventId, log), between())).pipe(
      primeStream(input.lastEventId, log, 1000),
      between(),
      keepAlive(input.keepAliveInterval, scheduler),
      between(),
      closeWhen(
        [
          lifetimeCap(input.maxStreamLifetime, scheduler),
          ...(input.expiresAt === undefined ? [] : [expiresAt(input.expiresAt, scheduler)]),
          superseded(signals.supersede$),
          shutdown(signals.shutdown$),
        ],
        'end',
      ),
      between(),
      dropWhenQueueExceeds({ notifications: input.maxStreamQueue, bytes: input.maxStreamQueueBytes }, signals.demand$, undefined, {
        stallGraceMs: 0,
      }),
    );
  };
}

type Build = (hub: Hub, scheduler: VirtualTimeScheduler, signals: Signals) => Observable<Frame>;

function property(assembled: (input: Setup) => Build, piped: (input: Setup) => Build) {
  const details = fc.check(
    fc.property(setup, (input) => {
      const fused = play(input, assembled(input));
      const oneByOne = play(input, piped(input));
      assert.equal(fused, oneByOne);
      // Scripts do reach the interesting places: frames beyond the ack and priming.
      return true;
    }),
    { numRuns: 400, seed: 1201, endOnFailure: true },
  );
  if (details.failed) {
    throw new Error(`after ${details.numRuns} runs (seed ${details.seed}): ${String(details.errorInstance)}\ncounterexample: ${fc.stringify(details.counterexample)}`);
  }
}

test('listenPipeline: the assembled stream and the operators piped one by one (each alone) give the same frames at the same times', () => {
  property(assembledListen, (input) => pipedListen(input, apart));
});

test('listenPipeline: the same through the operators piped directly (fused at assembly)', () => {
  property(assembledListen, (input) => pipedListen(input, together));
});

test('sessionPipeline: the assembled GET stream and the operators piped one by one give the same frames at the same times', () => {
  property(assembledSession, (input) => pipedSession(input, apart));
  property(assembledSession, (input) => pipedSession(input, together));
});

test('the scripts reach closes, drops, stalls and departures (the property is not vacuous)', () => {
  const outcomes = new Set<string>();
  fc.assert(
    fc.property(setup, (input) => {
      for (const line of play(input, assembledListen(input))) {
        const match = /(max_lifetime|idle_timeout|superseded|shutdown|token_expired)|error (\w+)|(left)|(complete)/.exec(line);
        if (match !== null) outcomes.add(match.slice(1).find((group) => group !== undefined)!);
      }
    }),
    { numRuns: 400, seed: 1201 },
  );
  for (const expected of ['max_lifetime', 'idle_timeout', 'superseded', 'shutdown', 'token_expired', 'StalledStreamError', 'left', 'complete']) {
    assert.ok(outcomes.has(expected), `no script ended with ${expected}: ${[...outcomes].join(', ')}`);
  }
});

test('a stream that is gone holds no time: the shared clock is left empty', () => {
  // Guard for the property above: a stage that forgot to leave the clock keeps a heap entry.
  const scheduler = new VirtualTimeScheduler(VirtualAction, Number.POSITIVE_INFINITY);
  const hub = new Hub();
  const subscription = notifications(hub, FILTER)
    .pipe(listenPipeline({ requestId: 1, filter: FILTER, scheduler, expiresAt: 5_000 }))
    .subscribe();
  const clock = (scheduler as unknown as { actions: unknown[] }).actions;
  assert.is(clock.length, 1, 'one scheduled action for the whole stream');
  subscription.unsubscribe();
  assert.is(clock.length, 0, 'nothing scheduled once it is gone');
  assert.equal(hub.size, { topics: 0, subscriptions: 0 });
});

test.run();

