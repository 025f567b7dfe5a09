import { asyncScheduler, NEVER, Observable, type SchedulerAction, type SchedulerLike, Subscriber, type Subscription } from 'rxjs';
import { PendingFrames } from '../operators/dropWhenQueueExceeds.js';
import { Broadcast, type BroadcastTarget } from './broadcast.js';
import { requireEpochMs, requireObservable } from './closeTriggers.js';
import { InvalidOptionError } from './errors.js';
import { acknowledgedNotification, filterNames, type ListenFilter } from './filter.js';
import { type CloseReason, controlFrame, type Frame, KEEP_ALIVE, mayReceive, type MessageFrame, type TopicKind } from './frame.js';
import type { Hub } from './hub.js';
import { isJsonRpcId, type JsonRpcId } from './jsonrpc.js';
import { resolveListenOptions, type ListenOptions } from './options.js';
import { StalledStreamError } from './stallGuard.js';
import { channels, type StopReason } from './telemetry.js';

export { StalledStreamError } from './stallGuard.js';

/** Everything one `subscriptions/listen` stream is built from. */
export interface ListenStreamInit {
  /** The listen request's id: tagged verbatim on every message and answered by the closing result. */
  readonly requestId: JsonRpcId;
  /** The honoured, authorized filter (see `parseListenFilter` and `authorizeListenFilter`). */
  readonly filter: ListenFilter;
  /** Where the notifications come from. */
  readonly hub: Hub;
  /** Stream options; missing ones take their defaults (see {@link ListenOptions}). Validated here. */
  readonly options?: Partial<ListenOptions>;
  /** When the caller's credential expires, in milliseconds since the epoch; the stream closes then with `token_expired` if that is before its lifetime cap. */
  readonly expiresAt?: number;
  /** Emits when a newer listen of the same principal displaces this one (reason `superseded`). */
  readonly supersede$?: Observable<unknown>;
  /** Emits when the server shuts down (reason `shutdown`). */
  readonly shutdown$?: Observable<unknown>;
  /** The sink's demand: `false` when it is busy (`write()` returned false), `true` when it can take more (`'drain'`). Default: always ready. */
  readonly demand$?: Observable<boolean>;
  /** Where time comes from; defaults to `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
  /**
   * The read scopes of the stream's principal (`AuthInfo.scopes`): a notification published with a
   * `scope` it lacks is never sent (see `PublishOptions.scope`). Default: none, so only unscoped
   * notifications are sent.
   */
  readonly scopes?: ReadonlySet<string>;
}

/**
 * Builds the whole per-stream `Observable<Frame>` of a modern `subscriptions/listen` (MCP 2026-07-28).
 *
 * Subscribing registers the stream's topics on the hub, then emits the acknowledgment, then the
 * notifications with keep-alive comments between, until a server-side close (lifetime cap, token
 * expiry, idle timeout, supersede, shutdown) emits `notifications/cancelled` and the listen result
 * and completes. Unsubscribing (the client went away) sends nothing and releases everything.
 * Every message carries `_meta["io.modelcontextprotocol/subscriptionId"]`. A slow sink holds at
 * most `listenMaxQueue` notifications (identical ones coalesced), never loses a control frame.
 * Publishes `start`, `stop` and `drop` on {@link channels}.
 *
 * @example
 * const filter = await authorizeListenFilter(parseListenFilter(request.params, { resources: true }), { canRead });
 * listenStream({ requestId: request.id, filter, hub, demand$ })
 *   .subscribe((frame) => res.write(encodeFrame(frame)));
 * @param init what the stream is built from; see {@link ListenStreamInit}.
 * @throws InvalidOptionError synchronously when an option is invalid (DESIGN M13).
 * @see Hub
 * @see encodeFrame
 */
export function listenStream(init: ListenStreamInit): Observable<Frame> {
  const options = resolved(init.options);
  const scheduler = init.scheduler ?? asyncScheduler;
  const { requestId, filter, hub } = init;
  // The same checks, with the same messages and at the same moment, as the operators this
  // pipeline fuses: the triggers' arguments here, the rest when the stream is subscribed.
  if (init.expiresAt !== undefined) requireEpochMs('expiresAt epochMs', init.expiresAt);
  if (init.supersede$ !== undefined) requireObservable('superseded signal$', init.supersede$);
  if (init.shutdown$ !== undefined) requireObservable('shutdown signal$', init.shutdown$);
  const plan: ListenPlan = {
    requestId,
    filter,
    hub,
    direct: directSignals(init),
    options,
    scheduler,
    expiresAt: init.expiresAt ?? Number.POSITIVE_INFINITY,
    supersede$: init.supersede$,
    shutdown$: init.shutdown$,
    demand$: init.demand$,
    scopes: init.scopes,
  };
  return new Observable<Frame>((subscriber) => {
    if (!isJsonRpcId(requestId)) {
      throw new InvalidOptionError('closeWhen notice.requestId', 'a string or a finite number (the listen request id)', requestId);
    }
    forEachTopic(filter, (_topic, key) => {
      if (key !== undefined && typeof key !== 'string') throw new TypeError(`a topic key must be a string, got ${typeof key}`);
    });
    new ListenSubscriber(subscriber, plan).start();
  });
}

// An endpoint passes the same frozen options to every stream: validated once, and shared by the
// streams instead of a copy each. Only frozen objects are remembered (they cannot change).
const resolvedOptions = new WeakMap<object, Readonly<ListenOptions>>();
let defaultOptions: Readonly<ListenOptions> | undefined;

function resolved(options: Partial<ListenOptions> | undefined): Readonly<ListenOptions> {
  if (options === undefined) return (defaultOptions ??= resolveListenOptions());
  if (!Object.isFrozen(options)) return resolveListenOptions(options);
  let result = resolvedOptions.get(options);
  if (result === undefined) resolvedOptions.set(options, (result = resolveListenOptions(options)));
  return result;
}

/** What every subscription of one `listenStream` shares. */
interface ListenPlan {
  readonly requestId: JsonRpcId;
  readonly filter: ListenFilter;
  readonly hub: Hub;
  /** Bit `1 << kind` set: that signal is a {@link Broadcast} to attach to directly (see `link`). */
  readonly direct: number;
  readonly options: Readonly<ListenOptions>;
  readonly scheduler: SchedulerLike;
  /** Token expiry in epoch milliseconds; `Infinity` for none. */
  readonly expiresAt: number;
  readonly supersede$: Observable<unknown> | undefined;
  readonly shutdown$: Observable<unknown> | undefined;
  readonly demand$: Observable<boolean> | undefined;
  readonly scopes: ReadonlySet<string> | undefined;
}

// What the stream's one scheduled action is waiting for.
const TICK = 0;
const DEADLINE = 1;
const STALL = 2;
type Wake = typeof TICK | typeof DEADLINE | typeof STALL;

/**
 * The whole listen pipeline of one stream as one Subscriber: the composition
 * `notifications → ackThenNotify → keepAlive → closeWhen(lifetimeCap, idleTimeout, expiresAt,
 * superseded, shutdown) → tagSubscriptionId → dropWhenQueueExceeds → failWhenStalled`, with the
 * same frames in the same order, fused. Registered directly on the hub's topics, it does a few
 * field updates per notification instead of a chain of operator subscribers, and it holds one
 * scheduled action instead of a timer chain per trigger: the keep-alive ticks (where the idle
 * check runs), the lifetime and token deadlines and, once closed, the stall grace period all
 * come from that one action on the injected scheduler. Frames it emits are already tagged with
 * the subscription id. A child of the downstream subscriber: unsubscribing releases everything.
 */
class ListenSubscriber extends Subscriber<MessageFrame> implements BroadcastTarget {
  private readonly plan: ListenPlan;
  private readonly opened: number;
  private readonly lifetimeDeadline: number;
  private lastActivity: number;
  private tickDue: number;
  private wake: Wake = TICK;
  private clock: Subscription | undefined;
  private supersede: Subscription | undefined;
  private shutdown: Subscription | undefined;
  private demand: Subscription | undefined;
  private attached = false;
  private ready = true;
  private flushing = false;
  /** Set once a close reason is decided (closing frames emitted or held). */
  private closing = false;
  private reason: StopReason = 'client_closed';
  private pending: PendingFrames | undefined;

  constructor(destination: Subscriber<Frame>, plan: ListenPlan) {
    super(destination);
    this.plan = plan;
    const now = plan.scheduler.now();
    this.opened = now;
    this.lastActivity = now;
    this.lifetimeDeadline = now + plan.options.maxStreamLifetime;
    this.tickDue = now + plan.options.keepAliveInterval;
  }

  start(): void {
    const { plan } = this;
    if (channels.start.hasSubscribers) {
      channels.start.publish({
        systemTime: this.opened,
        resourceSubscriptions: plan.filter.resourceSubscriptions?.length ?? 0,
        filters: filterNames(plan.filter),
      });
    }
    // The order of the composition: the sink's demand first (a synchronous initial value applies
    // to the ack), then the close triggers, then the topics, then the ack.
    if (plan.demand$ !== undefined) {
      this.demand = this.link(plan.demand$, DEMAND);
      if (this.closed) return;
    }
    this.schedule();
    if (plan.supersede$ !== undefined) {
      this.supersede = this.link(plan.supersede$, SUPERSEDED);
      if (this.closing || this.closed) return;
    }
    if (plan.shutdown$ !== undefined) {
      this.shutdown = this.link(plan.shutdown$, SHUTDOWN);
      if (this.closing || this.closed) return;
    }
    forEachTopic(plan.filter, (topic, key) => plan.hub.attach(topic, key, this));
    this.attached = true;
    // M6: the topics are registered; only now may the ack go out.
    this.deliver(tag(controlFrame(acknowledgedNotification(plan.filter)), plan.requestId));
  }

  /** A notification from the hub. */
  protected override _next(frame: MessageFrame): void {
    if (this.closing) return;
    // A scoped publish reaches only principals that may read what changed.
    if (frame.scope !== undefined && !mayReceive(frame, this.plan.scopes)) return;
    if (frame.priority === 'notification') this.lastActivity = this.plan.scheduler.now();
    if (this.ready && (this.pending === undefined || this.pending.length === 0)) {
      this.destination.next(tagNotification(frame, this.plan.requestId));
    } else {
      this.hold(frame);
    }
  }

  /** Emits `frame` (already tagged) now, or holds it for the busy sink. */
  private deliver(frame: Frame): void {
    if (this.closed) return;
    if (this.ready && (this.pending === undefined || this.pending.length === 0)) this.destination.next(frame);
    else this.hold(frame);
  }

  private hold(frame: Frame): void {
    const { options, requestId } = this.plan;
    const pending = (this.pending ??= new PendingFrames(options.listenMaxQueue, onDrop, options.listenMaxQueueBytes));
    try {
      // Tagged before it is measured: the budget counts the bytes that will be written.
      pending.offer(frame.type === 'message' && frame.subscriptionId === undefined ? tagNotification(frame, requestId) : frame);
    } catch (error) {
      this.fail(error);
    }
  }

  /** Follows a signal: attached directly to a {@link Broadcast}, else subscribed. */
  private link(source: Observable<unknown>, kind: SignalKind): Subscription | undefined {
    if (source instanceof Broadcast && (this.plan.direct & (1 << kind)) !== 0) {
      source.attach(this);
      return undefined;
    }
    return source.subscribe(new Signal(this, kind));
  }

  private unlink(source: Observable<unknown> | undefined, subscription: Subscription | undefined): void {
    subscription?.unsubscribe();
    if (source instanceof Broadcast) source.detach(this);
  }

  /** A value of a signal this stream is attached to. */
  onBroadcast(source: Observable<unknown>, value: unknown): void {
    const { plan } = this;
    this.onSignal(source === plan.demand$ ? DEMAND : source === plan.supersede$ ? SUPERSEDED : SHUTDOWN, value);
  }

  /** A value of the sink's demand or of a close signal. */
  onSignal(kind: SignalKind, value: unknown): void {
    if (kind === DEMAND) {
      this.ready = value as boolean;
      if (this.ready) this.flush();
    } else {
      this.close(kind === SUPERSEDED ? 'superseded' : 'shutdown');
    }
  }

  /** An error of the sink's demand (the stream errors) or of a close signal (likewise, reason `error`). */
  onSignalError(kind: SignalKind, error: unknown): void {
    if (kind !== DEMAND && !this.closing) this.reason = 'error';
    this.fail(error);
  }

  private flush(): void {
    // A sink that drains synchronously calls back into here from the `next` below: the loop
    // that is already running picks the new demand up, so the stack does not grow.
    const pending = this.pending;
    if (this.flushing || pending === undefined) return;
    this.flushing = true;
    try {
      while (this.ready && pending.length > 0 && !this.closed) this.destination.next(pending.shift());
    } finally {
      this.flushing = false;
    }
    if (this.closing && pending.length === 0 && !this.closed) this.complete();
  }

  /** Ends the stream gracefully: closing frames, then completion once they are written. */
  private close(reason: CloseReason): void {
    if (this.closing || this.closed) return;
    this.closing = true;
    this.reason = reason;
    this.detach();
    const { requestId, options } = this.plan;
    if (options.closeNotice !== 'result-only') {
      this.deliver(tag(controlFrame({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId, reason } }, reason), requestId));
    }
    this.deliver(tag(controlFrame({ jsonrpc: '2.0', id: requestId, result: { resultType: 'complete' } }, reason), requestId));
    if (this.closed) return;
    if (this.pending === undefined || this.pending.length === 0) {
      this.complete();
      return;
    }
    // A closed stream whose client never reads would otherwise hold its slot forever, waiting to
    // write its closing frames: after one keep-alive interval it errors, and the adapter drops
    // the connection.
    this.clock?.unsubscribe();
    this.wake = STALL;
    this.clock = this.plan.scheduler.schedule(clockWork, this.plan.options.keepAliveInterval, this);
  }

  private fail(error: unknown): void {
    if (!this.closed) this.error(error);
  }

  /** Plans the next wake: the next keep-alive tick, or a deadline when it comes first (or at the same time). */
  private schedule(action?: SchedulerAction<ListenSubscriber>): void {
    const { scheduler } = this.plan;
    const deadline = Math.min(this.lifetimeDeadline, this.plan.expiresAt);
    const now = scheduler.now();
    let delay: number;
    // On a tie the deadline wins: the close replaces the tick (239 keep-alives in an hour, not 240).
    if (deadline <= this.tickDue) {
      this.wake = DEADLINE;
      delay = Math.max(0, deadline - now);
    } else {
      this.wake = TICK;
      delay = Math.max(0, this.tickDue - now);
    }
    // Rescheduling the running action with the same delay keeps its interval timer.
    this.clock = action !== undefined ? action.schedule(this, delay) : scheduler.schedule(clockWork, delay, this);
  }

  /** The scheduled action ran. */
  onClock(action: SchedulerAction<ListenSubscriber>): void {
    if (this.closed) return;
    if (this.wake === STALL) {
      this.fail(new StalledStreamError({ graceMs: this.plan.options.keepAliveInterval }));
      return;
    }
    if (this.closing) return;
    const now = this.plan.scheduler.now();
    // The order of the composed triggers on a tie: lifetime, token expiry, then the tick.
    if (now >= this.lifetimeDeadline) return this.close('max_lifetime');
    if (now >= this.plan.expiresAt) return this.close('token_expired');
    if (this.wake === TICK) {
      // M7: the idle check runs on each keep-alive tick; the close replaces that tick.
      if (now - this.lastActivity >= this.plan.options.listenIdleTimeout) return this.close('idle_timeout');
      this.tickDue = now + this.plan.options.keepAliveInterval;
      this.deliver(KEEP_ALIVE);
      if (this.closed || this.closing) return;
    }
    this.schedule(action);
  }

  /** Leaves the hub, the timers and the signals (the sink's demand stays until the end). */
  private detach(): void {
    if (this.attached) {
      this.attached = false;
      const { hub } = this.plan;
      forEachTopic(this.plan.filter, (topic, key) => hub.detach(topic, key, this));
    }
    this.clock?.unsubscribe();
    this.clock = undefined;
    this.unlink(this.plan.supersede$, this.supersede);
    this.supersede = undefined;
    this.unlink(this.plan.shutdown$, this.shutdown);
    this.shutdown = undefined;
  }

  override unsubscribe(): void {
    if (this.closed) return;
    super.unsubscribe();
    this.detach();
    this.unlink(this.plan.demand$, this.demand);
    this.pending?.clear();
    if (channels.stop.hasSubscribers) {
      const { scheduler, filter } = this.plan;
      channels.stop.publish({ duration: scheduler.now() - this.opened, filters: filterNames(filter), reason: this.reason });
    }
  }
}

const DEMAND = 0;
const SUPERSEDED = 1;
const SHUTDOWN = 2;
type SignalKind = typeof DEMAND | typeof SUPERSEDED | typeof SHUTDOWN;

// A bare Subscriber rather than an observer object: subscribing it allocates no SafeSubscriber,
// no observer and no closures, which matters times 10 000 idle streams.
class Signal extends Subscriber<unknown> {
  constructor(
    private readonly listen: ListenSubscriber,
    private readonly kind: SignalKind,
  ) {
    super();
  }

  protected override _next(value: unknown): void {
    this.listen.onSignal(this.kind, value);
  }

  protected override _error(error: unknown): void {
    this.unsubscribe();
    this.listen.onSignalError(this.kind, error);
  }

  protected override _complete(): void {
    // The demand keeps its last value; a signal that completes closes nothing.
    this.unsubscribe();
  }
}

function clockWork(this: SchedulerAction<ListenSubscriber>, listen?: ListenSubscriber): void {
  listen!.onClock(this);
}

function onDrop(frame: MessageFrame, queueLength: number, queueBytes: number): void {
  if (channels.drop.hasSubscribers) channels.drop.publish({ queueLength, queueBytes, topic: frame.topic ?? 'resource' });
}

/** The frame with the subscription id set (what `tagSubscriptionId` does). */
function tag(frame: MessageFrame, id: JsonRpcId): MessageFrame {
  return { ...frame, subscriptionId: id };
}

/**
 * `tag` for a hub notification, which always has exactly these members in this order: the same
 * object as the spread, built by a literal of one fixed shape, several times faster per frame.
 */
function tagNotification(frame: MessageFrame, id: JsonRpcId): MessageFrame {
  return {
    type: 'message',
    message: frame.message,
    priority: frame.priority,
    topic: frame.topic,
    coalesceKey: frame.coalesceKey,
    encoded: frame.encoded,
    subscriptionId: id,
  };
}

/** Calls `fn` with each hub topic a filter names (the kind, and the URI or task id). */
function forEachTopic(filter: ListenFilter, fn: (topic: TopicKind, key: string | undefined) => void): void {
  if (filter.toolsListChanged) fn('tools', undefined);
  if (filter.promptsListChanged) fn('prompts', undefined);
  if (filter.resourcesListChanged) fn('resources', undefined);
  if (filter.resourceSubscriptions !== undefined) for (const uri of filter.resourceSubscriptions) fn('resource', uri);
  if (filter.taskIds !== undefined) for (const taskId of filter.taskIds) fn('task', taskId);
}

/** Which signals a stream attaches to directly: distinct {@link Broadcast}s (an object passed twice is subscribed). */
function directSignals(init: ListenStreamInit): number {
  const { demand$, supersede$, shutdown$ } = init;
  let direct = 0;
  if (demand$ instanceof Broadcast) direct |= 1 << DEMAND;
  if (supersede$ instanceof Broadcast && supersede$ !== demand$) direct |= 1 << SUPERSEDED;
  if (shutdown$ instanceof Broadcast && shutdown$ !== demand$ && shutdown$ !== supersede$) direct |= 1 << SHUTDOWN;
  return direct;
}

/**
 * The merged notifications of every topic a filter names, straight from the hub.
 * @param hub where the notifications come from.
 * @param filter which topics (see `parseListenFilter`).
 * @param scopes the receiver's read scopes: notifications published with a `scope` outside them
 *   are left out. Default: none (only unscoped notifications).
 */
export function notifications(hub: Hub, filter: ListenFilter, scopes?: ReadonlySet<string>): Observable<MessageFrame> {
  const merged = mergedTopics(hub, filter);
  return new Observable<MessageFrame>((subscriber) =>
    merged.subscribe(new ScopeSubscriber(subscriber, scopes)),
  );
}

/** Passes the notifications a principal with `scopes` may receive (see `mayReceive`). */
class ScopeSubscriber extends Subscriber<MessageFrame> {
  constructor(
    destination: Subscriber<MessageFrame>,
    private readonly scopes: ReadonlySet<string> | undefined,
  ) {
    super(destination);
  }

  protected override _next(frame: MessageFrame): void {
    if (frame.scope === undefined || mayReceive(frame, this.scopes)) this.destination.next(frame);
  }
}

function mergedTopics(hub: Hub, filter: ListenFilter): Observable<MessageFrame> {
  const sources: Observable<MessageFrame>[] = [];
  if (filter.toolsListChanged) sources.push(hub.topic({ topic: 'tools' }));
  if (filter.promptsListChanged) sources.push(hub.topic({ topic: 'prompts' }));
  if (filter.resourcesListChanged) sources.push(hub.topic({ topic: 'resources' }));
  for (const uri of filter.resourceSubscriptions ?? []) sources.push(hub.topic({ topic: 'resource', uri }));
  for (const taskId of filter.taskIds ?? []) sources.push(hub.topic({ topic: 'task', taskId }));
  // An empty filter still gets a stream (ack, keep-alives, closes): it just hears nothing.
  if (sources.length === 0) return NEVER;
  if (sources.length === 1) return sources[0]!;
  // Hub topics never complete nor error: handing the one subscriber to each of them merges them
  // without a merge layer on the per-frame path (and unsubscribing stops them all).
  return new Observable<MessageFrame>((subscriber) => {
    for (const source of sources) {
      if (subscriber.closed) return;
      source.subscribe(subscriber);
    }
  });
}
