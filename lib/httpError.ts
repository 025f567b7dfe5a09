import type { JsonRpcError, JsonRpcId } from './jsonrpc.js';

/**
 * A refusal that carries its HTTP status (400, 401, 403, 404, 413…), the JSON-RPC error of the
 * body and, when readable, the request id. Thrown inside the endpoint; never escapes `handle`.
 * @internal
 */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly rpc: JsonRpcError,
    readonly headers: Readonly<Record<string, string>> = {},
    readonly id: JsonRpcId | null = null,
  ) {
    super(rpc.message);
  }
}
