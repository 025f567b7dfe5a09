import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { errors as joseErrors, jwtVerify } from 'jose';
import type { Subscription } from 'rxjs';
import { AuthError, type AuthInfo } from '../../lib/auth.js';
import { localhostHosts, McpEndpoint, type EndpointRequest, type MethodHandler, type RequestContext } from '../../lib/endpoint.js';
import { Hub } from '../../lib/hub.js';
import { ErrorCode, JsonRpcError } from '../../lib/jsonrpc.js';
import type { SessionOptions } from '../../lib/legacy.js';
import type { ListenOptions, StreamLimits } from '../../lib/options.js';
import { hubResources } from '../../lib/resources.js';
import { nodeHandler } from '../node.js';
import { ensureDemoData, FileResources } from './files.js';

/** The protocol revision the reference server speaks. */
export const PROTOCOL_VERSION = '2026-07-28';

/** Options of {@link startReferenceServer}; listen options and limits as in {@link McpEndpoint}. */
export interface ReferenceServerOptions extends Partial<ListenOptions>, Partial<StreamLimits>, Partial<SessionOptions> {
  /** The directory served as resources; created with demo files when missing. Defaults to `./demo-data`. */
  readonly dir?: string;
  /** TCP port; 0 picks a free one. Defaults to 3000. */
  readonly port?: number;
  /** Interface to bind. Defaults to `127.0.0.1`. */
  readonly host?: string;
  /** HS256 secret: when set, every request needs `Authorization: Bearer <JWT>` (`sub` principal, `exp`, `scope`). */
  readonly tokenSecret?: string;
  /** Milliseconds that bursts of file events from one write are merged over; defaults to 50. */
  readonly debounceMs?: number;
}

/** A running reference server. */
export interface ReferenceServer {
  /** The MCP endpoint URL, `http://HOST:PORT/mcp`. */
  readonly url: string;
  readonly hub: Hub;
  readonly endpoint: McpEndpoint;
  readonly files: FileResources;
  readonly server: http.Server;
  /** Closes every stream gracefully (closing frames, reason `shutdown`), then the server. */
  close(): Promise<void>;
}

/**
 * Starts the reference MCP server: a directory served as resources, whose changes are pushed to
 * `subscriptions/listen` streams, composed from the library's public parts.
 *
 * Every regular file under `dir` is a resource (`file://` URI of its absolute path), every
 * directory a collection (same with a trailing `/`). Changing a file publishes
 * `notifications/resources/updated` for it and its enclosing collections; creating, deleting or
 * renaming one publishes `notifications/resources/list_changed`. `tools.json` and `prompts.json`
 * are served by `tools/list` and `prompts/list`. Files under `private/` need the `private` scope.
 *
 * Both eras are served on the one endpoint: 2026-07-28 clients `subscriptions/listen`; 2025-06-18
 * and 2025-11-25 clients `initialize` a session, open `GET /mcp` and `resources/subscribe` to files
 * and folders, resuming with `Last-Event-ID`. Bound to a loopback address, requests with a foreign
 * `Host` or `Origin` are refused (403).
 *
 * @example
 * const server = await startReferenceServer({ dir: './demo-data', port: 0 });
 * console.log(server.url); // http://127.0.0.1:54321/mcp
 * await server.close();
 * @param options see {@link ReferenceServerOptions}.
 */
export async function startReferenceServer(options: ReferenceServerOptions = {}): Promise<ReferenceServer> {
  const { dir = './demo-data', port = 3000, host = '127.0.0.1', tokenSecret, debounceMs, ...limits } = options;
  await ensureDemoData(path.resolve(dir));
  const files = await FileResources.open(path.resolve(dir), debounceMs === undefined ? {} : { debounceMs });
  const hub = new Hub();
  const canRead = (uri: string, { auth }: RequestContext) => files.canRead(uri, auth.scopes);
  // Bound to a loopback address, the server refuses DNS-rebinding requests (foreign Host or Origin).
  const loopback = ['127.0.0.1', 'localhost', '::1', '[::1]'].includes(host) || host.startsWith('127.');
  const endpoint = new McpEndpoint({
    hub,
    ...limits,
    capabilities: { tools: true, prompts: true, resources: true },
    authenticate: tokenSecret === undefined ? undefined : bearer(new TextEncoder().encode(tokenSecret)),
    canRead,
    methods: methods(files),
    serverInfo: SERVER_INFO,
    // Legacy resources/subscribe: files and folders (collections) that exist, changes pushed by the watcher.
    resourceProviders: [hubResources(hub, { subscribable: (uri) => files.isSubscribable(uri), canRead })],
    ...(loopback ? { allowedHosts: [...localhostHosts, host], allowedOrigins: [...localhostHosts, host] } : {}),
  });
  const watching: Subscription = files.changes().subscribe((change) => {
    switch (change.kind) {
      case 'updated':
        for (const uri of change.uris) hub.notifyResourceUpdated(uri);
        return;
      case 'listChanged':
        hub.notifyResourcesChanged();
        for (const uri of change.uris) hub.notifyResourceUpdated(uri);
        return;
      case 'tools':
        return hub.notifyToolsChanged();
      case 'prompts':
        return hub.notifyPromptsChanged();
    }
  });

  const handle = nodeHandler(endpoint);
  // Slow headers are cut by node:http (slow bodies by the endpoint's bodyTimeout).
  const server = http.createServer({ headersTimeout: 10_000, requestTimeout: 0 }, (req, res) => {
    const pathname = (req.url ?? '/').split('?')[0];
    if (pathname === '/mcp' || pathname === '/') return handle(req, res);
    res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found: the MCP endpoint is /mcp\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  let closing: Promise<void> | undefined;
  return {
    url: `http://${shownHost}:${address.port}/mcp`,
    hub,
    endpoint,
    files,
    server,
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        watching.unsubscribe();
        files.close();
        endpoint.close();
        server.close(() => resolve());
        // Streams whose closing frames are written end on their own; idle keep-alive sockets don't.
        server.closeIdleConnections();
        setTimeout(() => server.closeAllConnections(), 2_000).unref();
      })),
  };
}

function bearer(secret: Uint8Array): (request: EndpointRequest) => Promise<AuthInfo> {
  return async (request) => {
    const header = request.header('authorization');
    const match = header === undefined ? null : /^Bearer\s+(\S+)$/i.exec(header);
    if (match === null) throw new AuthError('send Authorization: Bearer <token>');
    try {
      const { payload } = await jwtVerify(match[1]!, secret, { algorithms: ['HS256'] });
      if (typeof payload.sub !== 'string' || payload.sub === '') throw new AuthError('the token has no sub claim');
      const scopes = typeof payload.scope === 'string' ? payload.scope.split(' ').filter(Boolean) : [];
      return {
        principal: `sub:${payload.sub}`,
        scopes: new Set(scopes),
        ...(typeof payload.exp === 'number' ? { expiresAt: payload.exp * 1000 } : {}),
      };
    } catch (error) {
      if (error instanceof AuthError) throw error;
      if (error instanceof joseErrors.JWTExpired) throw new AuthError('the token has expired', 'Bearer error="invalid_token"');
      throw new AuthError('the token is invalid', 'Bearer error="invalid_token"');
    }
  };
}

const SERVER_INFO = Object.freeze({ name: 'mcp-rx-streams-reference', version: '0.1.0' });

function methods(files: FileResources): Record<string, MethodHandler> {
  // 2026-07-28 results say they are complete, and list and read results are cacheable results
  // that must say for how long and for whom; legacy sessions (2025-06-18 / 2025-11-25) get the
  // plain results their clients validate strictly (`ping` must be exactly `{}`).
  const complete = (result: Record<string, unknown>, context: RequestContext) =>
    context.session === undefined ? { resultType: 'complete', ...result } : result;
  const cacheable = (result: Record<string, unknown>, context: RequestContext) =>
    context.session === undefined ? complete({ ttlMs: 0, cacheScope: 'private', ...result }, context) : result;
  return {
    'server/discover': (_params, context) =>
      complete(
        {
          ttlMs: 0,
          cacheScope: 'private',
          supportedVersions: [PROTOCOL_VERSION],
          capabilities: {
            tools: { listChanged: true },
            prompts: { listChanged: true },
            resources: { listChanged: true, subscribe: true },
          },
          _meta: { 'io.modelcontextprotocol/serverInfo': SERVER_INFO },
        },
        context,
      ),
    ping: (_params, context) => complete({}, context),
    'resources/list': async (_params, context) => cacheable({ resources: await files.list(context.auth.scopes) }, context),
    'resources/read': async (params, context) => {
      const uri = params?.uri;
      if (typeof uri !== 'string') throw new JsonRpcError(ErrorCode.InvalidParams, 'resources/read requires params.uri');
      const read = await files.read(uri, context.auth.scopes);
      // Unreadable and absent look the same: the answer never reveals what the caller may not read.
      if (read === undefined) throw new JsonRpcError(-32002, `resource not found: ${uri}`, { uri });
      return cacheable(read, context);
    },
    'tools/list': async (_params, context) => cacheable({ tools: await files.tools() }, context),
    'prompts/list': async (_params, context) => cacheable({ prompts: await files.prompts() }, context),
  };
}
