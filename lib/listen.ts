import { asyncScheduler, defer, finalize, NEVER, Observable, type SchedulerLike, Subject, Subscriber } from 'rxjs';
import { ackThenNotify } from '../operators/ackThenNotify.js';
import { closeWhen, type CloseTrigger } from '../operators/closeWhen.js';
import { dropWhenQueueExceeds } from '../operators/dropWhenQueueExceeds.js';
import { keepAlive } from '../operators/keepAlive.js';
import { tagSubscriptionId } from '../operators/tagSubscriptionId.js';
import { expiresAt, idleTimeout, lifetimeCap, shutdown, superseded } from './closeTriggers.js';
import { acknowledgedNotification, filterNames, type ListenFilter } from './filter.js';
import { controlFrame, type Frame, type MessageFrame } from './frame.js';
import type { Hub } from './hub.js';
import type { JsonRpcId } from './jsonrpc.js';
import { resolveListenOptions, type ListenOptions } from './options.js';
import { failWhenStalled } from './stallGuard.js';
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
  const options = resolveListenOptions(init.options);
  const scheduler = init.scheduler ?? asyncScheduler;
  const { requestId, filter, hub } = init;
  const ack = controlFrame(acknowledgedNotification(filter));
  const filters = filterNames(filter);

  const triggers: CloseTrigger[] = [
    lifetimeCap(options.maxStreamLifetime, scheduler),
    idleTimeout(options.listenIdleTimeout, scheduler),
  ];
  if (init.expiresAt !== undefined) triggers.push(expiresAt(init.expiresAt, scheduler));
  if (init.supersede$ !== undefined) triggers.push(superseded(init.supersede$));
  if (init.shutdown$ !== undefined) triggers.push(shutdown(init.shutdown$));

  return defer(() => {
    const opened = scheduler.now();
    let reason: StopReason = 'client_closed';
    const closing$ = new Subject<void>();
    if (channels.start.hasSubscribers) {
      channels.start.publish({
        systemTime: opened,
        resourceSubscriptions: filter.resourceSubscriptions?.length ?? 0,
        filters,
      });
    }
    const onDrop = (frame: MessageFrame, queueLength: number) => {
      if (channels.drop.hasSubscribers) channels.drop.publish({ queueLength, topic: frame.topic ?? 'resource' });
    };
    return notifications(hub, filter).pipe(
      ackThenNotify(ack),
      keepAlive(options.keepAliveInterval, scheduler),
      closeWhen(triggers, { requestId, mode: options.closeNotice }),
      watchClose((closeReason) => {
        reason = closeReason;
        if (closeReason !== 'error') closing$.next();
      }),
      tagSubscriptionId(requestId),
      dropWhenQueueExceeds(options.listenMaxQueue, init.demand$ ?? NEVER, onDrop),
      // A closed stream whose client never reads would otherwise hold its slot forever, waiting
      // to write its closing frames: after one keep-alive interval it errors, and the adapter
      // drops the connection.
      failWhenStalled(closing$, options.keepAliveInterval, scheduler),
      finalize(() => {
        if (channels.stop.hasSubscribers) {
          channels.stop.publish({ duration: scheduler.now() - opened, filters, reason });
        }
      }),
    );
  });
}

/** Reports the close reason of the first closing frame (or `'error'`); frames pass untouched. */
function watchClose(onClose: (reason: StopReason) => void) {
  return (source: Observable<Frame>) =>
    new Observable<Frame>((subscriber) => {
      source.subscribe(new CloseWatchSubscriber(subscriber, onClose));
    });
}

// A Subscriber subclass rather than `tap`: one cheap layer on the per-frame path of every stream.
class CloseWatchSubscriber extends Subscriber<Frame> {
  constructor(
    destination: Subscriber<Frame>,
    private readonly onClose: (reason: StopReason) => void,
  ) {
    super(destination);
  }

  protected override _next(frame: Frame): void {
    if (frame.type === 'message' && frame.closeReason !== undefined) this.onClose(frame.closeReason);
    this.destination.next(frame);
  }

  protected override _error(error: unknown): void {
    this.onClose('error');
    super._error(error);
  }
}

/** The merged notifications of every topic a filter names, straight from the hub. */
export function notifications(hub: Hub, filter: ListenFilter): Observable<MessageFrame> {
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
