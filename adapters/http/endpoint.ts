import type { SchedulerLike } from 'rxjs';
import type { AuthInfo } from '../../lib/auth.js';
import type { EndpointRequest, RequestContext } from '../../lib/context.js';
import type { ServerCapabilities } from '../../lib/filter.js';
import type { Hub } from '../../lib/hub.js';
import { ErrorCode, JsonRpcError } from '../../lib/jsonrpc.js';
import type { CloseReason } from '../../lib/frame.js';
import { Refusal, type RefusalKind } from '../../lib/refusal.js';
import type { ListenOptions } from '../../lib/options.js';
import type { PrincipalCap } from '../../lib/principals.js';
import type { ResourceMetadata } from '../../lib/protectedResource.js';
import { LEGACY_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSION, RECOGNIZED_LEGACY_VERSIONS } from '../../lib/protocol.js';
import type { StreamSlots } from '../../lib/slots.js';
import { reportError } from '../../lib/telemetry.js';
import type { Answer } from '../../protocol/answer.js';
import { type Caller, type EndpointStats, ProtocolCore } from '../../protocol/core.js';
import { InvalidParams, parseEnvelope } from '../../protocol/envelope.js';
import type { StreamInfo, StreamsOptions } from '../../protocol/inspect.js';
import type { LiveSession } from '../../protocol/legacy/liveSession.js';
import type { RevokeResult } from '../../protocol/revoke.js';
import { readJson } from './body.js';
import { type ClientAddress, withClientAddress } from './clientAddress.js';
import type { CorsPolicy } from './cors.js';
import { hostFieldError } from './hostCheck.js';
import { HttpError } from './httpError.js';
import { acceptsEventStream, type EndpointResponse, json, jsonError, SSE_HEADERS } from './responses.js';
import { type McpEndpointOptions, resolveEndpointOptions } from './options.js';

/**
 * An MCP endpoint: the protocol core ({@link ProtocolCore}: both eras, admission, caps, sessions,
 * replay) behind its HTTP front (Streamable HTTP: `POST` for requests and listens, `GET` for a
 * legacy session's stream, `DELETE` to end one). Every adapter drives it: node:http
 * (`nodeHandler`), the Fetch API (`webHandler`); message channels (stdio, WebSocket, in-process
 * pairs) serve its `core` (`serveChannel`).
 *
 * `handle` turns an HTTP request into a response description: a JSON answer, or an SSE stream that
 * the adapter subscribes to with its socket's demand. What is HTTP's is decided here: one `Host`,
 * `allowedHosts`/`allowedOrigins` (DNS rebinding), CORS, `MCP-Protocol-Version`, `Mcp-Session-Id`,
 * 405/406, the body's size and arrival time, `Last-Event-ID`; every protocol rule is the core's. An
 * HTTP 500 never comes out of it: every failure is a documented status and JSON-RPC error.
 *
 * @example
 * const endpoint = new McpEndpoint({ hub, capabilities: { resources: true }, keepAliveInterval: 10_000 });
 * http.createServer(nodeHandler(endpoint)).listen(3000);
 * @see nodeHandler
 * @see webHandler
 */
export class McpEndpoint {
  /**
   * The protocol core this endpoint's HTTP front serves: what a message channel serves too
   * (`serveChannel(endpoint, channel)`), so that both reach the same admission, caps and sessions.
   */
  readonly core: ProtocolCore;
  /** The core's {@link ProtocolCore.hub}: where notifications come from. */
  get hub(): Hub {
    return this.core.hub;
  }
  /** The core's {@link ProtocolCore.slots}: the server-wide stream slots. */
  get slots(): StreamSlots {
    return this.core.slots;
  }
  /** The core's {@link ProtocolCore.principals}: the per-principal cap of listens. */
  get principals(): PrincipalCap {
    return this.core.principals;
  }
  /** The core's {@link ProtocolCore.listenOptions}, defaults filled in (milliseconds). */
  get listenOptions(): Readonly<ListenOptions> {
    return this.core.listenOptions;
  }
  /** The core's {@link ProtocolCore.capabilities}: what the server advertises. */
  get capabilities(): ServerCapabilities {
    return this.core.capabilities;
  }
  /** Largest accepted request body, in bytes (see {@link McpEndpointOptions.maxBodyBytes}). */
  get maxBodyBytes(): number {
    return this.core.maxBodyBytes;
  }
  /** Milliseconds a request body may take to arrive (see {@link McpEndpointOptions.bodyTimeout}). */
  readonly bodyTimeout: number;
  readonly #allowDelete: boolean;
  readonly #hostCheck: ((request: EndpointRequest) => string | undefined) | undefined;
  readonly #cors: CorsPolicy | undefined;
  readonly #clientAddress: ClientAddress | undefined;
  readonly #scheduler: SchedulerLike;

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
    const core = new ProtocolCore(options, resolved);
    this.core = core;
    this.bodyTimeout = resolved.bodyTimeout;
    this.#scheduler = resolved.scheduler;
    this.#hostCheck = resolved.hostCheck;
    this.#cors = resolved.cors;
    this.#clientAddress = resolved.clientAddress;
    this.#allowDelete = resolved.sessionOptions.allowClientSessionDelete;
  }

  /**
   * True when callers are identified by the `authenticate` option; false when they are anonymous
   * and told apart by `EndpointRequest.remoteAddress` alone (which an adapter must then supply).
   */
  get authenticates(): boolean {
    return this.core.authenticates;
  }

  /** What the endpoint holds now. */
  get stats(): EndpointStats {
    return this.core.stats;
  }

  /**
   * Closes every open stream gracefully (closing frames with reason `shutdown`) and answers later
   * listens with 503. Idempotent.
   * @returns once the legacy sessions this node kept live are handed to the other nodes of a fleet
   *   or a machine (docs/fleet.md, "What survives a node's death"); at once without a session bus.
   *   Close the hub, the session bus and the store after it.
   */
  close(): Promise<void> {
    return this.core.close();
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
    return this.core.streams(options);
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
  closeStream(id: string, reason: CloseReason = 'revoked'): Promise<boolean> {
    return this.core.closeStream(id, reason);
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
  revoke(principal: string, reason: CloseReason = 'revoked'): Promise<RevokeResult> {
    return this.core.revoke(principal, reason);
  }

  /**
   * Runs the legacy prune sweep now (it also runs every `sessionPruneInterval`): sessions idle
   * past `sessionIdleTimeout` are evicted with their streams and subscriptions.
   */
  pruneSessions(): Promise<void> {
    return this.core.pruneSessions();
  }

  /**
   * Admits the HTTP request that opens a message channel (a WebSocket upgrade) as any request is
   * admitted: two `Host` lines refused (400), `allowedHosts`/`allowedOrigins` (403), then the
   * caller, with `trustProxy` applied: the `authenticate` hook's answer (401 when it refuses), or
   * the anonymous principal of the client's address. The channel then runs as that caller.
   * @throws HttpError 400 or 403, Refusal `unauthorized` (401) (a rejection).
   */
  async admit(request: EndpointRequest): Promise<AuthInfo> {
    const hosts = hostFieldError(request);
    if (hosts !== undefined) throw new HttpError(400, new JsonRpcError(ErrorCode.InvalidRequest, hosts));
    const refused = this.#hostCheck?.(request);
    if (refused !== undefined) throw new HttpError(403, new JsonRpcError(ErrorCode.InvalidRequest, refused));
    const resolve = this.#clientAddress;
    return this.core.authenticate(resolve === undefined ? request : withClientAddress(request, resolve));
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
      if (error instanceof Refusal) return refusalResponse(error);
      if (error instanceof InvalidParams) return jsonError(200, error.id, error.rpc);
      if (error instanceof JsonRpcError) return jsonError(200, null, error);
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
    // RFC 9728 §3: a protected resource's metadata, before anything MCP (a client fetches it before it speaks MCP).
    const metadata = this.core.resourceMetadata;
    if (metadata !== undefined && request.path !== undefined && metadata.paths.includes(request.path)) return metadataResponse(request.method, metadata);
    const legacy = this.core.servesLegacy;
    // MCP 2025-06-18 (transports): "If the server receives a request with an invalid or unsupported
    // MCP-Protocol-Version, it MUST respond with 400 Bad Request." Judged before anything else.
    // Earlier published revisions are recognized (a session negotiated from one runs at the newest
    // legacy revision, as `initialize` answers); a string that names no revision is refused.
    const asked = request.header('mcp-protocol-version');
    if (asked !== undefined && asked !== MODERN_PROTOCOL_VERSION && (!legacy || !RECOGNIZED_LEGACY_VERSIONS.includes(asked))) {
      const spoken = legacy ? [MODERN_PROTOCOL_VERSION, ...LEGACY_PROTOCOL_VERSIONS] : [MODERN_PROTOCOL_VERSION];
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
    if (legacy && sessionId !== undefined) return this.#session(sessionId, request);
    if (request.method !== 'POST') {
      if (legacy && (request.method === 'GET' || request.method === 'DELETE')) return jsonError(400, null, missingSession());
      return this.#notAllowed(request.method);
    }
    const auth = await this.core.authenticate(request);
    const message = parseEnvelope(await this.#readBody(request));
    if (legacy && message.method !== 'initialize' && asked !== undefined && asked !== MODERN_PROTOCOL_VERSION) {
      // A legacy client's request outside any session.
      throw new HttpError(400, missingSession(), {}, message.id ?? null);
    }
    if (message.id === undefined) return ACCEPTED;
    // M1: a listen has no JSON form.
    if (message.method === 'subscriptions/listen' && !acceptsEventStream(request.header('accept'))) {
      return jsonError(406, message.id, new JsonRpcError(ErrorCode.InvalidRequest, 'subscriptions/listen requires Accept: text/event-stream'));
    }
    return answerResponse(await this.core.dispatch(message.id, message.method, message.params, { context: { auth, request }, transport: 'http', session: undefined }), false);
  }

  /** A request inside a legacy session (DESIGN L1–L10): POST, GET (the stream) or DELETE. */
  async #session(sessionId: string, request: EndpointRequest): Promise<EndpointResponse> {
    if (request.method !== 'POST' && request.method !== 'GET' && request.method !== 'DELETE') return this.#notAllowed(request.method);
    if (request.method === 'DELETE' && !this.#allowDelete) {
      return jsonError(405, null, new JsonRpcError(ErrorCode.InvalidRequest, 'this server does not let clients end sessions'), { Allow: 'POST, GET' });
    }
    const auth = await this.core.authenticate(request);
    const session = await this.core.session(sessionId, auth);
    const context: RequestContext = { auth, request, session: { id: session.id, protocolVersion: session.protocolVersion } };
    switch (request.method) {
      case 'DELETE':
        await this.core.endSession(session);
        return { kind: 'empty', status: 204, headers: {} };
      case 'GET':
        return this.#sessionStream(session, request, context);
    }
    const message = parseEnvelope(await this.#readBody(request));
    if (message.id === undefined) return ACCEPTED;
    const caller: Caller = { context, transport: 'http', session: this.core.sessionScope(session, context) };
    return answerResponse(await this.core.dispatch(message.id, message.method, message.params, caller), true);
  }

  async #sessionStream(session: LiveSession, request: EndpointRequest, context: RequestContext): Promise<EndpointResponse> {
    if (!acceptsEventStream(request.header('accept'))) {
      return jsonError(406, null, new JsonRpcError(ErrorCode.InvalidRequest, 'the GET stream requires Accept: text/event-stream'));
    }
    return answerResponse(await this.core.sessionStream(session, request.header('last-event-id'), context), true);
  }

  #notAllowed(method: string): EndpointResponse {
    const allow = !this.core.servesLegacy ? 'POST' : this.#allowDelete ? 'POST, GET, DELETE' : 'POST, GET';
    return jsonError(405, null, new JsonRpcError(ErrorCode.InvalidRequest, `method ${method} is not allowed; use ${allow}`), { Allow: allow });
  }

  #readBody(request: EndpointRequest): Promise<unknown> {
    return readJson(request.body, request.header('content-length'), this.maxBodyBytes, this.bodyTimeout, this.#scheduler);
  }
}

/**
 * The protected resource metadata document (RFC 9728 §3.2: 200, `application/json`) for `GET` and
 * `HEAD`; 405 for any other method.
 */
function metadataResponse(method: string, metadata: ResourceMetadata): EndpointResponse {
  if (method !== 'GET' && method !== 'HEAD') {
    return jsonError(405, null, new JsonRpcError(ErrorCode.InvalidRequest, `method ${method} is not allowed on the protected resource metadata; use GET`), { Allow: 'GET, HEAD' });
  }
  return { kind: 'json', status: 200, headers: METADATA_HEADERS, body: metadata.body };
}

const METADATA_HEADERS: Readonly<Record<string, string>> = Object.freeze({ 'Content-Type': 'application/json', 'Cache-Control': 'max-age=3600' });

/** A notification (no id): accepted, nothing to answer. */
const ACCEPTED: EndpointResponse = Object.freeze({ kind: 'empty', status: 202, headers: Object.freeze({}) });

function missingSession(): JsonRpcError {
  return new JsonRpcError(ErrorCode.InvalidRequest, 'Mcp-Session-Id header is required (send initialize first)');
}

// How the core's answers and refusals become HTTP: the one place a status line is chosen for them.

/** The HTTP status of each refusal of the protocol core. */
const REFUSAL_STATUS: Readonly<Record<RefusalKind, number>> = Object.freeze({
  malformed: 400,
  unauthorized: 401,
  // RFC 6750 §3.1, MCP authorization (2025-11-25 on): a token without a scope it needs, where a step-up is possible.
  'insufficient-scope': 403,
  forbidden: 403,
  'unknown-session': 404,
  busy: 503,
  // MCP 2026-07-28: a missing required client capability (-32021) is answered with 400 Bad Request.
  'missing-extension': 400,
});

/**
 * The HTTP status of a JSON-RPC error the core answered: its refusal's; else, for an unknown
 * method outside a session, 404 (2026-07-28); else 200 (Streamable HTTP answers JSON-RPC errors
 * with 200, and so does every legacy session).
 * @internal also for the OpenTelemetry bridge, which reports a refused listen's status.
 */
export function httpStatus(refusal: RefusalKind | undefined, code: number, inSession: boolean): number {
  if (refusal !== undefined) return REFUSAL_STATUS[refusal];
  return code === ErrorCode.MethodNotFound && !inSession ? 404 : 200;
}

/** The headers a refusal adds: `Retry-After` (whole seconds, at least 1) for a busy server that said when, the challenge of a 401 or of a 403 for a missing scope. */
function refusalHeaders(refusal: RefusalKind | undefined, error: JsonRpcError, challenge?: string): Readonly<Record<string, string>> {
  if (refusal === 'busy') {
    const retryAfterMs = (error.data as { retryAfterMs?: unknown } | undefined)?.retryAfterMs;
    return typeof retryAfterMs === 'number' ? { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterMs / 1000))) } : {};
  }
  return (refusal === 'unauthorized' || refusal === 'insufficient-scope') && challenge !== undefined ? { 'WWW-Authenticate': challenge } : {};
}

/**
 * Writes the core's {@link Answer} as an HTTP response: a result as JSON (200, `Mcp-Session-Id` when
 * it opened a session), an error with its status ({@link httpStatus}), a stream as SSE.
 * @param inSession the request was inside a legacy session (`Mcp-Session-Id`).
 */
function answerResponse(answer: Answer, inSession: boolean): EndpointResponse {
  switch (answer.kind) {
    case 'result':
      return json(200, { jsonrpc: '2.0', id: answer.id, result: answer.result }, answer.sessionId === undefined ? {} : { 'Mcp-Session-Id': answer.sessionId });
    case 'error':
      return jsonError(httpStatus(answer.refusal, answer.error.code, inSession), answer.id, answer.error, refusalHeaders(answer.refusal, answer.error));
    case 'stream':
      return { kind: 'stream', status: 200, headers: SSE_HEADERS, open: answer.open, abandon: answer.abandon };
  }
}

/** Writes a {@link Refusal} the core threw as an HTTP response. */
function refusalResponse(refusal: Refusal): EndpointResponse {
  const { status, headers } = refusalStatus(refusal);
  return jsonError(status, refusal.id, refusal.rpc, headers);
}

/** The status line and headers of a {@link Refusal} on HTTP (a WebSocket upgrade refused too). @internal */
export function refusalStatus(refusal: Refusal): { readonly status: number; readonly headers: Readonly<Record<string, string>> } {
  return { status: REFUSAL_STATUS[refusal.kind], headers: refusalHeaders(refusal.kind, refusal.rpc, refusal.challenge) };
}
