// The telemetry stage both eras' served streams end with (operators/streamTelemetry.ts): a listen
// and a legacy GET stream publish `start` and `stop` through the same stage, in virtual time, and
// tell their watcher the same status; the public sessionPipeline, given no watcher, publishes none.
import { strict as assert } from 'node:assert';
import { BehaviorSubject, Subject } from 'rxjs';
import { test } from 'uvu';
import type { FilterName } from '../../lib/filter.js';
import type { Frame } from '../../lib/frame.js';
import { Hub } from '../../lib/hub.js';
import { ReplayBuffer } from '../../lib/replayBuffer.js';
import { channels, type StartEvent, type StopEvent, type StopReason } from '../../lib/telemetry.js';
import { listenStream } from '../../operators/listenPipeline.js';
import { sessionPipeline, sessionPlans, sessionStages, type SessionWatcher } from '../../operators/sessionPipeline.js';
import { stageOperator } from '../../operators/stage.js';
import type { StreamStatus } from '../../operators/streamTelemetry.js';
import { testScheduler } from '../helpers/marbles.js';

/** Runs `body` with `channels.start` and `channels.stop` recorded. */
function recorded(body: () => void): { starts: StartEvent[]; stops: StopEvent[] } {
  const starts: StartEvent[] = [];
  const stops: StopEvent[] = [];
  const onStart = (event: unknown) => starts.push(event as StartEvent);
  const onStop = (event: unknown) => stops.push(event as StopEvent);
  channels.start.subscribe(onStart);
  channels.stop.subscribe(onStop);
  try {
    body();
  } finally {
    channels.start.unsubscribe(onStart);
    channels.stop.unsubscribe(onStop);
  }
  return { starts, stops };
}

/** A GET stream's keeper, as the endpoint's StreamHandle is one: what the session listens to, why it ended the stream. */
class Keeper implements SessionWatcher {
  endReason: StopReason | undefined = undefined;
  status: StreamStatus | undefined = undefined;
  readonly told: string[] = [];

  filters(): FilterName[] {
    return ['tools_list_changed', 'resource_subscriptions'];
  }

  resourceSubscriptions(): number {
    return 2;
  }

  watch(status: StreamStatus): void {
    this.status = status;
    this.told.push('watch');
  }

  started(): void {
    this.told.push('started');
  }

  stopped(_status: StreamStatus, reason: StopReason, duration: number): void {
    this.told.push(`stopped ${reason} ${duration}`);
  }
}

test('a listen: start as it opens (era modern, its filter), stop with its duration and reason as it ends', () => {
  const scheduler = testScheduler();
  const { starts, stops } = recorded(() =>
    scheduler.run(({ flush }) => {
      const subscription = listenStream({ requestId: 1, filter: { toolsListChanged: true, resourceSubscriptions: ['file:///a'] }, hub: new Hub(), scheduler }).subscribe();
      scheduler.schedule(() => subscription.unsubscribe(), 4_000);
      flush();
    }),
  );
  assert.deepEqual(starts, [{ era: 'modern', systemTime: 0, resourceSubscriptions: 1, filters: ['tools_list_changed', 'resource_subscriptions'] }]);
  assert.deepEqual(stops, [{ era: 'modern', duration: 4_000, filters: ['tools_list_changed', 'resource_subscriptions'], reason: 'client_closed' }]);
});

test('a GET stream served with a keeper: the same stage, era legacy, what the keeper says it listens to and why it ended it', () => {
  const scheduler = testScheduler();
  const keeper = new Keeper();
  const { starts, stops } = recorded(() =>
    scheduler.run(({ flush }) => {
      const plans = sessionPlans({ keepAliveInterval: 1_000, maxStreamLifetime: 60_000, reconnectDelay: 1_000, maxStreamQueue: 10, maxStreamQueueBytes: 1_048_576, scheduler });
      const feed$ = new Subject<Frame>();
      const values = { log: new ReplayBuffer(3), prime: false, demand$: new BehaviorSubject(true), watcher: keeper };
      const subscription = feed$.pipe(stageOperator<Frame, Frame>(() => sessionStages(plans, values, undefined))).subscribe();
      scheduler.schedule(() => {
        keeper.endReason = 'replaced';
        subscription.unsubscribe();
      }, 3_000);
      flush();
    }),
  );
  assert.deepEqual(starts, [{ era: 'legacy', systemTime: 0, resourceSubscriptions: 2, filters: ['tools_list_changed', 'resource_subscriptions'] }]);
  assert.deepEqual(stops, [{ era: 'legacy', duration: 3_000, filters: ['tools_list_changed', 'resource_subscriptions'], reason: 'replaced' }]);
  assert.deepEqual(keeper.told, ['watch', 'started', 'stopped replaced 3000']);
  assert.equal(keeper.status?.openedAt(), 0);
  assert.ok(keeper.status?.queue !== undefined, 'the keeper reads the stream\'s queue through its status');
});

test('a GET stream at its lifetime cap: the close stage\'s reason comes before the keeper\'s', () => {
  const scheduler = testScheduler();
  const keeper = new Keeper();
  keeper.endReason = 'session_ended';
  const { stops } = recorded(() =>
    scheduler.run(({ flush }) => {
      const plans = sessionPlans({ keepAliveInterval: 1_000, maxStreamLifetime: 5_000, reconnectDelay: 1_000, maxStreamQueue: 10, maxStreamQueueBytes: 1_048_576, scheduler });
      const values = { log: new ReplayBuffer(3), prime: false, demand$: new BehaviorSubject(true), watcher: keeper };
      new Subject<Frame>().pipe(stageOperator<Frame, Frame>(() => sessionStages(plans, values, undefined))).subscribe();
      flush();
    }),
  );
  assert.deepEqual(stops.map((stop) => [stop.era, stop.reason, stop.duration]), [['legacy', 'max_lifetime', 5_000]]);
});

test('the public sessionPipeline, given no keeper, publishes no telemetry', () => {
  const scheduler = testScheduler();
  const { starts, stops } = recorded(() =>
    scheduler.run(({ flush }) => {
      const subscription = new Subject<Frame>()
        .pipe(sessionPipeline({ log: new ReplayBuffer(3), reconnectDelay: 1_000, keepAliveInterval: 1_000, maxStreamLifetime: 60_000, queue: { notifications: 10 }, demand$: new BehaviorSubject(true), scheduler }))
        .subscribe();
      scheduler.schedule(() => subscription.unsubscribe(), 2_000);
      flush();
    }),
  );
  assert.deepEqual([starts, stops], [[], []]);
});

test.run();
