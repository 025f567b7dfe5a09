// One HTTP exchange with an upstream MCP server, as an Observable of what it answers: the response
// opening, then each JSON-RPC message, whether the body is one JSON message or an SSE stream. What
// the client entry's `listen` and `openSse` do, plus what a gateway needs of them: the moment a
// stream opens (a legacy `resources/subscribe` needs a live GET), answers that come as SSE (a
// legacy server may answer any POST so), and a bound on what one message may hold.
import { Observable } from 'rxjs';
import { request, type Dispatcher } from 'undici';
import { type JsonRpcMessage, tryParseJson } from '../../lib/jsonrpc.js';
import { SseParser } from '../sseParser.js';
import { UpstreamError } from './errors.js';

/** Where and how an upstream is reached over HTTP. @internal */
export interface HttpTarget {
  /** The upstream's name, for messages. */
  readonly upstream: string;
  /** The MCP endpoint, e.g. `http://127.0.0.1:4000/mcp`. */
  readonly url: string | URL;
  /** Sent with every request (an `authorization` header, say); the protocol's own headers win. */
  readonly headers: Readonly<Record<string, string>>;
  /** The undici dispatcher; defaults to undici's global one. */
  readonly dispatcher: Dispatcher | undefined;
  /** Longest silence between two body chunks, in milliseconds (keep-alives reset it): a stalled upstream is a failed one. */
  readonly bodyTimeout: number;
  /** Largest message taken, in bytes: a JSON body, or an SSE event from its first byte to its end. */
  readonly maxMessageBytes: number;
}

/** What an exchange emits. @internal */
export type Incoming =
  /** The response is a 200 (or a 202 with nothing more to come): its headers. */
  | { readonly kind: 'open'; readonly sessionId: string | undefined }
  /** An SSE event (its `id:`, when the stream has one) and the JSON-RPC message it carries, if any (a priming event has none). */
  | { readonly kind: 'message'; readonly message: JsonRpcMessage | undefined; readonly eventId: string | undefined };

/** One request of an exchange. @internal */
export interface HttpRequest {
  readonly method: 'GET' | 'POST' | 'DELETE';
  /** Protocol headers (lower-case names), over the target's own. */
  readonly headers: Readonly<Record<string, string>>;
  /** A JSON-RPC message, for a POST. */
  readonly body?: unknown;
}

/** Bytes of a refusing answer kept to explain it. */
const REFUSAL_BYTES = 16_384;

/**
 * Sends `req` to `target` when subscribed and emits the answer: `open` once the status is 200 (or
 * 202), then each message (a JSON body is one; an SSE body one per `message` event), then completes
 * at the end of the body. Any other status, a body that is neither, a message that is not a JSON
 * object, one over `maxMessageBytes`, a network failure or `bodyTimeout` of silence is an
 * {@link UpstreamError}. Unsubscribing aborts the request.
 * @internal
 */
export function exchange(target: HttpTarget, req: HttpRequest): Observable<Incoming> {
  return new Observable<Incoming>((subscriber) => {
    const controller = new AbortController();
    let body: Dispatcher.ResponseData['body'] | undefined;
    const fail = (error: unknown) => {
      if (subscriber.closed) return;
      subscriber.error(error instanceof UpstreamError ? error : new UpstreamError(`upstream ${target.upstream}: ${req.method} ${String(target.url)} failed: ${errorText(error)}`, { upstream: target.upstream }, { cause: error }));
    };
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(target.headers)) headers[name.toLowerCase()] = value;
    Object.assign(headers, req.headers);
    const open = async () => {
      const response = await request(target.url, {
        method: req.method,
        headers,
        ...(req.body === undefined ? {} : { body: JSON.stringify(req.body) }),
        ...(target.dispatcher === undefined ? {} : { dispatcher: target.dispatcher }),
        bodyTimeout: target.bodyTimeout,
        signal: controller.signal,
      });
      const b = (body = response.body);
      b.on('error', fail);
      if (subscriber.closed) return void b.destroy();
      const type = mediaType(response.headers['content-type']);
      const sessionId = headerValue(response.headers['mcp-session-id']);
      if (response.statusCode === 202 || (response.statusCode === 200 && req.method === 'DELETE')) {
        b.resume();
        subscriber.next({ kind: 'open', sessionId });
        return subscriber.complete();
      }
      if (response.statusCode !== 200 || (type !== 'application/json' && type !== 'text/event-stream')) {
        return fail(await refusal(target, req, response.statusCode, type, b));
      }
      subscriber.next({ kind: 'open', sessionId });
      if (type === 'application/json') return readJson(target, b, subscriber, fail);
      readSse(target, b, subscriber, fail);
    };
    open().catch(fail);
    return () => {
      body?.destroy();
      controller.abort();
    };
  });
}

/** A JSON body: one message, at most `maxMessageBytes`. */
function readJson(target: HttpTarget, b: Dispatcher.ResponseData['body'], subscriber: { next(value: Incoming): void; complete(): void }, fail: (error: unknown) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  b.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size > target.maxMessageBytes) {
      b.destroy();
      return fail(tooLarge(target));
    }
    chunks.push(chunk);
  });
  b.on('end', () => {
    const message = parseMessage(Buffer.concat(chunks).toString('utf8'));
    if (message === undefined) return fail(new UpstreamError(`upstream ${target.upstream} answered a JSON body that is not one JSON-RPC message`, { upstream: target.upstream }));
    subscriber.next({ kind: 'message', message, eventId: undefined });
    subscriber.complete();
  });
}

/** An SSE body: each `message` event's data is one message; an event may take at most `maxMessageBytes`. */
function readSse(target: HttpTarget, b: Dispatcher.ResponseData['body'], subscriber: { next(value: Incoming): void; complete(): void }, fail: (error: unknown) => void): void {
  // Bytes since the last dispatched event: what the parser may be holding of the next one.
  let pending = 0;
  let failed = false;
  const parser = new SseParser((event) => {
    pending = 0;
    if (failed || (event.event !== 'message' && event.event !== '')) return;
    if (event.data === '') return subscriber.next({ kind: 'message', message: undefined, eventId: event.id });
    const message = parseMessage(event.data);
    if (message === undefined) {
      failed = true;
      b.destroy();
      return fail(new UpstreamError(`upstream ${target.upstream} sent an SSE message event whose data is not a JSON-RPC message`, { upstream: target.upstream }));
    }
    subscriber.next({ kind: 'message', message, eventId: event.id });
  });
  b.on('data', (chunk: Buffer) => {
    if (failed) return;
    pending += chunk.length;
    parser.push(chunk);
    if (pending > target.maxMessageBytes) {
      failed = true;
      b.destroy();
      fail(tooLarge(target));
    }
  });
  b.on('end', () => {
    if (failed) return;
    parser.end();
    subscriber.complete();
  });
}

function tooLarge(target: HttpTarget): UpstreamError {
  return new UpstreamError(`upstream ${target.upstream} sent a message over maxMessageBytes (${target.maxMessageBytes} bytes); raise maxMessageBytes if its messages are that large`, { upstream: target.upstream });
}

/** The error that explains a refusing answer: its status and, when the body is a JSON-RPC error, that error. */
async function refusal(target: HttpTarget, req: HttpRequest, status: number, type: string | undefined, b: Dispatcher.ResponseData['body']): Promise<UpstreamError> {
  let text = '';
  for await (const chunk of b) {
    text += String(chunk);
    if (text.length > REFUSAL_BYTES) {
      b.destroy();
      break;
    }
  }
  const error = rpcErrorOf(tryParseJson(text));
  const detail = error !== undefined ? `JSON-RPC error ${error.code} "${error.message}"` : text === '' ? 'an empty body' : JSON.stringify(text.slice(0, 200));
  const what = status === 200 ? `200 with ${type ?? 'no Content-Type'} instead of JSON or an SSE stream` : `HTTP ${status}`;
  return new UpstreamError(`upstream ${target.upstream} answered ${req.method} ${String(target.url)} with ${what}: ${detail}`, {
    upstream: target.upstream,
    status,
    ...(error === undefined ? {} : { error }),
  });
}

/** The JSON-RPC error object of a parsed body, if it is an error response. @internal */
export function rpcErrorOf(body: unknown): { code: number; message: string; data?: unknown } | undefined {
  const error = (body as { error?: unknown } | null)?.error as { code?: unknown; message?: unknown; data?: unknown } | undefined;
  if (error === null || typeof error !== 'object' || typeof error.code !== 'number') return undefined;
  return { code: error.code, message: typeof error.message === 'string' ? error.message : '', ...(error.data === undefined ? {} : { data: error.data }) };
}

function parseMessage(text: string): JsonRpcMessage | undefined {
  const value = tryParseJson(text);
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as JsonRpcMessage) : undefined;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function mediaType(value: string | string[] | undefined): string | undefined {
  const header = headerValue(value);
  if (header === undefined) return undefined;
  const semi = header.indexOf(';');
  return (semi === -1 ? header : header.slice(0, semi)).trim().toLowerCase();
}
