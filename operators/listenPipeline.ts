import { asyncScheduler, isObservable, Observable, type OperatorFunction, type SchedulerLike } from 'rxjs';
import { Broadcast } from '../lib/broadcast.js';
import { Clock } from '../lib/clock.js';
import { InvalidOptionError } from '../lib/errors.js';
import { acknowledgedNotification, filterNames, type ListenFilter } from '../lib/filter.js';
import { controlFrame, type CloseReason, type Frame, type MessageFrame } from '../lib/frame.js';
import type { Hub } from '../lib/hub.js';
import { isJsonRpcId, type JsonRpcId } from '../lib/jsonrpc.js';
import { notifications } from '../lib/notifications.js';
import { resolveListenOptions, type ListenOptions } from '../lib/options.js';
import { channels, type StopReason } from '../lib/telemetry.js';
import { AckStage } from './ackThenNotify.js';
import { CloseStage, directSignals, requireEpochMs, requireObservable, type ClosePlan, type CloseTrigger, type TriggerSpec } from './closeTriggers.js';
import { listenClosingFrames } from './closeWhen.js';
import { QueueStage, type DropHandler, type QueuePlan } from './dropWhenQueueExceeds.js';
import { KeepAliveStage } from './keepAlive.js';
import { Stage, stageOperator } from './stage.js';
import { TagStage } from './tagSubscriptionId.js';

/** What the stream of one `subscriptions/listen` is assembled from (besides its notifications). */
export interface ListenPipelineInit {
  /** The listen request's id: tagged verbatim on every message and answered by the closing result. */
  readonly requestId: JsonRpcId;
  /** The honoured, authorized filter (see `parseListenFilter` and `authorizeListenFilter`): what the ack says. */
  readonly filter: ListenFilter;
  /** Stream options; missing ones take their defaults (see {@link ListenOptions}). Validated here. */
  readonly options?: Partial<ListenOptions>;
  /** When the caller's credential expires, in milliseconds since the epoch; the stream closes then with `token_expired` if that is before its lifetime cap. Default: never. */
  readonly expiresAt?: number;
  /** Emits when a newer listen of the same principal displaces this one (reason `superseded`). */
  readonly supersede$?: Observable<unknown>;
  /** Emits when the server shuts down (reason `shutdown`). */
  readonly shutdown$?: Observable<unknown>;
  /** The sink's demand: `false` when it is busy (`write()` returned false), `true` when it can take more (`'drain'`). Default: always ready. */
  readonly demand$?: Observable<boolean>;
  /** Where time comes from; defaults to `asyncScheduler`. Every stream on one scheduler shares one timer. */
  readonly scheduler?: SchedulerLike;
}

/** Everything one {@link listenStream} is built from. */
export interface ListenStreamInit extends ListenPipelineInit {
  /** Where the notifications come from. */
  readonly hub: Hub;
  /**
   * The read scopes of the stream's principal (`AuthInfo.scopes`): a notification published with a
   * `scope` it lacks is never sent (see `PublishOptions.scope`). Default: none, so only unscoped
   * notifications are sent.
   */
  readonly scopes?: ReadonlySet<string>;
}

/**
 * The per-stream pipeline of a modern `subscriptions/listen` (MCP 2026-07-28) as one operator:
 *
 * ```ts
 * ackThenNotify(ack),
 * keepAlive(keepAliveInterval, scheduler),
 * closeWhen([lifetimeCap(maxStreamLifetime), expiresAt(expiresAt), idleTimeout(listenIdleTimeout),
 *            superseded(supersede$), shutdown(shutdown$)], { requestId, mode: closeNotice }),
 * tagSubscriptionId(requestId),
 * dropWhenQueueExceeds({ notifications: listenMaxQueue, bytes: listenMaxQueueBytes }, demand$, onDrop,
 *                      { stallGraceMs: 0 }),
 * ```
 *
 * fused: the same operators' stages run under one subscriber (frames pass from one to the next by
 * a direct call), and their time comes from the scheduler's one shared {@link Clock}. Piping those
 * operators one by one gives the same frames at the same times. It also publishes `start`, `stop`
 * (with the close reason) and `drop` on {@link channels}. This is what the endpoint serves.
 *
 * Apply it to the notifications of the stream's topics (see {@link notifications}): subscribing
 * registers the topics, then the ack goes out, then the notifications with keep-alives between,
 * until a server-side close (lifetime cap, token expiry, idle timeout, supersede, shutdown) sends
 * `notifications/cancelled` and the listen result and completes. Unsubscribing (the client went
 * away) sends nothing and releases everything. A stream that closes while its client is not
 * reading (frames are queued for it) errors at once with `StalledStreamError`: its closing frames
 * are dropped and the adapter drops the connection, so a closed stream never holds its slot.
 *
 * @example
 * const demand$ = new BehaviorSubject(true);
 * notifications(hub, filter, auth.scopes)
 *   .pipe(listenPipeline({ requestId: request.id, filter, demand$, expiresAt: auth.expiresAt }))
 *   .subscribe((frame) => { if (!res.write(encodeFrame(frame))) demand$.next(false); });
 * res.on('drain', () => demand$.next(true));
 * @param init the request id, filter, options and signals; see {@link ListenPipelineInit}.
 * @throws InvalidOptionError when an option, `requestId`, `expiresAt` or a signal is invalid (DESIGN M13).
 */
export function listenPipeline(init: ListenPipelineInit): OperatorFunction<MessageFrame, Frame> {
  const plan = listenPlan(init);
  return stageOperator(() => listenStages(plan));
}

/**
 * The whole per-stream `Observable<Frame>` of a modern listen: `notifications(hub, filter, scopes)
 * .pipe(listenPipeline(init))`. See {@link listenPipeline}.
 *
 * @example
 * const filter = await authorizeListenFilter(parseListenFilter(request.params, { resources: true }), { canRead });
 * listenStream({ requestId: request.id, filter, hub, demand$ })
 *   .subscribe((frame) => res.write(encodeFrame(frame)));
 * @param init what the stream is built from; see {@link ListenStreamInit}.
 * @throws InvalidOptionError synchronously when an option is invalid (DESIGN M13).
 */
export function listenStream(init: ListenStreamInit): Observable<Frame> {
  // Piped onto `notifications`, the stages fuse at assembly and the first one is registered on the
  // hub's topics directly: no subscriber in between.
  return notifications(init.hub, init.filter, init.scopes).pipe(listenPipeline(init));
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

/** What the streams of one clock and one set of options share: their lifetime and idle triggers. */
interface Shared {
  readonly options: Readonly<ListenOptions>;
  readonly clock: Clock;
  readonly lifetime: readonly (TriggerSpec & { kind: 'deadline' })[];
  readonly idle: TriggerSpec & { kind: 'idle' };
}

const sharedByClock = new WeakMap<Clock, WeakMap<object, Shared>>();

function sharedFor(options: Readonly<ListenOptions>, clock: Clock): Shared {
  let byOptions = sharedByClock.get(clock);
  if (byOptions === undefined) sharedByClock.set(clock, (byOptions = new WeakMap()));
  let shared = byOptions.get(options);
  if (shared === undefined) {
    shared = Object.freeze({
      options,
      clock,
      lifetime: Object.freeze([{ kind: 'deadline' as const, reason: 'max_lifetime' as const, clock, after: options.maxStreamLifetime }]),
      idle: { kind: 'idle' as const, ms: options.listenIdleTimeout, clock },
    });
    byOptions.set(options, shared);
  }
  return shared;
}

// The order of the composition: superseded, then shutdown.
const SIGNAL_REASONS: readonly CloseReason[] = Object.freeze(['superseded', 'shutdown']);
const SHUTDOWN_ONLY: readonly CloseReason[] = Object.freeze(['shutdown']);
const NO_SIGNALS: readonly Observable<unknown>[] = Object.freeze([]);
const NO_TRIGGERS: readonly CloseTrigger[] = Object.freeze([]);

/**
 * What every stage of one listen stream is built from, in one object: it is the close plan and
 * the queue plan of its stages as well (a stream holds one plan, not three).
 */
class ListenPlan implements ClosePlan, QueuePlan {
  readonly ack: MessageFrame;
  readonly deadlines: readonly (TriggerSpec & { kind: 'deadline' })[];
  readonly signals: readonly Observable<unknown>[];
  readonly signalReasons: readonly CloseReason[];
  readonly direct: number;
  readonly demand$: Observable<boolean> | undefined;
  readonly directDemand: boolean;

  constructor(
    private readonly shared: Shared,
    readonly requestId: JsonRpcId,
    readonly filter: ListenFilter,
    init: ListenPipelineInit,
  ) {
    this.ack = controlFrame(acknowledgedNotification(filter));
    // The order of the composition: lifetime, token expiry (a tie closes with the first), idle, signals.
    this.deadlines =
      init.expiresAt === undefined
        ? shared.lifetime
        : [shared.lifetime[0]!, { kind: 'deadline', reason: 'token_expired', clock: shared.clock, at: init.expiresAt }];
    const { supersede$, shutdown$ } = init;
    this.signals = supersede$ !== undefined ? (shutdown$ !== undefined ? [supersede$, shutdown$] : [supersede$]) : shutdown$ !== undefined ? [shutdown$] : NO_SIGNALS;
    this.signalReasons = supersede$ !== undefined ? SIGNAL_REASONS : SHUTDOWN_ONLY;
    this.direct = directSignals(this.signals, init.demand$);
    this.demand$ = init.demand$;
    this.directDemand = init.demand$ instanceof Broadcast;
  }

  get clock(): Clock {
    return this.shared.clock;
  }
  get keepAliveInterval(): number {
    return this.shared.options.keepAliveInterval;
  }
  get idle(): TriggerSpec & { kind: 'idle' } {
    return this.shared.idle;
  }
  get custom(): readonly CloseTrigger[] {
    return NO_TRIGGERS;
  }
  get notifications(): number {
    return this.shared.options.listenMaxQueue;
  }
  get bytes(): number {
    return this.shared.options.listenMaxQueueBytes;
  }
  get onDrop(): DropHandler {
    return onDrop;
  }
  /** No grace: a stream that closes while its client is not reading ends at once (see `dropWhenQueueExceeds`). */
  get stallGraceMs(): number {
    return 0;
  }

  closing(reason: CloseReason): readonly Frame[] {
    return listenClosingFrames(this.requestId, this.shared.options.closeNotice, reason);
  }
}

function listenPlan(init: ListenPipelineInit): ListenPlan {
  const options = resolved(init.options);
  const { requestId, filter } = init;
  if (!isJsonRpcId(requestId)) {
    throw new InvalidOptionError('closeWhen notice.requestId', 'a string or a finite number (the listen request id)', requestId);
  }
  if (init.expiresAt !== undefined) requireEpochMs('expiresAt epochMs', init.expiresAt);
  if (init.supersede$ !== undefined) requireObservable('superseded signal$', init.supersede$);
  if (init.shutdown$ !== undefined) requireObservable('shutdown signal$', init.shutdown$);
  if (init.demand$ !== undefined && !isObservable(init.demand$)) {
    throw new InvalidOptionError('demand$', 'an Observable of booleans', init.demand$);
  }
  return new ListenPlan(sharedFor(options, Clock.of(init.scheduler ?? asyncScheduler)), requestId, filter, init);
}

function listenStages(plan: ListenPlan): Stage<any, any>[] {
  const close = new CloseStage(plan);
  return [
    new AckStage(plan.ack),
    new KeepAliveStage(plan.keepAliveInterval, plan.clock),
    close,
    new TagStage(plan.requestId),
    new QueueStage(plan),
    new TelemetryStage(plan, close),
  ];
}

/** Publishes the stream's `start` when it opens and its `stop` (with the reason) when it ends. */
class TelemetryStage extends Stage<Frame> {
  private openedAt = 0;

  constructor(
    private readonly plan: ListenPlan,
    private readonly close: CloseStage,
  ) {
    super();
  }

  override open(): void {
    const { clock } = this.plan;
    this.openedAt = clock.elapsed();
    if (channels.start.hasSubscribers) {
      const { filter } = this.plan;
      channels.start.publish({ systemTime: this.openedAt + clock.origin, resourceSubscriptions: filter.resourceSubscriptions?.length ?? 0, filters: filterNames(filter) });
    }
  }

  push(frame: Frame): void {
    this.out.push(frame);
  }

  override dispose(): void {
    if (!channels.stop.hasSubscribers) return;
    const reason: StopReason = this.close.reason ?? (this.close.failed ? 'error' : 'client_closed');
    channels.stop.publish({ duration: this.plan.clock.elapsed() - this.openedAt, filters: filterNames(this.plan.filter), reason });
  }
}

function onDrop(frame: MessageFrame, queueLength: number, queueBytes: number): void {
  if (channels.drop.hasSubscribers) channels.drop.publish({ queueLength, queueBytes, topic: frame.topic ?? 'resource' });
}
