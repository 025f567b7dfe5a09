import type { Observable } from 'rxjs';
import type { Broadcast } from '../../lib/broadcast.js';
import type { RequestContext } from '../../lib/context.js';
import type { ListenFilter } from '../../lib/filter.js';
import type { Frame, MessageFrame } from '../../lib/frame.js';
import { ErrorCode, JsonRpcError } from '../../lib/jsonrpc.js';
import { attachTopics } from '../../lib/notifications.js';
import { QueueStage } from '../../operators/dropWhenQueueExceeds.js';
import { type SourceRegistration, StageObservable } from '../../operators/stage.js';
import type { ChannelParts } from '../../protocol/channelParts.js';
import { requireUri } from '../../protocol/legacy/subscribe.js';
import { cancelSubscribe, cancelSubscribes, establishSubscription, type LiveSubscription, type PendingSubscribe, type SubscriptionHolder, UriTable } from '../../protocol/subscriptions.js';

/**
 * The legacy era (2025-03-26 / 2025-06-18 / 2025-11-25) of one message channel: `resources/subscribe`
 * and `resources/unsubscribe` (DESIGN L3–L5) and the list changes, delivered on the channel itself.
 *
 * Over HTTP a session has an id, a GET stream its client opens first, event ids and a replay
 * buffer, all because its requests and its stream are separate connections that come and go. A
 * channel is one connection for its whole life: the channel is the session. So there is no session
 * id, no GET stream (a subscribe needs no stream opened first), no event ids and no replay: nothing
 * outlives the channel. What stays the same is the decision: each URI is checked where it is
 * subscribed, by the endpoint's providers and hooks (`establishSubscription`, shared with HTTP
 * sessions and the SDK 1.x bridge), and the subscriptions are capped by `maxSubscriptionsPerSession`.
 *
 * Its notifications (`notifications/resources/updated`, the advertised `…/list_changed`) go through
 * one bounded queue on the channel's demand (`dropWhenQueueExceeds`, with the endpoint's
 * `listenMaxQueue` and `listenMaxQueueBytes`): while the host does not read, identical ones
 * coalesce and the rest are dropped past the bounds, as on a GET stream.
 * @internal
 */
export class ChannelSubscriptions implements SubscriptionHolder {
  pending: UriTable<PendingSubscribe> | undefined = undefined;
  readonly live = new UriTable<LiveSubscription>();
  /** The URIs subscribed (what the cap counts; a source that ended at once still counts, as on a session's record). */
  readonly #uris = new Set<string>();
  #entry: { next(frame: Frame): void } | undefined = undefined;
  #ended = false;

  constructor(
    private readonly parts: ChannelParts,
    private readonly context: RequestContext,
  ) {}

  /** How many URIs are subscribed. */
  get size(): number {
    return this.#uris.size;
  }

  /**
   * The channel's legacy notifications: the advertised list changes (for the channel principal's
   * scopes) and the changes of its subscribed URIs, through one queue on `demand$`.
   */
  feed(demand$: Broadcast<boolean>): Observable<Frame> {
    const { hub, capabilities, queue } = this.parts;
    const lists: ListenFilter = {
      ...(capabilities.tools ? { toolsListChanged: true } : {}),
      ...(capabilities.prompts ? { promptsListChanged: true } : {}),
      ...(capabilities.resources ? { resourcesListChanged: true } : {}),
    };
    const scopes = this.context.auth.scopes;
    const source = (entry: { next(frame: unknown): void }): SourceRegistration => {
      this.#entry = entry;
      const registration = attachTopics(hub, lists, scopes, entry);
      return {
        unsubscribe: () => {
          registration.unsubscribe();
          this.#entry = undefined;
        },
      };
    };
    return new StageObservable<Frame>(source, () => [new QueueStage(queue, demand$)]);
  }

  /** A change of a subscribed URI (its subscription checked the principal's scopes). */
  resourceUpdated(frame: MessageFrame): void {
    this.#entry?.next(frame);
  }

  /** `resources/subscribe` (DESIGN L3–L5): `{}`, or throws its JSON-RPC error. */
  async subscribe(params: Readonly<Record<string, unknown>> | undefined): Promise<object> {
    const uri = requireUri('resources/subscribe', params);
    const cap = this.parts.legacy!.maxSubscriptions;
    if (!this.#uris.has(uri) && this.#uris.size >= cap) {
      throw new JsonRpcError(ErrorCode.InvalidParams, `a session can hold at most ${cap} resource subscriptions; unsubscribe from one first`);
    }
    const outcome = await establishSubscription(this, this.parts.access, uri, this.context, {
      interrupted: () => (this.#ended ? 'the channel closed' : undefined),
      persist: () => void this.#uris.add(uri),
    });
    if (outcome !== undefined) throw outcome.error;
    return {};
  }

  /** `resources/unsubscribe` (DESIGN L4): `{}`, also for a URI that was never subscribed. */
  unsubscribe(params: Readonly<Record<string, unknown>> | undefined): object {
    const uri = requireUri('resources/unsubscribe', params);
    cancelSubscribe(this, uri, 'resources/unsubscribe arrived');
    this.live.get(uri)?.unsubscribe();
    this.live.delete(uri);
    this.#uris.delete(uri);
    return {};
  }

  /** The channel ended: every subscription is released, every subscribe in progress cancelled. Idempotent. */
  end(): void {
    this.#ended = true;
    for (const subscription of this.live.values()) subscription.unsubscribe();
    this.live.clear();
    this.#uris.clear();
    cancelSubscribes(this, 'the channel closed');
  }
}
