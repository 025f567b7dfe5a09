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

/**
 * Thrown at construction when an option or argument has a value the library cannot use (DESIGN
 * M13): `<option> must be <what is allowed>, got <what was given>`, and after a colon what to do
 * when the value shows a likely mix-up (`…, got a Hub: pass { hub } instead`).
 *
 * @param option the option's or argument's public name (`keepAliveInterval`, `nodeHandler endpoint`).
 * @param expected what is allowed, as the end of "must be …".
 * @param value what was given (shown as JSON, or by its class name: `a Hub`).
 * @param hint what to do instead, when the value suggests it.
 */
export class InvalidOptionError extends McpRxError {
  override readonly name = 'InvalidOptionError';
  /** Stable machine-readable code. */
  override readonly code = 'ERR_MCP_RX_INVALID_OPTION';
  /** The option's name and the rejected value. */
  override readonly info: { readonly option: string; readonly value: unknown };

  constructor(option: string, expected: string, value: unknown, hint?: string) {
    super(`${option} must be ${expected}, got ${describe(value)}${hint === undefined ? '' : `: ${hint}`}`);
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

/**
 * A value as a message shows it: JSON for data, the class for an instance (`a Hub`, not its private
 * fields), the name for a function (not its source).
 */
function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'function') return /^class\b/.test(Function.prototype.toString.call(value)) ? `the class ${value.name}` : `a function${value.name === '' ? '' : ` (${value.name})`}`;
  if (value === null || typeof value !== 'object') return String(value);
  const prototype: unknown = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== Array.prototype && prototype !== null) {
    const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
    // "an McpEndpoint": read "em".
    if (typeof name === 'string' && name !== '' && name !== 'Object') return `${/^(?:[AEIOU]|Mcp)/.test(name) ? 'an' : 'a'} ${name}`;
  }
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
