// What the upstream drivers ask of a connection to an upstream MCP server, in both eras, and its two
// implementations: over HTTP (each request its own exchange) and over a message channel (stdio).
import { filter, firstValueFrom, map, Observable } from 'rxjs';
import { CLIENT_CAPABILITIES_META_KEY } from '../../lib/filter.js';
import type { JsonRpcMessage } from '../../lib/jsonrpc.js';
import { MODERN_PROTOCOL_VERSION, NEWEST_LEGACY_PROTOCOL_VERSION } from '../../lib/protocol.js';
import type { ChannelPeer } from './channelPeer.js';
import { UpstreamError } from './errors.js';
import { exchange, type HttpTarget, type Incoming, rpcErrorOf } from './http.js';

/** The `_meta` key of a 2026-07-28 request's protocol revision. */
const PROTOCOL_VERSION_META_KEY = 'io.modelcontextprotocol/protocolVersion';
const CLIENT_INFO_META_KEY = 'io.modelcontextprotocol/clientInfo';

/** Who the gateway says it is to its upstreams. @internal */
export const GATEWAY_CLIENT_INFO = Object.freeze({ name: 'mcp-rx-streams-gateway', version: '0.1.0' });

/** A legacy session with an upstream (2025-era `initialize`). @internal */
export interface LegacySession {
  /** `Mcp-Session-Id` over HTTP; none over a channel (the channel is the session). */
  readonly id: string | undefined;
  /** The revision agreed. */
  readonly protocolVersion: string;
  /** What the upstream advertises. */
  readonly capabilities: Readonly<Record<string, unknown>>;
}

/**
 * One connection to an upstream, whatever carries it. Over HTTP it holds nothing (each call is
 * one exchange); over a channel it is the channel.
 * @internal
 */
export interface UpstreamConnection {
  /** `server/discover` (2026-07-28): its result, or `undefined` when the upstream does not speak that revision. */
  discover(): Promise<Readonly<Record<string, unknown>> | undefined>;
  /** A 2026-07-28 `subscriptions/listen` with `notifications` as the filter: its messages (the acknowledgment first), completing after its result. */
  listen(notifications: Readonly<Record<string, unknown>>): Observable<JsonRpcMessage>;
  /** A request's result, in the session's era (`session`) or 2026-07-28's (none); rejects with an {@link UpstreamError}. */
  request(method: string, params: Readonly<Record<string, unknown>>, session?: LegacySession): Promise<Record<string, unknown>>;
  /** Legacy `initialize` and `notifications/initialized`. */
  initialize(): Promise<LegacySession>;
  /**
   * A legacy session's notifications: `open` when subscriptions can be made (HTTP: the `GET` stream
   * answered; a channel: at once), then each message with its event id (HTTP), completing or
   * erroring when the stream ends. `lastEventId` resumes an HTTP stream (`Last-Event-ID`).
   */
  sessionStream(session: LegacySession, lastEventId: string | undefined): Observable<Incoming>;
  /** Ends a legacy session (HTTP: `DELETE`, best effort). */
  endSession(session: LegacySession): void;
}

/** The `_meta` envelope every 2026-07-28 request carries. */
function envelope(params: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const meta = params._meta !== null && typeof params._meta === 'object' ? (params._meta as Record<string, unknown>) : {};
  return {
    ...params,
    _meta: { ...meta, [PROTOCOL_VERSION_META_KEY]: MODERN_PROTOCOL_VERSION, [CLIENT_CAPABILITIES_META_KEY]: {}, [CLIENT_INFO_META_KEY]: GATEWAY_CLIENT_INFO },
  };
}

function initializeParams(): Record<string, unknown> {
  return { protocolVersion: NEWEST_LEGACY_PROTOCOL_VERSION, capabilities: {}, clientInfo: GATEWAY_CLIENT_INFO };
}

function sessionOf(result: Record<string, unknown>, id: string | undefined): LegacySession {
  const protocolVersion = typeof result.protocolVersion === 'string' ? result.protocolVersion : NEWEST_LEGACY_PROTOCOL_VERSION;
  const capabilities = result.capabilities !== null && typeof result.capabilities === 'object' ? (result.capabilities as Record<string, unknown>) : {};
  return { id, protocolVersion, capabilities };
}

/** A discover result that names 2026-07-28, else `undefined`. */
function modernDiscover(result: Record<string, unknown>): Record<string, unknown> | undefined {
  const versions = result.supportedVersions;
  return Array.isArray(versions) && versions.includes(MODERN_PROTOCOL_VERSION) ? result : undefined;
}

/** What the `Mcp-Name` header carries (2026-07-28, SEP-2243): the name a request is about, base64 where a header cannot hold it. */
function mcpName(method: string, params: Readonly<Record<string, unknown>>): string | undefined {
  const field = method === 'resources/read' ? 'uri' : method === 'tools/call' || method === 'prompts/get' ? 'name' : undefined;
  const value = field === undefined ? undefined : params[field];
  if (typeof value !== 'string') return undefined;
  return value !== '' && value === value.trim() && /^[\t\x20-\x7e]*$/.test(value) && !(value.startsWith('=?base64?') && value.endsWith('?=')) ? value : `=?base64?${Buffer.from(value, 'utf8').toString('base64')}?=`;
}

/** An upstream over HTTP (MCP's streamable HTTP transport, both eras). @internal */
export class HttpConnection implements UpstreamConnection {
  #nextId = 1;

  constructor(private readonly target: HttpTarget) {}

  async discover(): Promise<Readonly<Record<string, unknown>> | undefined> {
    try {
      return modernDiscover(await this.request('server/discover', {}));
    } catch (error) {
      // A legacy server refuses the request (400, 404, -32601…); only a connection failure is a failure.
      if (error instanceof UpstreamError && (error.info.status !== undefined || error.info.error !== undefined)) return undefined;
      throw error;
    }
  }

  listen(notifications: Readonly<Record<string, unknown>>): Observable<JsonRpcMessage> {
    const id = this.#nextId++;
    const body = { jsonrpc: '2.0', id, method: 'subscriptions/listen', params: envelope({ notifications }) };
    return exchange(this.target, { method: 'POST', headers: this.#modernHeaders('subscriptions/listen', {}), body }).pipe(
      map((incoming) => (incoming.kind === 'message' ? incoming.message : undefined)),
      filter((message): message is JsonRpcMessage => message !== undefined),
      map((message) => {
        const error = 'id' in message && message.id === id ? rpcErrorOf(message) : undefined;
        if (error !== undefined) throw new UpstreamError(`upstream ${this.target.upstream} refused subscriptions/listen: JSON-RPC error ${error.code} "${error.message}"`, { upstream: this.target.upstream, error });
        return message;
      }),
    );
  }

  async request(method: string, params: Readonly<Record<string, unknown>>, session?: LegacySession): Promise<Record<string, unknown>> {
    const id = this.#nextId++;
    const body = { jsonrpc: '2.0', id, method, params: session === undefined ? envelope(params) : params };
    const headers = session === undefined ? this.#modernHeaders(method, params) : this.#legacyHeaders(session);
    return this.#answer(exchange(this.target, { method: 'POST', headers, body }), id, method);
  }

  async initialize(): Promise<LegacySession> {
    const id = this.#nextId++;
    let sessionId: string | undefined;
    const answers = exchange(this.target, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: { jsonrpc: '2.0', id, method: 'initialize', params: initializeParams() },
    }).pipe(
      filter((incoming) => {
        if (incoming.kind === 'open') sessionId = incoming.sessionId;
        return true;
      }),
    );
    const result = await this.#answer(answers, id, 'initialize');
    const session = sessionOf(result, sessionId);
    await firstValueFrom(exchange(this.target, { method: 'POST', headers: this.#legacyHeaders(session), body: { jsonrpc: '2.0', method: 'notifications/initialized' } }), { defaultValue: undefined });
    return session;
  }

  sessionStream(session: LegacySession, lastEventId: string | undefined): Observable<Incoming> {
    const headers: Record<string, string> = { ...this.#legacyHeaders(session), accept: 'text/event-stream' };
    delete headers['content-type'];
    if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
    return exchange(this.target, { method: 'GET', headers });
  }

  endSession(session: LegacySession): void {
    if (session.id === undefined) return;
    exchange(this.target, { method: 'DELETE', headers: this.#legacyHeaders(session) }).subscribe({ error: noop });
  }

  /** The response to request `id` among what an exchange emits: its result, or an {@link UpstreamError}. */
  async #answer(answers: Observable<Incoming>, id: number, method: string): Promise<Record<string, unknown>> {
    const upstream = this.target.upstream;
    const response = await firstValueFrom(
      answers.pipe(
        map((incoming) => (incoming.kind === 'message' ? incoming.message : undefined)),
        filter((message): message is JsonRpcMessage => message !== undefined && !('method' in message) && (message as { id?: unknown }).id === id),
      ),
      { defaultValue: undefined },
    );
    if (response === undefined) throw new UpstreamError(`upstream ${upstream} answered ${method} with no response`, { upstream });
    const error = rpcErrorOf(response);
    if (error !== undefined) throw new UpstreamError(`upstream ${upstream} answered ${method} with JSON-RPC error ${error.code} "${error.message}"`, { upstream, error });
    return ((response as { result?: unknown }).result ?? {}) as Record<string, unknown>;
  }

  #modernHeaders(method: string, params: Readonly<Record<string, unknown>>): Record<string, string> {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': MODERN_PROTOCOL_VERSION,
      'mcp-method': method,
    };
    const name = mcpName(method, params);
    if (name !== undefined) headers['mcp-name'] = name;
    return headers;
  }

  #legacyHeaders(session: LegacySession): Record<string, string> {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': session.protocolVersion,
    };
    if (session.id !== undefined) headers['mcp-session-id'] = session.id;
    return headers;
  }
}

/** An upstream over a message channel (stdio to a child process): the channel is the connection and, in the legacy era, the session. @internal */
export class ChannelConnection implements UpstreamConnection {
  constructor(readonly peer: ChannelPeer) {}

  async discover(): Promise<Readonly<Record<string, unknown>> | undefined> {
    try {
      return modernDiscover(await this.peer.request('server/discover', envelope({})));
    } catch (error) {
      if (error instanceof UpstreamError && error.info.error !== undefined) return undefined;
      throw error;
    }
  }

  listen(notifications: Readonly<Record<string, unknown>>): Observable<JsonRpcMessage> {
    return this.peer.stream('subscriptions/listen', envelope({ notifications }));
  }

  request(method: string, params: Readonly<Record<string, unknown>>, session?: LegacySession): Promise<Record<string, unknown>> {
    return this.peer.request(method, session === undefined ? envelope(params) : { ...params });
  }

  async initialize(): Promise<LegacySession> {
    const result = await this.peer.request('initialize', initializeParams());
    this.peer.notify('notifications/initialized');
    return sessionOf(result, undefined);
  }

  sessionStream(): Observable<Incoming> {
    const { peer } = this;
    // The channel carries the session's notifications from the start; it ends with the channel.
    return new Observable<Incoming>((subscriber) => {
      subscriber.next({ kind: 'open', sessionId: undefined });
      const ended = peer.ended.subscribe((error) => subscriber.error(error));
      const messages = peer.notifications.subscribe((message) => subscriber.next({ kind: 'message', message, eventId: undefined }));
      return () => {
        ended.unsubscribe();
        messages.unsubscribe();
      };
    });
  }

  endSession(): void {}
}

function noop(): void {}
