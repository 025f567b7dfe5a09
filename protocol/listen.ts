import { Observable, type Subscription } from 'rxjs';
import { Broadcast, follow, type Follower, unfollow } from '../lib/broadcast.js';
import type { AuthInfo } from '../lib/auth.js';
import type { RequestContext } from '../lib/context.js';
import { authorizeListenFilter, filterNames, type ListenFilter, parseListenFilter, type ResourceAuthorizer, type ServerCapabilities } from '../lib/filter.js';
import { isCloseReason, type CloseReason, type Frame } from '../lib/frame.js';
import type { Hub } from '../lib/hub.js';
import { ErrorCode, JsonRpcError, type JsonRpcId } from '../lib/jsonrpc.js';
import { completedListenStream, type ListenPlans, type ListenStatus, listenStreamOf } from '../operators/listenPipeline.js';
import type { StreamWatcher } from '../operators/streamTelemetry.js';
import type { Admission, PrincipalCap } from '../lib/principals.js';
import { isShared, type SharedSlots, type Slot, type StreamSlots } from '../lib/slots.js';
import { channels, reportError, type ListenTrace, type StopReason } from '../lib/telemetry.js';
import type { ResourceAccess } from './authorize.js';
import type { CredentialChecks, HeldCredential } from './credentialChecks.js';
import { listenFilterInfo, type ListenStreamInfo, type StreamsOptions } from './inspect.js';
import type { EmptyListen } from './options.js';
import type { Feed, FeedLease, ProviderFeeds } from './providerFeeds.js';
import { type Answer, capacityRefusal, errorAnswer, shutdownRefusal } from './answer.js';
import { listenTrace, traceAbandoned, traced, traceStart, traceStop, traceWatcher } from './trace.js';

/**
 * What the listen streams of an endpoint are built from (the endpoint's resolved options).
 * @internal
 */
export interface ListensInit {
  readonly hub: Hub;
  readonly slots: StreamSlots;
  readonly principals: PrincipalCap;
  readonly capabilities: ServerCapabilities;
  /** Who may listen to which resource URI: the same decision as a legacy `resources/subscribe`. */
  readonly access: ResourceAccess;
  /** Where providers' changes are subscribed for the listens that name their URIs. */
  readonly feeds: ProviderFeeds;
  /** Milliseconds a listen refused at `maxStreams` is told to wait (`capacityRetryAfter`). */
  readonly capacityRetryAfter: number;
  /** What a listen that honoured nothing gets (`emptyListen`). */
  readonly emptyListen: EmptyListen;
  /** Where a stream opened with a credential to be rechecked (`AuthInfo.recheck`) is held while it is open. */
  readonly credentials: CredentialChecks;
}

/**
 * The `subscriptions/listen` streams of an endpoint (modern era, DESIGN M1–M14), the modern
 * counterpart of `LegacySessions`: admission through the server-wide slots and the per-principal
 * cap, the filter's authorization, each stream (`listenStreamOf`: the operators' stages) and the
 * release of all of it when a stream ends. The core routes to it; it is not used on its own.
 * @internal
 */
export class Listens {
  readonly #init: ListensInit;
  /** The open listen streams, oldest first. */
  readonly #open = new Set<OpenListen>();
  /** The number of the next stream (its snapshot id). */
  #serial = 0;
  #closed = false;

  constructor(init: ListensInit) {
    this.#init = init;
  }

  /** Open listen streams. */
  get size(): number {
    return this.#open.size;
  }

  /** One entry per open listen stream, oldest first (see `McpEndpoint.streams`). */
  snapshot(options: StreamsOptions): ListenStreamInfo[] {
    const infos: ListenStreamInfo[] = [];
    for (const stream of this.#open) {
      const info = stream.info(options);
      if (info !== undefined) infos.push(info);
    }
    return infos;
  }

  /** Ends the open listen stream `id` (`listen-<n>`) with its closing frames and `reason`; false when there is none. */
  closeStream(id: string, reason: CloseReason): boolean {
    for (const stream of this.#open) {
      if (stream.id !== id) continue;
      stream.close(reason);
      return true;
    }
    return false;
  }

  /**
   * Ends the principal's listen streams with `reason`: through its cap (every stream it admitted,
   * on every node that shares it, those still being authorized included), then any open stream of
   * the principal here that is left (a cap without `revoke`). Returns how many were open here.
   */
  revoke(principal: string, reason: CloseReason): { readonly streams: number; readonly relayed: Promise<void> } {
    const mine = [...this.#open].filter((stream) => stream.principal === principal);
    let relayed: Promise<void> = Promise.resolve();
    try {
      const told = this.#init.principals.revoke?.(principal, reason);
      if (told !== undefined) relayed = Promise.resolve(told);
    } catch (error) {
      relayed = Promise.reject(error);
    }
    for (const stream of mine) stream.close(reason);
    return { streams: mine.length, relayed };
  }

  /** Later listens get 503, shutting down (the open ones are closed by `shutdown$`). */
  close(): void {
    this.#closed = true;
  }

  /**
   * Answers a `subscriptions/listen` request past its transport's own checks (HTTP's Accept, M1; a
   * message channel has none): a stream, or the JSON-RPC error that refuses it (-32602…), built
   * from `plans` (HTTP's, or message channels', see `listenPlans`' `stalledEnd`). The request's
   * trace context follows it on `channels.trace` when someone listens there, whatever the front.
   * @throws Refusal `busy` when the server is full (with its retry time) or closed.
   */
  listen(id: JsonRpcId, params: Readonly<Record<string, unknown>> | undefined, context: RequestContext, plans: ListenPlans, transport: ListenTrace['transport']): Promise<Answer> {
    if (!channels.trace.hasSubscribers) return this.#admit(id, params, context, plans, undefined);
    const trace = listenTrace(context.request, params, transport);
    return traced(trace, () => this.#admit(id, params, context, plans, trace));
  }

  /** The filter, admission, authorization and the stream of a listen. */
  async #admit(
    id: JsonRpcId,
    params: Readonly<Record<string, unknown>> | undefined,
    context: RequestContext,
    plans: ListenPlans,
    trace: ListenTrace | undefined,
  ): Promise<Answer> {
    let filter;
    try {
      filter = parseListenFilter(params, this.#init.capabilities);
    } catch (error) {
      // 2026-07-28: a missing required client capability (-32021) refuses the request (HTTP: 400 Bad Request).
      if (error instanceof JsonRpcError) return errorAnswer(id, error, error.code === ErrorCode.MissingRequiredExtension ? 'missing-extension' : undefined);
      throw error;
    }
    if (this.#closed) throw shutdownRefusal(id);
    // M9: a full server is a capacity problem, answered before anyone is superseded.
    const { slots, principals, capacityRetryAfter } = this.#init;
    // A pool other processes share (a cluster's) is asked first: its place is this listen's slot.
    const shared = isShared(slots) ? await this.#acquireShared(slots, id) : undefined;
    if (shared === undefined && slots.inUse >= slots.capacity) throw capacityRefusal('stream', capacityRetryAfter, id);
    // M8, at every instant: the stream counts against its principal from the moment it takes a
    // slot. Admitted first, so that the principal's streams it supersedes give their slots back
    // (at once: see QueueStage's stall grace of 0) before this one takes its own; a principal at
    // its cap never holds one slot more, even while this listen is still being authorized.
    const admission = principals.admit(context.auth.principal);
    const slot = shared ?? slots.tryAcquire();
    if (slot === undefined) {
      // Only if a shared pool was taken from inside the supersede: refuse as full.
      admission.release();
      throw capacityRefusal('stream', capacityRetryAfter, id);
    }
    const pending = new PendingListen(admission, slot);
    const held: Feed[] = [];
    let authorized;
    try {
      const { access, hub } = this.#init;
      // The endpoint's default provider and no hooks: nothing to ask per URI, nothing but the hub to hear.
      authorized = await authorizeListenFilter(filter, access.openHub === hub ? {} : this.#authorizer(context, held));
    } catch (error) {
      for (const feed of held) this.#init.feeds.release(feed);
      pending.abandon();
      throw error;
    }
    if (this.#init.emptyListen === 'complete' && filterNames(authorized).length === 0) {
      // Nothing honoured and nothing to hold: the empty acknowledgment and the result, no slot kept.
      pending.abandon();
      const watcher = trace === undefined ? undefined : traceWatcher(trace);
      return { kind: 'stream', open: () => completedListenStream(plans, { requestId: id, filter: authorized, watcher }), abandon: trace === undefined ? noop : () => traceAbandoned(trace) };
    }
    const lease = held.length === 0 ? undefined : this.#init.feeds.lease(held);
    return this.#listenResponse(id, authorized, context.auth, pending, lease, plans, trace);
  }

  /**
   * A place of a pool other processes share (`SharedSlots`), asked for before anyone is superseded
   * (M9); a full pool, or an endpoint closed meanwhile, refuses the listen.
   * @throws Refusal `busy` when the pool is full (with its retry time) or the endpoint closed.
   */
  async #acquireShared(slots: SharedSlots, id: JsonRpcId): Promise<Slot> {
    const slot = await slots.acquire();
    if (slot === undefined) throw capacityRefusal('stream', this.#init.capacityRetryAfter, id);
    if (!this.#closed) return slot;
    slot.release();
    throw shutdownRefusal(id);
  }

  /**
   * DESIGN M4 with the decision a legacy subscribe makes (`ResourceAccess`): a URI passes when its
   * provider, the endpoint's `canRead` and the `subscribeHook` allow it, and then its provider's
   * changes are held for the listen (unless they are the hub's own). A refusal, a failing check and
   * a source that fails as it is subscribed all drop the URI silently; failures go to
   * `channels.error`, as they do for a legacy subscribe.
   */
  #authorizer(context: RequestContext, held: Feed[]): ResourceAuthorizer {
    const { access, feeds } = this.#init;
    return {
      canRead: async (uri) => {
        try {
          const decision = await access.decide(uri, context);
          if (!decision.allowed) return false;
          if (!feeds.isHub(decision.provider)) held.push(feeds.acquire(decision.provider, uri, context));
          return true;
        } catch (error) {
          reportError('source', error);
          return false;
        }
      },
    };
  }

  // Apart from listen() so that an open stream's closures hold only what the stream needs, not the
  // request, its body and its context (times 10 000 idle streams).
  #listenResponse(
    id: JsonRpcId,
    filter: ListenFilter,
    auth: AuthInfo,
    pending: PendingListen,
    lease: FeedLease | undefined,
    plans: ListenPlans,
    trace: ListenTrace | undefined,
  ): Answer {
    const { expiresAt, scopes, principal, recheck } = auth;
    const open = (demand$: Observable<boolean>) =>
      new Observable<Frame>((subscriber) => {
        const { hub } = this.#init;
        const { admission, slot } = pending;
        // Superseded (or revoked) while it was being authorized: it opens and closes at once (ack,
        // then the closing frames with that reason), its slot already given back.
        const late = pending.opened() ? undefined : new Broadcast<CloseReason>();
        // Released after the stream's own teardown (added after it subscribed), as `finalize` would;
        // an object rather than a closure, so that an open stream holds none of this scope. It is
        // also the stream's entry among the open ones, told the stream's state by its telemetry stage.
        const entry = new OpenListen(this.#open, this.#serial++, principal, admission, slot, lease, trace);
        // An introspected token: checked again while the stream is open; revoked, it ends the stream.
        if (recheck !== undefined) entry.credential = this.#init.credentials.hold(recheck, expiresAt, entry);
        const stream = listenStreamOf(hub, plans, { requestId: id, filter, expiresAt, supersede$: late ?? admission.superseded$, demand$, watcher: entry }, scopes);
        stream.subscribe(subscriber);
        late?.next(pending.reason);
        return entry;
      });
    const abandon = () => {
      pending.abandon();
      lease?.release();
      if (trace !== undefined) traceAbandoned(trace);
    };
    return { kind: 'stream', open, abandon };
  }
}

/**
 * A listen admitted and holding its slot, not yet opened (its filter is being authorized, or its
 * response is on its way to the adapter). If a newer listen of its principal supersedes it
 * meanwhile, its slot is given back at once: a principal's streams never hold more slots than its
 * cap, opened or not.
 */
class PendingListen implements Follower {
  // The supersede signal followed until the stream opens (see follow: our own registry's is a
  // Broadcast, attached to with nothing allocated, and it keeps no Subject for the stream's life).
  #watch: Subscription | undefined;
  #displaced = false;
  /** Why it was displaced before it opened (`superseded`, or what its principal's signal said). */
  reason: CloseReason = 'superseded';

  constructor(
    readonly admission: Admission,
    readonly slot: Slot,
  ) {
    this.#watch = follow(admission.superseded$, this);
  }

  onBroadcast(_source: Observable<unknown>, value: unknown): void {
    this.#displaced = true;
    if (isCloseReason(value)) this.reason = value;
    this.slot.release();
  }

  /** The stream opens: from now on its close stage follows the supersede signal. False if it was superseded before. */
  opened(): boolean {
    this.#stopWatching();
    return !this.#displaced;
  }

  /** Never opened (refused, or the client left): gives back its place and its slot. Idempotent. */
  abandon(): void {
    this.#stopWatching();
    this.admission.release();
    this.slot.release();
  }

  #stopWatching(): void {
    unfollow(this.admission.superseded$, this, this.#watch);
    this.#watch = undefined;
  }
}

function noop(): void {}

/**
 * One open listen stream as its endpoint keeps it, the one object per stream it keeps: what the
 * stream gives back when it ends (its place in its principal's cap, its slot, its providers'
 * feeds), its entry in the endpoint's set of open streams (for the snapshot, `closeStream` and
 * `revoke`), and the watcher its telemetry stage tells (which hands it the stream's
 * {@link ListenStatus}: filter, times, close and queue). Unsubscribed after the stream's own
 * teardown, whatever ended it.
 * @internal
 */
export class OpenListen implements StreamWatcher<ListenStatus> {
  /** The stream's telemetry stage, once the stream is assembled. */
  status: ListenStatus | undefined = undefined;
  /** Its place among the streams of its credential, when that is checked again while it is open (`AuthInfo.recheck`). */
  credential: HeldCredential | undefined = undefined;

  constructor(
    /** The endpoint's open listen streams, this one among them while it is open. */
    private readonly open: Set<OpenListen>,
    /** Its number on the endpoint: the snapshot's `listen-<n>`. */
    readonly serial: number,
    readonly principal: string,
    private readonly admission: Admission,
    private readonly slot: Slot,
    private readonly lease: FeedLease | undefined,
    /** The request's trace context, when `channels.trace` had a subscriber at admission. */
    private readonly trace: ListenTrace | undefined,
  ) {
    open.add(this);
  }

  /** The id the snapshot and `closeStream` use. */
  get id(): string {
    return `listen-${this.serial}`;
  }

  watch(status: ListenStatus): void {
    this.status = status;
  }

  started(status: ListenStatus): void {
    if (this.trace !== undefined) traceStart(this.trace, status);
  }

  stopped(status: ListenStatus, reason: StopReason, duration: number): void {
    if (this.trace !== undefined) traceStop(this.trace, status, reason, duration);
  }

  /** Ends the stream now with its closing frames and `reason` (nothing if it is ending already). */
  close(reason: CloseReason): void {
    this.status?.close.close?.(reason);
  }

  /** The stream's entry in the endpoint's snapshot. */
  info(options: StreamsOptions): ListenStreamInfo | undefined {
    const status = this.status;
    if (status === undefined) return undefined;
    const { close, queue } = status;
    const openedAt = status.openedAt();
    return {
      era: 'modern',
      id: this.id,
      principal: this.principal,
      requestId: close.requestId!,
      openedAt,
      filter: listenFilterInfo(status.filter, options),
      queuedFrames: queue?.queuedFrames ?? 0,
      queuedBytes: queue?.queuedBytes ?? 0,
      dropped: queue?.dropped ?? 0,
      coalesced: queue?.coalesced ?? 0,
      lastNotificationAt: close.lastNotificationAt ?? openedAt,
    };
  }

  /** The stream ended (any reason): it leaves the set and gives back what it held. */
  unsubscribe(): void {
    this.open.delete(this);
    this.admission.release();
    this.slot.release();
    this.lease?.release();
    this.credential?.release();
  }
}
