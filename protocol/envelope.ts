import { McpRxError } from '../lib/errors.js';
import { Refusal } from '../lib/refusal.js';
import { ErrorCode, exceedsBytes, isJsonRpcId, JsonRpcError, type JsonRpcId, MAX_REQUEST_ID_BYTES } from '../lib/jsonrpc.js';

/**
 * A JSON-RPC request or notification as the endpoint routes it: `id` is absent for a notification.
 * @internal
 */
export interface Envelope {
  readonly id: JsonRpcId | undefined;
  readonly method: string;
  readonly params: Readonly<Record<string, unknown>> | undefined;
}

/**
 * Checks a parsed body is one JSON-RPC 2.0 request or notification.
 * @throws Refusal `malformed` (`-32600`) for a batch, a non-object, a wrong `jsonrpc`, a bad or
 *   oversized `id` (over {@link MAX_REQUEST_ID_BYTES} bytes) or a non-string `method`;
 *   {@link InvalidParams} (`-32602`, answered like any JSON-RPC error) for `params` that is not an
 *   object. Each carries the request id when readable.
 * @internal
 */
export function parseEnvelope(value: unknown): Envelope {
  const invalid = (message: string, id: JsonRpcId | null = null) =>
    new Refusal('malformed', new JsonRpcError(ErrorCode.InvalidRequest, message), id);
  if (Array.isArray(value)) throw invalid('JSON-RPC batches are not supported; send one request per POST');
  if (value === null || typeof value !== 'object') throw invalid('the body must be a JSON-RPC request object');
  const message = value as Record<string, unknown>;
  const id = isJsonRpcId(message.id) && !(typeof message.id === 'string' && exceedsBytes(message.id, MAX_REQUEST_ID_BYTES)) ? message.id : null;
  if (message.jsonrpc !== '2.0') throw invalid('jsonrpc must be "2.0"', id);
  if ('id' in message && !isJsonRpcId(message.id)) throw invalid('id must be a string or a number');
  // The id is echoed in every frame of a stream: bounded before anything is opened.
  if (typeof message.id === 'string' && exceedsBytes(message.id, MAX_REQUEST_ID_BYTES)) {
    throw invalid(`id must be a string of at most ${MAX_REQUEST_ID_BYTES} bytes or a number`);
  }
  if (typeof message.method !== 'string') throw invalid('method must be a string', id);
  const params = message.params;
  if (params !== undefined && (params === null || typeof params !== 'object' || Array.isArray(params))) {
    throw new InvalidParams(new JsonRpcError(ErrorCode.InvalidParams, 'params must be an object'), id);
  }
  return { id: 'id' in message ? (message.id as JsonRpcId) : undefined, method: message.method, params: params as Envelope['params'] };
}

/**
 * A readable request whose `params` is not an object: answered with its JSON-RPC error (`-32602`),
 * like any other, to its id. @internal
 */
export class InvalidParams extends McpRxError {
  override readonly name = 'InvalidParams';
  /** Stable machine-readable code. */
  override readonly code = 'ERR_MCP_RX_PARAMS';
  /** The JSON-RPC error code of the answer. */
  override readonly info: { readonly rpcCode: number };

  constructor(
    readonly rpc: JsonRpcError,
    readonly id: JsonRpcId | null,
  ) {
    super(rpc.message);
    this.info = { rpcCode: rpc.code };
  }
}
