import type { JsonRpcError } from '../../lib/jsonrpc.js';
import { ErrorCode } from '../../lib/jsonrpc.js';
import type { Refusal, RefusalKind } from '../../lib/refusal.js';
import type { Answer } from '../../protocol/answer.js';
import { type EndpointResponse, json, jsonError, SSE_HEADERS } from './responses.js';

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
export function answerResponse(answer: Answer, inSession: boolean): EndpointResponse {
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
export function refusalResponse(refusal: Refusal): EndpointResponse {
  const { status, headers } = refusalStatus(refusal);
  return jsonError(status, refusal.id, refusal.rpc, headers);
}

/** The status line and headers of a {@link Refusal} on HTTP (a WebSocket upgrade refused too). */
export function refusalStatus(refusal: Refusal): { readonly status: number; readonly headers: Readonly<Record<string, string>> } {
  return { status: REFUSAL_STATUS[refusal.kind], headers: refusalHeaders(refusal.kind, refusal.rpc, refusal.challenge) };
}
