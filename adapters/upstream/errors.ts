// The errors of upstream sources: each says which upstream, what happened and what to do.
import { McpRxError } from '../../lib/errors.js';

/** What every {@link UpstreamError} carries. */
export interface UpstreamErrorInfo {
  /** The upstream's name. */
  readonly upstream: string;
  /** The HTTP status of the answer, when there was one that was not what was asked for. */
  readonly status?: number;
  /** The JSON-RPC error the upstream answered, when it answered one. */
  readonly error?: { readonly code: number; readonly message: string; readonly data?: unknown };
}

/**
 * An upstream did not give what was asked of it: a connection that failed or ended, an HTTP status
 * other than the one expected, a JSON-RPC error, a message that is not MCP, a message over the size
 * limit. The reconnect policy retries all of them; they reach `channels.error` (`where: 'source'`)
 * and the upstream's telemetry, never a downstream client.
 *
 * @example
 * upstreamChannels.state.subscribe((event) => {
 *   if (event.error instanceof UpstreamError) console.log(event.upstream, event.error.code, event.error.info);
 * });
 */
export class UpstreamError extends McpRxError {
  override readonly name: string = 'UpstreamError';
  /** Stable machine-readable code. */
  override readonly code: string = 'ERR_MCP_RX_UPSTREAM';
  /** The upstream, and the status or JSON-RPC error it answered. */
  override readonly info: UpstreamErrorInfo;

  constructor(message: string, info: UpstreamErrorInfo, options?: { cause?: unknown }) {
    super(message, options);
    this.info = info;
  }
}

/**
 * An upstream has not acknowledged a resource within `ackTimeout`, and the gateway fails closed
 * (`failMode: 'closed'`): the URI is left out of a listen's acknowledgment and a legacy
 * `resources/subscribe` is answered `-32603 failed to subscribe` (kept on the session's record, so
 * that its next GET tries again). With `failMode: 'open'` it is not thrown.
 */
export class UpstreamUnavailableError extends UpstreamError {
  override readonly name = 'UpstreamUnavailableError';
  override readonly code = 'ERR_MCP_RX_UPSTREAM_UNAVAILABLE';
}
