import { asyncScheduler, defer, finalize, type Observable, type SchedulerLike, Subject } from 'rxjs';
import { anonymous, AuthError, type AuthInfo } from './auth.js';
import { InvalidOptionError } from './errors.js';
import { authorizeListenFilter, parseListenFilter, type ServerCapabilities } from './filter.js';
import type { Frame } from './frame.js';
import type { Hub } from './hub.js';
import { ErrorCode, isJsonRpcId, JsonRpcError, type JsonRpcId } from './jsonrpc.js';
import { listenStream } from './listen.js';
import { positiveInteger, resolveListenOptions, resolveStreamLimits, type ListenOptions, type StreamLimits } from './options.js';
import { PrincipalRegistry, type PrincipalCap } from './principals.js';
import { StreamSlots } from './slots.js';

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

/** Options of {@link McpEndpoint}. Every number is validated at construction (DESIGN M13). */
export interface McpEndpointOptions extends Partial<ListenOptions>, Partial<StreamLimits> {
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
  /** Other JSON-RPC methods, answered with a single JSON response. */
  readonly methods?: Readonly<Record<string, MethodHandler>>;
  /** The per-principal cap to admit listens through (e.g. a cluster-wide one); defaults to a {@link PrincipalRegistry} of `maxListensPerPrincipal`. */
  readonly principals?: PrincipalCap;
  /** A shared server-wide slot pool (e.g. also used by streamed `tools/call`); defaults to a pool of `maxStreams`. */
  readonly slots?: StreamSlots;
  /** Largest accepted request body, in bytes; larger ones get HTTP 413. Defaults to 1 048 576 (1 MiB). */
  readonly maxBodyBytes?: number;
  /** Where time comes from; defaults to `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
}

/** Counts of what an endpoint holds now (for leak checks and metrics). */
export interface EndpointStats {
  /** Open listen streams. */
  readonly streams: number;
  /** Slots held in the (possibly shared) pool. */
  readonly slots: number;
  /** Principals with at least one live stream. */
  readonly principals: number;
}

const KNOWN_OPTIONS = new Set([
  'hub', 'capabilities', 'authenticate', 'canRead', 'subscribeHook', 'methods', 'slots', 'principals', 'maxBodyBytes', 'scheduler',
  'keepAliveInterval', 'listenIdleTimeout', 'maxStreamLifetime', 'listenMaxQueue', 'closeNotice',
  'maxListensPerPrincipal', 'maxStreams',
]);

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
  readonly #options: McpEndpointOptions;
  readonly #scheduler: SchedulerLike;
  readonly #shutdown = new Subject<void>();
  #streams = 0;
  #closed = false;

  constructor(options: McpEndpointOptions) {
    for (const key of Object.keys(options)) {
      if (!KNOWN_OPTIONS.has(key)) throw new InvalidOptionError(key, 'a known McpEndpoint option', (options as unknown as Record<string, unknown>)[key]);
    }
    if (options.hub === undefined) throw new InvalidOptionError('hub', 'a Hub', options.hub);
    const { keepAliveInterval, listenIdleTimeout, maxStreamLifetime, listenMaxQueue, closeNotice } = options;
    this.listenOptions = resolveListenOptions({ keepAliveInterval, listenIdleTimeout, maxStreamLifetime, listenMaxQueue, closeNotice });
    const limits = resolveStreamLimits({ maxListensPerPrincipal: options.maxListensPerPrincipal, maxStreams: options.maxStreams });
    this.hub = options.hub;
    this.slots = options.slots ?? new StreamSlots(limits.maxStreams);
    this.principals = options.principals ?? new PrincipalRegistry(limits.maxListensPerPrincipal);
    this.capabilities = options.capabilities ?? { tools: true, prompts: true, resources: true };
    this.maxBodyBytes = options.maxBodyBytes === undefined ? 1_048_576 : positiveInteger('maxBodyBytes', options.maxBodyBytes);
    this.#scheduler = options.scheduler ?? asyncScheduler;
    this.#options = options;
  }

  /** What the endpoint holds now. */
  get stats(): EndpointStats {
    return { streams: this.#streams, slots: this.slots.inUse, principals: this.principals.size };
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
      // An HTTP 500 is a bug: answer the JSON-RPC internal error instead, and keep the process up.
      return jsonError(200, null, new JsonRpcError(ErrorCode.InternalError, 'internal error'));
    }
  }

  async #handle(request: EndpointRequest): Promise<EndpointResponse> {
    if (request.method !== 'POST') {
      return jsonError(405, null, new JsonRpcError(ErrorCode.InvalidRequest, `method ${request.method} is not allowed; use POST`), { Allow: 'POST' });
    }
    const auth = await this.#authenticate(request);
    const message = parseEnvelope(await readJson(request.body, request.header('content-length'), this.maxBodyBytes));
    if (message.id === undefined) return { kind: 'empty', status: 202, headers: {} };
    const context: RequestContext = { auth, request };
    if (message.method === 'subscriptions/listen') return this.#listen(message.id, message.params, request, context);
    const handler = this.#options.methods?.[message.method];
    if (handler === undefined || !Object.hasOwn(this.#options.methods!, message.method)) {
      return jsonError(404, message.id, new JsonRpcError(ErrorCode.MethodNotFound, `method not found: ${message.method}`));
    }
    try {
      const result = await handler(message.params, context);
      return json(200, { jsonrpc: '2.0', id: message.id, result: result ?? {} });
    } catch (error) {
      if (error instanceof JsonRpcError) return jsonError(200, message.id, error);
      if (error instanceof HttpError) return jsonError(error.status, message.id, error.rpc, error.headers);
      return jsonError(200, message.id, new JsonRpcError(ErrorCode.InternalError, `${message.method} failed`));
    }
  }

  async #authenticate(request: EndpointRequest): Promise<AuthInfo> {
    const authenticate = this.#options.authenticate;
    if (authenticate === undefined) return anonymous(request.remoteAddress);
    try {
      return await authenticate(request);
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
      if (error instanceof JsonRpcError) return jsonError(200, id, error);
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
    const { auth } = context;
    const open = (demand$: Observable<boolean>) =>
      defer(() => {
        const admission = this.principals.admit(auth.principal);
        this.#streams++;
        return listenStream({
          requestId: id,
          filter: authorized,
          hub: this.hub,
          options: this.listenOptions,
          expiresAt: auth.expiresAt,
          supersede$: admission.superseded$,
          shutdown$: this.#shutdown,
          demand$,
          scheduler: this.#scheduler,
        }).pipe(
          finalize(() => {
            this.#streams--;
            admission.release();
            slot.release();
          }),
        );
      });
    return { kind: 'stream', status: 200, headers: SSE_HEADERS, open, abandon: () => slot.release() };
  }
}

/** An error that carries its HTTP status (413, 400, 401…) and, when readable, the request id. */
class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly rpc: JsonRpcError,
    readonly headers: Readonly<Record<string, string>> = {},
    readonly id: JsonRpcId | null = null,
  ) {
    super(rpc.message);
  }
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
  const id = isJsonRpcId(message.id) ? message.id : null;
  if (message.jsonrpc !== '2.0') throw invalid('jsonrpc must be "2.0"', id);
  if ('id' in message && !isJsonRpcId(message.id)) throw invalid('id must be a string or a number');
  if (typeof message.method !== 'string') throw invalid('method must be a string', id);
  const params = message.params;
  if (params !== undefined && (params === null || typeof params !== 'object' || Array.isArray(params))) {
    throw new HttpError(200, new JsonRpcError(ErrorCode.InvalidParams, 'params must be an object'), {}, id);
  }
  return { id: 'id' in message ? (message.id as JsonRpcId) : undefined, method: message.method, params: params as Envelope['params'] };
}

async function readJson(body: EndpointRequest['body'], contentLength: string | undefined, limit: number): Promise<unknown> {
  if (body !== undefined && typeof body === 'object' && 'parsed' in body) return body.parsed;
  const tooLarge = () => new HttpError(413, new JsonRpcError(ErrorCode.InvalidRequest, `request body exceeds ${limit} bytes`));
  if (contentLength !== undefined && Number(contentLength) > limit) throw tooLarge();
  let text: string;
  if (body === undefined) text = '';
  else if (typeof body === 'string') text = body;
  else if (body instanceof Uint8Array) text = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
  else {
    const chunks: Uint8Array[] = [];
    let size = 0;
    for await (const chunk of body) {
      size += chunk.byteLength;
      if (size > limit) throw tooLarge();
      chunks.push(chunk);
    }
    text = Buffer.concat(chunks).toString('utf8');
  }
  if (Buffer.byteLength(text) > limit) throw tooLarge();
  try {
    return JSON.parse(text);
  } catch {
    throw new HttpError(400, new JsonRpcError(ErrorCode.ParseError, 'parse error: the body is not valid JSON'));
  }
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
