import type { Observable } from 'rxjs';
import type { Frame } from '../lib/frame.js';
import { HttpError } from '../lib/httpError.js';
import { ErrorCode, JsonRpcError, type JsonRpcId } from '../lib/jsonrpc.js';

/** Response headers of every SSE stream (DESIGN M5). */
export const SSE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'Content-Type': 'text/event-stream',
  'Cache-Control': 'no-cache, no-transform',
  'X-Accel-Buffering': 'no',
});

/** Response headers of every JSON response. */
export const JSON_HEADERS: Readonly<Record<string, string>> = Object.freeze({ 'Content-Type': 'application/json' });

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

/**
 * A JSON response: `body` serialized, {@link JSON_HEADERS} plus `headers`.
 * @internal
 */
export function json(status: number, body: unknown, headers: Readonly<Record<string, string>> = {}): EndpointResponse {
  return { kind: 'json', status, headers: { ...JSON_HEADERS, ...headers }, body: JSON.stringify(body) };
}

/**
 * A JSON-RPC error response to `id` with HTTP `status`.
 * @internal
 */
export function jsonError(status: number, id: JsonRpcId | null, error: JsonRpcError, headers?: Readonly<Record<string, string>>): EndpointResponse {
  return json(status, error.toResponse(id), headers);
}


/**
 * The refusal of a stream or a session the server has no room for (DESIGN M9; `maxStreams`,
 * `maxSessions`): HTTP 503 and JSON-RPC `-32000`, with the time to wait before trying again in
 * both, `Retry-After` (whole seconds, rounded up: at least 1) and `error.data.retryAfterMs`, so
 * that clients back off instead of hammering a full server.
 * @param what which capacity is full: `stream` (`maxStreams`) or `session` (`maxSessions`).
 * @param retryAfterMs the endpoint's `capacityRetryAfter`, in milliseconds (default 5000).
 * @param id the request's id, when it has one.
 * @internal
 */
export function capacityRefusal(what: 'stream' | 'session', retryAfterMs: number, id: JsonRpcId | null = null): HttpError {
  const limit = what === 'stream' ? 'maxStreams' : 'maxSessions';
  const rpc = new JsonRpcError(ErrorCode.ServerBusy, `server is at its ${what} capacity (${limit}); retry later`, { retryAfterMs });
  return new HttpError(503, rpc, { 'Retry-After': String(Math.ceil(retryAfterMs / 1000)) }, id);
}

/**
 * The refusal of a stream or session by a closed endpoint: HTTP 503 and JSON-RPC `-32000` saying it
 * is shutting down, without a retry time (the server does not know when, or whether, it is back;
 * a client uses its own reconnection delay, or another server of the fleet).
 * @internal
 */
export function shutdownRefusal(id: JsonRpcId | null = null): HttpError {
  return new HttpError(503, new JsonRpcError(ErrorCode.ServerBusy, 'server is shutting down; connect to another server or retry once it is back'), {}, id);
}
