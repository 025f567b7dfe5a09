import type { RequestContext } from '../lib/context.js';
import { MAX_URI_BYTES } from '../lib/filter.js';
import type { MessageFrame } from '../lib/frame.js';
import { ErrorCode, exceedsBytes, JsonRpcError } from '../lib/jsonrpc.js';
import type { ResourceAccess } from './authorize.js';
import {
  cancelSubscribe,
  cancelSubscribes,
  establishSubscription,
  type LiveSubscription,
  type PendingSubscribe,
  type SubscribeOutcome,
  type SubscriptionHolder,
  UriTable,
} from './subscriptions.js';

const NO_URIS: readonly string[] = Object.freeze([]);

/**
 * The resource subscriptions of one legacy session (2025-era `resources/subscribe`), wherever the
 * session lives: an HTTP session of the endpoint (`LiveSession`), a message channel after its
 * `initialize` (`ChannelSubscriptions`), a session of an SDK 1.x server (`ResourceUpdates`). It is
 * the one place their rules are written (DESIGN L3–L5, L8): the URI check, the per-session cap, the
 * decision and the change source of each URI (`establishSubscription`), re-subscribing replacing,
 * unsubscribing an unknown URI answering `{}`, a restore dropping a URI no longer subscribable, and
 * the end releasing everything.
 *
 * It keeps the subscribed URIs in subscription order (a frozen list, shared with a session record)
 * and the live change sources by URI; what a change becomes (stamped for replay, written on a
 * channel, sent through an SDK server) is the owner's {@link resourceUpdated}.
 * @internal
 */
export abstract class SubscriptionSet implements SubscriptionHolder {
  /** Subscribes in progress, while there are some. */
  pending: UriTable<PendingSubscribe> | undefined = undefined;
  /** The live change sources, by URI. */
  readonly live = new UriTable<LiveSubscription>();
  // The subscribed URIs (frozen: shared with a session record).
  #uris: readonly string[];

  constructor(uris: readonly string[] = NO_URIS) {
    this.#uris = frozen(uris);
  }

  /** The subscribed URIs, in subscription order (including any whose source is not live now). */
  get uris(): readonly string[] {
    return this.#uris;
  }

  /** Replaces the list (a record read again); a frozen list is kept as it is. */
  set uris(list: readonly string[]) {
    this.#uris = frozen(list);
  }

  /** A change of a subscribed URI reached the set: `frame` is its `notifications/resources/updated`, scopes checked. */
  abstract resourceUpdated(frame: MessageFrame, uri: string): void;

  /**
   * Refuses `uri` when the set is full (`maxSubscriptionsPerSession`): re-subscribing to a URI it
   * holds is always allowed.
   * @throws JsonRpcError `-32602` naming the cap.
   */
  checkCap(uri: string, cap: number): void {
    if (!this.#uris.includes(uri) && this.#uris.length >= cap) {
      throw new JsonRpcError(ErrorCode.InvalidParams, `a session can hold at most ${cap} resource subscriptions; unsubscribe from one first`);
    }
  }

  /**
   * Subscribes `uri` (DESIGN L3–L5): the cap, the decision of both eras (`access`), its change
   * source live, and the URI added to the list (then `persist`, awaited).
   * @param interrupted why the subscribe can no longer finish (the stream it was made for closed), while it can: `undefined`.
   * @throws JsonRpcError the answer to a refused, failed or cancelled subscribe.
   */
  async subscribeUri(uri: string, context: RequestContext, how: SubscribeHow): Promise<void> {
    this.checkCap(uri, how.cap);
    const outcome = await this.establish(uri, context, how.access, how.interrupted, how.persist);
    if (outcome !== undefined) throw outcome.error;
  }

  /**
   * Establishes `uri`'s change source and adds it to the list (a subscribe, or a restore on a
   * stream's open); a restore that finds the URI no longer subscribable or readable takes it off
   * the list (`persist` is told either way).
   * @returns nothing on success, else the error and whether the URI left the list.
   */
  async establish(
    uri: string,
    context: RequestContext,
    access: ResourceAccess,
    interrupted?: () => string | undefined,
    persist?: (uris: readonly string[]) => void | Promise<void>,
  ): Promise<SubscribeOutcome> {
    const outcome = await establishSubscription(this, access, uri, context, {
      interrupted,
      persist: () => (this.add(uri) ? persist?.(this.#uris) : undefined),
    });
    if (outcome?.drop === true && this.remove(uri)) await persist?.(this.#uris);
    return outcome;
  }

  /**
   * Unsubscribes `uri` (DESIGN L4): a subscribe of it in progress is cancelled, its source
   * released, the URI taken off the list.
   * @returns true when the list changed (the owner persists it).
   */
  unsubscribeUri(uri: string): boolean {
    cancelSubscribe(this, uri, 'resources/unsubscribe arrived');
    this.live.get(uri)?.unsubscribe();
    this.live.delete(uri);
    return this.remove(uri);
  }

  /** Adds `uri` to the list; false when it was there. */
  add(uri: string): boolean {
    if (this.#uris.includes(uri)) return false;
    this.#uris = Object.freeze(this.#uris.concat(uri));
    return true;
  }

  /** Takes `uri` off the list; false when it was not there. */
  remove(uri: string): boolean {
    if (!this.#uris.includes(uri)) return false;
    this.#uris = frozen(this.#uris.filter((kept) => kept !== uri));
    return true;
  }

  /**
   * Releases every live source and cancels every subscribe in progress with `reason`; the list
   * stays (a session's record keeps it for the next stream). See {@link end}.
   */
  release(reason: string): void {
    for (const subscription of this.live.values()) subscription.unsubscribe();
    this.live.clear();
    cancelSubscribes(this, reason);
  }

  /** The owner ended: everything released and the list emptied. */
  end(reason: string): void {
    this.release(reason);
    this.#uris = NO_URIS;
  }
}

/** What {@link SubscriptionSet.subscribeUri} is told besides the URI. @internal */
export interface SubscribeHow {
  /** Who may subscribe to what (the endpoint's providers and hooks). */
  readonly access: ResourceAccess;
  /** The most URIs the set may hold (`maxSubscriptionsPerSession`). */
  readonly cap: number;
  /** Why the subscribe can no longer finish, while it can: `undefined`. */
  readonly interrupted?: () => string | undefined;
  /** Records the list once the URI is live (a session record, an SDK session's `onChange`). */
  readonly persist?: (uris: readonly string[]) => void | Promise<void>;
}

/**
 * `params.uri` of a `resources/subscribe` or `resources/unsubscribe` (DESIGN L3), on every front.
 * @throws JsonRpcError `-32602` when it is missing, not a string, or over {@link MAX_URI_BYTES} bytes.
 * @internal
 */
export function requireUri(method: string, params: Readonly<Record<string, unknown>> | undefined): string {
  const uri = params?.uri;
  if (typeof uri !== 'string') throw new JsonRpcError(ErrorCode.InvalidParams, `${method} requires params.uri`);
  if (exceedsBytes(uri, MAX_URI_BYTES)) throw new JsonRpcError(ErrorCode.InvalidParams, `${method} params.uri must be at most ${MAX_URI_BYTES} bytes`);
  return uri;
}

function frozen(list: readonly string[]): readonly string[] {
  return Object.isFrozen(list) ? list : list.length === 0 ? NO_URIS : Object.freeze(list.slice());
}
