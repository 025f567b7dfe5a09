// The reference server on HTTP (`startReferenceServer`, what `mcp-rx-streams serve` runs): its core
// (core.ts) behind a node:http server on /mcp. The modules of the reference server are reached
// through this one: its options (options.ts), its core (core.ts, also `serve --stdio`'s), its fleet
// parts (fleet.ts, also the `serve --workers --redis` primary's) and its methods (methods.ts).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Hub } from '../../lib/hub.js';
import { MODERN_PROTOCOL_VERSION } from '../../lib/protocol.js';
import type { McpEndpoint } from '../http/endpoint.js';
import { answerHeaders, nodeHandler, whenParsed } from '../http/node.js';
import { openReference, type ReferenceCore } from './core.js';
import type { FileResources } from './files.js';
import type { ReferenceFleet } from './fleet.js';
import { resolveReferenceOptions, type ReferenceServerOptions } from './options.js';

export { openReference, type ReferenceCore } from './core.js';
export { openFleet, type Fleet, type ReferenceFleet } from './fleet.js';
export { RESOURCE_TOO_LARGE } from './methods.js';
export type { ReferenceServerOptions } from './options.js';

/** The protocol revision the reference server speaks: {@link MODERN_PROTOCOL_VERSION} (`2026-07-28`). */
export const PROTOCOL_VERSION = MODERN_PROTOCOL_VERSION;

/** A running reference server. */
export interface ReferenceServer {
  /** The MCP endpoint URL, `http://HOST:PORT/mcp`. */
  readonly url: string;
  readonly hub: Hub;
  readonly endpoint: McpEndpoint;
  readonly files: FileResources;
  readonly server: http.Server;
  /** The fleet parts when started with `redis`, else `undefined`. */
  readonly fleet: ReferenceFleet | undefined;
  /** True when this start created `dir` with the sample files (`DEMO_FILES`), because it did not exist. */
  readonly createdDemoData: boolean;
  /** Closes every stream gracefully (closing frames, reason `shutdown`), then the server, then the Redis connections. */
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
 * are served by `tools/list` and `prompts/list`, and what they list by `tools/call` and
 * `prompts/get` (`echo`, `add` and `summarize` do what their demo definitions say; see
 * {@link Catalog}); an edit that changes what they list publishes `tools/list_changed` or
 * `prompts/list_changed`, a rewrite of the same definitions nothing. `resources/templates/list`
 * has one template, `file://DIR/{+path}`. Files under `private/` need the `private` scope.
 *
 * Both eras are served on the one endpoint: 2026-07-28 clients `subscriptions/listen`; 2025-03-26,
 * 2025-06-18 and 2025-11-25 clients `initialize` a session, open `GET /mcp` and `resources/subscribe` to files
 * and folders, resuming with `Last-Event-ID`. Bound to a loopback address, requests with a foreign
 * `Host` or `Origin` are refused (403).
 *
 * With `redis`, the server is one node of a fleet: every node watches the folder (so each knows
 * what is subscribable), but only the holder of the folder's watch lease publishes its changes,
 * which reach the other nodes' streams through the hub's Redis bus. A holder that loses Redis
 * keeps publishing them (its bus's outbox carries them over the outage) until Redis is back; the
 * other nodes hear them then, once each.
 * Legacy sessions, their replay buffers and the per-principal cap live in Redis too.
 *
 * @example
 * const server = await startReferenceServer({ dir: './demo-data', port: 0 });
 * console.log(server.url); // http://127.0.0.1:54321/mcp
 * await server.close();
 * @param options see {@link ReferenceServerOptions}.
 * @throws InvalidOptionError (as a rejection, before anything is created or connected) naming
 *   `startReferenceServer options` when `options` is not an object, else the option that is unknown
 *   or unusable: `dir`, `host` or `tokenSecret` not a non-empty string, `port` not from 0 to 65535,
 *   `redis` not a `redis://` URL, `nodeId` or `watchLeaseTtl` without `redis`, `cluster` with
 *   `redis`, a file, listen, session or HTTP option as `FileResources` and {@link McpEndpoint} check
 *   it (`corsOrigins: '*'` with `tokenSecret` is refused by the endpoint, after the folder is opened).
 */
export async function startReferenceServer(options: ReferenceServerOptions = {}): Promise<ReferenceServer> {
  // Every option is checked before the port is taken; the server listens before the rest opens, so
  // that its own URL is known (the resource tokens are issued for, unless `resource` says otherwise).
  const { port, host } = resolveReferenceOptions(options);
  let serve: http.RequestListener | undefined;
  // Requests that arrive while the rest opens (a client quicker than the ready line, a connection
  // node:cluster hands a worker as soon as it listens) wait for it: answered once it is open, never
  // refused for starting (a restarted worker would refuse its share of a machine's clients).
  let early: [http.IncomingMessage, http.ServerResponse][] | undefined = [];
  // Slow headers are cut by node:http, slow bodies by the endpoint's bodyTimeout, and a request
  // answered before its body arrived closes its connection (whenParsed, answerHeaders):
  // requestTimeout 0 leaves no request holding a socket without a stream.
  const server = http.createServer({ headersTimeout: 10_000, requestTimeout: 0 }, (req, res) => {
    if (serve !== undefined) return serve(req, res);
    if (early !== undefined) return void early.push([req, res]);
    whenParsed(req, () => res.writeHead(503, answerHeaders(req, { 'Content-Type': 'text/plain', 'Retry-After': '1' })).end('the server could not start\n'));
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
  const url = `http://${shownHost}:${address.port}/mcp`;
  let core: ReferenceCore;
  try {
    core = await openReference(options, url);
  } catch (error) {
    const waiting = early ?? [];
    early = undefined;
    for (const [req, res] of waiting) whenParsed(req, () => res.writeHead(503, answerHeaders(req, { 'Content-Type': 'text/plain', 'Retry-After': '1' })).end('the server could not start\n'));
    await new Promise<void>((resolve) => server.close(() => resolve()));
    throw error;
  }
  const { hub, endpoint, files, fleet, worker, watching, createdDemoData } = core;
  const handle = nodeHandler(endpoint);
  // The protected resource metadata (RFC 9728), with --issuer: at the root and with the path of /mcp.
  const metadataPaths = endpoint.core.resourceMetadata?.paths ?? [];
  serve = (req, res) => {
    // Which worker of the machine answered (an operator's, or a test's, way to see the spread).
    if (worker !== undefined) res.setHeader('X-Served-By', worker.nodeId);
    const pathname = (req.url ?? '/').split('?')[0]!;
    if (pathname === '/mcp' || pathname === '/' || metadataPaths.includes(pathname)) return handle(req, res);
    whenParsed(req, () => res.writeHead(404, answerHeaders(req, { 'Content-Type': 'text/plain' })).end('not found: the MCP endpoint is /mcp\n'));
  };
  const waiting = early;
  early = undefined;
  for (const [req, res] of waiting) serve(req, res);

  let closing: Promise<void> | undefined;
  let handedOver: Promise<void> = Promise.resolve();
  return {
    url,
    hub,
    endpoint,
    files,
    server,
    fleet: fleet?.view,
    createdDemoData,
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        watching.unsubscribe();
        files.close();
        handedOver = endpoint.close();
        server.close(() => resolve());
        // Streams whose closing frames are written end on their own; idle keep-alive sockets don't.
        server.closeIdleConnections();
        setTimeout(() => server.closeAllConnections(), 2_000).unref();
      }).then(async () => {
        // After the streams: their cap releases and session updates go out first; and after the
        // legacy sessions this node kept are handed to the other nodes (issue 31).
        await handedOver;
        hub.close();
        worker?.close();
        await fleet?.close();
      })),
  };
}
