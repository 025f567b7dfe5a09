import { type ServerCapabilities, TASKS_EXTENSION_ID } from '../lib/filter.js';
import { ErrorCode, JsonRpcError } from '../lib/jsonrpc.js';
import { LEGACY_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSION, NEWEST_LEGACY_PROTOCOL_VERSION, type ServerInfo } from '../lib/protocol.js';

/** The result `_meta` key under which a 2026-07-28 server names itself (`{ name, version }`). */
const SERVER_INFO_META_KEY = 'io.modelcontextprotocol/serverInfo';

/** The `serverInfo` of an endpoint given none: `{ name: 'mcp-rx-streams', version: '0.1.0' }`. @internal */
export const DEFAULT_SERVER_INFO: ServerInfo = Object.freeze({ name: 'mcp-rx-streams', version: '0.1.0' });

/**
 * The capabilities both eras advertise: `extra` first, then tools and prompts with `listChanged`,
 * resources with `subscribe` and `listChanged`, each only when the server has it.
 */
function advertisedCapabilities(capabilities: ServerCapabilities, extra: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const advertised: Record<string, unknown> = { ...extra };
  if (capabilities.tools) advertised.tools = { listChanged: true };
  if (capabilities.prompts) advertised.prompts = { listChanged: true };
  if (capabilities.resources) advertised.resources = { subscribe: true, listChanged: true };
  return advertised;
}

/**
 * The built-in `server/discover` result (2026-07-28), shaped as the SDK's own server answers it:
 * complete, cacheable for no time and for this caller only, the one modern revision, the
 * capabilities with `listChanged`/`subscribe`, and the server's identity in
 * `_meta["io.modelcontextprotocol/serverInfo"]` (this revision has no body `serverInfo`). The tasks
 * capability is the tasks extension in this revision.
 * @internal
 */
export function discoverResult(
  capabilities: ServerCapabilities,
  extra: Readonly<Record<string, unknown>>,
  serverInfo: ServerInfo,
  instructions: string | undefined,
): Readonly<Record<string, unknown>> {
  const advertised = advertisedCapabilities(capabilities, extra);
  if (capabilities.tasks) {
    const extensions = extra.extensions !== null && typeof extra.extensions === 'object' ? extra.extensions : {};
    advertised.extensions = { ...extensions, [TASKS_EXTENSION_ID]: {} };
  }
  return Object.freeze({
    resultType: 'complete',
    ttlMs: 0,
    cacheScope: 'private',
    supportedVersions: [MODERN_PROTOCOL_VERSION],
    capabilities: advertised,
    ...(instructions === undefined ? {} : { instructions }),
    _meta: { [SERVER_INFO_META_KEY]: serverInfo },
  });
}

/**
 * The legacy `initialize` result (DESIGN L1): the agreed `protocolVersion`, the capabilities
 * (resources with `subscribe` and `listChanged`), `serverInfo` and, when given, `instructions`.
 * @internal
 */
export function initializeResult(
  protocolVersion: string,
  capabilities: ServerCapabilities,
  extra: Readonly<Record<string, unknown>>,
  serverInfo: ServerInfo,
  instructions: string | undefined,
): Record<string, unknown> {
  const result: Record<string, unknown> = { protocolVersion, capabilities: advertisedCapabilities(capabilities, extra), serverInfo };
  if (instructions !== undefined) result.instructions = instructions;
  return result;
}

/**
 * The legacy revision an `initialize` agrees on (DESIGN L1): the one `params.protocolVersion`
 * asks for when it is one of {@link LEGACY_PROTOCOL_VERSIONS}, else the newest. Shared by an HTTP
 * session and a message channel's legacy era.
 * @throws JsonRpcError `-32602` when `params.protocolVersion` is not a string.
 * @internal
 */
export function agreedLegacyVersion(params: Readonly<Record<string, unknown>> | undefined): string {
  const requested = params?.protocolVersion;
  if (typeof requested !== 'string') throw new JsonRpcError(ErrorCode.InvalidParams, 'initialize requires params.protocolVersion');
  return LEGACY_PROTOCOL_VERSIONS.includes(requested) ? requested : NEWEST_LEGACY_PROTOCOL_VERSION;
}
