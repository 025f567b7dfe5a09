// The MCP protocol revisions this library speaks, defined once: the endpoint, the reference
// server and the client import them from here.

/** The protocol revision of the modern era (`subscriptions/listen`): `'2026-07-28'`. */
export const MODERN_PROTOCOL_VERSION = '2026-07-28';

/** The newest legacy revision, `'2025-11-25'`: the first of {@link LEGACY_PROTOCOL_VERSIONS}. @internal */
export const NEWEST_LEGACY_PROTOCOL_VERSION = '2025-11-25';

/**
 * The legacy protocol revisions a session can be initialized with, newest first
 * (`['2025-11-25', '2025-06-18', '2025-03-26']`): `initialize` agrees on the one the client asks
 * for, else on the newest. A 2025-03-26 session is served as the later ones are, with one
 * difference the revision asks for: its GET stream has no priming event (that came with
 * 2025-11-25). JSON-RPC batches, which 2025-03-26 servers were to accept and 2025-06-18 removed,
 * are refused in every session (HTTP 400, `-32600`), a 2025-03-26 one included: no official
 * client sends them.
 */
export const LEGACY_PROTOCOL_VERSIONS: readonly string[] = Object.freeze([NEWEST_LEGACY_PROTOCOL_VERSION, '2025-06-18', '2025-03-26']);

/**
 * Every published revision of the legacy era (2024-11-05 to 2025-11-25): a request naming one is
 * served in the legacy era (a session answers it at the newest of {@link LEGACY_PROTOCOL_VERSIONS});
 * any other `MCP-Protocol-Version` but {@link MODERN_PROTOCOL_VERSION} gets HTTP 400.
 * @internal
 */
export const RECOGNIZED_LEGACY_VERSIONS: readonly string[] = Object.freeze([...LEGACY_PROTOCOL_VERSIONS, '2024-11-05']);

/** What the server says about itself: the `initialize` result's `serverInfo`, and the `server/discover` result's `_meta`. */
export interface ServerInfo {
  /** The server's name, e.g. `files`. */
  readonly name: string;
  /** The server's version, e.g. `1.2.0`. */
  readonly version: string;
  readonly [member: string]: unknown;
}
