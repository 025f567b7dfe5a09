/**
 * The base of every error this library throws (except {@link JsonRpcError}, whose numeric `code`
 * is the JSON-RPC error code it answers with): a stable machine-readable `code`
 * (`ERR_MCP_RX_…`) to branch on instead of the message, and an `info` object with the facts of
 * the case (the option and value, the URI, the status…), as undici's `UndiciError` does.
 *
 * @example
 * try {
 *   new McpEndpoint({ hub, keepAliveInterval: -5 });
 * } catch (error) {
 *   if (error instanceof McpRxError) console.error(error.code, error.info); // ERR_MCP_RX_INVALID_OPTION { option: 'keepAliveInterval', value: -5 }
 * }
 * @see InvalidOptionError
 */
export class McpRxError extends Error {
  override readonly name: string = 'McpRxError';
  /** Stable machine-readable code, `ERR_MCP_RX_…`; each subclass has its own. */
  readonly code: string = 'ERR_MCP_RX';
  /** The facts of the case; each subclass documents its members. */
  readonly info: object = {};
}

/** Thrown at construction when an option has a value the library cannot use (DESIGN M13). */
export class InvalidOptionError extends McpRxError {
  override readonly name = 'InvalidOptionError';
  /** Stable machine-readable code. */
  override readonly code = 'ERR_MCP_RX_INVALID_OPTION';
  /** The option's name and the rejected value. */
  override readonly info: { readonly option: string; readonly value: unknown };

  constructor(option: string, expected: string, value: unknown) {
    super(`${option} must be ${expected}, got ${describe(value)}`);
    this.info = { option, value };
  }
}

/** Thrown by the encoder when a frame cannot be written as SSE (e.g. CR/LF inside an `id`). */
export class FrameEncodingError extends McpRxError {
  override readonly name = 'FrameEncodingError';
  /** Stable machine-readable code. */
  override readonly code = 'ERR_MCP_RX_FRAME_ENCODING';
  /** The SSE field (`event`, `id`) and the value that holds a line break. */
  override readonly info: { readonly field: string; readonly value: string };

  constructor(field: string, value: string) {
    super(`SSE ${field} must not contain CR or LF, got ${JSON.stringify(value)}`);
    this.info = { field, value };
  }
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (value === null || typeof value !== 'object') return String(value);
  try {
    return JSON.stringify(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}

/**
 * A stream closed but its client did not take the closing frames within the grace period (`0`:
 * the client was not reading when the stream closed); the adapter drops the connection.
 */
export class StalledStreamError extends McpRxError {
  override readonly name = 'StalledStreamError';
  /** Stable machine-readable code. */
  override readonly code = 'ERR_MCP_RX_STALLED';
  /** The grace period that ran out, in milliseconds (`0`: none was given). */
  override readonly info: { readonly graceMs: number };

  constructor(info: { readonly graceMs: number }) {
    super(
      info.graceMs === 0
        ? 'the client was not reading when the stream closed, so its closing frames were dropped; drop the connection'
        : `the client took no closing frame within ${info.graceMs} ms of the close; drop the connection`,
    );
    this.info = info;
  }
}
