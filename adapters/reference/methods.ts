// The methods the reference server answers besides the endpoint's own (`server/discover`,
// `initialize`, listen and the legacy subscribe): its files listed and read, what `tools.json` and
// `prompts.json` declare, `ping`, and the one URI template of the served directory.
import type { MethodHandler, RequestContext } from '../../lib/context.js';
import { ErrorCode, JsonRpcError } from '../../lib/jsonrpc.js';
import type { ResourceTemplate } from '../../lib/resources.js';
import type { Catalog } from './catalog.js';
import { ResourceTooLargeError, type FileResources } from './files.js';

/**
 * JSON-RPC error code of a `resources/read` refused because the file is larger than
 * `maxReadBytes`; `data` is `{uri, size, maxReadBytes}` (bytes).
 *
 * MCP defines no code for this. Neither of its resource-read codes fits: `-32002` (and `-32602`,
 * which the 2026-07-28 SDK also reads as "resource not found" when `data.uri` is present) would
 * tell the client the resource does not exist, and `-32603` says the server failed. So it is an
 * implementation-defined server error (JSON-RPC 2.0 reserves -32000 to -32099 for those),
 * -32013 as in HTTP 413 Content Too Large; a client that does not know it still shows the message.
 */
export const RESOURCE_TOO_LARGE = -32013;

/** Who the reference server says it is (`serverInfo`). */
export const SERVER_INFO = Object.freeze({ name: 'mcp-rx-streams-reference', version: '0.1.0' });

/** The reference server's methods over `files` and what `catalog` declares. */
export function methods(files: FileResources, catalog: Catalog): Record<string, MethodHandler> {
  // 2026-07-28 results say they are complete, and list and read results are cacheable results
  // that must say for how long and for whom; legacy sessions (2025-03-26 to 2025-11-25) get the
  // plain results their clients validate strictly (`ping` must be exactly `{}`).
  const complete = (result: Record<string, unknown>, context: RequestContext) =>
    context.session === undefined ? { resultType: 'complete', ...result } : result;
  const cacheable = (result: Record<string, unknown>, context: RequestContext) =>
    context.session === undefined ? complete({ ttlMs: 0, cacheScope: 'private', ...result }, context) : result;
  // `server/discover` is the endpoint's own answer, from `capabilities` and `serverInfo`.
  return {
    ping: (_params, context) => complete({}, context),
    'resources/list': async (_params, context) => cacheable({ resources: await files.list(context.auth.scopes) }, context),
    'resources/read': async (params, context) => {
      const uri = params?.uri;
      if (typeof uri !== 'string') throw new JsonRpcError(ErrorCode.InvalidParams, 'resources/read requires params.uri');
      const read = await files.read(uri, context.auth.scopes).catch(tooLarge);
      // Unreadable and absent look the same: the answer never reveals what the caller may not read.
      // 2026-07-28 made a missing resource -32602 (Invalid params, with data.uri); legacy sessions keep -32002.
      if (read === undefined) throw new JsonRpcError(context.session === undefined ? ErrorCode.InvalidParams : ErrorCode.ResourceNotFound, `resource not found: ${uri}`, { uri });
      return cacheable(read, context);
    },
    'tools/list': async (_params, context) => cacheable({ tools: await files.tools() }, context),
    'prompts/list': async (_params, context) => cacheable({ prompts: await files.prompts() }, context),
    // What tools.json and prompts.json list, served (see Catalog).
    'tools/call': async (params, context) => complete(await catalog.callTool(params), context),
    'prompts/get': async (params, context) => complete(await catalog.getPrompt(params, context.auth.scopes).catch(tooLarge), context),
  };
}

/** A file over `maxReadBytes` as the JSON-RPC error {@link RESOURCE_TOO_LARGE}; anything else rethrown. */
function tooLarge(error: unknown): never {
  if (!(error instanceof ResourceTooLargeError)) throw error;
  throw new JsonRpcError(RESOURCE_TOO_LARGE, error.message, error.info);
}

/**
 * The one URI template of the served directory (`resources/templates/list`): a file by its path
 * under the directory, percent-encoded as `pathToFileURL` writes it (a folder: with a trailing `/`).
 */
export function fileTemplates(files: FileResources): readonly ResourceTemplate[] {
  return [
    {
      uriTemplate: `${files.rootUri}{+path}`,
      name: 'file',
      title: 'File',
      description: 'A file of the served directory, by its path under it (a folder: the path with a trailing /)',
    },
  ];
}
