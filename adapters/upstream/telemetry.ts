// What an upstream tells about itself: its state and counts, on a diagnostics channel and in stats.
import diagnostics_channel from 'node:diagnostics_channel';

/**
 * An upstream's state: `idle` (nothing needed of it, nothing open), `connecting` (a stream is being
 * opened), `open` (every stream it needs answered), `retrying` (a stream failed or ended and waits
 * for its next attempt), `closed` (closed by its owner).
 */
export type UpstreamState = 'idle' | 'connecting' | 'open' | 'retrying' | 'closed';

/** Every {@link UpstreamState}, in the order of a life. */
export const UPSTREAM_STATES: readonly UpstreamState[] = Object.freeze(['idle', 'connecting', 'open', 'retrying', 'closed']);

/** The counts of one upstream (see `Upstream.stats`). */
export interface UpstreamStats {
  /** The upstream's name. */
  readonly upstream: string;
  readonly state: UpstreamState;
  /** Protocol revision spoken: `modern` (2026-07-28), `legacy` (a 2025 session), or `unknown` until `auto` has asked. */
  readonly era: 'modern' | 'legacy' | 'unknown';
  /** Attempts made to open a stream again after it failed or ended, since the upstream was made. */
  readonly reconnects: number;
  /** Messages received from the upstream (acknowledgments, notifications, answers on a channel). */
  readonly framesIn: number;
  /** Notifications handed to downstream streams (a resource's change, a list change). */
  readonly framesOut: number;
  /** Resource URIs held now. */
  readonly uris: number;
  /** Upstream streams open or being opened now. */
  readonly streams: number;
}

/** Published on {@link upstreamChannels.state} when an upstream's state changes. */
export interface UpstreamStateEvent {
  /** The upstream's name (configuration, never a URI or a principal). */
  readonly upstream: string;
  readonly state: UpstreamState;
  readonly previous: UpstreamState;
  /** What made a stream fail, when the new state is `retrying`. */
  readonly error?: unknown;
  /** Milliseconds until the next attempt, when the new state is `retrying`. */
  readonly retryIn?: number;
}

/**
 * The `node:diagnostics_channel` channels of upstream sources: `state` ({@link UpstreamStateEvent},
 * each change of an upstream's state). Nothing is built when nobody subscribes.
 *
 * @example
 * import { upstreamChannels } from 'mcp-rx-streams/upstream';
 * upstreamChannels.state.subscribe((event) => console.log('upstream', event.upstream, event.previous, '->', event.state));
 */
export const upstreamChannels = Object.freeze({
  state: diagnostics_channel.channel('mcp-rx-streams:upstream:state'),
});
