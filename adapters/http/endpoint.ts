import type { SchedulerLike } from 'rxjs';
import { Broadcast } from '../../lib/broadcast.js';
import { anonymous, AuthError, type AuthInfo } from '../../lib/auth.js';
import type { EndpointRequest, MethodHandler, RequestContext } from '../../lib/context.js';
import type { ServerCapabilities } from '../../lib/filter.js';
import { HttpError } from '../../lib/httpError.js';
import type { Hub } from '../../lib/hub.js';
import { ErrorCode, JsonRpcError, type JsonRpcId } from '../../lib/jsonrpc.js';
import type { CloseReason } from '../../lib/frame.js';
import type { ListenOptions } from '../../lib/options.js';
import { PrincipalRegistry, type PrincipalCap } from '../../lib/principals.js';
import { LEGACY_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSION, RECOGNIZED_LEGACY_VERSIONS } from '../../lib/protocol.js';
import { ReplayBuffer } from '../../lib/replayBuffer.js';
import { hubResources } from '../../lib/resources.js';
import { MemorySessionStore } from '../../lib/session.js';
import { StreamSlots } from '../../lib/slots.js';
import { reportError } from '../../lib/telemetry.js';
import { ResourceAccess } from '../../protocol/authorize.js';
import { readJson } from './body.js';
import { CHANNEL_PARTS, type ChannelParts } from '../../protocol/channelParts.js';
import { agreedLegacyVersion, discoverResult, initializeResult } from '../../protocol/discover.js';
import { type Envelope, parseEnvelope } from '../../protocol/envelope.js';
import { type ClientAddress, withClientAddress } from './clientAddress.js';
import type { CorsPolicy } from './cors.js';
import { hostFieldError } from './hostCheck.js';
import type { LiveSession } from '../../protocol/legacy/liveSession.js';
import { LegacySessions, type SessionStats } from '../../protocol/legacy/sessions.js';
import { listenPlans, type ListenPlans, reportDrop } from '../../operators/listenPipeline.js';
import { sessionPlans } from '../../operators/sessionPipeline.js';
import { ListenStreams } from '../../protocol/listen.js';
import type { StreamInfo, StreamsOptions } from '../../protocol/inspect.js';
import { principalArgument, reasonArgument, revokePrincipal, type RevokeResult } from '../../protocol/revoke.js';
import { type McpEndpointOptions, resolveEndpointOptions } from './options.js';
import { ProviderFeeds } from '../../protocol/providerFeeds.js';
import { acceptsEventStream, capacityRefusal, type EndpointResponse, json, jsonError, shutdownRefusal, SSE_HEADERS } from '../../protocol/responses.js';
import { RESOURCE_TEMPLATES_LIST, resourceTemplatesMethod } from '../../protocol/templates.js';

/** Counts of what an endpoint holds now (for leak checks and metrics). */
export interface EndpointStats {
  /** Open listen streams. */
  readonly streams: number;
  /** Slots held in the (possibly shared) pool. */
  readonly slots: number;
  /** Principals with at least one listen stream (admitted or open); legacy GET streams are bounded by sessions instead. */
  readonly principals: number;
  /** Legacy sessions held on this node (live, or in their grace period, or idle until evicted). */
  readonly sessions: number;
  /** Live change-source subscriptions of legacy sessions (resource URIs, and one per session for list changes). */
  readonly sessionSubscriptions: number;
}

const NO_SESSIONS: SessionStats = Object.freeze({ sessions: 0, streams: 0, subscriptions: 0 });

/**
 * The transport-neutral MCP endpoint (modern era, protocol revision 2026-07-28): one code path
 * that every adapter (node:http, Fetch API) drives.
 *
 * `handle` turns a request into a response description: a JSON answer, or an SSE stream that the
 * adapter subscribes to with its socket's demand. It serves `subscriptions/listen` (DESIGN
 * M1–M14) and the JSON-RPC methods it is given; it applies the server-wide and per-principal
 * caps. An HTTP 500 never comes out of it: every failure is a documented status and JSON-RPC error.
 *
 * @example
 * const endpoint = new McpEndpoint({ hub, capabilities: { resources: true }, keepAliveInterval: 10_000 });
 * http.createServer(nodeHandler(endpoint)).listen(3000);
 * @see nodeHandler
 * @see webHandler
 */
export class McpEndpoint {
  /** Where notifications come from (the `hub` option). */
  readonly hub: Hub;
  /** The server-wide stream slots (the `slots` option, or a pool of `maxStreams`). */
  readonly slots: StreamSlots;
  /** The per-principal cap listen streams are admitted through (the `principals` option, or a registry of `maxListensPerPrincipal`). */
  readonly principals: PrincipalCap;
  /** The listen options with their defaults filled in (durations in milliseconds). */
  readonly listenOptions: Readonly<ListenOptions>;
  /** What the server advertises; a listen honours only these. */
  readonly capabilities: ServerCapabilities;
  /** Largest accepted request body, in bytes (see {@link McpEndpointOptions.maxBodyBytes}). */
  readonly maxBodyBytes: number;
  /** Milliseconds a request body may take to arrive (see {@link McpEndpointOptions.bodyTimeout}). */
  readonly bodyTimeout: number;
  readonly #options: McpEndpointOptions;
  readonly #legacy: LegacySessions | undefined;
  readonly #allowDelete: boolean;
  readonly #maxSubscriptionsPerSession: number;
  readonly #hostCheck: ((request: EndpointRequest) => string | undefined) | undefined;
  readonly #cors: CorsPolicy | undefined;
  readonly #clientAddress: ClientAddress | undefined;
  readonly #scheduler: SchedulerLike;
  /** Milliseconds a client refused for capacity is told to wait (see {@link McpEndpointOptions.capacityRetryAfter}). */
  readonly #capacityRetryAfter: number;
  readonly #listens: ListenStreams;
  readonly #feeds: ProviderFeeds;
  /** The built-in `server/discover` result (see {@link McpEndpointOptions}). */
  readonly #discover: Readonly<Record<string, unknown>>;
  /** The built-in `resources/templates/list`, when `resources` is advertised. */
  readonly #templates: MethodHandler | undefined;
  // A Broadcast (a Subject-like Observable) so that each listen stream attaches to it directly.
  readonly #shutdown = new Broadcast<void>();
  #closed = false;
  /** Who may watch which URI (both eras, HTTP and channels). */
  readonly #access: ResourceAccess;
  /** The legacy `initialize` result at a revision (message channels answer it; HTTP sessions have their own). */
  readonly #initializeResult: (protocolVersion: string) => Record<string, unknown>;
  /** What a message channel serves through, made at its first use. */
  #channelParts: ChannelParts | undefined;

  /**
   * @param options see {@link McpEndpointOptions}; `hub` is required.
   * @throws InvalidOptionError naming `McpEndpoint options` when `options` is not an object (a Hub
   *   given instead is told to pass `{ hub }`), else the first option that is unknown (with the
   *   nearest known name) or unusable: `hub` not a Hub (an endpoint is told to pass its `.hub`),
   *   `capabilities` with a key other than tools, prompts, resources, tasks or a value not a
   *   boolean, a hook (`authenticate`, `canRead`, `subscribeHook`, `eventLog`) or a `methods` entry
   *   not a function, `principals`, `slots`, `sessionStore`, `sessionBus` or a resource provider
   *   without its methods, `serverInfo` without string `name` and `version`, a number out of range.
   */
  constructor(options: McpEndpointOptions) {
    const resolved = resolveEndpointOptions(options);
    const { listenOptions, limits, sessionOptions, serverInfo, extraCapabilities } = resolved;
    this.listenOptions = listenOptions;
    this.hub = options.hub;
    this.slots = options.slots ?? new StreamSlots(limits.maxStreams);
    this.principals = options.principals ?? new PrincipalRegistry(limits.maxListensPerPrincipal);
    this.capabilities = resolved.capabilities;
    this.maxBodyBytes = resolved.maxBodyBytes;
    this.bodyTimeout = resolved.bodyTimeout;
    this.#capacityRetryAfter = resolved.capacityRetryAfter;
    this.#scheduler = resolved.scheduler;
    this.#options = options;
    this.#hostCheck = resolved.hostCheck;
    this.#cors = resolved.cors;
    this.#clientAddress = resolved.clientAddress;
    this.#allowDelete = sessionOptions.allowClientSessionDelete;
    this.#maxSubscriptionsPerSession = sessionOptions.maxSubscriptionsPerSession;
    this.#discover = discoverResult(this.capabilities, extraCapabilities, serverInfo, options.instructions);
    // One decision for both eras: a listen and a legacy subscribe ask the same providers and hooks.
    const providers = options.resourceProviders ?? [hubResources(this.hub)];
    this.#templates = this.capabilities.resources ? resourceTemplatesMethod(providers) : undefined;
    const access = new ResourceAccess({
      providers,
      canRead: options.canRead,
      subscribeHook: options.subscribeHook,
    });
    this.#access = access;
    this.#initializeResult = (protocolVersion) => initializeResult(protocolVersion, this.capabilities, extraCapabilities, serverInfo, options.instructions);
    this.#feeds = new ProviderFeeds(this.hub);
    this.#listens = new ListenStreams({
      hub: this.hub,
      slots: this.slots,
      principals: this.principals,
      // What every listen stream of the endpoint shares, made once (each operator's own plan).
      plans: listenPlans(listenOptions, this.#shutdown, this.#scheduler),
      capabilities: this.capabilities,
      access,
      feeds: this.#feeds,
      capacityRetryAfter: this.#capacityRetryAfter,
      emptyListen: resolved.emptyListen,
    });
    this.#legacy =
      options.legacy === false
        ? undefined
        : new LegacySessions({
            hub: this.hub,
            store: options.sessionStore ?? new MemorySessionStore(),
            access,
            options: sessionOptions,
            capabilities: this.capabilities,
            extraCapabilities,
            serverInfo,
            instructions: options.instructions,
            streams: sessionPlans({
              keepAliveInterval: listenOptions.keepAliveInterval,
              maxStreamLifetime: listenOptions.maxStreamLifetime,
              reconnectDelay: sessionOptions.reconnectDelay,
              listenMaxQueue: listenOptions.listenMaxQueue,
              listenMaxQueueBytes: listenOptions.listenMaxQueueBytes,
              onDrop: reportDrop,
              shutdown$: this.#shutdown,
              scheduler: this.#scheduler,
            }),
            slots: this.slots,
            scheduler: this.#scheduler,
            eventLog: options.eventLog ?? (() => new ReplayBuffer(sessionOptions.replayBufferSize)),
            bus: options.sessionBus,
            capacityRetryAfter: this.#capacityRetryAfter,
          });
  }

  /**
   * True when callers are identified by the `authenticate` option; false when they are anonymous
   * and told apart by `EndpointRequest.remoteAddress` alone (which an adapter must then supply).
   */
  get authenticates(): boolean {
    return this.#options.authenticate !== undefined;
  }

  /** What the endpoint holds now. */
  get stats(): EndpointStats {
    const legacy = this.#legacy?.stats ?? NO_SESSIONS;
    return {
      streams: this.#listens.size + legacy.streams,
      slots: this.slots.inUse,
      principals: this.principals.size,
      sessions: legacy.sessions,
      sessionSubscriptions: legacy.subscriptions,
    };
  }

  /**
   * Closes every open stream gracefully (closing frames with reason `shutdown`) and answers later
   * listens with 503. Idempotent.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#listens.close();
    this.#shutdown.next();
    this.#shutdown.complete();
    this.#feeds.close();
    this.#legacy?.close();
  }

  /**
   * The parts a message channel (`adapters/channel/`: stdio, WebSocket, an in-process pair) serves
   * through: this endpoint's own admission, authorization, plans and answers. Made once, at the
   * first channel; the channels' listen plans differ from HTTP's in one thing only, what a stream
   * that closes while its channel is not reading does (`stalledEnd: 'control'`: its closing frames
   * wait in the channel's buffer, since dropping the channel would end every other stream on it).
   * @internal
   */
  [CHANNEL_PARTS](): ChannelParts {
    return (this.#channelParts ??= this.#makeChannelParts());
  }

  #makeChannelParts(): ChannelParts {
    const plans: ListenPlans = listenPlans(this.listenOptions, this.#shutdown, this.#scheduler, 'control');
    const legacy = this.#legacy === undefined ? undefined : this.#options;
    return {
      hub: this.hub,
      slots: this.slots,
      capabilities: this.capabilities,
      maxBodyBytes: this.maxBodyBytes,
      access: this.#access,
      queue: plans.queue,
      shutdown$: this.#shutdown,
      legacy:
        legacy === undefined
          ? undefined
          : {
              maxSubscriptions: this.#maxSubscriptionsPerSession,
              initialize: async (params, context) => {
                const protocolVersion = agreedLegacyVersion(params);
                const own = this.#own('initialize');
                const answer = own === undefined ? undefined : await callOwn(own, 'initialize', params, context);
                return { protocolVersion, result: answer === undefined ? this.#initializeResult(protocolVersion) : { ...(answer as object), protocolVersion } };
              },
            },
      isClosed: () => this.#closed,
      listen: (id, params, context) => this.#listens.open(id, params, context, plans),
      call: (id, method, params, context) => this.#call(id, method, params, context),
      admit: async (request) => {
        // What an HTTP request is checked for before anything else, for the request that opens a
        // channel (a WebSocket upgrade): one Host, DNS rebinding, then who is calling.
        const hosts = hostFieldError(request);
        if (hosts !== undefined) throw new HttpError(400, new JsonRpcError(ErrorCode.InvalidRequest, hosts));
        const refused = this.#hostCheck?.(request);
        if (refused !== undefined) throw new HttpError(403, new JsonRpcError(ErrorCode.InvalidRequest, refused));
        const resolve = this.#clientAddress;
        return this.#authenticate(resolve === undefined ? request : withClientAddress(request, resolve));
      },
    };
  }

  /**
   * A snapshot of what this endpoint serves now: one entry per open listen stream (era `modern`,
   * oldest first), then one per legacy session held on this node (era `legacy`, with its GET
   * stream's queue when one is open). Each says its id (what {@link McpEndpoint.closeStream}
   * takes), principal, when it opened, what it listens to (counts; the URIs and task ids with
   * `{ uris: true }`), what its queue holds for a client that is not reading, and how many
   * notifications it dropped and coalesced.
   *
   * This is the application's own view and carries identifiers (principals, request and session
   * ids, URIs on request), unlike telemetry. It reads what each stream already holds: about 1 µs
   * per stream, a few milliseconds for 10 000 (`bench/snapshot.mjs`).
   *
   * @example
   * const stalled = endpoint.streams().filter((stream) => stream.queuedBytes > 512 * 1024);
   * @param options `uris`: include the URIs and task ids (default `false`).
   * @see McpEndpoint.revoke
   */
  streams(options: StreamsOptions = {}): StreamInfo[] {
    const listens: StreamInfo[] = this.#listens.snapshot(options);
    const sessions = this.#legacy?.snapshot(options);
    return sessions === undefined ? listens : listens.concat(sessions);
  }

  /**
   * Ends one stream now: a listen stream (`listen-<n>`) gets its closing frames with `reason`
   * (`notifications/cancelled`, then the listen result); a legacy session (its session id) ends
   * with its GET stream, its record is removed and its id answers 404 from then on. On this node
   * only.
   * @param id an `id` of {@link McpEndpoint.streams}.
   * @param reason the close reason the client and telemetry are told; defaults to `'revoked'`.
   * @returns false when this node has no stream or session with that id.
   * @throws InvalidOptionError (a rejection) for an unknown reason.
   */
  async closeStream(id: string, reason: CloseReason = 'revoked'): Promise<boolean> {
    const checked = reasonArgument(reason);
    if (typeof id !== 'string') return false;
    if (this.#listens.closeStream(id, checked)) return true;
    return (await this.#legacy?.endById(id, checked)) ?? false;
  }

  /**
   * Ends every stream and legacy session of `principal` now, on every node of the fleet: its
   * listen streams get their closing frames with `reason` (`notifications/cancelled` with reason
   * `revoked`, then the listen result; stop reason `revoked`), listens still being admitted end as
   * they open, its legacy GET streams end and its sessions are removed (their ids answer 404). The
   * other nodes hear it through the principal cap (`RedisPrincipalCap`) and the session bus
   * (`RedisSessionBus`).
   *
   * It ends what is open; it does not keep the principal out. Have `authenticate` refuse the
   * revoked credential first, or its clients reconnect at once.
   *
   * @example
   * // The user logged out: their token is refused from now on, and their open streams end.
   * denyList.add(tokenId);
   * await endpoint.revoke(`sub:${userId}`);
   * @param principal the principal `authenticate` returned (anonymous callers: their address bucket, as `streams()` shows it).
   * @param reason the close reason; defaults to `'revoked'`.
   * @returns what was ended on this node.
   * @throws InvalidOptionError (a rejection) for an empty principal or an unknown reason: nothing is ended.
   * @throws RevokeRelayError (a rejection) when this node's were ended but the other nodes could not be told.
   */
  async revoke(principal: string, reason: CloseReason = 'revoked'): Promise<RevokeResult> {
    return revokePrincipal(this.#listens, this.#legacy, principalArgument(principal), reasonArgument(reason));
  }

  /**
   * Runs the legacy prune sweep now (it also runs every `sessionPruneInterval`): sessions idle
   * past `sessionIdleTimeout` are evicted with their streams and subscriptions.
   */
  async pruneSessions(): Promise<void> {
    await this.#legacy?.prune();
  }

  /**
   * Answers one HTTP request.
   * @param request the adapter's view of the request; with `trustProxy`, its `remoteAddress` (the
   *   connection's peer) is replaced by the client's address before anything reads it.
   * @returns a description the adapter writes; never rejects.
   */
  handle(request: EndpointRequest): Promise<EndpointResponse> {
    const answer = this.#answer(request);
    const cors = this.#cors;
    return cors === undefined ? answer : answer.then((response) => cors.apply(request, response));
  }

  async #answer(request: EndpointRequest): Promise<EndpointResponse> {
    try {
      const resolve = this.#clientAddress;
      return await this.#handle(resolve === undefined ? request : withClientAddress(request, resolve));
    } catch (error) {
      if (error instanceof HttpError) return jsonError(error.status, error.id, error.rpc, error.headers);
      // An HTTP 500 is a bug: answer the JSON-RPC internal error instead, keep the process up, and
      // report it on channels.error.
      reportError('endpoint', error);
      return jsonError(200, null, new JsonRpcError(ErrorCode.InternalError, 'internal error'));
    }
  }

  async #handle(request: EndpointRequest): Promise<EndpointResponse> {
    // Two Host lines (RFC 9112 §3.2): 400 before anything else, with or without allowedHosts.
    const hosts = hostFieldError(request);
    if (hosts !== undefined) return jsonError(400, null, new JsonRpcError(ErrorCode.InvalidRequest, hosts));
    // DNS rebinding: a foreign Host or Origin is refused before anything else.
    const refused = this.#hostCheck?.(request);
    if (refused !== undefined) return jsonError(403, null, new JsonRpcError(ErrorCode.InvalidRequest, refused));
    if (request.method === 'OPTIONS' && this.#cors !== undefined) return this.#cors.preflight(request);
    const legacy = this.#legacy;
    // MCP 2025-06-18 (transports): "If the server receives a request with an invalid or unsupported
    // MCP-Protocol-Version, it MUST respond with 400 Bad Request." Judged before anything else.
    // Earlier published revisions are recognized (a session negotiated from one runs at the newest
    // legacy revision, as `initialize` answers); a string that names no revision is refused.
    const asked = request.header('mcp-protocol-version');
    if (asked !== undefined && asked !== MODERN_PROTOCOL_VERSION && (legacy === undefined || !RECOGNIZED_LEGACY_VERSIONS.includes(asked))) {
      const spoken = legacy === undefined ? [MODERN_PROTOCOL_VERSION] : [MODERN_PROTOCOL_VERSION, ...LEGACY_PROTOCOL_VERSIONS];
      // The 2026-07-28 code and data, which the official client reads to retry at a spoken revision.
      return jsonError(
        400,
        null,
        new JsonRpcError(
          ErrorCode.UnsupportedProtocolVersion,
          `unsupported MCP-Protocol-Version ${JSON.stringify(asked)}; this server supports ${spoken.join(', ')}`,
          { supported: spoken, requested: asked },
        ),
      );
    }
    const sessionId = request.header('mcp-session-id');
    if (legacy !== undefined && sessionId !== undefined) return this.#session(legacy, sessionId, request);
    if (request.method !== 'POST') {
      if (legacy !== undefined && (request.method === 'GET' || request.method === 'DELETE')) {
        return jsonError(400, null, missingSession());
      }
      const allow = legacy === undefined ? 'POST' : this.#allowDelete ? 'POST, GET, DELETE' : 'POST, GET';
      return jsonError(405, null, new JsonRpcError(ErrorCode.InvalidRequest, `method ${request.method} is not allowed; use ${allow}`), { Allow: allow });
    }
    const auth = await this.#authenticate(request);
    const message = parseEnvelope(await this.#readBody(request));
    if (legacy !== undefined && message.method === 'initialize') {
      if (message.id === undefined) return { kind: 'empty', status: 202, headers: {} };
      try {
        // An `initialize` of `methods` answers first, so that a throw from it opens no session.
        const own = this.#own('initialize');
        const answer = own === undefined ? undefined : await callOwn(own, 'initialize', message.params, { auth, request });
        const { id, result } = await legacy.initialize(message.params, auth);
        const sent = answer === undefined ? result : { ...(answer as object), protocolVersion: (result as { protocolVersion: string }).protocolVersion };
        return json(200, { jsonrpc: '2.0', id: message.id, result: sent }, { 'Mcp-Session-Id': id });
      } catch (error) {
        if (error instanceof JsonRpcError) return jsonError(200, message.id, error);
        if (error instanceof HttpError) return jsonError(error.status, message.id, error.rpc, error.headers);
        throw error;
      }
    }
    const version = request.header('mcp-protocol-version');
    if (legacy !== undefined && version !== undefined && version !== MODERN_PROTOCOL_VERSION) {
      // A legacy client's request outside any session.
      throw new HttpError(400, missingSession(), {}, message.id ?? null);
    }
    if (message.id === undefined) return { kind: 'empty', status: 202, headers: {} };
    const context: RequestContext = { auth, request };
    if (message.method === 'subscriptions/listen') return this.#listens.listen(message.id, message.params, request, context);
    return this.#call(message.id, message.method, message.params, context);
  }

  /** A request inside a legacy session (DESIGN L1–L10): POST, GET (the stream) or DELETE. */
  async #session(legacy: LegacySessions, sessionId: string, request: EndpointRequest): Promise<EndpointResponse> {
    if (request.method !== 'POST' && request.method !== 'GET' && request.method !== 'DELETE') {
      const allow = this.#allowDelete ? 'POST, GET, DELETE' : 'POST, GET';
      return jsonError(405, null, new JsonRpcError(ErrorCode.InvalidRequest, `method ${request.method} is not allowed; use ${allow}`), { Allow: allow });
    }
    if (request.method === 'DELETE' && !this.#allowDelete) {
      return jsonError(405, null, new JsonRpcError(ErrorCode.InvalidRequest, 'this server does not let clients end sessions'), { Allow: 'POST, GET' });
    }
    const auth = await this.#authenticate(request);
    const session = await legacy.resolve(sessionId, auth);
    const context: RequestContext = { auth, request, session: { id: session.id, protocolVersion: session.protocolVersion } };
    switch (request.method) {
      case 'DELETE':
        await legacy.end(session);
        return { kind: 'empty', status: 204, headers: {} };
      case 'GET':
        return this.#sessionStream(legacy, session, request, context);
    }
    const message = parseEnvelope(await this.#readBody(request));
    if (message.id === undefined) return { kind: 'empty', status: 202, headers: {} };
    const { id, method, params } = message;
    try {
      switch (method) {
        case 'initialize':
          throw new JsonRpcError(ErrorCode.InvalidRequest, 'this session is already initialized');
        case 'subscriptions/listen':
          throw new JsonRpcError(ErrorCode.MethodNotFound, `method not found: ${method} (legacy sessions use resources/subscribe)`);
        case 'resources/subscribe':
          return json(200, { jsonrpc: '2.0', id, result: await legacy.subscribe(session, params, context) });
        case 'resources/unsubscribe':
          return json(200, { jsonrpc: '2.0', id, result: await legacy.unsubscribe(session, params) });
      }
    } catch (error) {
      if (error instanceof JsonRpcError) return jsonError(200, id, error);
      return jsonError(200, id, new JsonRpcError(ErrorCode.InternalError, `${method} failed`));
    }
    // Streamable HTTP (2025-06-18 / 2025-11-25) answers JSON-RPC errors with HTTP 200.
    return this.#call(id, method, params, context, 200);
  }

  async #sessionStream(legacy: LegacySessions, session: LiveSession, request: EndpointRequest, context: RequestContext): Promise<EndpointResponse> {
    if (!acceptsEventStream(request.header('accept'))) {
      return jsonError(406, null, new JsonRpcError(ErrorCode.InvalidRequest, 'the GET stream requires Accept: text/event-stream'));
    }
    const stream = await legacy.stream(session, request.header('last-event-id'), context, this.#shutdown);
    if (stream === undefined) throw this.#closed ? shutdownRefusal() : capacityRefusal('stream', this.#capacityRetryAfter);
    return { kind: 'stream', status: 200, headers: SSE_HEADERS, ...stream };
  }

  /** A plain JSON-RPC method from the `methods` option, else a built-in one (`server/discover`, `resources/templates/list`). */
  async #call(
    id: JsonRpcId,
    method: string,
    params: Envelope['params'],
    context: RequestContext,
    notFoundStatus = 404,
  ): Promise<EndpointResponse> {
    const handler = this.#own(method) ?? (method === RESOURCE_TEMPLATES_LIST ? this.#templates : undefined);
    if (handler === undefined) {
      // 2026-07-28: a client's first request; a legacy session has no use for it.
      if (method === 'server/discover' && context.session === undefined) return json(200, { jsonrpc: '2.0', id, result: this.#discover });
      return jsonError(notFoundStatus, id, new JsonRpcError(ErrorCode.MethodNotFound, `method not found: ${method}`));
    }
    try {
      return json(200, { jsonrpc: '2.0', id, result: await callOwn(handler, method, params, context) });
    } catch (error) {
      if (error instanceof JsonRpcError) return jsonError(200, id, error);
      if (error instanceof HttpError) return jsonError(error.status, id, error.rpc, error.headers);
      throw error;
    }
  }

  /** The handler `methods` gives for `method` (own entries only: never `toString` or `__proto__`). */
  #own(method: string): MethodHandler | undefined {
    const methods = this.#options.methods;
    return methods !== undefined && Object.hasOwn(methods, method) ? methods[method] : undefined;
  }

  #readBody(request: EndpointRequest): Promise<unknown> {
    return readJson(request.body, request.header('content-length'), this.maxBodyBytes, this.bodyTimeout, this.#scheduler);
  }

  async #authenticate(request: EndpointRequest): Promise<AuthInfo> {
    const authenticate = this.#options.authenticate;
    if (authenticate === undefined) return anonymous(request.remoteAddress);
    try {
      const auth = await authenticate(request);
      // "Never expires" written as Infinity is no expiry; any other non-finite expiry fails closed.
      if (auth.expiresAt === Number.POSITIVE_INFINITY) return { principal: auth.principal, scopes: auth.scopes };
      if (auth.expiresAt !== undefined && !Number.isFinite(auth.expiresAt)) return { ...auth, expiresAt: 0 };
      return auth;
    } catch (error) {
      if (error instanceof AuthError) {
        throw new HttpError(401, new JsonRpcError(ErrorCode.InvalidRequest, `unauthorized: ${error.message}`), {
          'WWW-Authenticate': error.challenge,
        });
      }
      throw error;
    }
  }
}

/** Runs a handler of `methods`: its result (`{}` for none), or its JSON-RPC or HTTP error; any other throw is `-32603` "<method> failed". */
async function callOwn(handler: MethodHandler, method: string, params: Envelope['params'], context: RequestContext): Promise<unknown> {
  try {
    return (await handler(params, context)) ?? {};
  } catch (error) {
    if (error instanceof JsonRpcError || error instanceof HttpError) throw error;
    throw new JsonRpcError(ErrorCode.InternalError, `${method} failed`);
  }
}

function missingSession(): JsonRpcError {
  return new JsonRpcError(ErrorCode.InvalidRequest, 'Mcp-Session-Id header is required (send initialize first)');
}
