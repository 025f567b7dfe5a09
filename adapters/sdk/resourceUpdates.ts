// `resources/subscribe` for servers built on the official SDK 1.x: this library's resource
// providers and hub decide and source, the SDK server sends. Typed structurally (no SDK import).
import type { Subscription } from 'rxjs';
import type { AuthInfo } from '../../lib/auth.js';
import type { EndpointRequest, RequestContext } from '../../lib/context.js';
import { InvalidOptionError } from '../../lib/errors.js';
import type { Hub } from '../../lib/hub.js';
import { ErrorCode, JsonRpcError } from '../../lib/jsonrpc.js';
import { hubResources, resourceProvider, type ResourceProvider } from '../../lib/resources.js';
import { reportError } from '../../lib/telemetry.js';
import { arrayOf, callback, hub as validHub, implementing, options as validOptions } from '../../lib/validate.js';
import { ResourceAccess } from '../../protocol/authorize.js';
import { requireUri, SubscriptionSet } from '../../protocol/subscriptionSet.js';
import { cancelledError } from '../../protocol/subscriptions.js';

/**
 * What {@link ResourceUpdates} needs of an SDK server: the low-level `Server` of
 * `@modelcontextprotocol/sdk` 1.x (`mcpServer.server`) has all four methods.
 */
export interface ResourceUpdateSender {
  sendResourceUpdated(params: { uri: string }): Promise<void>;
  sendToolListChanged?(): Promise<void> | void;
  sendPromptListChanged?(): Promise<void> | void;
  sendResourceListChanged?(): Promise<void> | void;
}

/** The parts of the SDK 1.x `RequestHandlerExtra` read here (what the SDK passes a request handler). */
export interface SdkRequestExtra {
  /** The validated token, as the SDK's auth middleware sets it: `expiresAt` in seconds since the epoch. */
  readonly authInfo?: { readonly clientId?: string; readonly scopes?: readonly string[]; readonly expiresAt?: number };
  readonly sessionId?: string;
  readonly requestInfo?: { readonly headers?: Readonly<Record<string, string | readonly string[] | undefined>> };
}

/** A `resources/subscribe` or `resources/unsubscribe` request as the SDK hands it to its handler. */
export interface SdkResourceRequest {
  readonly params: { readonly uri: string };
}

/** Hub list changes a {@link ResourceUpdates} can forward to its session. */
export type ListChange = 'tools' | 'prompts' | 'resources';

/** Options of {@link ResourceUpdates}. */
export interface ResourceUpdatesOptions {
  /**
   * The hub: its `notifyResourceUpdated(uri)` publishes reach the session's subscriptions when no
   * `resourceProviders` are given, and its list changes when `listChanges` names them.
   */
  readonly hub?: Hub;
  /**
   * Who owns which URIs, who may read them and where their changes come from, asked in order as
   * the endpoint asks them for a legacy `resources/subscribe` (see {@link ResourceProvider}).
   * Defaults to `[hubResources(hub)]`: every URI, readable by everyone, changes from the hub.
   */
  readonly resourceProviders?: readonly ResourceProvider[];
  /** The hub's list changes to forward as `notifications/{tools,prompts,resources}/list_changed`; defaults to none. */
  readonly listChanges?: readonly ListChange[];
  /**
   * Who is calling, from the SDK's request extra; what providers' `canRead` receive as
   * `context.auth`. Defaults to the SDK's `authInfo` (principal `client:<clientId>`, its scopes,
   * `expiresAt` turned into milliseconds), else principal `session:<sessionId>` with no scopes.
   */
  readonly authenticate?: (extra: SdkRequestExtra | undefined) => AuthInfo;
  /** The most URIs one session may subscribe to, a positive integer count; defaults to 1000. */
  readonly maxSubscriptions?: number;
  /**
   * Told the session's subscribed URIs (in subscription order) after every change, and awaited
   * before the request is answered: persist them here so another node can {@link ResourceUpdates.restore}.
   */
  readonly onChange?: (uris: readonly string[]) => void | Promise<void>;
}

const UPDATES_OPTIONS: readonly (keyof ResourceUpdatesOptions)[] = ['hub', 'resourceProviders', 'listChanges', 'authenticate', 'maxSubscriptions', 'onChange'];
const LIST_CHANGES = "an array of 'tools', 'prompts' and 'resources'";

/** What {@link ResourceUpdates.restore} did with each URI. */
export interface RestoreResult {
  readonly restored: readonly string[];
  /** No longer subscribable or readable: left out of the subscriptions (and `onChange` told). */
  readonly dropped: readonly string[];
  /** A provider failed: kept in the subscriptions, live nowhere; retry with another restore. */
  readonly failed: readonly string[];
}

/**
 * Serves `resources/subscribe` and `resources/unsubscribe` for one session of an SDK 1.x server:
 * each subscribed URI's changes, from this library's resource providers (by default the hub's
 * `notifyResourceUpdated(uri)`), are sent as `notifications/resources/updated {uri}` through the
 * SDK server's own `sendResourceUpdated`, on the session's GET stream, with the ids of the
 * transport's `eventStore` (see {@link replayEventStore}).
 *
 * It answers as the endpoint's legacy sessions do (DESIGN L3, L4): `{}` on success;
 * `-32602 resources/subscribe requires params.uri`; `-32602 resource is not subscribable: <uri>`
 * when no provider owns it; `-32602 permission denied: <uri>` when `canRead` says no; `-32603
 * failed to subscribe: <uri>` when a provider throws (reported on `channels.error`); `-32602
 * resources/subscribe for <uri> was cancelled: <reason>` when an unsubscribe, a newer subscribe or
 * `close()` overtakes it. Re-subscribing replaces the earlier subscription; unsubscribing an
 * unknown URI answers `{}`. A scoped hub publish is sent only to principals holding its scope.
 * Changes of one URI that arrive synchronously (a burst) are sent as one notification: it carries
 * nothing but the URI, and the SDK would queue every copy for a slow client.
 *
 * `subscribe` and `unsubscribe` are bound: hand them to the SDK as they are. The SDK server must
 * declare `resources: { subscribe: true }`; call `close()` when the session ends.
 *
 * @example
 * import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
 * import { SubscribeRequestSchema, UnsubscribeRequestSchema } from '@modelcontextprotocol/sdk/types.js';
 * const server = new McpServer({ name: 'files', version: '1.0.0' }, { capabilities: { resources: { subscribe: true } } });
 * const updates = new ResourceUpdates(server.server, { hub });
 * server.server.setRequestHandler(SubscribeRequestSchema, updates.subscribe);
 * server.server.setRequestHandler(UnsubscribeRequestSchema, updates.unsubscribe);
 * server.server.onclose = () => updates.close();
 * hub.notifyResourceUpdated('file:///srv/a.txt'); // sent to every session subscribed to it
 * @see replayEventStore
 * @see eventLogStore
 */
export class ResourceUpdates {
  readonly #server: ResourceUpdateSender;
  /** The decision the endpoint makes for a legacy subscribe and a modern listen, over these providers. */
  readonly #access: ResourceAccess;
  readonly #authenticate: (extra: SdkRequestExtra | undefined) => AuthInfo;
  readonly #maxSubscriptions: number;
  readonly #onChange: ((uris: readonly string[]) => void | Promise<void>) | undefined;
  // The session's subscriptions, live and in progress, and where their changes go: the rules of
  // every legacy session (the endpoint's, a channel's), in one SubscriptionSet.
  readonly #set = new SdkSubscriptions((uri) => this.#notify(uri));
  readonly #lists: Subscription[] = [];
  /** URIs changed in this turn of the microtask queue, sent once when it drains. */
  readonly #changed = new Set<string>();
  #closed = false;

  /**
   * @param server the SDK server that sends (`mcpServer.server` in SDK 1.x).
   * @param options see {@link ResourceUpdatesOptions}; `hub` or `resourceProviders` is required.
   * @throws InvalidOptionError naming `server` when it has no `sendResourceUpdated`, `ResourceUpdates
   *   options` when `options` is not an object (a Hub given instead is told to pass `{ hub }`), else
   *   the option that is unknown, missing (`hub` or `resourceProviders`) or unusable: `hub` not a Hub,
   *   a provider without `subscribable`/`canRead`/`changes`, a list change the server cannot send,
   *   `authenticate` or `onChange` not a function, `maxSubscriptions` not a positive integer.
   */
  constructor(server: ResourceUpdateSender, options: ResourceUpdatesOptions) {
    implementing('server', server, ['sendResourceUpdated'], 'an SDK server with sendResourceUpdated (SDK 1.x: mcpServer.server)');
    validOptions<keyof ResourceUpdatesOptions>('ResourceUpdates options', options, UPDATES_OPTIONS, { like: '{ hub } or { resourceProviders }' });
    const { hub, resourceProviders, listChanges = [] } = options;
    if (resourceProviders === undefined && hub === undefined) {
      throw new InvalidOptionError('hub', 'a Hub (or give resourceProviders)', hub);
    }
    if (hub !== undefined) validHub('hub', hub);
    if (resourceProviders !== undefined) arrayOf('resourceProviders', resourceProviders, 'an array of ResourceProvider', resourceProvider);
    for (const name of ['authenticate', 'onChange'] as const) if (options[name] !== undefined) callback(name, options[name]);
    this.#server = server;
    this.#access = new ResourceAccess({ providers: resourceProviders ?? [hubResources(hub!)] });
    this.#authenticate = options.authenticate ?? defaultAuth;
    const max = options.maxSubscriptions ?? 1000;
    if (!Number.isSafeInteger(max) || max <= 0) throw new InvalidOptionError('maxSubscriptions', 'a positive integer count', max);
    this.#maxSubscriptions = max;
    this.#onChange = options.onChange;
    if (!Array.isArray(listChanges)) throw new InvalidOptionError('listChanges', LIST_CHANGES, listChanges);
    for (const kind of listChanges) {
      if (kind !== 'tools' && kind !== 'prompts' && kind !== 'resources') {
        throw new InvalidOptionError('listChanges', LIST_CHANGES, listChanges);
      }
      if (hub === undefined) throw new InvalidOptionError('hub', 'a Hub (listChanges forwards its list changes)', hub);
      const send = kind === 'tools' ? server.sendToolListChanged : kind === 'prompts' ? server.sendPromptListChanged : server.sendResourceListChanged;
      if (typeof send !== 'function') throw new InvalidOptionError('listChanges', `a list the server can announce (it has no send for ${kind})`, kind);
      this.#lists.push(
        hub.topic({ topic: kind }).subscribe((frame) => {
          // A scoped publish names readers this session cannot be matched against: it is not sent.
          if (frame.scope === undefined) this.#send(() => send.call(server));
        }),
      );
    }
  }

  /** The subscribed URIs, in subscription order (including any a provider failed to restore). */
  get subscriptions(): readonly string[] {
    return this.#set.uris;
  }

  /** How many subscriptions have a live change source now. */
  get live(): number {
    return this.#set.live.size;
  }

  /**
   * The `resources/subscribe` handler: `server.setRequestHandler(SubscribeRequestSchema, updates.subscribe)`.
   * @returns `{}`; rejects with a {@link JsonRpcError} the SDK answers as is.
   */
  readonly subscribe = async (request: SdkResourceRequest, extra?: SdkRequestExtra): Promise<Record<string, never>> => {
    const uri = requireUri('resources/subscribe', request?.params);
    if (this.#closed) throw cancelledError(uri, 'the session closed');
    try {
      await this.#set.subscribeUri(uri, context(this.#authenticate(extra), extra), {
        access: this.#access,
        cap: this.#maxSubscriptions,
        persist: (uris) => this.#onChange?.(uris),
      });
    } catch (error) {
      if (error instanceof JsonRpcError) throw error;
      // `authenticate` or `onChange` threw: the client hears -32603, the error goes to channels.error.
      reportError('source', error);
      throw new JsonRpcError(ErrorCode.InternalError, `failed to subscribe: ${uri}`);
    }
    return {};
  };

  /**
   * The `resources/unsubscribe` handler: `server.setRequestHandler(UnsubscribeRequestSchema, updates.unsubscribe)`.
   * @returns `{}`, also for a URI that was not subscribed.
   */
  readonly unsubscribe = async (request: SdkResourceRequest): Promise<Record<string, never>> => {
    const uri = requireUri('resources/unsubscribe', request?.params);
    this.#changed.delete(uri);
    if (this.#set.unsubscribeUri(uri)) await this.#onChange?.(this.#set.uris);
    return {};
  };

  /**
   * Establishes `uris` again, as a session's GET stream does on (re)open (DESIGN L8): what a node
   * that takes over a session calls with the URIs `onChange` persisted. At most 8 are set up at a
   * time. A URI no longer subscribable or readable is dropped from the subscriptions; one whose
   * provider fails stays, so a later restore retries it.
   *
   * @param uris the URIs to subscribe, in their original order.
   * @param extra whose subscriptions they are (as for `subscribe`); defaults to no SDK auth info.
   */
  async restore(uris: readonly string[], extra?: SdkRequestExtra): Promise<RestoreResult> {
    const ctx = context(this.#authenticate(extra), extra);
    const restored: string[] = [];
    const dropped: string[] = [];
    const failed: string[] = [];
    const unique = [...new Set(uris)].filter((uri) => typeof uri === 'string');
    // On the list from the start, in their order: failed ones stay (retried by the next restore), dropped ones leave.
    for (const uri of unique) this.#set.add(uri);
    for (let i = 0; i < unique.length; i += 8) {
      await Promise.all(
        unique.slice(i, i + 8).map(async (uri) => {
          const outcome = await this.#set.establish(uri, ctx, this.#access);
          (outcome === undefined ? restored : outcome.drop ? dropped : failed).push(uri);
        }),
      );
    }
    if (dropped.length > 0) await this.#onChange?.(this.#set.uris);
    return { restored, dropped, failed };
  }

  /** Ends every subscription and list forward (the session ended). Idempotent; later subscribes are refused. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#set.release('the session closed');
    for (const subscription of this.#lists) subscription.unsubscribe();
    this.#lists.length = 0;
    this.#changed.clear();
  }

  /**
   * Sends `resources/updated {uri}` once for however many changes of `uri` arrive synchronously:
   * the notification carries nothing but the URI, and the SDK queues whatever it is given for a
   * slow client, so a burst is one message (and one event-store write), not a thousand.
   */
  #notify(uri: string): void {
    if (this.#changed.size === 0) queueMicrotask(() => this.#flush());
    this.#changed.add(uri);
  }

  #flush(): void {
    const uris = [...this.#changed];
    this.#changed.clear();
    for (const uri of uris) this.#send(() => this.#server.sendResourceUpdated({ uri }));
  }

  #send(send: () => Promise<void> | void): void {
    try {
      const sent = send();
      // Not connected, or the transport failed: that send is lost, the session goes on.
      if (sent !== undefined) sent.catch((error: unknown) => reportError('adapter', error));
    } catch (error) {
      reportError('adapter', error);
    }
  }
}

/** An SDK session's subscriptions: a change of a subscribed URI goes to the session's sender. */
class SdkSubscriptions extends SubscriptionSet {
  constructor(private readonly changed: (uri: string) => void) {
    super();
  }

  override resourceUpdated(_frame: unknown, uri: string): void {
    this.changed(uri);
  }
}

function defaultAuth(extra: SdkRequestExtra | undefined): AuthInfo {
  const token = extra?.authInfo;
  if (token !== undefined && typeof token.clientId === 'string') {
    const scopes = new Set(Array.isArray(token.scopes) ? token.scopes.filter((scope): scope is string => typeof scope === 'string') : []);
    return typeof token.expiresAt === 'number' && Number.isFinite(token.expiresAt)
      ? { principal: `client:${token.clientId}`, scopes, expiresAt: token.expiresAt * 1000 }
      : { principal: `client:${token.clientId}`, scopes };
  }
  return { principal: `session:${extra?.sessionId ?? 'none'}`, scopes: new Set() };
}

/** The context providers receive: the SDK request's headers, no address or body (the SDK read them). */
function context(auth: AuthInfo, extra: SdkRequestExtra | undefined): RequestContext {
  const headers = extra?.requestInfo?.headers ?? {};
  const request: EndpointRequest = {
    method: 'POST',
    header: (name) => {
      const value = headers[name];
      return Array.isArray(value) ? value.join(', ') : (value as string | undefined);
    },
    remoteAddress: undefined,
    body: undefined,
  };
  const sessionId = extra?.sessionId;
  return sessionId === undefined
    ? { auth, request }
    : { auth, request, session: { id: sessionId, protocolVersion: request.header('mcp-protocol-version') ?? 'unknown' } };
}
