import type { Observable } from 'rxjs';
import type { Broadcast } from '../lib/broadcast.js';
import type { RequestContext } from '../lib/context.js';
import type { ListenFilter, ServerCapabilities } from '../lib/filter.js';
import type { Frame, MessageFrame } from '../lib/frame.js';
import type { Hub } from '../lib/hub.js';
import { attachTopics } from '../lib/notifications.js';
import { type QueuePlan, QueueStage } from '../operators/dropWhenQueueExceeds.js';
import { type SourceRegistration, StageObservable } from '../operators/stage.js';
import type { ResourceAccess } from './authorize.js';
import type { Envelope } from './envelope.js';
import { requireUri, SubscriptionSet } from './subscriptionSet.js';

/** What a channel's legacy era is served from: the core's hub, capabilities and resource decision. @internal */
export interface ChannelSessionParts {
  readonly hub: Hub;
  readonly capabilities: ServerCapabilities;
  readonly access: ResourceAccess;
}

/**
 * The legacy era (2025-03-26 / 2025-06-18 / 2025-11-25) of one message channel: `resources/subscribe`
 * and `resources/unsubscribe` (DESIGN L3–L5) and the list changes, delivered on the channel itself.
 *
 * Over HTTP a session has an id, a GET stream its client opens first, event ids and a replay
 * buffer, all because its requests and its stream are separate connections that come and go. A
 * channel is one connection for its whole life: the channel is the session. So there is no session
 * id, no GET stream (a subscribe needs no stream opened first), no event ids and no replay: nothing
 * outlives the channel. What stays the same is every subscription rule: the channel's URIs are a
 * {@link SubscriptionSet}, as an HTTP session's and an SDK 1.x session's are.
 *
 * Its notifications (`notifications/resources/updated`, the advertised `…/list_changed`) go through
 * one bounded queue on the channel's demand (`dropWhenQueueExceeds`, with the endpoint's
 * `maxStreamQueue` and `maxStreamQueueBytes`): while the host does not read, identical ones
 * coalesce and the rest are dropped past the bounds, as on a GET stream.
 * @internal
 */
export class ChannelSubscriptions extends SubscriptionSet {
  #entry: { next(frame: Frame): void } | undefined = undefined;
  #ended = false;

  constructor(
    private readonly parts: ChannelSessionParts,
    /** The context of the channel's requests, `context.session` set. */
    readonly context: RequestContext,
    private readonly queue: QueuePlan,
    private readonly cap: number,
  ) {
    super();
  }

  /** How many URIs are subscribed (a source that ended at once still counts, as on a session's record). */
  get size(): number {
    return this.uris.length;
  }

  /**
   * The channel's legacy notifications: the advertised list changes (for the channel principal's
   * scopes) and the changes of its subscribed URIs, through one queue on `demand$`.
   */
  feed(demand$: Broadcast<boolean>): Observable<Frame> {
    const { hub, capabilities } = this.parts;
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
    return new StageObservable<Frame>(source, () => [new QueueStage(this.queue, demand$)]);
  }

  override resourceUpdated(frame: MessageFrame): void {
    this.#entry?.next(frame);
  }

  /** `resources/subscribe` (DESIGN L3–L5): `{}`, or throws its JSON-RPC error. */
  async subscribe(params: Envelope['params']): Promise<object> {
    const uri = requireUri('resources/subscribe', params);
    const interrupted = () => (this.#ended ? 'the channel closed' : undefined);
    await this.subscribeUri(uri, this.context, { access: this.parts.access, cap: this.cap, interrupted });
    return {};
  }

  /** `resources/unsubscribe` (DESIGN L4): `{}`, also for a URI that was never subscribed. */
  async unsubscribe(params: Envelope['params']): Promise<object> {
    this.unsubscribeUri(requireUri('resources/unsubscribe', params));
    return {};
  }

  /** The channel ended: every subscription is released, every subscribe in progress cancelled. Idempotent. */
  close(): void {
    this.#ended = true;
    this.end('the channel closed');
  }
}
