/** Thrown at construction when an option has a value the library cannot use (DESIGN M13). */
export class InvalidOptionError extends TypeError {
  override readonly name = 'InvalidOptionError';
  /** Stable machine-readable code. */
  readonly code = 'ERR_MCP_RX_INVALID_OPTION';
  /** The option's name and the rejected value. */
  readonly info: { readonly option: string; readonly value: unknown };

  constructor(option: string, expected: string, value: unknown) {
    super(`${option} must be ${expected}, got ${describe(value)}`);
    this.info = { option, value };
  }
}

/** Thrown by the encoder when a frame cannot be written as SSE (e.g. CR/LF inside an `id`). */
export class FrameEncodingError extends TypeError {
  override readonly name = 'FrameEncodingError';
  readonly code = 'ERR_MCP_RX_FRAME_ENCODING';
  readonly info: { readonly field: string; readonly value: string };

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

/** A stream closed but its client did not take the closing frames within the grace period; the adapter drops the connection. */
export class StalledStreamError extends Error {
  override readonly name = 'StalledStreamError';
  readonly code = 'ERR_MCP_RX_STALLED';
  /** The grace period that ran out, in milliseconds. */
  readonly info: { readonly graceMs: number };

  constructor(info: { readonly graceMs: number }) {
    super(`the client took no closing frame within ${info.graceMs} ms of the close; drop the connection`);
    this.info = info;
  }
}
