import { asyncScheduler, Observable, type SchedulerLike, timer } from 'rxjs';
import { anonymous, AuthError, type AuthInfo } from './auth.js';
import { InvalidOptionError } from './errors.js';
import { authorizeListenFilter, type ListenFilter, parseListenFilter, type ServerCapabilities, TASKS_EXTENSION_ID } from './filter.js';
import type { Frame } from './frame.js';
import { HttpError } from './httpError.js';
import type { Hub } from './hub.js';
import { ErrorCode, exceedsBytes, isJsonRpcId, JsonRpcError, type JsonRpcId, MAX_REQUEST_ID_BYTES } from './jsonrpc.js';
import {
  LEGACY_PROTOCOL_VERSIONS,
  LegacySessions,
  type LiveSession,
  resolveSessionOptions,
  type ServerInfo,
  type SessionOptions,
  type SessionStats,
} from './legacy.js';
import { Broadcast } from './broadcast.js';
import { listenStream } from '../operators/listenPipeline.js';
import { milliseconds, positiveInteger, resolveListenOptions, resolveStreamLimits, type ListenOptions, type StreamLimits } from './options.js';
import { type Admission, PrincipalRegistry, type PrincipalCap } from './principals.js';
import { hubResources, type ResourceProvider } from './resources.js';
import { ReplayBuffer, type EventLog } from './replayBuffer.js';
import { MemorySessionStore, type SessionBus, type SessionStore } from './session.js';
import { type Slot, StreamSlots } from './slots.js';
import { reportError } from './telemetry.js';

/** The protocol revision of the modern era (`subscriptions/listen`). */
export const MODERN_PROTOCOL_VERSION = '2026-07-28';

/**
 * Every published revision of the legacy era (2024-11-05 to 2025-11-25): a request naming one is
 * served in the legacy era (a session answers it at the newest of {@link LEGACY_PROTOCOL_VERSIONS});
 * any other `MCP-Protocol-Version` but 2026-07-28 gets HTTP 400.
 */
const RECOGNIZED_LEGACY_VERSIONS: readonly string[] = Object.freeze([...LEGACY_PROTOCOL_VERSIONS, '2025-03-26', '2024-11-05']);

/** The result `_meta` key under which a 2026-07-28 server names itself (`{ name, version }`). */
const SERVER_INFO_META_KEY = 'io.modelcontextprotocol/serverInfo';

/** Response headers of every SSE stream (DESIGN M5). */
export const SSE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'Content-Type': 'text/event-stream',
  'Cache-Control': 'no-cache, no-transform',
  'X-Accel-Buffering': 'no',
});

/** Response headers of every JSON response. */
export const JSON_HEADERS: Readonly<Record<string, string>> = Object.freeze({ 'Content-Type': 'application/json' });

/** The transport-neutral view of an HTTP request that adapters build. */
export interface EndpointRequest {
  /** HTTP method, upper case. */
  readonly method: string;
  /** Reads a request header by lower-case name; several values joined with `, `. */
  readonly header: (name: string) => string | undefined;
  /** The client's address (for the anonymous principal's bucket). */
  readonly remoteAddress: string | undefined;
  /** The raw body, or a value a framework already parsed (e.g. Express `req.body`). */
  readonly body: AsyncIterable<Uint8Array> | string | Uint8Array | ParsedBody | undefined;
}

/** A body a framework has already parsed as JSON. */
export interface ParsedBody {
  readonly parsed: unknown;
}

/** Context handed to method handlers and hooks. */
export interface RequestContext {
  readonly auth: AuthInfo;
  readonly request: EndpointRequest;
  /** The legacy session the request belongs to; absent on the modern path (2026-07-28). */
  readonly session?: { readonly id: string; readonly protocolVersion: string };
}

/** A non-streaming JSON-RPC method: returns the `result` object, or throws a {@link JsonRpcError}. */
export type MethodHandler = (params: Readonly<Record<string, unknown>> | undefined, context: RequestContext) => unknown;

/** What an adapter writes back. */
export type EndpointResponse =
  | { readonly kind: 'json'; readonly status: number; readonly headers: Readonly<Record<string, string>>; readonly body: string }
  | { readonly kind: 'empty'; readonly status: number; readonly headers: Readonly<Record<string, string>> }
  | {
      readonly kind: 'stream';
      readonly status: 200;
      readonly headers: Readonly<Record<string, string>>;
      /**
       * The stream's frames; subscribe once. `demand$` is the sink's demand (`false` busy, `true`
       * ready). Unsubscribing (client gone) releases the stream's slot, cap entry and topics.
       */
      readonly open: (demand$: Observable<boolean>) => Observable<Frame>;
      /** Releases what the stream holds if it is never opened (client gone before). Idempotent. */
      readonly abandon: () => void;
    };

/**
 * Options of {@link McpEndpoint}. Every number is validated at construction (DESIGN M13).
 *
 * A bare endpoint speaks to the official clients with no extra code: it answers `server/discover`
 * (2026-07-28, the first request of `@modelcontextprotocol/client` 2.x) and `initialize` (legacy,
 * `@modelcontextprotocol/sdk` 1.x) from `serverInfo`, `capabilities` (each advertised with
 * `listChanged`, resources also with `subscribe`), `extraCapabilities` and `instructions`;
 * `server/discover` offers `supportedVersions: ["2026-07-28"]`, `initialize` agrees on 2025-11-25 or
 * 2025-06-18. An entry in `methods` of the same name overrides either answer: a `server/discover`
 * handler's result is sent instead of the built-in one; an `initialize` handler's result is sent
 * as the `initialize` result (its `protocolVersion` set to the revision the session runs at),
 * while the endpoint still opens the session (`Mcp-Session-Id`); a throw from it opens none.
 *
 * @example
 * // Built in: discover and initialize advertise tools and resources, with this server info.
 * new McpEndpoint({ hub, capabilities: { tools: true, resources: true }, serverInfo: { name: 'files', version: '1.2.0' } });
 * // Overridden: this server's own discover result (2026-07-28 results must say resultType "complete").
 * new McpEndpoint({
 *   hub,
 *   methods: {
 *     'server/discover': () => ({
 *       resultType: 'complete', ttlMs: 60_000, cacheScope: 'public',
 *       supportedVersions: ['2026-07-28'], capabilities: { resources: { subscribe: true, listChanged: true } },
 *     }),
 *   },
 * });
 */
export interface McpEndpointOptions extends Partial<ListenOptions>, Partial<StreamLimits>, Partial<SessionOptions> {
  /** Where notifications come from. */
  readonly hub: Hub;
  /** What the server advertises; a listen honours only these. Defaults to tools, prompts and resources. */
  readonly capabilities?: ServerCapabilities;
  /** Identifies the caller; throw {@link AuthError} to answer 401. Defaults to anonymous callers bucketed by address. */
  readonly authenticate?: (request: EndpointRequest) => AuthInfo | Promise<AuthInfo>;
  /** The read-scope check for resource URIs (the same one `resources/read` uses). Defaults to allowing all. */
  readonly canRead?: (uri: string, context: RequestContext) => boolean | Promise<boolean>;
  /** Optional per-URI subscribe hook run after `canRead`; false or a throw drops the URI silently. */
  readonly subscribeHook?: (uri: string, context: RequestContext) => boolean | Promise<boolean>;
  /**
   * Other JSON-RPC methods, answered with a single JSON response. An entry named `server/discover`
   * or `initialize` overrides the built-in answer (see {@link McpEndpointOptions}).
   */
  readonly methods?: Readonly<Record<string, MethodHandler>>;
  /** The per-principal cap to admit listens through (e.g. a cluster-wide one); defaults to a {@link PrincipalRegistry} of `maxListensPerPrincipal`. */
  readonly principals?: PrincipalCap;
  /** A shared server-wide slot pool (e.g. also used by streamed `tools/call`); defaults to a pool of `maxStreams`. */
  readonly slots?: StreamSlots;
  /** Largest accepted request body, in bytes; larger ones get HTTP 413. Defaults to 1 048 576 (1 MiB). */
  readonly maxBodyBytes?: number;
  /** Where time comes from; defaults to `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
  /**
   * Milliseconds a client gets to send a whole request body; slower ones get HTTP 408 and the
   * connection is closed, so a client that trickles bytes cannot hold the server. Defaults to 10 000.
   */
  readonly bodyTimeout?: number;
  /**
   * DNS-rebinding protection (for servers bound to localhost): the accepted `Host` header values.
   * An entry without a port (`localhost`) accepts any port. Any other Host gets HTTP 403 before
   * anything else is looked at. Default: no check (see {@link localhostHosts}).
   */
  readonly allowedHosts?: readonly string[];
  /**
   * The accepted `Origin` header values: an entry with a scheme (`https://app.example`) matches
   * exactly, one without (`localhost`) matches that host name on any scheme and port. A request
   * with another Origin gets HTTP 403; one without Origin (not a browser) passes. Default: no check.
   */
  readonly allowedOrigins?: readonly string[];
  /** Serve the legacy era (2025-06-18 / 2025-11-25: `initialize`, sessions, GET stream, `resources/subscribe`). Defaults to true. */
  readonly legacy?: boolean;
  /** Where legacy session records live; defaults to a new {@link MemorySessionStore}. */
  readonly sessionStore?: SessionStore;
  /**
   * The event log (ids and replay buffer) of a legacy session; defaults to a new
   * `ReplayBuffer(replayBufferSize)` per session. A fleet passes a shared log (Redis), so that a
   * reconnect served by another node replays what its client missed.
   */
  readonly eventLog?: (sessionId: string) => EventLog;
  /** Relays session commands between the nodes of a fleet (with a shared `sessionStore` and `eventLog`); default none. */
  readonly sessionBus?: SessionBus;
  /**
   * Who serves legacy `resources/subscribe`, asked in order. Defaults to one {@link hubResources}
   * provider that accepts every URI and reads with `canRead`.
   */
  readonly resourceProviders?: readonly ResourceProvider[];
  /**
   * Who the server is: the legacy `initialize` result's `serverInfo`, and
   * `_meta["io.modelcontextprotocol/serverInfo"]` of the `server/discover` result (2026-07-28).
   * Defaults to `{ name: 'mcp-rx-streams', version: '0.1.0' }`.
   */
  readonly serverInfo?: ServerInfo;
  /** The `instructions` of the `initialize` and `server/discover` results; default none. */
  readonly instructions?: string;
  /**
   * More capabilities to advertise next to tools/prompts/resources (e.g. `{ logging: {} }`), in the
   * `initialize` and `server/discover` results alike; default none.
   */
  readonly extraCapabilities?: Readonly<Record<string, unknown>>;
  /**
   * Milliseconds a legacy `resources/subscribe` that finds no live GET stream waits for one to
   * open before answering `-32602` (official clients open the GET without waiting for it, so
   * their first subscribe can overtake it). 0 answers at once. Defaults to 1000.
   */
  readonly subscribeStreamWait?: number;
}

/** Counts of what an endpoint holds now (for leak checks and metrics). */
export interface EndpointStats {
  /** Open listen streams. */
  readonly streams: number;
  /** Slots held in the (possibly shared) pool. */
  readonly slots: number;
  /** Principals with at least one live stream. */
  readonly principals: number;
  /** Legacy sessions held on this node (live, or in their grace period, or idle until evicted). */
  readonly sessions: number;
  /** Live change-source subscriptions of legacy sessions (resource URIs, and one per session for list changes). */
  readonly sessionSubscriptions: number;
}

const KNOWN_OPTIONS = new Set([
  'hub', 'capabilities', 'authenticate', 'eventLog', 'sessionBus', 'canRead', 'subscribeHook', 'methods', 'slots', 'principals', 'maxBodyBytes', 'scheduler',
  'keepAliveInterval', 'listenIdleTimeout', 'maxStreamLifetime', 'listenMaxQueue', 'listenMaxQueueBytes', 'closeNotice',
  'maxListensPerPrincipal', 'maxStreams', 'bodyTimeout', 'allowedHosts', 'allowedOrigins', 'legacy', 'sessionStore',
  'resourceProviders', 'serverInfo', 'instructions', 'extraCapabilities', 'sessionIdleTimeout', 'sessionGracePeriod',
  'sessionPruneInterval', 'replayBufferSize', 'allowClientSessionDelete', 'subscribeStreamWait', 'maxSessions', 'maxSubscriptionsPerSession',
  'maxSessionsPerPrincipal', 'reconnectDelay',
]);

const DEFAULT_SERVER_INFO: ServerInfo = Object.freeze({ name: 'mcp-rx-streams', version: '0.1.0' });

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
  readonly hub: Hub;
  readonly slots: StreamSlots;
  readonly principals: PrincipalCap;
  readonly listenOptions: Readonly<ListenOptions>;
  readonly capabilities: ServerCapabilities;
  readonly maxBodyBytes: number;
  /** Milliseconds a request body may take to arrive (see {@link McpEndpointOptions.bodyTimeout}). */
  readonly bodyTimeout: number;
  readonly #options: McpEndpointOptions;
  readonly #legacy: LegacySessions | undefined;
  readonly #allowDelete: boolean;
  readonly #hostCheck: ((request: EndpointRequest) => string | undefined) | undefined;
  readonly #scheduler: SchedulerLike;
  /** The built-in `server/discover` result (see {@link McpEndpointOptions}). */
  readonly #discover: Readonly<Record<string, unknown>>;
  // A Broadcast (a Subject-like Observable) so that each listen stream attaches to it directly.
  readonly #shutdown = new Broadcast<void>();
  #streams = 0;
  #closed = false;

  constructor(options: McpEndpointOptions) {
    for (const key of Object.keys(options)) {
      if (!KNOWN_OPTIONS.has(key)) throw new InvalidOptionError(key, 'a known McpEndpoint option', (options as unknown as Record<string, unknown>)[key]);
    }
    if (options.hub === undefined) throw new InvalidOptionError('hub', 'a Hub', options.hub);
    const { keepAliveInterval, listenIdleTimeout, maxStreamLifetime, listenMaxQueue, listenMaxQueueBytes, closeNotice } = options;
    this.listenOptions = resolveListenOptions({ keepAliveInterval, listenIdleTimeout, maxStreamLifetime, listenMaxQueue, listenMaxQueueBytes, closeNotice });
    const limits = resolveStreamLimits({ maxListensPerPrincipal: options.maxListensPerPrincipal, maxStreams: options.maxStreams });
    this.hub = options.hub;
    this.slots = options.slots ?? new StreamSlots(limits.maxStreams);
    this.principals = options.principals ?? new PrincipalRegistry(limits.maxListensPerPrincipal);
    this.capabilities = options.capabilities ?? { tools: true, prompts: true, resources: true };
    this.maxBodyBytes = options.maxBodyBytes === undefined ? 1_048_576 : positiveInteger('maxBodyBytes', options.maxBodyBytes);
    this.bodyTimeout = options.bodyTimeout === undefined ? 10_000 : milliseconds('bodyTimeout', options.bodyTimeout);
    this.#scheduler = options.scheduler ?? asyncScheduler;
    this.#options = options;
    this.#hostCheck = hostCheck(options.allowedHosts, options.allowedOrigins);
    const sessionOptions = resolveSessionOptions({
      sessionIdleTimeout: options.sessionIdleTimeout,
      sessionGracePeriod: options.sessionGracePeriod,
      sessionPruneInterval: options.sessionPruneInterval,
      replayBufferSize: options.replayBufferSize,
      allowClientSessionDelete: options.allowClientSessionDelete,
      subscribeStreamWait: options.subscribeStreamWait,
      maxSessions: options.maxSessions,
      maxSubscriptionsPerSession: options.maxSubscriptionsPerSession,
      maxSessionsPerPrincipal: options.maxSessionsPerPrincipal,
      reconnectDelay: options.reconnectDelay,
    });
    this.#allowDelete = sessionOptions.allowClientSessionDelete;
    if (options.legacy !== undefined && typeof options.legacy !== 'boolean') throw new InvalidOptionError('legacy', 'a boolean', options.legacy);
    if (options.resourceProviders !== undefined && !Array.isArray(options.resourceProviders)) {
      throw new InvalidOptionError('resourceProviders', 'an array of ResourceProvider', options.resourceProviders);
    }
    if (options.eventLog !== undefined && typeof options.eventLog !== 'function') throw new InvalidOptionError('eventLog', 'a function of a session id', options.eventLog);
    const bus = options.sessionBus;
    if (bus !== undefined && (typeof bus.nodeId !== 'string' || typeof bus.publish !== 'function' || typeof bus.connect !== 'function')) {
      throw new InvalidOptionError('sessionBus', 'a SessionBus (nodeId, publish, connect)', bus);
    }
    const { canRead } = options;
    const serverInfo = options.serverInfo ?? DEFAULT_SERVER_INFO;
    this.#discover = discoverResult(this.capabilities, options.extraCapabilities ?? {}, serverInfo, options.instructions);
    this.#legacy =
      options.legacy === false
        ? undefined
        : new LegacySessions({
            hub: this.hub,
            store: options.sessionStore ?? new MemorySessionStore(),
            providers: options.resourceProviders ?? [hubResources(this.hub, canRead === undefined ? {} : { canRead })],
            options: sessionOptions,
            capabilities: this.capabilities,
            extraCapabilities: options.extraCapabilities ?? {},
            serverInfo,
            instructions: options.instructions,
            keepAliveInterval: this.listenOptions.keepAliveInterval,
            maxQueue: this.listenOptions.listenMaxQueue,
            maxQueueBytes: this.listenOptions.listenMaxQueueBytes,
            maxStreamLifetime: this.listenOptions.maxStreamLifetime,
            slots: this.slots,
            principals: this.principals,
            scheduler: this.#scheduler,
            eventLog: options.eventLog ?? (() => new ReplayBuffer(sessionOptions.replayBufferSize)),
            bus: options.sessionBus,
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
      streams: this.#streams + legacy.streams,
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
    this.#shutdown.next();
    this.#shutdown.complete();
    this.#legacy?.close();
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
   * @param request the adapter's view of the request.
   * @returns a description the adapter writes; never rejects.
   */
  async handle(request: EndpointRequest): Promise<EndpointResponse> {
    try {
      return await this.#handle(request);
    } catch (error) {
      if (error instanceof HttpError) return jsonError(error.status, error.id, error.rpc, error.headers);
      // An HTTP 500 is a bug: answer the JSON-RPC internal error instead, keep the process up, and
      // report it on channels.error.
      reportError('endpoint', error);
      return jsonError(200, null, new JsonRpcError(ErrorCode.InternalError, 'internal error'));
    }
  }

  async #handle(request: EndpointRequest): Promise<EndpointResponse> {
    // DNS rebinding: a foreign Host or Origin is refused before anything else.
    const refused = this.#hostCheck?.(request);
    if (refused !== undefined) return jsonError(403, null, new JsonRpcError(ErrorCode.InvalidRequest, refused));
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
    if (message.method === 'subscriptions/listen') return this.#listen(message.id, message.params, request, context);
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

  #sessionStream(legacy: LegacySessions, session: LiveSession, request: EndpointRequest, context: RequestContext): EndpointResponse {
    if (!acceptsEventStream(request.header('accept'))) {
      return jsonError(406, null, new JsonRpcError(ErrorCode.InvalidRequest, 'the GET stream requires Accept: text/event-stream'));
    }
    const stream = legacy.stream(session, request.header('last-event-id'), context, this.#shutdown);
    if (stream === undefined) {
      return jsonError(503, null, new JsonRpcError(ErrorCode.ServerBusy, this.#closed ? 'server is shutting down' : 'server is at its stream capacity (maxStreams); retry later'));
    }
    return { kind: 'stream', status: 200, headers: SSE_HEADERS, ...stream };
  }

  /** A plain JSON-RPC method from the `methods` option. */
  async #call(
    id: JsonRpcId,
    method: string,
    params: Envelope['params'],
    context: RequestContext,
    notFoundStatus = 404,
  ): Promise<EndpointResponse> {
    const handler = this.#own(method);
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

  async #listen(
    id: JsonRpcId,
    params: Readonly<Record<string, unknown>> | undefined,
    request: EndpointRequest,
    context: RequestContext,
  ): Promise<EndpointResponse> {
    // M1: a listen has no JSON form.
    if (!acceptsEventStream(request.header('accept'))) {
      return jsonError(406, id, new JsonRpcError(ErrorCode.InvalidRequest, 'subscriptions/listen requires Accept: text/event-stream'));
    }
    let filter;
    try {
      filter = parseListenFilter(params, this.capabilities);
    } catch (error) {
      // 2026-07-28: a missing required client capability (-32021) is answered with HTTP 400 Bad Request.
      if (error instanceof JsonRpcError) return jsonError(error.code === ErrorCode.MissingRequiredExtension ? 400 : 200, id, error);
      throw error;
    }
    // M9: a full server is a capacity problem, answered before anyone is superseded.
    const slot = this.#closed ? undefined : this.slots.tryAcquire();
    if (slot === undefined) {
      return jsonError(503, id, new JsonRpcError(ErrorCode.ServerBusy, 'server is at its stream capacity (maxStreams); retry later'));
    }
    let authorized;
    try {
      const { canRead, subscribeHook } = this.#options;
      authorized = await authorizeListenFilter(filter, {
        canRead: canRead && ((uri) => canRead(uri, context)),
        subscribeHook: subscribeHook && ((uri) => subscribeHook(uri, context)),
      });
    } catch (error) {
      slot.release();
      throw error;
    }
    return this.#listenResponse(id, authorized, context.auth, slot);
  }

  readonly #closeStream = () => {
    this.#streams--;
  };

  // Apart from #listen so that an open stream's closures hold only what the stream needs, not the
  // request, its body and its context (times 10 000 idle streams).
  #listenResponse(id: JsonRpcId, filter: ListenFilter, auth: AuthInfo, slot: Slot): EndpointResponse {
    const { principal, expiresAt, scopes } = auth;
    const open = (demand$: Observable<boolean>) =>
      new Observable<Frame>((subscriber) => {
        const admission = this.principals.admit(principal);
        let stream: Observable<Frame>;
        try {
          stream = listenStream({
            requestId: id,
            filter,
            hub: this.hub,
            options: this.listenOptions,
            expiresAt,
            supersede$: admission.superseded$,
            shutdown$: this.#shutdown,
            demand$,
            scheduler: this.#scheduler,
            scopes,
          });
        } catch (error) {
          // Nothing was opened: give back what was taken, then fail the subscription.
          admission.release();
          slot.release();
          throw error;
        }
        this.#streams++;
        stream.subscribe(subscriber);
        // Released after the stream's own teardown (added after it subscribed), as `finalize` would;
        // an object rather than a closure, so that an open stream holds none of this scope.
        return new StreamRelease(this.#closeStream, admission, slot);
      });
    return { kind: 'stream', status: 200, headers: SSE_HEADERS, open, abandon: () => slot.release() };
  }
}

/** What an open listen stream gives back when it ends, whatever the reason. */
class StreamRelease {
  constructor(
    private readonly onClose: () => void,
    private readonly admission: Admission,
    private readonly slot: Slot,
  ) {}

  unsubscribe(): void {
    this.onClose();
    this.admission.release();
    this.slot.release();
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

/**
 * The built-in `server/discover` result (2026-07-28), shaped as the SDK's own server answers it:
 * complete, cacheable for no time and for this caller only, the one modern revision, the
 * capabilities with `listChanged`/`subscribe`, and the server's identity in
 * `_meta["io.modelcontextprotocol/serverInfo"]` (this revision has no body `serverInfo`). The tasks
 * capability is the tasks extension in this revision.
 */
function discoverResult(
  capabilities: ServerCapabilities,
  extra: Readonly<Record<string, unknown>>,
  serverInfo: ServerInfo,
  instructions: string | undefined,
): Readonly<Record<string, unknown>> {
  const advertised: Record<string, unknown> = { ...extra };
  if (capabilities.tools) advertised.tools = { listChanged: true };
  if (capabilities.prompts) advertised.prompts = { listChanged: true };
  if (capabilities.resources) advertised.resources = { subscribe: true, listChanged: true };
  if (capabilities.tasks) {
    const extensions = extra.extensions !== null && typeof extra.extensions === 'object' ? extra.extensions : {};
    advertised.extensions = { ...extensions, [TASKS_EXTENSION_ID]: {} };
  }
  return Object.freeze({
    resultType: 'complete',
    ttlMs: 0,
    cacheScope: 'private',
    supportedVersions: [MODERN_PROTOCOL_VERSION],
    capabilities: advertised,
    ...(instructions === undefined ? {} : { instructions }),
    _meta: { [SERVER_INFO_META_KEY]: serverInfo },
  });
}

interface Envelope {
  readonly id: JsonRpcId | undefined;
  readonly method: string;
  readonly params: Readonly<Record<string, unknown>> | undefined;
}

function parseEnvelope(value: unknown): Envelope {
  const invalid = (message: string, id: JsonRpcId | null = null) =>
    new HttpError(400, new JsonRpcError(ErrorCode.InvalidRequest, message), {}, id);
  if (Array.isArray(value)) throw invalid('JSON-RPC batches are not supported; send one request per POST');
  if (value === null || typeof value !== 'object') throw invalid('the body must be a JSON-RPC request object');
  const message = value as Record<string, unknown>;
  const id = isJsonRpcId(message.id) && !(typeof message.id === 'string' && exceedsBytes(message.id, MAX_REQUEST_ID_BYTES)) ? message.id : null;
  if (message.jsonrpc !== '2.0') throw invalid('jsonrpc must be "2.0"', id);
  if ('id' in message && !isJsonRpcId(message.id)) throw invalid('id must be a string or a number');
  // The id is echoed in every frame of a stream: bounded before anything is opened.
  if (typeof message.id === 'string' && exceedsBytes(message.id, MAX_REQUEST_ID_BYTES)) {
    throw invalid(`id must be a string of at most ${MAX_REQUEST_ID_BYTES} bytes or a number`);
  }
  if (typeof message.method !== 'string') throw invalid('method must be a string', id);
  const params = message.params;
  if (params !== undefined && (params === null || typeof params !== 'object' || Array.isArray(params))) {
    throw new HttpError(200, new JsonRpcError(ErrorCode.InvalidParams, 'params must be an object'), {}, id);
  }
  return { id: 'id' in message ? (message.id as JsonRpcId) : undefined, method: message.method, params: params as Envelope['params'] };
}

async function readJson(
  body: EndpointRequest['body'],
  contentLength: string | undefined,
  limit: number,
  timeoutMs: number,
  scheduler: SchedulerLike,
): Promise<unknown> {
  if (body !== undefined && typeof body === 'object' && 'parsed' in body) return body.parsed;
  const tooLarge = () => new HttpError(413, new JsonRpcError(ErrorCode.InvalidRequest, `request body exceeds ${limit} bytes`));
  if (contentLength !== undefined && Number(contentLength) > limit) throw tooLarge();
  let text: string;
  if (body === undefined) text = '';
  else if (typeof body === 'string') text = body;
  else if (body instanceof Uint8Array) text = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
  else text = await readStream(body, limit, tooLarge, timeoutMs, scheduler);
  if (Buffer.byteLength(text) > limit) throw tooLarge();
  try {
    return JSON.parse(text);
  } catch {
    throw new HttpError(400, new JsonRpcError(ErrorCode.ParseError, 'parse error: the body is not valid JSON'));
  }
}

/** Reads a streamed body within `limit` bytes and `timeoutMs` milliseconds (408 past it, and the connection closes). */
async function readStream(
  body: AsyncIterable<Uint8Array>,
  limit: number,
  tooLarge: () => HttpError,
  timeoutMs: number,
  scheduler: SchedulerLike,
): Promise<string> {
  const iterator = body[Symbol.asyncIterator]();
  let expire: (error: HttpError) => void = () => {};
  const expired = new Promise<never>((_, reject) => (expire = reject));
  const deadline = timer(timeoutMs, scheduler).subscribe(() =>
    expire(new HttpError(408, new JsonRpcError(ErrorCode.InvalidRequest, `the request body did not arrive within ${timeoutMs} ms`), { Connection: 'close' })),
  );
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const next = await Promise.race([iterator.next(), expired]);
      if (next.done === true) break;
      size += next.value.byteLength;
      if (size > limit) throw tooLarge();
      chunks.push(next.value);
    }
  } catch (error) {
    // Stop reading what is left of a refused body.
    void Promise.resolve(iterator.return?.()).catch(() => {});
    throw error;
  } finally {
    deadline.unsubscribe();
  }
  return Buffer.concat(chunks).toString('utf8');
}

function missingSession(): JsonRpcError {
  return new JsonRpcError(ErrorCode.InvalidRequest, 'Mcp-Session-Id header is required (send initialize first)');
}

/**
 * The accepted `Host` names of a server bound to a loopback address: `localhost`, `127.0.0.1`
 * and `[::1]`, on any port. Use as `allowedHosts` and `allowedOrigins` to refuse DNS-rebinding
 * requests.
 */
export const localhostHosts: readonly string[] = Object.freeze(['localhost', '127.0.0.1', '[::1]']);

function hostCheck(
  allowedHosts: readonly string[] | undefined,
  allowedOrigins: readonly string[] | undefined,
): ((request: EndpointRequest) => string | undefined) | undefined {
  for (const [name, list] of [['allowedHosts', allowedHosts], ['allowedOrigins', allowedOrigins]] as const) {
    if (list !== undefined && (!Array.isArray(list) || !list.every((entry) => typeof entry === 'string' && entry !== ''))) {
      throw new InvalidOptionError(name, 'an array of non-empty strings', list);
    }
  }
  if (allowedHosts === undefined && allowedOrigins === undefined) return undefined;
  const hosts = allowedHosts?.map((entry) => entry.toLowerCase());
  const origins = allowedOrigins?.map((entry) => entry.toLowerCase());
  return (request) => {
    if (hosts !== undefined) {
      const host = request.header('host')?.toLowerCase();
      if (host === undefined || !hosts.some((entry) => entry === host || entry === hostName(host))) {
        return `forbidden: Host ${JSON.stringify(host ?? '')} is not allowed`;
      }
    }
    const origin = request.header('origin')?.toLowerCase();
    if (origins !== undefined && origin !== undefined) {
      let name: string | undefined;
      try {
        name = new URL(origin).host;
      } catch {
        name = undefined;
      }
      if (!origins.some((entry) => entry === origin || (name !== undefined && (entry === name || entry === hostName(name))))) {
        return `forbidden: Origin ${JSON.stringify(origin)} is not allowed`;
      }
    }
    return undefined;
  };
}

/** `host:port` → `host`; `[::1]:80` → `[::1]`. */
function hostName(host: string): string {
  const match = /^(\[[^\]]*\]|[^:]*)(?::\d*)?$/.exec(host);
  return match === null ? host : match[1]!;
}

/** True when an `Accept` header lists `text/event-stream` (with a non-zero q). */
export function acceptsEventStream(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  for (const range of accept.split(',')) {
    const [type = '', ...parameters] = range.split(';').map((part) => part.trim().toLowerCase());
    if (type !== 'text/event-stream') continue;
    const q = parameters.find((p) => p.startsWith('q='));
    if (q === undefined || Number(q.slice(2)) > 0) return true;
  }
  return false;
}

function json(status: number, body: unknown, headers: Readonly<Record<string, string>> = {}): EndpointResponse {
  return { kind: 'json', status, headers: { ...JSON_HEADERS, ...headers }, body: JSON.stringify(body) };
}

function jsonError(status: number, id: JsonRpcId | null, error: JsonRpcError, headers?: Readonly<Record<string, string>>): EndpointResponse {
  return json(status, error.toResponse(id), headers);
}
