import { McpRxError } from '../../lib/errors.js';
import type { JsonRpcError, JsonRpcId } from '../../lib/jsonrpc.js';

/**
 * A refusal that carries its HTTP status (400, 401, 403, 404, 413…), the JSON-RPC error of the
 * body and, when readable, the request id. Thrown inside the endpoint; never escapes `handle`.
 * @internal
 */
export class HttpError extends McpRxError {
  override readonly name = 'HttpError';
  /** Stable machine-readable code. */
  override readonly code = 'ERR_MCP_RX_HTTP';
  /** The HTTP status and the JSON-RPC error code of the answer. */
  override readonly info: { readonly status: number; readonly rpcCode: number };

  constructor(
    readonly status: number,
    readonly rpc: JsonRpcError,
    readonly headers: Readonly<Record<string, string>> = {},
    readonly id: JsonRpcId | null = null,
  ) {
    super(rpc.message);
    this.info = { status, rpcCode: rpc.code };
  }
}
