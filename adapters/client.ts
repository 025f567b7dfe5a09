/**
 * An undici-based MCP client for change-notification streams: modern `subscriptions/listen`
 * (protocol revision 2026-07-28) and the legacy `GET` SSE stream (2025-06-18 / 2025-11-25).
 */
import { Observable, type Subscriber } from 'rxjs';
import { request, type Dispatcher } from 'undici';
import { McpRxError } from '../lib/errors.js';
import { type JsonRpcId, type JsonRpcMessage, tryParseJson } from '../lib/jsonrpc.js';
import { MODERN_PROTOCOL_VERSION, NEWEST_LEGACY_PROTOCOL_VERSION } from '../lib/protocol.js';
import { callback, httpUrl, implementing, nonNegativeInteger, object, options as validOptions, recordOf, requestId, string } from '../lib/validate.js';
import { SseParser, type ParsedSseEvent } from './sseParser.js';

/** The protocol revision `listen` speaks: `'2026-07-28'`. */
export const LISTEN_PROTOCOL_VERSION = MODERN_PROTOCOL_VERSION;

/** The protocol revision `openSse` announces unless told otherwise: `'2025-11-25'`. */
export const LEGACY_PROTOCOL_VERSION = NEWEST_LEGACY_PROTOCOL_VERSION;

/** Options of {@link listen}. */
export interface ListenClientOptions {
  /** The MCP endpoint, e.g. `http://127.0.0.1:3000/mcp`. */
  readonly url: string | URL;
  /** The listen request id; every message of the stream is tagged with it. Defaults to `1`. */
  readonly id?: JsonRpcId;
  /** The filter, sent verbatim as `params.notifications`, e.g. `{ toolsListChanged: true }`. */
  readonly notifications: Record<string, unknown>;
  /** Sent as `Authorization: Bearer <token>`. */
  readonly token?: string;
  /** Extra request headers (names are case-insensitive; the protocol headers win over them). */
  readonly headers?: Record<string, string>;
  /** The undici dispatcher (pool, agent, mock-free test agent…). Defaults to undici's global dispatcher. */
  readonly dispatcher?: Dispatcher;
  /** Called with the text after the `:` of each SSE comment (keep-alives arrive as `""`). */
  readonly onComment?: (text: string) => void;
  /**
   * Longest silence allowed between two body chunks, in milliseconds; `0` disables it.
   * Defaults to undici's 300 000. Server keep-alives (every 15 000 ms by default) reset it,
   * so it doubles as dead-peer detection.
   */
  readonly bodyTimeout?: number;
}

/** Options of {@link openSse}. */
export interface OpenSseInit {
  /** The session id from `initialize`, sent as `Mcp-Session-Id`. */
  readonly sessionId: string;
  /** The id of the last event seen on an earlier connection, sent as `Last-Event-ID` to get a replay. */
  readonly lastEventId?: string;
  /** Sent as `MCP-Protocol-Version`. Defaults to {@link LEGACY_PROTOCOL_VERSION} (`2025-11-25`). */
  readonly protocolVersion?: string;
  /** Sent as `Authorization: Bearer <token>`. */
  readonly token?: string;
  /** Extra request headers (names are case-insensitive; the protocol headers win over them). */
  readonly headers?: Record<string, string>;
  /** The undici dispatcher. Defaults to undici's global dispatcher. */
  readonly dispatcher?: Dispatcher;
  /** Called with the text after the `:` of each SSE comment. */
  readonly onComment?: (text: string) => void;
  /** Longest silence allowed between two body chunks, in milliseconds; `0` disables it. Defaults to undici's 300 000. */
  readonly bodyTimeout?: number;
}

/** What a {@link ListenClientError} carries: the HTTP status and the body, parsed as JSON when it is JSON. */
export interface ListenClientErrorInfo {
  /** The HTTP status of the response (`200` when the stream itself was malformed). */
  readonly status: number;
  /** The response body parsed as JSON (usually a JSON-RPC error response), else its text. */
  readonly body: unknown;
}

/**
 * The server did not open the SSE stream it was asked for, or sent something on it that is not MCP.
 *
 * A 406 (no `text/event-stream` in `Accept`), a 503 (server at capacity), a `-32602` for a
 * bad filter or a 404 for an unknown session all end up here, with the status and the
 * JSON-RPC error response in `info`, so callers can branch on `info.status` or
 * `info.body.error.code` without parsing the message.
 *
 * @example
 * ```ts
 * listen({ url, notifications: { toolsListChanged: 'yes' } }).subscribe({
 *   error: (err) => {
 *     if (err instanceof ListenClientError) console.log(err.info.status, err.info.body);
 *   },
 * });
 * ```
 *
 * @param message a sentence saying what the server answered.
 * @param info the status and the (parsed) body.
 * @see listen
 * @see openSse
 */
export class ListenClientError extends McpRxError {
  override readonly name = 'ListenClientError';
  /** Stable machine-readable code. */
  override readonly code = 'ERR_MCP_RX_LISTEN_CLIENT';
  /** The HTTP status and the body. */
  override readonly info: ListenClientErrorInfo;

  constructor(message: string, info: ListenClientErrorInfo, options?: { cause?: unknown }) {
    super(message, options);
    this.info = info;
  }
}

/**
 * Opens a `subscriptions/listen` stream and emits each JSON-RPC message the server sends on it.
 *
 * One subscription is one HTTP `POST` (MCP 2026-07-28): the first value is the
 * `notifications/subscriptions/acknowledged` notification, then the notifications the filter
 * asked for, in order. When the server closes the stream it sends `notifications/cancelled`
 * and then the JSON-RPC response to the listen id; that response is emitted and the
 * Observable completes. If the server ends the stream without that response (a proxy cut it,
 * the server went away gracefully) the Observable also just completes: to the client it is a
 * disconnect, and the remedy is the same, a new listen. A network failure (refused
 * connection, reset socket, `bodyTimeout`) is an error. A response other than `200` with
 * `Content-Type: text/event-stream` is a {@link ListenClientError}. Unsubscribing aborts the
 * request and destroys the response body, which closes the connection. The request is sent
 * on each subscription (the Observable is cold).
 *
 * @example
 * ```ts
 * import { filter } from 'rxjs';
 * listen({ url: 'http://127.0.0.1:3000/mcp', id: 7, notifications: { toolsListChanged: true }, token })
 *   .pipe(filter((m) => 'method' in m && m.method === 'notifications/tools/list_changed'))
 *   .subscribe(() => refreshTools());
 * ```
 *
 * @param options.url the MCP endpoint.
 * @param options.id the listen request id; defaults to `1`. Completion matches it exactly
 *   (the number `7` is not the string `"7"`).
 * @param options.notifications the filter, sent verbatim as `params.notifications`.
 * @param options.token the bearer token, if any.
 * @param options.headers extra request headers.
 * @param options.dispatcher the undici dispatcher; defaults to the global one.
 * @param options.onComment called for each SSE comment (keep-alives).
 * @param options.bodyTimeout in milliseconds; defaults to undici's 300 000; `0` disables it.
 * @throws InvalidOptionError naming `listen options` when `options` is not an object, else the
 *   option that is unknown, missing (`url`, `notifications`) or of the wrong type: `url` not an
 *   http(s) URL, `id` not a string or finite number, `notifications` not an object, `token` not a
 *   string, `headers` not an object of strings, `dispatcher` not an undici Dispatcher, `onComment`
 *   not a function, `bodyTimeout` not a non-negative integer.
 * @see openSse for the legacy `GET` stream
 * @see SseParser
 */
export function listen(options: ListenClientOptions): Observable<JsonRpcMessage> {
  validOptions<keyof ListenClientOptions>('listen options', options, LISTEN_OPTIONS, { like: '{ url, notifications }' });
  httpUrl('url', options.url);
  const id: JsonRpcId = options.id === undefined ? 1 : requestId('id', options.id);
  const notifications = object<Record<string, unknown>>('notifications', options.notifications, 'an object such as { toolsListChanged: true }');
  connectionOptions(options);
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'subscriptions/listen',
    params: {
      notifications,
      _meta: {
        'io.modelcontextprotocol/protocolVersion': LISTEN_PROTOCOL_VERSION,
        'io.modelcontextprotocol/clientCapabilities': {},
      },
    },
  });
  const headers = mergeHeaders(options.headers, options.token, {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': LISTEN_PROTOCOL_VERSION,
    'mcp-method': 'subscriptions/listen',
  });
  return new Observable<JsonRpcMessage>((subscriber) =>
    streamSse(
      subscriber,
      options.url,
      { method: 'POST', headers, body, dispatcher: options.dispatcher, bodyTimeout: options.bodyTimeout },
      'subscriptions/listen',
      options.onComment,
      (event) => {
        // MCP sends every JSON-RPC message as a `message` event; other event types are not ours.
        if (event.event !== 'message') return;
        const message = parseMessage(event.data);
        if (message === undefined) {
          subscriber.error(
            new ListenClientError(`The listen stream carried a message event whose data is not a JSON-RPC message (the server must send one JSON object per event): ${truncate(event.data)}`, {
              status: 200,
              body: event.data,
            }),
          );
          return;
        }
        subscriber.next(message);
        if (!('method' in message) && 'id' in message && message.id === id) subscriber.complete();
      },
    ),
  );
}

/**
 * Opens a legacy MCP `GET` SSE stream for a session and emits every event with its `id`.
 *
 * The legacy era (2025-06-18 / 2025-11-25) delivers `notifications/resources/updated` and the
 * list-changed notifications on a session's `GET` stream; each frame has an `id:` so that a
 * reconnecting client can send `Last-Event-ID` and get what it missed replayed. This emits the
 * raw {@link ParsedSseEvent}s (parse `data` as JSON yourself) so a reconnecting wrapper can
 * keep `event.id` for the next `lastEventId`. It completes when the server ends the stream,
 * errors on a network failure, and errors with a {@link ListenClientError} when the answer
 * is not `200` with `Content-Type: text/event-stream` (404 unknown session, 400 missing
 * session id, 406 …). Unsubscribing aborts the request and closes the connection.
 *
 * @example
 * ```ts
 * let last: string | undefined;
 * openSse('http://127.0.0.1:3000/mcp', { sessionId, lastEventId: last })
 *   .subscribe((e) => { last = e.id; handle(JSON.parse(e.data)); });
 * ```
 *
 * @param url the MCP endpoint.
 * @param init.sessionId sent as `Mcp-Session-Id`.
 * @param init.lastEventId sent as `Last-Event-ID` when given.
 * @param init.protocolVersion sent as `MCP-Protocol-Version`; defaults to `2025-11-25`.
 * @param init.token the bearer token, if any.
 * @param init.headers extra request headers.
 * @param init.dispatcher the undici dispatcher; defaults to the global one.
 * @param init.onComment called for each SSE comment.
 * @param init.bodyTimeout in milliseconds; defaults to undici's 300 000; `0` disables it.
 * @throws InvalidOptionError naming `openSse url` when `url` is not an http(s) URL, `openSse init`
 *   when `init` is not an object, else the option that is unknown, missing (`sessionId`) or of the
 *   wrong type (as {@link listen}'s; `sessionId` and `protocolVersion` non-empty strings,
 *   `lastEventId` a string).
 * @see listen for the modern stream
 */
export function openSse(url: string | URL, init: OpenSseInit): Observable<ParsedSseEvent> {
  httpUrl('openSse url', url);
  validOptions<keyof OpenSseInit>('openSse init', init, OPEN_SSE_OPTIONS, { like: '{ sessionId }' });
  string('sessionId', init.sessionId, { nonEmpty: true });
  if (init.lastEventId !== undefined) string('lastEventId', init.lastEventId);
  if (init.protocolVersion !== undefined) string('protocolVersion', init.protocolVersion, { nonEmpty: true });
  connectionOptions(init);
  const protocolHeaders: Record<string, string> = {
    accept: 'text/event-stream',
    'mcp-session-id': init.sessionId,
    'mcp-protocol-version': init.protocolVersion ?? LEGACY_PROTOCOL_VERSION,
  };
  if (init.lastEventId !== undefined) protocolHeaders['last-event-id'] = init.lastEventId;
  const headers = mergeHeaders(init.headers, init.token, protocolHeaders);
  return new Observable<ParsedSseEvent>((subscriber) =>
    streamSse(
      subscriber,
      url,
      { method: 'GET', headers, dispatcher: init.dispatcher, bodyTimeout: init.bodyTimeout },
      'GET SSE',
      init.onComment,
      (event) => subscriber.next(event),
    ),
  );
}

/** The options {@link listen} and {@link openSse} share. */
type ConnectionOptions = Pick<ListenClientOptions, 'token' | 'headers' | 'dispatcher' | 'onComment' | 'bodyTimeout'>;

const CONNECTION_OPTIONS: readonly (keyof ConnectionOptions)[] = ['token', 'headers', 'dispatcher', 'onComment', 'bodyTimeout'];
const LISTEN_OPTIONS: readonly (keyof ListenClientOptions)[] = ['url', 'id', 'notifications', ...CONNECTION_OPTIONS];
const OPEN_SSE_OPTIONS: readonly (keyof OpenSseInit)[] = ['sessionId', 'lastEventId', 'protocolVersion', ...CONNECTION_OPTIONS];

/** Checks the options {@link listen} and {@link openSse} share. */
function connectionOptions(options: ConnectionOptions): void {
  if (options.token !== undefined) string('token', options.token);
  if (options.headers !== undefined) recordOf('headers', options.headers, 'an object of header names and string values', (label, value) => string(label, value));
  if (options.dispatcher !== undefined) implementing('dispatcher', options.dispatcher, ['dispatch'], 'an undici Dispatcher (an Agent, a Pool, a Client)');
  if (options.onComment !== undefined) callback('onComment', options.onComment);
  if (options.bodyTimeout !== undefined) nonNegativeInteger('bodyTimeout', options.bodyTimeout, 'milliseconds');
}

interface SseRequest {
  readonly method: 'GET' | 'POST';
  readonly headers: Record<string, string>;
  readonly body?: string;
  readonly dispatcher: Dispatcher | undefined;
  readonly bodyTimeout: number | undefined;
}

type Body = Dispatcher.ResponseData['body'];

/** Sends the request, checks the answer, feeds the body to a parser; returns the teardown. */
function streamSse<T>(
  subscriber: Subscriber<T>,
  url: string | URL,
  req: SseRequest,
  what: string,
  onComment: ((text: string) => void) | undefined,
  onEvent: (event: ParsedSseEvent) => void,
): () => void {
  const controller = new AbortController();
  let body: Body | undefined;
  const fail = (err: unknown): void => {
    if (!subscriber.closed) subscriber.error(err);
  };
  const open = async (): Promise<void> => {
    const response = await request(url, {
      method: req.method,
      headers: req.headers,
      ...(req.body === undefined ? {} : { body: req.body }),
      ...(req.dispatcher === undefined ? {} : { dispatcher: req.dispatcher }),
      ...(req.bodyTimeout === undefined ? {} : { bodyTimeout: req.bodyTimeout }),
      signal: controller.signal,
    });
    const b = (body = response.body);
    // From here on the body is what fails (abort, reset, bodyTimeout); without a listener
    // such a failure would be an uncaught 'error' event.
    b.on('error', fail);
    if (subscriber.closed) {
      b.destroy();
      return;
    }
    if (response.statusCode !== 200 || !isEventStream(response.headers['content-type'])) {
      fail(await refusal(what, response));
      return;
    }
    const parser = new SseParser((event) => {
      if (!subscriber.closed) onEvent(event);
    }, onComment);
    b.on('data', (chunk: Buffer) => parser.push(chunk));
    b.on('end', () => {
      parser.end();
      subscriber.complete();
    });
  };
  open().catch(fail);
  return () => {
    body?.destroy();
    controller.abort();
  };
}

/** Reads a refusing response and builds the error that explains it. */
async function refusal(what: string, response: Dispatcher.ResponseData): Promise<ListenClientError> {
  const text = await response.body.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Not JSON: keep the text, it is the best explanation there is.
  }
  const status = response.statusCode;
  const type = headerValue(response.headers['content-type']) ?? 'no Content-Type';
  const rpc = rpcError(parsed);
  const detail = rpc === undefined ? (text === '' ? 'an empty body' : truncate(text)) : `JSON-RPC error ${rpc.code} "${rpc.message}"`;
  const message =
    status === 200
      ? `${what} was answered 200 with ${type} instead of text/event-stream: ${detail}`
      : `${what} was answered HTTP ${status} (${type}) instead of an SSE stream: ${detail}`;
  return new ListenClientError(message, { status, body: parsed });
}

function mergeHeaders(
  extra: Record<string, string> | undefined,
  token: string | undefined,
  protocol: Record<string, string>,
): Record<string, string> {
  const headers: Record<string, string> = {};
  if (extra !== undefined) for (const [name, value] of Object.entries(extra)) headers[name.toLowerCase()] = value;
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  return Object.assign(headers, protocol);
}

function isEventStream(contentType: string | string[] | undefined): boolean {
  const value = headerValue(contentType);
  if (value === undefined) return false;
  const semi = value.indexOf(';');
  return (semi === -1 ? value : value.slice(0, semi)).trim().toLowerCase() === 'text/event-stream';
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function parseMessage(data: string): JsonRpcMessage | undefined {
  const value = tryParseJson(data);
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as JsonRpcMessage) : undefined;
}

function rpcError(body: unknown): { code: unknown; message: unknown } | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const error = (body as { error?: unknown }).error;
  if (typeof error !== 'object' || error === null) return undefined;
  return error as { code: unknown; message: unknown };
}

function truncate(text: string): string {
  return text.length > 200 ? `${JSON.stringify(text.slice(0, 200))}…` : JSON.stringify(text);
}
