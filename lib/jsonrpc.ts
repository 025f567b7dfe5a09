/** JSON-RPC 2.0 shapes and the error codes MCP uses. */

/** A JSON-RPC request id. MCP forbids `null` ids on requests. */
export type JsonRpcId = string | number;

/** A JSON-RPC notification (no `id`). */
export interface JsonRpcNotification {
  readonly jsonrpc: '2.0';
  readonly method: string;
  readonly params?: Readonly<Record<string, unknown>>;
}

/** A JSON-RPC request. */
export interface JsonRpcRequest {
  readonly jsonrpc: '2.0';
  readonly id: JsonRpcId;
  readonly method: string;
  readonly params?: Readonly<Record<string, unknown>>;
}

/** A successful JSON-RPC response. */
export interface JsonRpcResultResponse {
  readonly jsonrpc: '2.0';
  readonly id: JsonRpcId;
  readonly result: Readonly<Record<string, unknown>>;
}

/** A JSON-RPC error object. */
export interface JsonRpcErrorObject {
  readonly code: number;
  readonly message: string;
  readonly data?: unknown;
}

/** A JSON-RPC error response. `id` is `null` when the request id could not be read. */
export interface JsonRpcErrorResponse {
  readonly jsonrpc: '2.0';
  readonly id: JsonRpcId | null;
  readonly error: JsonRpcErrorObject;
}

/** Any message that travels on an SSE stream. */
export type JsonRpcMessage = JsonRpcNotification | JsonRpcRequest | JsonRpcResultResponse | JsonRpcErrorResponse;

/** The `_meta` key that carries the listen request id on every message of a listen stream (MCP 2026-07-28). */
export const SUBSCRIPTION_ID_META_KEY = 'io.modelcontextprotocol/subscriptionId';

/** JSON-RPC and MCP error codes used by this library. */
export const ErrorCode = Object.freeze({
  /** Invalid JSON was received. */
  ParseError: -32700,
  /** The JSON sent is not a valid request object (also: a listen without `Accept: text/event-stream`). */
  InvalidRequest: -32600,
  /** The method does not exist or is not served here. */
  MethodNotFound: -32601,
  /** Invalid method parameters. */
  InvalidParams: -32602,
  /** Internal error. */
  InternalError: -32603,
  /** Server-defined: the server is at capacity (`maxStreams`). */
  ServerBusy: -32000,
  /** Server-defined: a legacy session that is unknown, ended or evicted (with HTTP 404): initialize a new one. */
  SessionNotFound: -32001,
  /** MCP (2025-06-18 / 2025-11-25): `resources/read` of a resource that does not exist; `data: { uri }`. */
  ResourceNotFound: -32002,
  /** MCP: the request needs an extension the client did not declare (e.g. `taskIds` without tasks). */
  MissingRequiredExtension: -32021,
  /** MCP 2026-07-28: the request names a protocol revision the server does not speak; `data: { supported, requested }`. */
  UnsupportedProtocolVersion: -32022,
} as const);

/** A protocol error: becomes a JSON-RPC error response with this `code` and `message`. */
export class JsonRpcError extends Error {
  override readonly name = 'JsonRpcError';
  /** The JSON-RPC error code, e.g. `-32602`. */
  readonly code: number;
  /** Optional JSON-RPC `error.data`. */
  readonly data: unknown;

  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.code = code;
    this.data = data;
  }

  /** The JSON-RPC error response for request `id`. */
  toResponse(id: JsonRpcId | null): JsonRpcErrorResponse {
    const error: JsonRpcErrorObject =
      this.data === undefined ? { code: this.code, message: this.message } : { code: this.code, message: this.message, data: this.data };
    return { jsonrpc: '2.0', id, error };
  }
}

/** True for a JSON-RPC request id MCP accepts: a string or a finite number. */
/**
 * The longest request id accepted, in UTF-8 bytes of a string id: 1024 (1 KiB). The id is echoed
 * in every frame of a listen stream, so a longer one is refused with `-32600` before anything
 * opens. Numbers are always short enough.
 */
export const MAX_REQUEST_ID_BYTES = 1024;

/** True when `text` takes more than `maxBytes` bytes as UTF-8 (without encoding short strings). */
export function exceedsBytes(text: string, maxBytes: number): boolean {
  // A UTF-16 code unit is at most 3 UTF-8 bytes (a surrogate pair, two units, is 4).
  if (text.length * 3 <= maxBytes) return false;
  return text.length > maxBytes || Buffer.byteLength(text, 'utf8') > maxBytes;
}

export function isJsonRpcId(value: unknown): value is JsonRpcId {
  return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value));
}

/**
 * `text` parsed as JSON, or `undefined` when it is not JSON: for input from the network or from
 * another node, where a malformed message is counted or skipped, never thrown.
 * @internal
 */
export function tryParseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
