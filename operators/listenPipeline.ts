import { from, type Observable, type OperatorFunction, type SchedulerLike } from 'rxjs';
import { Clock } from '../lib/clock.js';
import { acknowledgedNotification, filterNames, type FilterName, type ListenFilter } from '../lib/filter.js';
import { controlFrame, type Frame, type MessageFrame } from '../lib/frame.js';
import type { Hub } from '../lib/hub.js';
import type { JsonRpcId } from '../lib/jsonrpc.js';
import { notifications } from '../lib/notifications.js';
import { resolveListenOptions, type ListenOptions, type ListenOptionsInput } from '../lib/options.js';
import { epochMs, object, observable, requestId } from '../lib/validate.js';
import { AckStage } from './ackThenNotify.js';
import { CloseStage, closePlan, listenClosingFrames, type ClosePlan, type TriggerSpec } from './closeWhen.js';
import { QueueStage, queuePlan, type QueuePlan, type StalledEnd } from './dropWhenQueueExceeds.js';
import { KeepAliveStage, keepAlivePlan, type KeepAlivePlan } from './keepAlive.js';
import { type Stage, stageOperator } from './stage.js';
import { reportDrop, type StreamEnd, type StreamStatus, type StreamWatcher, TelemetryStage } from './streamTelemetry.js';
import { TagStage } from './tagSubscriptionId.js';

/** What the stream of one `subscriptions/listen` is assembled from (besides its notifications). */
export interface ListenPipelineInit {
  /** The listen request's id: tagged verbatim on every message and answered by the closing result. */
  readonly requestId: JsonRpcId;
  /** The honoured, authorized filter (see `parseListenFilter` and `authorizeListenFilter`): what the ack says. */
  readonly filter: ListenFilter;
  /** Stream options; missing ones take their defaults (see {@link ListenOptions}). Validated here. */
  readonly options?: ListenOptionsInput;
  /** When the caller's credential expires, in milliseconds since the epoch; the stream closes then with `token_expired` if that is before its lifetime cap. Default: never. */
  readonly expiresAt?: number;
  /**
   * Emits when a newer listen of the same principal displaces this one (reason `superseded`); a
   * value that is a close reason closes with that reason instead (`'revoked'`: the application
   * ended the principal's streams, see `PrincipalCap.revoke`).
   */
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
 * dropWhenQueueExceeds({ notifications: maxStreamQueue, bytes: maxStreamQueueBytes }, demand$, onDrop,
 *                      { stallGraceMs: 0 }),
 * ```
 *
 * fused: the same operators' stages run under one subscriber (frames pass from one to the next by
 * a direct call), and their time comes from the scheduler's one shared {@link Clock}. Piping those
 * operators one by one gives the same frames at the same times. It also publishes `start`, `stop`
 * (with the close reason) and `drop` on `channels` (its last stage, {@link TelemetryStage}). This is what the endpoint serves.
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
 * @throws InvalidOptionError naming it when an option, `requestId`, `expiresAt`, `supersede$`,
 *   `shutdown$` or `demand$` is invalid (DESIGN M13).
 */
export function listenPipeline(init: ListenPipelineInit): OperatorFunction<MessageFrame, Frame> {
  const stream = listenValues(object<ListenPipelineInit>('listenPipeline init', init, 'an object like { requestId, filter }'));
  const plans = plansOf(init.options, stream.shutdown$, init.scheduler);
  return stageOperator(() => listenStages(plans, stream));
}

/**
 * The plans of a {@link listenPipeline} call. An endpoint makes its plans once ({@link listenPlans});
 * a caller of the public operator that passes the same frozen `options` object (or none), the same
 * `shutdown$` and the same scheduler to every stream gets them made once too, and its streams share
 * them: the plans of the latest such triple are kept on the options object. Anything else gets
 * plans of its own (options that are not frozen may change between two calls).
 */
function plansOf(options: ListenOptionsInput | undefined, shutdown$: Observable<unknown> | undefined, scheduler: SchedulerLike | undefined): ListenPlans {
  const key = options ?? NO_OPTIONS;
  if (!Object.isFrozen(key)) return listenPlans(resolveListenOptions(options), shutdown$, scheduler);
  const kept = keptPlans.get(key);
  if (kept !== undefined && kept.shutdown$ === shutdown$ && kept.scheduler === scheduler) return kept.plans;
  const plans = listenPlans(resolveListenOptions(options), shutdown$, scheduler);
  keptPlans.set(key, { shutdown$, scheduler, plans });
  return plans;
}

const NO_OPTIONS: ListenOptionsInput = Object.freeze({});
const keptPlans = new WeakMap<object, { readonly shutdown$: Observable<unknown> | undefined; readonly scheduler: SchedulerLike | undefined; readonly plans: ListenPlans }>();

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
  const stream = listenValues(object<ListenStreamInit>('listenStream init', init, 'an object like { requestId, filter, hub }'));
  return listenStreamOf(init.hub, plansOf(init.options, stream.shutdown$, init.scheduler), stream, init.scopes);
}

/**
 * What the listen streams of one endpoint share: each operator's own plan, made once from the
 * endpoint's resolved options (its streams hold these, not a copy each).
 * @internal
 */
export interface ListenPlans {
  readonly keepAlive: KeepAlivePlan;
  /** The lifetime cap, the idle timeout and the shutdown signal; how a close is told (`closeNotice`). */
  readonly close: ClosePlan;
  /** `maxStreamQueue`, `maxStreamQueueBytes`, no stall grace (a stream that closes while its client is not reading ends at once). */
  readonly queue: QueuePlan;
  /** The clock of every stream: their times for telemetry. */
  readonly clock: Clock;
}

/**
 * The {@link ListenPlans} of valid, complete options (see `resolveListenOptions`): the plan
 * functions of `keepAlive`, `closeWhen` and `dropWhenQueueExceeds`, called once.
 * @param shutdown$ closes every stream of the plans with reason `shutdown`.
 * @param stalledEnd what a stream that closes while its sink is not reading does (see
 *   `DropOptions.stalledEnd`): `'error'` (a connection of its own, dropped with its closing frames)
 *   or `'control'` (a message channel that other streams share: its closing frames go into the
 *   channel's buffer, its notifications are discarded). Either way it gives its slot back at once.
 * @internal
 */
export function listenPlans(
  options: Readonly<ListenOptions>,
  shutdown$: Observable<unknown> | undefined,
  scheduler?: SchedulerLike,
  stalledEnd: StalledEnd = 'error',
): ListenPlans {
  const clock = Clock.of(scheduler);
  // The order of the composition: lifetime, (the stream's token expiry), idle, (the stream's supersede), shutdown.
  const triggers: TriggerSpec[] = [
    { kind: 'deadline', reason: 'max_lifetime', clock, after: options.maxStreamLifetime },
    { kind: 'idle', ms: options.listenIdleTimeout, clock },
  ];
  if (shutdown$ !== undefined) triggers.push({ kind: 'signal', reason: 'shutdown', signal$: shutdown$ });
  return {
    keepAlive: keepAlivePlan(options.keepAliveInterval, scheduler),
    close: closePlan(triggers, options.closeNotice, { clock }),
    queue: queuePlan({ maxStreamQueue: options.maxStreamQueue, maxStreamQueueBytes: options.maxStreamQueueBytes, onDrop: reportDrop, stallGraceMs: 0, stalledEnd }),
    clock,
  };
}

/** What is one listen stream's own: its request, its filter, its credential's expiry, its signals. @internal */
export interface ListenValues {
  readonly requestId: JsonRpcId;
  readonly filter: ListenFilter;
  readonly expiresAt?: number | undefined;
  readonly supersede$?: Observable<unknown> | undefined;
  readonly shutdown$?: Observable<unknown> | undefined;
  readonly demand$?: Observable<boolean> | undefined;
  /** Who keeps the stream for inspection (the endpoint's registry of open streams). */
  readonly watcher?: StreamWatcher<ListenStatus> | undefined;
}

/**
 * What an open listen stream tells about itself: its telemetry stage, which holds its filter besides
 * what every stream tells ({@link StreamStatus}: when it opened, its close stage and its queue). The
 * endpoint reads it for its snapshot and closes the stream through it. @internal
 */
export interface ListenStatus extends StreamStatus {
  readonly filter: ListenFilter;
}

/** The per-stream values of `init`, checked under their own names. */
function listenValues(init: ListenPipelineInit): ListenValues {
  return {
    requestId: requestId('requestId', init.requestId),
    filter: init.filter,
    expiresAt: init.expiresAt === undefined ? undefined : epochMs('expiresAt', init.expiresAt),
    supersede$: init.supersede$ === undefined ? undefined : observable('supersede$', init.supersede$),
    shutdown$: init.shutdown$ === undefined ? undefined : observable('shutdown$', init.shutdown$),
    demand$: init.demand$ === undefined ? undefined : observable<boolean>('demand$', init.demand$, 'booleans'),
  };
}

/**
 * The stages of one listen stream: the operators' own, in the order of the composition, each given
 * its share of the plans and its stream's values. What the endpoint serves (`listenStreamOf`) and
 * what {@link listenPipeline} runs.
 * @internal
 */
export function listenStages(plans: ListenPlans, stream: ListenValues): Stage<any, any>[] {
  const close = new CloseStage(plans.close, stream.requestId, stream.expiresAt, stream.supersede$);
  const queue = new QueueStage(plans.queue, stream.demand$);
  return [
    new AckStage(controlFrame(acknowledgedNotification(stream.filter))),
    new KeepAliveStage(plans.keepAlive),
    close,
    new TagStage(stream.requestId),
    queue,
    new ListenTelemetry(plans.clock, stream.filter, close, queue, stream.watcher),
  ];
}

/**
 * The stream of one listen: its topics' notifications through {@link listenStages}, from plans
 * made already (once per endpoint) and values checked already. What {@link listenStream} returns
 * and what the endpoint serves: piped onto `notifications`, the stages fuse at assembly and the
 * first one is registered on the hub's topics directly, no subscriber in between. @internal
 */
export function listenStreamOf(hub: Hub, plans: ListenPlans, stream: ListenValues, scopes: ReadonlySet<string> | undefined): Observable<Frame> {
  return notifications(hub, stream.filter, scopes).pipe(stageOperator<MessageFrame, Frame>(() => listenStages(plans, stream)));
}

/**
 * The stream an endpoint answers a listen with when it honoured nothing and completes such listens
 * at once (`emptyListen: 'complete'`): the empty acknowledgment, then the listen result alone, through
 * the same stages as a served stream's (ack, tag, telemetry with stop reason `empty_filter`). It
 * registers nothing and holds no time. @internal
 */
export function completedListenStream(plans: ListenPlans, stream: ListenValues): Observable<Frame> {
  const ended: StreamEnd = { reason: 'empty_filter', failed: false, lastNotificationAt: undefined };
  return from(listenClosingFrames(stream.requestId, 'result-only', 'empty_filter')).pipe(
    stageOperator<Frame, Frame>(() => [
      new AckStage(controlFrame(acknowledgedNotification(stream.filter))),
      new TagStage(stream.requestId),
      new ListenTelemetry(plans.clock, stream.filter, ended, undefined, stream.watcher),
    ]),
  );
}

/** A listen's telemetry stage ({@link TelemetryStage}): its filter says what it listens to. */
class ListenTelemetry extends TelemetryStage<ListenStatus> implements ListenStatus {
  constructor(clock: Clock, readonly filter: ListenFilter, close: StreamEnd, queue: QueueStage | undefined, watcher: StreamWatcher<ListenStatus> | undefined) {
    super(clock, close, queue, watcher);
  }

  protected get era(): 'modern' {
    return 'modern';
  }

  protected filters(): FilterName[] {
    return filterNames(this.filter);
  }

  protected resourceSubscriptions(): number {
    return this.filter.resourceSubscriptions?.length ?? 0;
  }

  protected status(): ListenStatus {
    return this;
  }
}
