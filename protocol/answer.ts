import type { Observable } from 'rxjs';
import type { Frame } from '../lib/frame.js';
import { ErrorCode, JsonRpcError, type JsonRpcId } from '../lib/jsonrpc.js';
import { Refusal, type RefusalKind } from '../lib/refusal.js';

/**
 * What the protocol core answers a request with, in the protocol's terms (no status line, no
 * header): a front writes it in its own.
 * - `result`: the JSON-RPC result; `sessionId` when the request opened a legacy session (an HTTP
 *   front sends it as `Mcp-Session-Id`).
 * - `error`: the JSON-RPC error, with the {@link RefusalKind} when the request was refused (rather
 *   than answered with an error), and `unknownMethod` when no handler has the method.
 * - `stream`: a stream of frames (a listen, a legacy GET stream): `open` it once with the sink's
 *   demand, or `abandon` it when the client left before.
 * @internal
 */
export type Answer =
  | { readonly kind: 'result'; readonly id: JsonRpcId; readonly result: unknown; readonly sessionId?: string }
  | { readonly kind: 'error'; readonly id: JsonRpcId | null; readonly error: JsonRpcError; readonly refusal?: RefusalKind }
  | StreamAnswer;

/** A stream of frames the core answered with (see {@link Answer}). @internal */
export interface StreamAnswer {
  readonly kind: 'stream';
  /**
   * The stream's frames; subscribe once. `demand$` is the sink's demand (`false` busy, `true`
   * ready). Unsubscribing (client gone) releases the stream's slot, cap entry and topics.
   */
  readonly open: (demand$: Observable<boolean>) => Observable<Frame>;
  /** Releases what the stream holds if it is never opened (client gone before). Idempotent. */
  readonly abandon: () => void;
}

/** A JSON-RPC result. @internal */
export function resultAnswer(id: JsonRpcId, result: unknown, sessionId?: string): Answer {
  return sessionId === undefined ? { kind: 'result', id, result } : { kind: 'result', id, result, sessionId };
}

/** A JSON-RPC error, refused for `refusal` when given. @internal */
export function errorAnswer(id: JsonRpcId | null, error: JsonRpcError, refusal?: RefusalKind): Answer {
  return refusal === undefined ? { kind: 'error', id, error } : { kind: 'error', id, error, refusal };
}

/**
 * The refusal of a stream or a session the server has no room for (DESIGN M9; `maxStreams`,
 * `maxSessions`): JSON-RPC `-32000` with the time to wait before trying again,
 * `error.data.retryAfterMs` (an HTTP front also sends it as `Retry-After`, in whole seconds), so
 * that clients back off instead of hammering a full server.
 * @param what which capacity is full: `stream` (`maxStreams`) or `session` (`maxSessions`).
 * @param retryAfterMs the endpoint's `capacityRetryAfter`, in milliseconds (default 5000).
 * @param id the request's id, when it has one.
 * @internal
 */
export function capacityRefusal(what: 'stream' | 'session', retryAfterMs: number, id: JsonRpcId | null = null): Refusal {
  const limit = what === 'stream' ? 'maxStreams' : 'maxSessions';
  return new Refusal('busy', new JsonRpcError(ErrorCode.ServerBusy, `server is at its ${what} capacity (${limit}); retry later`, { retryAfterMs }), id);
}

/**
 * The refusal of a stream or session by a closed endpoint: JSON-RPC `-32000` saying it is shutting
 * down, without a retry time (the server does not know when, or whether, it is back; a client uses
 * its own reconnection delay, or another server of the fleet).
 * @internal
 */
export function shutdownRefusal(id: JsonRpcId | null = null): Refusal {
  return new Refusal('busy', new JsonRpcError(ErrorCode.ServerBusy, 'server is shutting down; connect to another server or retry once it is back'), id);
}
