import { randomUUID } from 'node:crypto';
import { type Subscription } from 'rxjs';
import { AuthError, type AuthInfo } from '../../lib/auth.js';
import type { Broadcast } from '../../lib/broadcast.js';
import type { EndpointRequest, RequestContext } from '../../lib/context.js';
import { messageJson } from '../../lib/encode.js';
import type { CloseReason, Frame } from '../../lib/frame.js';
import { Refusal } from '../../lib/refusal.js';
import { ErrorCode, JsonRpcError, type JsonRpcId } from '../../lib/jsonrpc.js';
import { LeanSubscriber } from '../../lib/subscribers.js';
import { reportError } from '../../lib/telemetry.js';
import { endpoint as validEndpoint, implementing, options as validOptions } from '../../lib/validate.js';
import type { ChannelSubscriptions } from '../../protocol/channelSubscriptions.js';
import type { Caller, ProtocolCore } from '../../protocol/core.js';
import type { ChannelHold } from '../../protocol/openChannels.js';
import type { McpEndpoint } from '../http/endpoint.js';
import { type Envelope, InvalidParams, parseEnvelope } from '../../protocol/envelope.js';
import type { Answer } from '../../protocol/answer.js';
import type { ChannelInput, MessageChannel } from './channel.js';
import { ChannelDemand } from './demand.js';
import { channelAuth, messageChannel } from './check.js';

/** Options of {@link serveChannel}. */
export interface ServeChannelOptions {
  /**
   * Who is on the other end, decided once for the channel's life: its principal (what
   * `maxListensPerPrincipal` counts), its scopes (what `canRead` sees) and its credential's expiry
   * and recheck. Since nothing checks it again, the channel ends with it: at `expiresAt` its listens
   * close (`token_expired`) and then the channel; likewise when `recheck` finds it inactive or
   * `endpoint.revoke` names its principal (`revoked`). A function is called once, as serving starts; a
   * throw ends the channel before anything is read. Default: a principal of its own,
   * `channel:<random UUID>`, with no scopes (stdio: `stdio`, see `serveStdio`).
   */
  readonly auth?: AuthInfo | (() => AuthInfo | Promise<AuthInfo>);
  /**
   * The request hooks and `methods` see as `context.request` (a WebSocket's upgrade request, with
   * its headers and address). Default: one with method `CHANNEL`, no headers and no address.
   */
  readonly request?: EndpointRequest;
}

/** One channel being served (see {@link serveChannel}). */
export interface ChannelSession {
  /** Resolves when the channel has ended (its peer left, or `close()`), everything it held released. */
  readonly closed: Promise<void>;
  /** What the channel holds now: its open listens, its legacy subscriptions, its streams' slots. */
  readonly stats: ChannelStats;
  /** Ends the channel: every stream is unsubscribed (nothing more is sent) and the channel closed. Idempotent. */
  close(): void;
}

/** What one channel holds. */
export interface ChannelStats {
  /** Open `subscriptions/listen` streams. */
  readonly listens: number;
  /** URIs subscribed with `resources/subscribe` (legacy era). */
  readonly subscriptions: number;
  /** The era the channel speaks: `modern` until an `initialize`, then `legacy`. */
  readonly era: 'modern' | 'legacy';
}

/** The request a channel's hooks see when it was opened without one. */
const CHANNEL_REQUEST: EndpointRequest = Object.freeze({ method: 'CHANNEL', header: () => undefined, remoteAddress: undefined, body: undefined });

/** Strict UTF-8 (bytes that are not UTF-8 are refused, not replaced), a byte order mark kept so that JSON.parse refuses it, as for an HTTP body. */
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Serves an {@link McpEndpoint} on a {@link MessageChannel}: every request on it, and any number of
 * `subscriptions/listen` streams multiplexed over it.
 *
 * Each listen is admitted, authorized and assembled exactly as over HTTP (the endpoint's slots,
 * per-principal cap, `ResourceAccess` and the same pipeline stages): the acknowledgment first, every
 * message tagged with `_meta["io.modelcontextprotocol/subscriptionId"]` (MCP 2026-07-28 on stdio:
 * clients "MUST use it to tell concurrent subscriptions apart"), the closing frames on a server-side
 * close, the bounded queue. What differs on a channel:
 * - Its frames are messages: no SSE encoding, and no keep-alive (a comment means nothing on a
 *   message channel); the keep-alive tick still runs the idle check.
 * - The client ends one listen with `notifications/cancelled` whose `requestId` is the listen's id:
 *   that stream alone ends, sending nothing, and gives its slot back. The channel's end releases
 *   everything.
 * - Backpressure is shared: the channel's one demand drives every stream's own queue (each keeps its
 *   bounds and coalescing; see {@link ChannelDemand}). Answers to requests are never dropped nor
 *   queued behind notifications: they go into the channel's own buffer, bounded by the requests the
 *   peer sends. A stream that closes while the channel is busy gives its slot back at once and its
 *   closing frames join the channel's buffer (its queued notifications are discarded).
 * - The legacy era: after `initialize` the channel speaks 2025-era MCP. `resources/subscribe` and
 *   `resources/unsubscribe` deliver `notifications/resources/updated` on the channel, with the list
 *   changes; no session id, no GET stream, no event ids (see {@link ChannelSubscriptions}).
 *   `context.session` is `{ id, protocolVersion }` with an id of the channel's own that is never sent.
 * - Bad input gets the JSON-RPC error it gets over HTTP (`-32700` for bytes that are not UTF-8 or not
 *   JSON, `-32600` for what is not a JSON-RPC request, a batch or a message over `maxBodyBytes`, id
 *   `null` where it cannot be read) and the channel goes on.
 *
 * @example
 * const endpoint = new McpEndpoint({ hub });
 * const session = serveChannel(endpoint, stdioChannel());
 * await session.closed; // stdin closed: every stream ended, every slot released
 * @param endpoint the endpoint whose admission, authorization and answers the channel gets.
 * @param channel the channel to serve; subscribed at once.
 * @param options the channel's principal (`auth`) and the request its hooks see.
 * @returns the session, whose `closed` resolves when the channel has ended.
 * @see stdioChannel
 * @see channelPair
 */
export function serveChannel(endpoint: McpEndpoint, channel: MessageChannel, options: ServeChannelOptions = {}): ChannelSession {
  validEndpoint<McpEndpoint>('serveChannel endpoint', endpoint);
  messageChannel('serveChannel channel', channel);
  const given = validOptions('serveChannel options', options, ['auth', 'request']);
  if (given.auth !== undefined) channelAuth('auth', given.auth);
  if (given.request !== undefined) implementing('request', given.request, ['header'], 'an EndpointRequest (method, header, remoteAddress)');
  return new ChannelServer(endpoint.core, channel, options).start();
}

/** A listen on the channel, from its request until its stream ends. */
interface ListenEntry {
  /** The client cancelled it before its stream opened. */
  cancelled: boolean;
  writer: StreamWriter | undefined;
}

/** The legacy era of the channel, once `initialize` agreed on a revision. */
interface LegacyEra {
  readonly subscriptions: ChannelSubscriptions;
  /** Its notifications' writer, once the answer to `initialize` is sent. */
  feed: StreamWriter | undefined;
  started: boolean;
}

class ChannelServer implements ChannelSession {
  readonly closed: Promise<void>;
  readonly #core: ProtocolCore;
  readonly #channel: MessageChannel;
  readonly #options: ServeChannelOptions;
  readonly #demand = new ChannelDemand();
  readonly #listens = new Map<JsonRpcId, ListenEntry>();
  readonly #id = randomUUID();
  #context: RequestContext | undefined;
  #legacy: LegacyEra | undefined;
  #ended = false;
  #resolveClosed!: () => void;
  #incoming: Subscription | undefined;
  /** The channel's place in the core, which ends the channel when its credential ends. */
  #hold: ChannelHold | undefined;
  #drain: Subscription | undefined;
  /** Messages that arrived while the channel's principal was being decided. */
  #early: ChannelInput[] | undefined = [];

  constructor(core: ProtocolCore, channel: MessageChannel, options: ServeChannelOptions) {
    this.#core = core;
    this.#channel = channel;
    this.#options = options;
    this.closed = new Promise((resolve) => (this.#resolveClosed = resolve));
  }

  get stats(): ChannelStats {
    let listens = 0;
    for (const entry of this.#listens.values()) if (entry.writer !== undefined) listens++;
    return { listens, subscriptions: this.#legacy?.subscriptions.size ?? 0, era: this.#legacy === undefined ? 'modern' : 'legacy' };
  }

  start(): this {
    this.#drain = this.#channel.drain$.subscribe(() => this.#demand.drained());
    // Read from the start (nothing the peer sends is lost), served once the principal is known.
    this.#incoming = this.#channel.incoming.subscribe({
      next: (input) => (this.#early === undefined ? this.#receive(input) : this.#early.push(input)),
      error: (error: unknown) => {
        reportError('adapter', error);
        this.#end();
      },
      complete: () => this.#end(),
    });
    this.#authenticate().then(
      (auth) => {
        if (this.#ended) return;
        this.#context = { auth, request: this.#options.request ?? CHANNEL_REQUEST };
        this.#hold = this.#core.holdChannel(auth, this);
        const early = this.#early ?? [];
        this.#early = undefined;
        for (const input of early) this.#receive(input);
      },
      (error: unknown) => {
        if (!(error instanceof AuthError) && !(error instanceof Refusal)) reportError('adapter', error);
        this.close();
      },
    );
    return this;
  }

  async #authenticate(): Promise<AuthInfo> {
    const given = this.#options.auth;
    if (given === undefined) return { principal: `channel:${this.#id}`, scopes: new Set() };
    return typeof given === 'function' ? given() : given;
  }

  /** True once `initialize` made the channel a legacy session (what the core counts as a session at a revoke). */
  get legacy(): boolean {
    return this.#legacy !== undefined;
  }

  /**
   * The core: the channel's credential ended (expired, rechecked inactive, its principal revoked).
   * Its listens got their closing frames from the core in this turn; the channel closes after them,
   * at the next turn (its legacy subscriptions end with it: nothing would refuse the credential again).
   */
  end(_reason: CloseReason): void {
    if (this.#ended) return;
    setImmediate(() => this.close());
  }

  close(): void {
    if (this.#ended) return;
    this.#end();
    try {
      this.#channel.close();
    } catch (error) {
      reportError('adapter', error);
    }
  }

  /** The channel ended: every stream unsubscribed (nothing sent), every subscription released. */
  #end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#early = undefined;
    this.#hold?.release();
    this.#incoming?.unsubscribe();
    this.#drain?.unsubscribe();
    for (const entry of Array.from(this.#listens.values())) {
      entry.cancelled = true;
      entry.writer?.unsubscribe();
    }
    this.#listens.clear();
    const legacy = this.#legacy;
    if (legacy !== undefined) {
      legacy.feed?.unsubscribe();
      legacy.subscriptions.close();
    }
    this.#resolveClosed();
  }

  /** Writes one message; a channel past its mark makes every stream hold its notifications. */
  send(json: string): void {
    if (this.#ended) return;
    let ready: boolean;
    try {
      ready = this.#channel.send(json);
    } catch (error) {
      // A channel whose write path throws is gone: everything it held is released.
      reportError('adapter', error);
      this.close();
      return;
    }
    if (!ready) this.#demand.busy();
  }

  #error(id: JsonRpcId | null, error: JsonRpcError): void {
    this.send(JSON.stringify(error.toResponse(id)));
  }

  #receive(input: ChannelInput): void {
    if (this.#ended) return;
    let value: unknown;
    try {
      value = this.#parse(input);
    } catch (error) {
      if (error instanceof JsonRpcError) return this.#error(null, error);
      throw error;
    }
    if (Array.isArray(value)) {
      // As over HTTP (every revision this library serves forbids them, or no client sends them).
      return this.#error(null, new JsonRpcError(ErrorCode.InvalidRequest, 'JSON-RPC batches are not supported; send one message at a time'));
    }
    // A response from the client (to a request this server never sends): nothing to answer.
    if (isResponse(value)) return;
    let message: Envelope;
    try {
      message = parseEnvelope(value);
    } catch (error) {
      if (error instanceof Refusal || error instanceof InvalidParams) return this.#error(error.id, error.rpc);
      throw error;
    }
    if (message.id === undefined) return this.#notification(message);
    this.#request(message.id, message.method, message.params).catch((error: unknown) => {
      reportError('endpoint', error);
      this.#error(message.id!, new JsonRpcError(ErrorCode.InternalError, 'internal error'));
    });
  }

  /** The JSON value of one input. @throws JsonRpcError `-32700` / `-32600`, as the endpoint answers an HTTP body. */
  #parse(input: ChannelInput): unknown {
    if (typeof input === 'object' && input !== null && !(input instanceof Uint8Array)) {
      if ('parsed' in input) return input.parsed;
      throw tooLarge(this.#core.maxBodyBytes);
    }
    const limit = this.#core.maxBodyBytes;
    let text: string;
    if (typeof input === 'string') {
      if (Buffer.byteLength(input) > limit) throw tooLarge(limit);
      text = input;
    } else {
      if (input.byteLength > limit) throw tooLarge(limit);
      try {
        text = UTF8.decode(input);
      } catch {
        throw new JsonRpcError(ErrorCode.ParseError, 'parse error: the message is not valid UTF-8');
      }
    }
    try {
      return JSON.parse(text);
    } catch {
      throw new JsonRpcError(ErrorCode.ParseError, 'parse error: the message is not valid JSON');
    }
  }

  #notification(message: Envelope): void {
    if (message.method !== 'notifications/cancelled') return;
    const requestId = message.params?.requestId;
    if (typeof requestId !== 'string' && typeof requestId !== 'number') return;
    const entry = this.#listens.get(requestId);
    if (entry === undefined) return;
    // MCP 2026-07-28: the client ends one subscription; nothing more is sent for it.
    entry.cancelled = true;
    this.#listens.delete(requestId);
    entry.writer?.unsubscribe();
  }

  /** Every request goes to the core's one dispatch; the channel keeps only what is a channel's (its streams, its era). */
  async #request(id: JsonRpcId, method: string, params: Envelope['params']): Promise<void> {
    if (method === 'subscriptions/listen' && this.#legacy === undefined) return this.#listen(id, params);
    await this.#respond(id, await this.#call(() => this.#core.dispatch(id, method, params, this.#caller())));
    const legacy = this.#legacy;
    if (legacy !== undefined && !legacy.started) this.#startFeed(legacy);
  }

  /** Who is calling, in which era: what the core dispatches by. */
  #caller(): Caller {
    const session = this.#legacy?.subscriptions;
    return {
      context: session?.context ?? this.#context!,
      transport: 'channel',
      session,
      listening: this.#listens.size > 0,
      sessionId: this.#id,
      began: (subscriptions) => {
        if (this.#legacy !== undefined || this.#ended) return false;
        this.#legacy = { subscriptions, feed: undefined, started: false };
        return true;
      },
    };
  }

  /** Runs `answer`, turning a refusal the core threw (`busy`…) into its JSON-RPC error: on a channel the message says it all. */
  async #call(answer: () => Promise<Answer>): Promise<Answer | JsonRpcError> {
    try {
      return await answer();
    } catch (error) {
      if (error instanceof Refusal) return error.rpc;
      if (error instanceof JsonRpcError) return error;
      throw error;
    }
  }

  async #respond(id: JsonRpcId, answer: Answer | JsonRpcError): Promise<void> {
    if (answer instanceof JsonRpcError) return this.#error(id, answer);
    if (answer.kind === 'result') this.send(JSON.stringify({ jsonrpc: '2.0', id: answer.id, result: answer.result }));
    else if (answer.kind === 'error') this.#error(answer.id, answer.error);
    else answer.abandon();
  }

  /** The legacy notifications flow from the answer to `initialize` on, in order after it. */
  #startFeed(legacy: LegacyEra): void {
    legacy.started = true;
    if (this.#ended) return;
    const demand = this.#demand.add();
    const feed = new StreamWriter(this, demand, () => (legacy.feed = undefined));
    legacy.feed = feed;
    legacy.subscriptions.feed(demand).subscribe(feed);
    this.#demand.started(demand);
  }

  async #listen(id: JsonRpcId, params: Envelope['params']): Promise<void> {
    if (this.#listens.has(id)) {
      // Every message of a listen is told apart by its id: two at once would be indistinguishable.
      return this.#error(id, new JsonRpcError(ErrorCode.InvalidRequest, `request id ${JSON.stringify(id)} is in use by an open subscriptions/listen on this channel`));
    }
    const entry: ListenEntry = { cancelled: false, writer: undefined };
    this.#listens.set(id, entry);
    const response = await this.#call(() => this.#core.dispatch(id, 'subscriptions/listen', params, this.#caller()));
    if (response instanceof JsonRpcError || response.kind !== 'stream') {
      if (this.#listens.get(id) === entry) this.#listens.delete(id);
      return this.#respond(id, response);
    }
    if (this.#ended || entry.cancelled) return response.abandon();
    const demand = this.#demand.add();
    const writer = new StreamWriter(this, demand, () => {
      if (this.#listens.get(id) === entry) this.#listens.delete(id);
    });
    entry.writer = writer;
    let frames;
    try {
      frames = response.open(demand);
    } catch (error) {
      writer.unsubscribe();
      response.abandon();
      throw error;
    }
    frames.subscribe(writer);
    this.#demand.started(demand);
  }

  /** A stream on the channel has ended: its demand leaves the round. */
  ended(demand: Broadcast<boolean>): void {
    this.#demand.remove(demand);
  }
}

/**
 * Writes one stream's frames on the channel: its messages as JSON texts (tagged as the stream tags
 * them); keep-alive comments are not sent (they mean nothing on a message channel). A stream that
 * fails ends alone (reported on `channels.error`); the channel goes on.
 */
class StreamWriter extends LeanSubscriber<Frame> {
  constructor(
    private readonly server: ChannelServer,
    private readonly demand: Broadcast<boolean>,
    private readonly onEnd: () => void,
  ) {
    super();
  }

  override unsubscribe(): void {
    if (this.closed) return;
    super.unsubscribe();
    this.onEnd();
    this.server.ended(this.demand);
  }

  protected override _next(frame: Frame): void {
    if (frame.type !== 'message') return;
    let json: string;
    try {
      json = messageJson(frame);
    } catch (error) {
      reportError('adapter', error);
      this.unsubscribe();
      return;
    }
    this.server.send(json);
  }

  protected override _error(error: unknown): void {
    reportError('adapter', error);
    this.unsubscribe();
  }

  protected override _complete(): void {
    this.unsubscribe();
  }
}

function tooLarge(limit: number): JsonRpcError {
  return new JsonRpcError(ErrorCode.InvalidRequest, `message exceeds ${limit} bytes`);
}

/** A JSON-RPC response (`result` or `error`, no `method`): the peer answering, not asking. */
function isResponse(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return false;
  const message = value as Record<string, unknown>;
  return message.method === undefined && ('result' in message || 'error' in message);
}
