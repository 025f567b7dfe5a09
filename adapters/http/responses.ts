import type { Observable } from 'rxjs';
import type { Frame } from '../../lib/frame.js';
import type { JsonRpcError, JsonRpcId } from '../../lib/jsonrpc.js';

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
