// The `mcp-rx-streams/upstream` entry: other MCP servers' change streams as sources of an endpoint,
// a gateway serving their union in both eras (issue 34). A subpath of its own: it loads undici and
// node:child_process, which the main entry does not.

/* Gateway */
export { upstreamGateway, UpstreamGateway } from './gateway.js';
export type { FailMode, UpstreamGatewayOptions } from './gateway.js';

/* Upstream sources */
export { Upstream } from './upstream.js';
export type { ListKind, UpstreamEra, UpstreamOptions } from './upstream.js';
export type { StdioCommand } from './stdio.js';
export { upstreamFromText } from './served.js';
export type { UpstreamList } from './served.js';
export { commandWords } from './stdio.js';

/* Reconnect policy */
export { DEFAULT_RECONNECT_POLICY, reconnect, reconnectDelay, resolveReconnectPolicy } from './reconnect.js';
export type { ReconnectOptions, ReconnectPolicy, ResolvedReconnectPolicy } from './reconnect.js';

/* URIs */
export { splitUpstreamUri, UPSTREAM_URI_SCHEME, upstreamUri } from './uri.js';

/* Errors and telemetry */
export { UpstreamError, UpstreamUnavailableError } from './errors.js';
export type { UpstreamErrorInfo } from './errors.js';
export { UPSTREAM_STATES, upstreamChannels } from './telemetry.js';
export type { UpstreamState, UpstreamStateEvent, UpstreamStats } from './telemetry.js';
