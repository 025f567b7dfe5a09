import { McpRxError } from './errors.js';
import type { JsonRpcError, JsonRpcId } from './jsonrpc.js';

/**
 * Why the protocol core refuses a request, in the protocol's terms; each front answers it in its
 * own (the HTTP front with a status line and headers, at the end of `adapters/http/endpoint.ts`;
 * a message channel with the JSON-RPC error alone):
 * - `malformed`: not one JSON-RPC request (a batch, a bad `jsonrpc`, `id` or `method`);
 * - `unauthorized`: the caller could not be identified (the `authenticate` hook's {@link AuthError});
 * - `insufficient-scope`: the caller is identified but its credential lacks a scope the request
 *   needs, and a credential with it would do (an `AuthError` with `error: 'insufficient_scope'`:
 *   the client may step up);
 * - `forbidden`: the caller may not use what it names (another principal's session);
 * - `unknown-session`: the session named is unknown, ended or evicted;
 * - `busy`: no room (`maxStreams`, `maxSessions`: `rpc.data.retryAfterMs` says when to retry) or shutting down;
 * - `missing-extension`: the request needs a client capability it did not declare (2026-07-28 `-32021`).
 * @internal
 */
export type RefusalKind = 'malformed' | 'unauthorized' | 'insufficient-scope' | 'forbidden' | 'unknown-session' | 'busy' | 'missing-extension';

/**
 * A refusal of the protocol core: its {@link RefusalKind}, the JSON-RPC error to answer and, when
 * readable, the request id; `challenge` is the `WWW-Authenticate` value of an `unauthorized` or
 * `insufficient-scope` one.
 * Thrown inside the core; every front catches it.
 * @internal
 */
export class Refusal extends McpRxError {
  override readonly name = 'Refusal';
  /** Stable machine-readable code. */
  override readonly code = 'ERR_MCP_RX_REFUSAL';
  /** The refusal's kind and the JSON-RPC error code of the answer. */
  override readonly info: { readonly kind: RefusalKind; readonly rpcCode: number };

  constructor(
    readonly kind: RefusalKind,
    readonly rpc: JsonRpcError,
    readonly id: JsonRpcId | null = null,
    readonly challenge?: string,
  ) {
    super(rpc.message);
    this.info = { kind, rpcCode: rpc.code };
  }
}
