import { Observable, type SchedulerLike } from 'rxjs';
import { anonymous, AuthError, type AuthInfo, AuthUnavailableError } from '../lib/auth.js';
import { Broadcast } from '../lib/broadcast.js';
import type { EndpointRequest, MethodHandler, RequestContext } from '../lib/context.js';
import type { ServerCapabilities } from '../lib/filter.js';
import type { CloseReason, Frame } from '../lib/frame.js';
import type { Hub } from '../lib/hub.js';
import { ErrorCode, JsonRpcError, type JsonRpcId } from '../lib/jsonrpc.js';
import { bearerChallenge, resourceMetadataOf, type ResourceMetadata } from '../lib/protectedResource.js';
import { Refusal } from '../lib/refusal.js';
import type { ListenOptions } from '../lib/options.js';
import { PrincipalRegistry, type PrincipalCap } from '../lib/principals.js';
import { ReplayBuffer } from '../lib/replayBuffer.js';
import { hubResources } from '../lib/resources.js';
import { MemorySessionStore, type SessionStore } from '../lib/session.js';
import { StreamSlots } from '../lib/slots.js';
import { reportError } from '../lib/telemetry.js';
import { listenPlans, type ListenPlans } from '../operators/listenPipeline.js';
import { reportDrop } from '../operators/streamTelemetry.js';
import { sessionPlans } from '../operators/sessionPipeline.js';
import { ResourceAccess } from './authorize.js';
import { type Answer, capacityRefusal, errorAnswer, resultAnswer, shutdownRefusal, type StreamAnswer } from './answer.js';
import { ChannelSubscriptions } from './channelSubscriptions.js';
import { type Closable, CredentialChecks } from './credentialChecks.js';
import { agreedLegacyVersion, discoverResult, initializeResult } from './discover.js';
import type { Envelope } from './envelope.js';
import type { StreamInfo, StreamsOptions } from './inspect.js';
import type { LiveSession } from './legacy/liveSession.js';
import { placementOf } from './legacy/placement.js';
import { LegacySessions, type SessionStats } from './legacy/sessions.js';
import { Listens } from './listen.js';
import { type ChannelEnd, type ChannelHold, OpenChannels } from './openChannels.js';
import type { ProtocolOptions, ResolvedProtocolOptions } from './options.js';
import { ProviderFeeds } from './providerFeeds.js';
import { principalArgument, reasonArgument, revokePrincipal, type RevokeResult } from './revoke.js';
import { RESOURCE_TEMPLATES_LIST, resourceTemplatesMethod } from './templates.js';

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
 * The legacy-era state a request runs in (2025-era MCP): where its `resources/subscribe` and
 * `resources/unsubscribe` go. An HTTP session (`Mcp-Session-Id`) and a message channel after its
 * `initialize` each have one. @internal
 */
export interface SessionScope {
  /** The context the session's requests run in (`context.session` set). */
  readonly context: RequestContext;
  /** `resources/subscribe` (DESIGN L2–L5): `{}`, or throws its JSON-RPC error. */
  subscribe(params: Envelope['params'], context: RequestContext): Promise<object>;
  /** `resources/unsubscribe` (DESIGN L4): `{}`, or throws its JSON-RPC error. */
  unsubscribe(params: Envelope['params']): Promise<object>;
}

/**
 * Who sends a message and in what state, as a front tells the core: the caller (principal, scopes,
 * expiry: `context.auth`), the request hooks see, the transport (its listen plans differ), and the
 * era: a legacy session's scope, or none (2026-07-28). @internal
 */
export interface Caller {
  readonly context: RequestContext;
  /** `http`: one request, one answer (a stream is its response). `channel`: many streams on one connection. */
  readonly transport: 'http' | 'channel';
  /** The legacy session the message belongs to; absent on the modern path. */
  readonly session: SessionScope | undefined;
  /** A channel with open listens speaks 2026-07-28 for its life: `initialize` is refused on it. */
  readonly listening?: boolean;
  /**
   * A channel's `initialize` succeeded: from now on it is a legacy session, this one. False when
   * the channel became one meanwhile (two `initialize` at once): the later is refused.
   */
  readonly began?: (session: ChannelSubscriptions) => boolean;
  /** The id a channel's legacy session carries in `context.session` (never sent); defaults to the principal. */
  readonly sessionId?: string;
}

/**
 * The transport-neutral protocol core of an endpoint (MCP 2026-07-28 and the 2025 revisions): one
 * dispatch for both eras, every front (HTTP through node:http and Fetch, message channels: stdio,
 * WebSocket, in-process pairs) hands it a parsed message with its {@link Caller} and writes back
 * the answer or the stream of frames it gets. It owns admission (the stream slots, the
 * per-principal cap, supersede), the resource decision of both eras (`ResourceAccess`), the
 * legacy sessions and their replay, and the built-in answers (`server/discover`, `initialize`,
 * `resources/templates/list`); what is a transport's (HTTP status lines and headers, line framing,
 * demand) stays in its front.
 *
 * Made by {@link McpEndpoint} (its `core`); a front never builds its own.
 * @see McpEndpoint
 * @see serveChannel
 */
export class ProtocolCore {
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
  /** Largest accepted message, in bytes as received (`maxBodyBytes`): an HTTP body, a channel's message. */
  readonly maxBodyBytes: number;
  /** Where time comes from (the `scheduler` option). */
  readonly scheduler: SchedulerLike;
  /** Milliseconds a client refused for capacity is told to wait (`capacityRetryAfter`). */
  readonly capacityRetryAfter: number;
  /** Who may watch which URI (both eras, every front). */
  readonly access: ResourceAccess;
  /**
   * The OAuth protected resource the `authenticate` hook names (its `protectedResource`), checked,
   * with its metadata document: what the HTTP front serves at the well-known paths and what every
   * challenge points to; `undefined` when the hook names none.
   */
  readonly resourceMetadata: ResourceMetadata | undefined;
  readonly #options: ProtocolOptions;
  readonly #legacy: LegacySessions | undefined;
  readonly #maxSubscriptionsPerSession: number;
  readonly #listens: Listens;
  readonly #feeds: ProviderFeeds;
  /** The credentials of open streams that are checked again while they are open (`AuthInfo.recheck`), both eras. */
  readonly #credentials: CredentialChecks;
  /** The message channels open on the core, each ended when its credential ends. */
  readonly #channels: OpenChannels;
  /** What every listen on a transport shares: HTTP's, and message channels' (closing frames never dropped). */
  readonly #plans: Readonly<Record<Caller['transport'], ListenPlans>>;
  /** The built-in `server/discover` result. */
  readonly #discover: Readonly<Record<string, unknown>>;
  /** The built-in `resources/templates/list`, when `resources` is advertised. */
  readonly #templates: MethodHandler | undefined;
  /** The legacy `initialize` result at a revision. */
  readonly #initializeResult: (protocolVersion: string) => Record<string, unknown>;
  // A Broadcast (a Subject-like Observable) so that each stream attaches to it directly.
  readonly #shutdown = new Broadcast<void>();
  #closed = false;

  /** @internal Made by `McpEndpoint` from its checked options. */
  constructor(options: ProtocolOptions, resolved: ResolvedProtocolOptions) {
    const { listenOptions, limits, sessionOptions, serverInfo, extraCapabilities, scheduler } = resolved;
    this.#options = options;
    this.listenOptions = listenOptions;
    this.hub = options.hub;
    this.slots = options.slots ?? new StreamSlots(limits.maxStreams);
    this.principals = options.principals ?? new PrincipalRegistry(limits.maxListensPerPrincipal);
    this.capabilities = resolved.capabilities;
    this.maxBodyBytes = resolved.maxBodyBytes;
    this.scheduler = scheduler;
    this.capacityRetryAfter = resolved.capacityRetryAfter;
    this.resourceMetadata = resourceMetadataOf(options.authenticate);
    this.#maxSubscriptionsPerSession = sessionOptions.maxSubscriptionsPerSession;
    this.#discover = discoverResult(this.capabilities, extraCapabilities, serverInfo, options.instructions);
    this.#initializeResult = (protocolVersion) => initializeResult(protocolVersion, this.capabilities, extraCapabilities, serverInfo, options.instructions);
    // One decision for both eras: a listen and a legacy subscribe ask the same providers and hooks.
    const providers = options.resourceProviders ?? [hubResources(this.hub)];
    this.#templates = this.capabilities.resources ? resourceTemplatesMethod(providers) : undefined;
    this.access = new ResourceAccess({ providers, canRead: options.canRead, subscribeHook: options.subscribeHook });
    this.#feeds = new ProviderFeeds(this.hub);
    this.#credentials = new CredentialChecks(scheduler);
    this.#channels = new OpenChannels(scheduler, this.#credentials);
    // What every listen stream of a transport shares, made once (each operator's own plan). A
    // channel's differ in one thing only: a stream that closes while its channel is not reading
    // keeps its closing frames in the channel's buffer (`stalledEnd: 'control'`), since dropping
    // the channel would end every other stream on it.
    this.#plans = {
      http: listenPlans(listenOptions, this.#shutdown, scheduler),
      channel: listenPlans(listenOptions, this.#shutdown, scheduler, 'control'),
    };
    this.#listens = new Listens({
      hub: this.hub,
      slots: this.slots,
      principals: this.principals,
      capabilities: this.capabilities,
      access: this.access,
      feeds: this.#feeds,
      capacityRetryAfter: this.capacityRetryAfter,
      emptyListen: resolved.emptyListen,
      credentials: this.#credentials,
    });
    this.#legacy =
      options.legacy === false
        ? undefined
        : this.#legacySessions(options, resolved, options.sessionStore ?? new MemorySessionStore());
  }

  #legacySessions(options: ProtocolOptions, resolved: ResolvedProtocolOptions, store: SessionStore): LegacySessions {
    const { listenOptions, sessionOptions, serverInfo, extraCapabilities, scheduler } = resolved;
    return new LegacySessions({
            hub: this.hub,
            store,
            access: this.access,
            options: sessionOptions,
            capabilities: this.capabilities,
            extraCapabilities,
            serverInfo,
            instructions: options.instructions,
            streams: sessionPlans({
              keepAliveInterval: listenOptions.keepAliveInterval,
              maxStreamLifetime: listenOptions.maxStreamLifetime,
              reconnectDelay: sessionOptions.reconnectDelay,
              maxStreamQueue: listenOptions.maxStreamQueue,
              maxStreamQueueBytes: listenOptions.maxStreamQueueBytes,
              onDrop: reportDrop,
              shutdown$: this.#shutdown,
              scheduler,
            }),
            slots: this.slots,
            scheduler,
            eventLog: options.eventLog ?? (() => new ReplayBuffer(sessionOptions.replayBufferSize)),
            bus: options.sessionBus,
            placement: placementOf(options.sessionBus, store),
            channels: this.#channels,
            capacityRetryAfter: this.capacityRetryAfter,
          });
  }

  /** True when the legacy era is served (the `legacy` option). */
  get servesLegacy(): boolean {
    return this.#legacy !== undefined;
  }

  /** True once {@link close} was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /** True when callers are identified by the `authenticate` option; false when they are anonymous, told apart by address. */
  get authenticates(): boolean {
    return this.#options.authenticate !== undefined;
  }

  /** What the core holds now. */
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
   * Closes every open stream gracefully (closing frames with reason `shutdown`) and refuses later
   * ones. Idempotent.
   * @returns once the legacy sessions this node kept are handed to the other nodes of a fleet or a
   *   machine (at once otherwise): stop the hub and the session parts after it.
   */
  close(): Promise<void> {
    if (this.#closed) return this.#closing;
    this.#closed = true;
    this.#listens.close();
    this.#shutdown.next();
    this.#shutdown.complete();
    this.#feeds.close();
    this.#closing = this.#legacy?.close() ?? Promise.resolve();
    return this.#closing;
  }

  #closing: Promise<void> = Promise.resolve();

  /** See `McpEndpoint.streams`. */
  streams(options: StreamsOptions = {}): StreamInfo[] {
    const listens: StreamInfo[] = this.#listens.snapshot(options);
    const sessions = this.#legacy?.snapshot(options);
    return sessions === undefined ? listens : listens.concat(sessions);
  }

  /** See `McpEndpoint.closeStream`. */
  async closeStream(id: string, reason: CloseReason = 'revoked'): Promise<boolean> {
    const checked = reasonArgument(reason);
    if (typeof id !== 'string') return false;
    if (this.#listens.closeStream(id, checked)) return true;
    return (await this.#legacy?.endById(id, checked)) ?? false;
  }

  /** See `McpEndpoint.revoke`. */
  async revoke(principal: string, reason: CloseReason = 'revoked'): Promise<RevokeResult> {
    return revokePrincipal(this.#listens, this.#legacy ?? this.#channels, principalArgument(principal), reasonArgument(reason));
  }

  /**
   * Holds a message channel authenticated as `auth` (once, when it opened) until the front releases
   * it: the core ends it through `channel.end` when that credential ends (expiry, a recheck that
   * finds it inactive, a revoke of its principal), see {@link OpenChannels}.
   */
  holdChannel(auth: AuthInfo, channel: ChannelEnd): ChannelHold {
    return this.#channels.hold(auth, channel);
  }

  /** See `McpEndpoint.pruneSessions`. */
  async pruneSessions(): Promise<void> {
    await this.#legacy?.prune();
  }

  /**
   * Who is calling: the `authenticate` hook's answer for `request` (an expiry of `Infinity` is no
   * expiry; any other non-finite one fails closed), or the anonymous principal of its address.
   * @throws Refusal `unauthorized` (`insufficient-scope` for a token that lacks a scope it needs)
   *   with its `WWW-Authenticate` challenge when the hook throws {@link AuthError}: the challenge
   *   given as a string as it is, one given as a `BearerChallenge` completed with the protected
   *   resource's metadata URL and required scopes; `busy` with the retry time when it throws
   *   {@link AuthUnavailableError}.
   */
  async authenticate(request: EndpointRequest): Promise<AuthInfo> {
    const authenticate = this.#options.authenticate;
    if (authenticate === undefined) return anonymous(request.remoteAddress);
    try {
      const auth = await authenticate(request);
      if (auth.expiresAt === Number.POSITIVE_INFINITY) {
        const { expiresAt: _never, ...forever } = auth;
        return forever;
      }
      if (auth.expiresAt !== undefined && !Number.isFinite(auth.expiresAt)) return { ...auth, expiresAt: 0 };
      return auth;
    } catch (error) {
      if (error instanceof AuthError) throw this.#authRefusal(error);
      if (error instanceof AuthUnavailableError) {
        const { retryAfterMs } = error.info;
        throw new Refusal('busy', new JsonRpcError(ErrorCode.ServerBusy, `the credential could not be checked: ${error.message}`, { retryAfterMs }));
      }
      throw error;
    }
  }

  /** The refusal of an {@link AuthError}: 401, or 403 for a missing scope a step-up would grant (MCP authorization, 2025-11-25 on). */
  #authRefusal(error: AuthError): Refusal {
    const { bearer } = error;
    const challenge = bearer === undefined ? error.challenge : bearerChallenge(this.resourceMetadata, bearer, error.message);
    if (bearer?.error === 'insufficient_scope') {
      return new Refusal('insufficient-scope', new JsonRpcError(ErrorCode.InvalidRequest, `insufficient scope: ${error.message}`), null, challenge);
    }
    return new Refusal('unauthorized', new JsonRpcError(ErrorCode.InvalidRequest, `unauthorized: ${error.message}`), null, challenge);
  }

  /**
   * The legacy session an HTTP request names (DESIGN L10), checked against its caller.
   * @throws Refusal `unknown-session` for an unknown or evicted session, `forbidden` for another
   *   principal's; a JSON-RPC `-32601` when the legacy era is not served.
   */
  async session(sessionId: string, auth: AuthInfo): Promise<LiveSession> {
    const legacy = this.#legacy;
    if (legacy === undefined) throw new JsonRpcError(ErrorCode.MethodNotFound, 'this server does not serve 2025-era sessions');
    return legacy.resolve(sessionId, auth);
  }

  /** The {@link SessionScope} of an HTTP session, for {@link dispatch}. */
  sessionScope(session: LiveSession, context: RequestContext): SessionScope {
    const legacy = this.#legacy!;
    return {
      context,
      subscribe: (params, ctx) => legacy.subscribe(session, params, ctx),
      unsubscribe: (params) => legacy.unsubscribe(session, params),
    };
  }

  /** Ends an HTTP session (its client's `DELETE`). */
  endSession(session: LiveSession): Promise<void> {
    return this.#legacy!.end(session);
  }

  /**
   * Opens an HTTP session's GET stream (DESIGN L7–L9), replaying after `lastEventId`.
   * @throws Refusal `busy` when the server is full (with its retry time) or closed.
   */
  async sessionStream(session: LiveSession, lastEventId: string | undefined, context: RequestContext): Promise<StreamAnswer> {
    const stream = await this.#legacy!.stream(session, lastEventId, context, this.#shutdown);
    if (stream === undefined) throw this.#closed ? shutdownRefusal() : capacityRefusal('stream', this.capacityRetryAfter);
    const { recheck, expiresAt } = context.auth;
    if (recheck === undefined) return { kind: 'stream', ...stream };
    // Opened with a credential that is checked again: revoked, it ends the session as a revoke does
    // (its GET stream ends, its record is removed); the credential is refused at the reconnect.
    const legacy = this.#legacy!;
    const ended: Closable = { close: (reason) => void legacy.endById(session.id, reason).catch((error: unknown) => reportError('endpoint', error)) };
    const open = (demand$: Observable<boolean>) =>
      new Observable<Frame>((subscriber) => {
        const held = this.#credentials.hold(recheck, expiresAt, ended);
        subscriber.add(() => held.release());
        return stream.open(demand$).subscribe(subscriber);
      });
    return { kind: 'stream', open, abandon: stream.abandon };
  }

  /**
   * Answers one JSON-RPC request, whatever carried it: the one dispatch of both eras.
   *
   * - `initialize` opens a legacy session (DESIGN L1): over HTTP a session with its id (answered in
   *   `Mcp-Session-Id`), on a channel the channel itself ({@link Caller.began}); refused inside a
   *   session and on a channel that has listens.
   * - `subscriptions/listen` opens a listen stream (DESIGN M1–M14) on the modern path, traced on
   *   `channels.trace`; a legacy session gets `-32601`.
   * - `resources/subscribe` and `resources/unsubscribe` go to the session's subscriptions.
   * - Anything else: the `methods` option, then the built-in `server/discover` (modern path only)
   *   and `resources/templates/list`; an unknown method is `-32601`.
   *
   * @returns the answer (a result, an error, or a stream of frames), in the protocol's terms: each
   *   front writes it in its own; a refusal may also be thrown (a {@link Refusal}, e.g. `busy`).
   */
  async dispatch(id: JsonRpcId, method: string, params: Envelope['params'], caller: Caller): Promise<Answer> {
    const { session } = caller;
    switch (method) {
      case 'initialize':
        if (this.#legacy === undefined) break;
        if (session !== undefined) return errorAnswer(id, new JsonRpcError(ErrorCode.InvalidRequest, 'this session is already initialized'));
        if (caller.listening === true) {
          return errorAnswer(id, new JsonRpcError(ErrorCode.InvalidRequest, 'this channel speaks 2026-07-28 (it has subscriptions/listen streams): initialize is not served on it'));
        }
        return this.#initialize(id, params, caller);
      case 'subscriptions/listen':
        if (session !== undefined) return errorAnswer(id, new JsonRpcError(ErrorCode.MethodNotFound, `method not found: ${method} (legacy sessions use resources/subscribe)`));
        return this.#listens.listen(id, params, caller.context, this.#plans[caller.transport], caller.transport);
      case 'resources/subscribe':
      case 'resources/unsubscribe':
        if (session === undefined) break;
        try {
          const result = method === 'resources/subscribe' ? await session.subscribe(params, caller.context) : await session.unsubscribe(params);
          return resultAnswer(id, result);
        } catch (error) {
          if (error instanceof JsonRpcError) return errorAnswer(id, error);
          reportError('source', error);
          return errorAnswer(id, new JsonRpcError(ErrorCode.InternalError, `${method} failed`));
        }
    }
    return this.#call(id, method, params, caller.context);
  }

  /** `initialize` (DESIGN L1): the agreed revision, `methods.initialize` overriding the result (a throw from it opens no session). */
  async #initialize(id: JsonRpcId, params: Envelope['params'], caller: Caller): Promise<Answer> {
    try {
      const protocolVersion = agreedLegacyVersion(params);
      const own = this.#own('initialize');
      const answer = own === undefined ? undefined : await callOwn(own, 'initialize', params, caller.context);
      const result = (fallback: () => unknown) => (answer === undefined ? fallback() : { ...(answer as object), protocolVersion });
      if (caller.transport === 'http') {
        const opened = await this.#legacy!.initialize(params, caller.context.auth);
        return resultAnswer(id, result(() => opened.result), opened.id);
      }
      if (this.#closed) throw shutdownRefusal(id);
      const context: RequestContext = { ...caller.context, session: { id: caller.sessionId ?? caller.context.auth.principal, protocolVersion } };
      const session = new ChannelSubscriptions(this, context, this.#plans.channel.queue, this.#maxSubscriptionsPerSession);
      if (caller.began?.(session) !== true) return errorAnswer(id, new JsonRpcError(ErrorCode.InvalidRequest, 'this session is already initialized'));
      return resultAnswer(id, result(() => this.#initializeResult(protocolVersion)));
    } catch (error) {
      if (error instanceof JsonRpcError) return errorAnswer(id, error);
      if (error instanceof Refusal) return errorAnswer(id, error.rpc, error.kind);
      throw error;
    }
  }

  /** A plain JSON-RPC method from the `methods` option, else a built-in one (`server/discover`, `resources/templates/list`). */
  async #call(id: JsonRpcId, method: string, params: Envelope['params'], context: RequestContext): Promise<Answer> {
    const handler = this.#own(method) ?? (method === RESOURCE_TEMPLATES_LIST ? this.#templates : undefined);
    if (handler === undefined) {
      // 2026-07-28: a client's first request; a legacy session has no use for it.
      if (method === 'server/discover' && context.session === undefined) return resultAnswer(id, this.#discover);
      return errorAnswer(id, new JsonRpcError(ErrorCode.MethodNotFound, `method not found: ${method}`));
    }
    try {
      return resultAnswer(id, await callOwn(handler, method, params, context));
    } catch (error) {
      if (error instanceof JsonRpcError) return errorAnswer(id, error);
      if (error instanceof Refusal) return errorAnswer(id, error.rpc, error.kind);
      throw error;
    }
  }

  /** The handler `methods` gives for `method` (own entries only: never `toString` or `__proto__`). */
  #own(method: string): MethodHandler | undefined {
    const methods = this.#options.methods;
    return methods !== undefined && Object.hasOwn(methods, method) ? methods[method] : undefined;
  }
}

/** Runs a handler of `methods`: its result (`{}` for none), or its JSON-RPC error or refusal; any other throw is `-32603` "<method> failed". */
async function callOwn(handler: MethodHandler, method: string, params: Envelope['params'], context: RequestContext): Promise<unknown> {
  try {
    return (await handler(params, context)) ?? {};
  } catch (error) {
    if (error instanceof JsonRpcError || error instanceof Refusal) throw error;
    throw new JsonRpcError(ErrorCode.InternalError, `${method} failed`);
  }
}
