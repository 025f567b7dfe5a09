// mcp-rx-streams/client: the undici client for change-notification streams and its SSE parser.
// A subpath of its own so that servers importing the main entry never load undici.

/* Client */
export { listen, openSse, ListenClientError, LISTEN_PROTOCOL_VERSION, LEGACY_PROTOCOL_VERSION } from './adapters/client.js';
export type { ListenClientErrorInfo, ListenClientOptions, OpenSseInit } from './adapters/client.js';

/* SSE parser */
export { parseSse, SseParser } from './adapters/sseParser.js';
export type { ParsedSseEvent } from './adapters/sseParser.js';
