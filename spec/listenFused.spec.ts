// `listenStream` is one fused Subscriber (lib/listen.ts) standing for the public operator
// composition. These specs run both side by side on one hub in virtual time, through the same
// scenarios, and require the same frames at the same times and the same end: the fusion must not
// change what goes on the wire. The signals go once through `Broadcast` (attached directly, as
// the endpoint and the node adapter do) and once through plain Subjects (subscribed).
import { strict as assert } from 'node:assert';
import { type Observable, Subject, tap } from 'rxjs';
import { test } from 'uvu';
import { ackThenNotify } from '../operators/ackThenNotify.js';
import { closeWhen, type CloseTrigger } from '../operators/closeWhen.js';
import { dropWhenQueueExceeds } from '../operators/dropWhenQueueExceeds.js';
import { keepAlive } from '../operators/keepAlive.js';
import { tagSubscriptionId } from '../operators/tagSubscriptionId.js';
import { Broadcast } from '../lib/broadcast.js';
import { expiresAt, idleTimeout, lifetimeCap, shutdown, superseded } from '../lib/closeTriggers.js';
import { encodeFrame } from '../lib/encode.js';
import { acknowledgedNotification, type ListenFilter } from '../lib/filter.js';
import { controlFrame, type Frame } from '../lib/frame.js';
import { Hub } from '../lib/hub.js';
import { listenStream, notifications } from '../lib/listen.js';
import { failWhenStalled } from '../lib/stallGuard.js';
import type { ListenOptions } from '../lib/options.js';
import { testScheduler } from './helpers/marbles.js';

interface Scenario {
  readonly options: Partial<ListenOptions> & { keepAliveInterval: number; listenIdleTimeout: number; maxStreamLifetime: number };
  readonly filter: ListenFilter;
  readonly expiresAt?: number;
  /** [virtual time, action] pairs, run on the scheduler. */
  readonly script: ReadonlyArray<readonly [number, (io: Io) => void]>;
}

interface Io {
  readonly hub: Hub;
  demand(canWrite: boolean): void;
  supersede(): void;
  shutdown(): void;
}

/** What a run recorded: `time text` per frame, then `time end` or `time error`. */
function run(scenario: Scenario, flavour: 'composed' | 'broadcast' | 'subject'): string[] {
  const scheduler = testScheduler();
  const log: string[] = [];
  scheduler.run(({ flush }) => {
    const hub = new Hub();
    const make = <T>() => (flavour === 'broadcast' ? new Broadcast<T>() : new Subject<T>());
    const demand$ = make<boolean>();
    const supersede$ = make<void>();
    const shutdown$ = make<void>();
    const io: Io = {
      hub,
      demand: (canWrite) => demand$.next(canWrite),
      supersede: () => supersede$.next(),
      shutdown: () => shutdown$.next(),
    };
    const { options, filter } = scenario;
    const closing$ = new Subject<void>();
    let frames$: Observable<Frame>;
    if (flavour === 'composed') {
      const triggers: CloseTrigger[] = [lifetimeCap(options.maxStreamLifetime, scheduler), idleTimeout(options.listenIdleTimeout, scheduler)];
      if (scenario.expiresAt !== undefined) triggers.push(expiresAt(scenario.expiresAt, scheduler));
      triggers.push(superseded(supersede$), shutdown(shutdown$));
      frames$ = notifications(hub, filter).pipe(
        ackThenNotify(controlFrame(acknowledgedNotification(filter))),
        keepAlive(options.keepAliveInterval, scheduler),
        closeWhen(triggers, { requestId: 'r', mode: options.closeNotice ?? 'cancelled-then-result' }),
        tap((frame) => frame.type === 'message' && frame.closeReason !== undefined && closing$.next()),
        tagSubscriptionId('r'),
        dropWhenQueueExceeds(options.listenMaxQueue ?? 1000, demand$),
        failWhenStalled(closing$, options.keepAliveInterval, scheduler),
      );
    } else {
      frames$ = listenStream({ requestId: 'r', filter, hub, options, expiresAt: scenario.expiresAt, supersede$, shutdown$, demand$, scheduler });
    }
    frames$.subscribe({
      next: (frame) => log.push(`${scheduler.now()} ${encodeFrame(frame)}`),
      error: (error: unknown) => log.push(`${scheduler.now()} error ${(error as Error).name}`),
      complete: () => log.push(`${scheduler.now()} end`),
    });
    for (const [at, action] of scenario.script) scheduler.schedule(() => action(io), at);
    flush();
    assert.deepEqual(hub.size, { topics: 0, subscriptions: 0 }, `${flavour}: the hub is left empty`);
  });
  return log;
}

function same(name: string, scenario: Scenario): void {
  test(name, () => {
    const composed = run(scenario, 'composed');
    assert.match(composed.at(-1)!, / (end|error StalledStreamError)$/, 'the scenario ends the stream');
    assert.deepEqual(run(scenario, 'broadcast'), composed, 'fused with Broadcast signals');
    assert.deepEqual(run(scenario, 'subject'), composed, 'fused with Subject signals');
  });
}

const both: ListenFilter = { toolsListChanged: true, resourceSubscriptions: ['file:///a', 'file:///b'] };

same('lifetime cap on a keep-alive tick: the close replaces the tick', {
  options: { keepAliveInterval: 10, listenIdleTimeout: 1000, maxStreamLifetime: 100 },
  filter: both,
  script: [
    [5, (io) => io.hub.notifyResourceUpdated('file:///a')],
    [5, (io) => io.hub.notifyResourceUpdated('file:///c')],
    [20, (io) => io.hub.notifyToolsChanged()],
  ],
});

same('idle close at the first tick after the window, notifications moving it', {
  options: { keepAliveInterval: 10, listenIdleTimeout: 35, maxStreamLifetime: 1000 },
  filter: both,
  script: [
    [12, (io) => io.hub.notifyToolsChanged()],
    [25, (io) => io.hub.notifyResourceUpdated('file:///b')], // the window ends exactly on the tick at 60
  ],
});

same('token expiry between ticks, before the cap, with result-only', {
  options: { keepAliveInterval: 10, listenIdleTimeout: 1000, maxStreamLifetime: 100, closeNotice: 'result-only' },
  filter: { resourcesListChanged: true },
  expiresAt: 47,
  script: [[3, (io) => io.hub.notifyResourcesChanged()]],
});

same('token expiry equal to the lifetime cap closes with max_lifetime', {
  options: { keepAliveInterval: 10, listenIdleTimeout: 1000, maxStreamLifetime: 50 },
  filter: both,
  expiresAt: 50,
  script: [],
});

same('supersede while the sink is busy: held notifications (coalesced, dropped), then closing frames after the drain', {
  options: { keepAliveInterval: 10, listenIdleTimeout: 1000, maxStreamLifetime: 1000, listenMaxQueue: 2 },
  filter: { toolsListChanged: true, resourceSubscriptions: ['file:///a', 'file:///b', 'file:///c'] },
  script: [
    [4, (io) => io.demand(false)],
    [5, (io) => io.hub.notifyResourceUpdated('file:///a')],
    [6, (io) => io.hub.notifyResourceUpdated('file:///a')],
    [7, (io) => io.hub.notifyResourceUpdated('file:///b')],
    [8, (io) => io.hub.notifyResourceUpdated('file:///c')],
    [25, (io) => io.supersede()],
    [31, (io) => io.demand(true)],
  ],
});

same('shutdown of a stalled sink errors one keep-alive interval after the close', {
  options: { keepAliveInterval: 10, listenIdleTimeout: 1000, maxStreamLifetime: 1000 },
  filter: both,
  script: [
    [2, (io) => io.demand(false)],
    [14, (io) => io.shutdown()],
  ],
});

test('a Broadcast hands values to attached targets and subscribers, and completes like a Subject', () => {
  const signal = new Broadcast<number>();
  const seen: string[] = [];
  const target = { onBroadcast: (source: Observable<unknown>, value: unknown) => seen.push(`t${value}${source === signal ? '' : '?'}`) };
  const other = { onBroadcast: (_source: Observable<unknown>, value: unknown) => seen.push(`o${value}`) };
  signal.attach(target);
  const subscription = signal.subscribe((value) => seen.push(`s${value}`));
  signal.next(1);
  signal.attach(other);
  signal.next(2);
  signal.detach(target);
  subscription.unsubscribe();
  signal.next(3);
  signal.complete();
  signal.next(4);
  let completed = false;
  signal.subscribe({ next: () => seen.push('late'), complete: () => (completed = true) });
  signal.attach(target);
  signal.next(5);
  assert.deepEqual(seen, ['t1', 's1', 't2', 'o2', 's2', 'o3']);
  assert.ok(completed, 'a subscriber after completion only completes');
});

test.run();
