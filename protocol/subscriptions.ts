import { from, Subscriber } from 'rxjs';
import { NO_SCOPES } from '../lib/auth.js';
import type { RequestContext } from '../lib/context.js';
import { encodeResourceUpdated } from '../lib/encode.js';
import { mayReceive, type MessageFrame } from '../lib/frame.js';
import { type Hub, type HubTarget, NotificationMethod } from '../lib/hub.js';
import { ErrorCode, JsonRpcError } from '../lib/jsonrpc.js';
import { changesHub, type ResourceProvider } from '../lib/resources.js';
import { reportError } from '../lib/telemetry.js';
import { refusalError, type ResourceAccess, type ResourceDecision } from './authorize.js';

/** A subscribe in progress: told why it was cancelled when something overtakes it. @internal */
export interface PendingSubscribe {
  readonly uri: string;
  reason: string | undefined;
}

/** A live subscription to one URI's changes. @internal */
export interface LiveSubscription {
  readonly uri: string;
  readonly closed: boolean;
  unsubscribe(): void;
}

/**
 * Values keyed by their `uri`, like a `Map`, but held inline while there is one: a session
 * usually subscribes to one URI or a few, and an idle one to none, where a `Map` costs a hash
 * table each. A `Map` from the second URI on.
 * @internal
 */
export class UriTable<V extends { readonly uri: string }> {
  #entries: V | Map<string, V> | undefined = undefined;

  get size(): number {
    const entries = this.#entries;
    return entries === undefined ? 0 : entries instanceof Map ? entries.size : 1;
  }

  get(uri: string): V | undefined {
    const entries = this.#entries;
    if (entries instanceof Map) return entries.get(uri);
    return entries !== undefined && entries.uri === uri ? entries : undefined;
  }

  /** Keeps `value` under its `uri`, in place of any value there. */
  set(value: V): void {
    const entries = this.#entries;
    if (entries === undefined || (!(entries instanceof Map) && entries.uri === value.uri)) this.#entries = value;
    else if (entries instanceof Map) entries.set(value.uri, value);
    else this.#entries = new Map([[entries.uri, entries], [value.uri, value]]);
  }

  delete(uri: string): boolean {
    const entries = this.#entries;
    if (entries instanceof Map) {
      const deleted = entries.delete(uri);
      if (entries.size === 0) this.#entries = undefined;
      return deleted;
    }
    if (entries === undefined || entries.uri !== uri) return false;
    this.#entries = undefined;
    return true;
  }

  /** A snapshot of the values (changing the table while going through them is safe). */
  values(): V[] {
    const entries = this.#entries;
    return entries === undefined ? [] : entries instanceof Map ? Array.from(entries.values()) : [entries];
  }

  clear(): void {
    this.#entries = undefined;
  }
}

/**
 * Where a session's resource subscriptions live and where their changes go: a legacy session of
 * the endpoint, or the session of an SDK 1.x server (`ResourceUpdates`).
 * @internal
 */
export interface SubscriptionHolder {
  /** Subscribes in progress; `undefined` while there are none (see {@link cancelSubscribe}). */
  pending: UriTable<PendingSubscribe> | undefined;
  readonly live: UriTable<LiveSubscription>;
  /**
   * A change of a subscribed URI reached the session: `frame` is its `notifications/resources/updated`
   * (unscoped: who may hear it was checked against the subscriber's scopes already).
   */
  resourceUpdated(frame: MessageFrame, uri: string): void;
}

/** How a subscribe ended: nothing on success, else the error and whether the URI should leave the record. @internal */
export type SubscribeOutcome = { readonly error: JsonRpcError; readonly drop: boolean } | undefined;

/** What {@link establishSubscription} is told besides the URI. @internal */
export interface EstablishOptions {
  /** Why the subscribe can no longer finish besides being overtaken (the GET stream it was made for closed); `undefined` while it can. */
  readonly interrupted?: () => string | undefined;
  /** Records the URI as subscribed (a session record, an SDK session's `onChange`), once its source is live. */
  readonly persist?: () => void | Promise<void>;
}

/**
 * Subscribes `uri`'s change source into `holder` (DESIGN L3–L5), for a legacy `resources/subscribe`
 * of the endpoint or of an SDK 1.x server alike: the decision a modern listen makes too (the
 * provider, the endpoint's `canRead`, the subscribe hook), then the provider's `changes(uri)`,
 * replacing an earlier subscription to the URI. A subscribe overtaken meanwhile (an unsubscribe or
 * a newer subscribe of the URI, or `interrupted`) ends with `-32602 … was cancelled: <reason>`.
 *
 * A provider made by `hubResources` is registered on its hub's topic of the URI directly: one
 * small object per subscription, no Observable nor Subscriber in between.
 * @returns nothing on success, else the error to answer and whether the URI should leave the
 *   session's record (no longer subscribable or readable).
 * @internal
 */
export async function establishSubscription(
  holder: SubscriptionHolder,
  access: ResourceAccess,
  uri: string,
  context: RequestContext,
  options: EstablishOptions = {},
): Promise<SubscribeOutcome> {
  const pending: PendingSubscribe = { uri, reason: undefined };
  cancelSubscribe(holder, uri, 'a newer resources/subscribe for the URI arrived');
  (holder.pending ??= new UriTable()).set(pending);
  const { interrupted, persist } = options;
  const cancelled = (): SubscribeOutcome => {
    const reason = pending.reason ?? interrupted?.();
    return reason === undefined ? undefined : { error: cancelledError(uri, reason), drop: false };
  };
  try {
    let decision: ResourceDecision;
    try {
      decision = await access.decide(uri, context);
    } catch (error) {
      return cancelled() ?? failed(uri, error);
    }
    const overtakenMeanwhile = cancelled();
    if (overtakenMeanwhile !== undefined) return overtakenMeanwhile;
    if (!decision.allowed) return { error: refusalError(uri, decision.refusal), drop: true };
    let subscription: LiveSubscription;
    try {
      subscription = subscribeChanges(holder, decision.provider, uri, context);
    } catch (error) {
      return failed(uri, error);
    }
    // Re-subscribing replaces the earlier subscription (DESIGN L4).
    holder.live.get(uri)?.unsubscribe();
    // A source that completed at once has nothing to say later: subscribed, and that is all.
    if (subscription.closed) holder.live.delete(uri);
    else holder.live.set(subscription);
    await persist?.();
    return undefined;
  } finally {
    forget(holder, pending);
  }
}

/** Cancels the subscribe of `uri` in progress, if any: it answers `… was cancelled: <reason>`. */
export function cancelSubscribe(holder: SubscriptionHolder, uri: string, reason: string): void {
  const pending = holder.pending?.get(uri);
  if (pending === undefined) return;
  pending.reason = reason;
  forget(holder, pending);
}

/** Cancels every subscribe in progress (unless already cancelled for another reason). */
export function cancelSubscribes(holder: SubscriptionHolder, reason: string): void {
  const table = holder.pending;
  if (table === undefined) return;
  holder.pending = undefined;
  for (const pending of table.values()) pending.reason ??= reason;
}

function forget(holder: SubscriptionHolder, pending: PendingSubscribe): void {
  const table = holder.pending;
  if (table === undefined || table.get(pending.uri) !== pending) return;
  table.delete(pending.uri);
  if (table.size === 0) holder.pending = undefined;
}

/** `-32602 resources/subscribe for <uri> was cancelled: <reason>` (DESIGN L3). @internal */
export function cancelledError(uri: string, reason: string): JsonRpcError {
  return new JsonRpcError(ErrorCode.InvalidParams, `resources/subscribe for ${uri} was cancelled: ${reason}`);
}

function failed(uri: string, error: unknown): SubscribeOutcome {
  reportError('source', error);
  return { error: new JsonRpcError(ErrorCode.InternalError, `failed to subscribe: ${uri}`), drop: false };
}

/**
 * The live subscription to `provider`'s changes of `uri`.
 * @throws what the provider throws, or what its source errors with as it is subscribed.
 */
function subscribeChanges(holder: SubscriptionHolder, provider: ResourceProvider, uri: string, context: RequestContext): LiveSubscription {
  const scopes = context.auth.scopes.size === 0 ? NO_SCOPES : context.auth.scopes;
  const hub = changesHub(provider);
  // `changes(uri)` of hubResources(hub) is exactly hub.topic({ topic: 'resource', uri }).
  if (hub !== undefined) return new HubSubscription(holder, uri, scopes, hub);
  const subscription = new SourceSubscription(holder, uri, scopes);
  try {
    from(provider.changes(uri, context)).subscribe(subscription);
  } catch (error) {
    subscription.unsubscribe();
    throw error;
  }
  subscription.subscribed();
  return subscription;
}

/** The notification a subscription hands on when a change arrives without one it may pass (scoped, or not from the hub). */
function resourceUpdatedFrame(uri: string): MessageFrame {
  return Object.freeze({
    type: 'message',
    message: Object.freeze({ jsonrpc: '2.0', method: NotificationMethod.resource, params: Object.freeze({ uri }) }),
    priority: 'notification',
    topic: 'resource',
    coalesceKey: `${NotificationMethod.resource} ${uri}`,
    encoded: encodeResourceUpdated(uri),
  });
}

/**
 * A subscription to a URI's changes published on the hub itself (the default provider): one
 * registration on the URI's topic. Its principal's scopes are checked here, once, for every frame
 * the hub hands it; what passes goes on as it is.
 */
class HubSubscription implements HubTarget, LiveSubscription {
  closed = false;

  constructor(
    private readonly holder: SubscriptionHolder,
    readonly uri: string,
    private readonly scopes: ReadonlySet<string>,
    private readonly hub: Hub,
  ) {
    hub.attach('resource', uri, this);
  }

  next(frame: MessageFrame): void {
    // A delivery already under way when it was unsubscribed.
    if (this.closed || !mayReceive(frame, this.scopes)) return;
    this.holder.resourceUpdated(frame, this.uri);
  }

  unsubscribe(): void {
    if (this.closed) return;
    this.closed = true;
    this.hub.detach('resource', this.uri, this);
  }
}


/**
 * A subscription to any other provider's change source (values are only signals): one Subscriber.
 * A value emitted while the source is being subscribed is handed on once that has succeeded; an
 * error then fails the subscribe.
 */
class SourceSubscription extends Subscriber<unknown> implements LiveSubscription {
  /** Its source's subscribe has not returned yet: what it emits or fails with meanwhile is kept for `subscribed`. */
  #subscribing = true;
  /** It emitted while subscribing. */
  #emittedEarly = false;
  #failure: { readonly error: unknown } | undefined = undefined;
  #frame: MessageFrame | undefined = undefined;

  constructor(
    private readonly holder: SubscriptionHolder,
    readonly uri: string,
    private readonly scopes: ReadonlySet<string>,
  ) {
    super();
  }

  /** The source's subscribe returned: its early failure is thrown, its early value handed on. */
  subscribed(): void {
    const emittedEarly = this.#emittedEarly;
    this.#subscribing = false;
    this.#emittedEarly = false;
    const failure = this.#failure;
    if (failure !== undefined) {
      this.#failure = undefined;
      this.unsubscribe();
      throw failure.error;
    }
    if (emittedEarly) this.hand();
  }

  protected override _next(value: unknown): void {
    if (!mayReceiveValue(value, this.scopes)) return;
    if (this.#subscribing) this.#emittedEarly = true;
    else this.hand();
  }

  protected override _error(error: unknown): void {
    if (this.#subscribing) this.#failure = { error };
    else reportError('source', error);
    this.forget();
  }

  protected override _complete(): void {
    this.forget();
  }

  private hand(): void {
    this.holder.resourceUpdated((this.#frame ??= resourceUpdatedFrame(this.uri)), this.uri);
  }

  /** The source ended: the session no longer holds this subscription (the URI stays on its record). */
  private forget(): void {
    this.unsubscribe();
    if (this.holder.live.get(this.uri) === this) this.holder.live.delete(this.uri);
  }
}

/** A provider's change value: a scoped hub frame only for principals holding its scope; anything else for all. */
function mayReceiveValue(value: unknown, scopes: ReadonlySet<string>): boolean {
  const frame = value as Partial<MessageFrame> | null;
  return frame?.type !== 'message' || typeof frame.scope !== 'string' || mayReceive(frame as MessageFrame, scopes);
}
