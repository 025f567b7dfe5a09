// Ending a principal's streams and sessions now (`McpEndpoint.revoke`), and one of them
// (`McpEndpoint.closeStream`): on this node at once, on the other nodes of a fleet through its cap
// and its session bus.
import { InvalidOptionError, McpRxError } from '../lib/errors.js';
import { isCloseReason, type CloseReason } from '../lib/frame.js';
import type { LegacySessions } from './legacy/sessions.js';
import type { Listens } from './listen.js';
import { OpenChannels } from './openChannels.js';

/** What `McpEndpoint.revoke` ended on this node. */
export interface RevokeResult {
  /** Listen streams of the principal that were open on this node and got their closing frames. */
  readonly streams: number;
  /** Legacy sessions of the principal this node held and ended (their GET streams with them), a message channel's after its `initialize` among them. */
  readonly sessions: number;
}

/**
 * A revoke ended the principal's streams and sessions on this node but could not tell the other
 * nodes of the fleet (Redis unreachable, say): their streams of the principal go on until they end
 * by themselves. Retry the revoke once the fleet is back (it is idempotent).
 */
export class RevokeRelayError extends McpRxError {
  override readonly name = 'RevokeRelayError';
  /** Stable machine-readable code. */
  override readonly code = 'ERR_MCP_RX_REVOKE_RELAY';
  /** What was ended on this node. */
  override readonly info: RevokeResult;

  constructor(info: RevokeResult, cause: unknown) {
    super(
      `ended ${info.streams} listen stream(s) and ${info.sessions} session(s) on this node, but could not tell the other nodes (${cause instanceof Error ? cause.message : String(cause)}); revoke again once Redis answers`,
      { cause },
    );
    this.info = info;
  }
}

/** The principal of a revoke, checked. @internal */
export function principalArgument(principal: unknown): string {
  if (typeof principal !== 'string' || principal === '') throw new InvalidOptionError('principal', 'a non-empty string (the principal `authenticate` returned)', principal);
  return principal;
}

/** The close reason of a revoke or a `closeStream`, checked. @internal */
export function reasonArgument(reason: unknown): CloseReason {
  if (!isCloseReason(reason)) throw new InvalidOptionError('reason', "a close reason ('revoked', 'token_expired', 'shutdown', …)", reason);
  return reason;
}

/**
 * Ends every listen stream and legacy session of `principal`: here at once (closing frames with
 * `reason` for listens; GET streams end and sessions are removed), on the other nodes through the
 * cap and the session bus. @internal
 */
export async function revokePrincipal(listens: Listens, legacy: LegacySessions | OpenChannels, principal: string, reason: CloseReason): Promise<RevokeResult> {
  const listened = listens.revoke(principal, reason);
  // The legacy sessions end the principal's channels with theirs; without them, the channels alone.
  const ended = legacy instanceof OpenChannels ? { sessions: legacy.revoke(principal, reason) } : await legacy.revoke(principal, reason);
  const { sessions } = ended;
  let failure = ended.relayFailure;
  try {
    await listened.relayed;
  } catch (error) {
    failure ??= { cause: error };
  }
  const result: RevokeResult = { streams: listened.streams, sessions };
  if (failure !== undefined) throw new RevokeRelayError(result, failure.cause);
  return result;
}
