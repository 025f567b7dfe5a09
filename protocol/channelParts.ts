import type { Observable } from 'rxjs';
import type { AuthInfo } from '../lib/auth.js';
import type { EndpointRequest, RequestContext } from '../lib/context.js';
import type { ServerCapabilities } from '../lib/filter.js';
import type { Hub } from '../lib/hub.js';
import type { JsonRpcId } from '../lib/jsonrpc.js';
import type { StreamSlots } from '../lib/slots.js';
import type { QueuePlan } from '../operators/dropWhenQueueExceeds.js';
import type { ResourceAccess } from './authorize.js';
import type { EndpointResponse } from './responses.js';

/**
 * Where an {@link McpEndpoint} keeps the parts a message channel serves through (see
 * `adapters/channel/`): `endpoint[CHANNEL_PARTS]()`. @internal
 */
export const CHANNEL_PARTS: unique symbol = Symbol('mcp-rx-streams.channelParts');

/**
 * An endpoint's own machinery, as a message channel (stdio, a WebSocket, an in-process pair) uses
 * it: the same admission, authorization, plans and answers as its HTTP requests get, not a copy.
 * What a channel does differently (no headers, no sessions, its frames are messages) is the
 * channel's; everything that decides is here.
 * @internal
 */
export interface ChannelParts {
  readonly hub: Hub;
  /** The server-wide stream pool: a channel's legacy feed takes a slot from it, as a GET stream does. */
  readonly slots: StreamSlots;
  readonly capabilities: ServerCapabilities;
  /** The endpoint's `maxBodyBytes`: the largest message a channel takes, in bytes as received. */
  readonly maxBodyBytes: number;
  /** Who may subscribe to which URI: the decision of a legacy `resources/subscribe` and of a listen. */
  readonly access: ResourceAccess;
  /** The queue of a channel's legacy feed: the endpoint's `listenMaxQueue` and `listenMaxQueueBytes`, closing frames kept (`stalledEnd: 'control'`). */
  readonly queue: QueuePlan;
  /** Emits once when the endpoint closes (`endpoint.close()`). */
  readonly shutdown$: Observable<void>;
  /** The legacy era on a channel, absent with `legacy: false`. */
  readonly legacy: ChannelLegacyParts | undefined;
  /** True once the endpoint is closed. */
  isClosed(): boolean;
  /**
   * A `subscriptions/listen` on a channel: the endpoint's admission (slots, the per-principal cap),
   * authorization and stages, with the channel's plans (closing frames never dropped).
   * @throws HttpError 503 when the server is full or closed (the channel answers its JSON-RPC error).
   */
  listen(id: JsonRpcId, params: Readonly<Record<string, unknown>> | undefined, context: RequestContext): Promise<EndpointResponse>;
  /** Any other request: the endpoint's `methods`, then its built-in `server/discover` and `resources/templates/list`. */
  call(id: JsonRpcId, method: string, params: Readonly<Record<string, unknown>> | undefined, context: RequestContext): Promise<EndpointResponse>;
  /**
   * Admits the HTTP request a channel is opened with (a WebSocket upgrade) as the endpoint admits any
   * request: two `Host` lines refused (400), `allowedHosts`/`allowedOrigins` (403), then its
   * `authenticate` (or the anonymous default, with `trustProxy`): the channel's principal.
   * @throws HttpError 400, 403, or 401 (`AuthError`), synchronously or as a rejection.
   */
  admit(request: EndpointRequest): Promise<AuthInfo>;
}

/** The legacy era of an endpoint, as a channel serves it (no sessions: the channel is the session). @internal */
export interface ChannelLegacyParts {
  /** The `maxSubscriptionsPerSession` option: a channel's `resources/subscribe` cap. */
  readonly maxSubscriptions: number;
  /**
   * Answers `initialize` (DESIGN L1, `methods.initialize` overriding the result): the agreed
   * revision and the result.
   * @throws JsonRpcError `-32602` without a string `params.protocolVersion`, or what the override throws.
   */
  initialize(params: Readonly<Record<string, unknown>> | undefined, context: RequestContext): Promise<{ protocolVersion: string; result: unknown }>;
}
