import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { errors as joseErrors, jwtVerify } from 'jose';
import type { Subscription } from 'rxjs';
import { AuthError, type AuthInfo } from '../../lib/auth.js';
import type { EndpointRequest, MethodHandler, RequestContext } from '../../lib/context.js';
import { McpEndpoint } from '../http/endpoint.js';
import type { EmptyListen } from '../../protocol/options.js';
import type { TrustProxy } from '../http/clientAddress.js';
import type { CorsOrigins } from '../http/cors.js';
import { localhostHosts } from '../http/hostCheck.js';
import { Hub, type HubEvent } from '../../lib/hub.js';
import { InvalidOptionError } from '../../lib/errors.js';
import { ErrorCode, JsonRpcError } from '../../lib/jsonrpc.js';
import { DEFAULT_SESSION_OPTIONS, resolveSessionOptions, type SessionOptions } from '../../protocol/legacy/sessionOptions.js';
import { DEFAULT_LISTEN_OPTIONS, DEFAULT_STREAM_LIMITS, resolveListenOptions, resolveStreamLimits, type ListenOptions, type StreamLimits } from '../../lib/options.js';
import { boolean, implementing, milliseconds, nonNegativeInteger, options as validOptions, port as validPort, string } from '../../lib/validate.js';
import { resolveFileResourcesOptions } from './fileOptions.js';
import { MODERN_PROTOCOL_VERSION } from '../../lib/protocol.js';
import { hubResources, type ResourceTemplate } from '../../lib/resources.js';
import { answerHeaders, nodeHandler, whenParsed } from '../http/node.js';
import type { RedisEventLogs } from '../redis/eventLog.js';
import type { RedisBus, RedisLease, RedisPrincipalCap, RedisSessionBus, RedisSessionStore } from '../redis/index.js';
import type { ClusterWorker } from '../cluster/worker.js';
import { Catalog } from './catalog.js';
import { workerChanges } from './clusterNode.js';
import { ensureDemoData, FileResources, ResourceTooLargeError, type FileChange } from './files.js';
import type { Logger } from '../logTo.js';
import { redactedUrl } from '../redactedUrl.js';

/** The protocol revision the reference server speaks: {@link MODERN_PROTOCOL_VERSION} (`2026-07-28`). */
export const PROTOCOL_VERSION = MODERN_PROTOCOL_VERSION;

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
  /** Milliseconds a client refused with HTTP 503 for capacity is told to wait, as in {@link McpEndpoint}; defaults to 5000. */
  readonly capacityRetryAfter?: number;
  /** What a listen that honoured nothing gets, as in {@link McpEndpoint}: `'hold'` (the default) or `'complete'`. */
  readonly emptyListen?: EmptyListen;
  /** Milliseconds that bursts of file events from one write are merged over; defaults to 50. */
  readonly debounceMs?: number;
  /**
   * The largest file `resources/read` answers, in bytes; defaults to 8 MiB (8 388 608). A larger
   * one gets the JSON-RPC error {@link RESOURCE_TOO_LARGE} with `data: {uri, size, maxReadBytes}`,
   * and no more than this many bytes of it are ever held in memory. A positive integer, else
   * `startReferenceServer` throws an `InvalidOptionError` naming `maxReadBytes`.
   */
  readonly maxReadBytes?: number;
  /**
   * Run as one node of a fleet on this Redis (`redis://` URL): hub events, legacy sessions and
   * their replay, the per-principal cap and the folder watch are shared through it (see
   * `docs/fleet.md`). Without it everything stays in this process.
   */
  readonly redis?: string;
  /** This node's id in the fleet (no whitespace, no `:`); defaults to a random UUID. Only with `redis`. */
  readonly nodeId?: string;
  /**
   * Milliseconds the folder-watch lease outlives its holder's last renewal; defaults to 5000.
   * When the holder dies another node publishes the folder's changes after about 4/3 of it. Only with `redis`.
   */
  readonly watchLeaseTtl?: number;
  /**
   * Milliseconds `startReferenceServer` waits for Redis before it fails; `0` starts at once and the
   * fleet connects in the background (local streams are served meanwhile, the `ready()` of the
   * fleet's parts settle when Redis answers). Defaults to 10 000. Only with `redis`.
   */
  readonly redisConnectTimeout?: number;
  /**
   * Run as one worker of a machine's `node:cluster` whose primary runs `clusterPrimary()` (what
   * `serve --workers N` does): the hub, the caps, the legacy sessions and their replay logs are the
   * machine's (`mcp-rx-streams/cluster`), one worker at a time watches the folder, and every answer
   * says which worker gave it (`X-Served-By: <worker node id>`). Not with `redis`: with `--workers`,
   * the primary is the machine's node of the fleet. Default `false`.
   */
  readonly cluster?: boolean;
  /**
   * The reverse proxies in front whose `X-Forwarded-For` names the client (a hop count, or their
   * addresses and CIDR ranges); see `McpEndpointOptions.trustProxy`. Default: none (the header is ignored).
   */
  readonly trustProxy?: TrustProxy;
  /**
   * The origins of browser pages that may call the server across origins, or `'*'` (not with
   * `tokenSecret`); see `McpEndpointOptions.corsOrigins`. On a loopback `host` they also pass the
   * foreign-Origin check. Default: none (no CORS).
   */
  readonly corsOrigins?: CorsOrigins;
  /**
   * Where the server says what only it knows (a pino logger, or any `Logger`): the served
   * directory gone (`warn`) and back (`info`), and problems with `tools.json` / `prompts.json`
   * (`warn`). Streams, sessions and errors are on the diagnostics channels: add `logTo(logger)`
   * for those. Default: none, nothing is logged.
   */
  readonly logger?: Logger;
}

/** The Redis parts of a reference server running as a fleet node (`redis` option). */
export interface ReferenceFleet {
  readonly nodeId: string;
  /** Relays hub events between the nodes. */
  readonly bus: RedisBus;
  /** Held by the one node that publishes the folder's changes. */
  readonly lease: RedisLease;
  /** The fleet-wide per-principal cap (`maxListensPerPrincipal`). */
  readonly principals: RedisPrincipalCap;
  readonly sessionStore: RedisSessionStore;
  readonly eventLog: RedisEventLogs;
  /** Session commands between the nodes; its `connected$` says whether this node hears the fleet. */
  readonly sessionBus: RedisSessionBus;
}

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

/** What a reference server is, whatever carries it (HTTP, or a message channel: `startReferenceStdio`). @internal */
export interface ReferenceCore {
  readonly hub: Hub;
  readonly endpoint: McpEndpoint;
  readonly files: FileResources;
  readonly fleet: Fleet | undefined;
  /** This worker of a machine's cluster (`cluster`), else `undefined`. */
  readonly worker: ClusterWorker | undefined;
  /** The folder's changes, published on the hub. */
  readonly watching: Subscription;
  /** True when this start created the directory with the sample files. */
  readonly createdDemoData: boolean;
  /** Closes the files, the hub and the fleet, and rethrows `error` (a failed start). */
  abort(error: unknown): Promise<never>;
}

/**
 * The reference server without its transport: the served folder, the hub its changes are published
 * on, the endpoint (both eras, the reference tools and prompt) and, with `redis`, the fleet.
 * @internal
 */
export async function openReference(options: ReferenceServerOptions = {}): Promise<ReferenceCore> {
  validOptions('startReferenceServer options', options, REFERENCE_OPTIONS, { like: "{ dir: './demo-data', port: 3000 }" });
  const { dir = './demo-data', host = '127.0.0.1', tokenSecret, debounceMs, maxReadBytes, redis, nodeId, watchLeaseTtl, redisConnectTimeout, trustProxy, corsOrigins, cluster, logger, port: _port, ...limits } = options;
  checkOptions(options);
  const createdDemoData = await ensureDemoData(path.resolve(dir));
  const files = await FileResources.open(path.resolve(dir), {
    ...(debounceMs === undefined ? {} : { debounceMs }),
    ...(maxReadBytes === undefined ? {} : { maxReadBytes }),
    ...(logger === undefined ? {} : referenceLogs(logger, path.resolve(dir))),
  });
  let fleet: Fleet | undefined;
  let worker: ClusterWorker | undefined;
  try {
    fleet = redis === undefined ? undefined : await openFleet(redis, nodeId ?? randomUUID(), watchLeaseTtl, files.root, limits, redisConnectTimeout ?? REDIS_CONNECT_TIMEOUT);
    worker = cluster === true ? await joinMachine(limits.capacityRetryAfter) : undefined;
  } catch (error) {
    files.close();
    throw error;
  }
  const bus = fleet?.bus ?? worker?.bus;
  const hub = new Hub(bus === undefined ? {} : { bus });
  // A failed start (a bad option, a port in use) must not leave the watcher or Redis connections open.
  const abort = async (error: unknown): Promise<never> => {
    files.close();
    hub.close();
    worker?.close();
    await fleet?.close();
    throw error;
  };
  const canRead = (uri: string, { auth }: RequestContext) => files.canRead(uri, auth.scopes);
  const catalog = new Catalog(files);
  // Bound to a loopback address, the server refuses DNS-rebinding requests (foreign Host or Origin).
  const loopback = ['127.0.0.1', 'localhost', '::1', '[::1]'].includes(host) || host.startsWith('127.');
  let endpoint: McpEndpoint;
  try {
    endpoint = new McpEndpoint({
      hub,
      ...limits,
      capabilities: { tools: true, prompts: true, resources: true },
      authenticate: tokenSecret === undefined ? undefined : bearer(new TextEncoder().encode(tokenSecret)),
      canRead,
      methods: methods(files, catalog),
      ...(fleet === undefined
        ? {}
        : { principals: fleet.principals, sessionStore: fleet.sessionStore, eventLog: fleet.eventLog, sessionBus: fleet.sessionBus }),
      ...worker?.endpointOptions,
      serverInfo: SERVER_INFO,
      // Legacy resources/subscribe: files and folders (collections) that exist, changes pushed by the watcher.
      resourceProviders: [hubResources(hub, { subscribable: (uri) => files.isSubscribable(uri), canRead, templates: () => fileTemplates(files) })],
      ...(loopback ? { allowedHosts: [...localhostHosts, host], allowedOrigins: [...localhostHosts, host] } : {}),
      trustProxy,
      corsOrigins,
    });
  } catch (error) {
    return abort(error);
  }
  const publishes = () => fleet === undefined || fleet.publishes;
  const changes = worker === undefined ? files.changes() : workerChanges(files, hub, worker);
  const watching: Subscription = changes.subscribe((change) => {
    if (change.kind === 'tools' || change.kind === 'prompts') {
      // A list change only when what is listed changed (a rewrite of the same definitions is none).
      const topic = change.kind;
      void catalog.listChanged(topic).then((changed) => {
        if (changed && !watching.closed && publishes()) notify(hub, { topic });
      });
      return;
    }
    for (const event of hubEvents(change)) {
      if (publishes()) notify(hub, event);
    }
  });

  return { hub, endpoint, files, fleet, worker, watching, createdDemoData, abort };
}

/** Joins the machine's cluster (mcp-rx-streams/cluster is loaded only then). */
async function joinMachine(capacityRetryAfter: number | undefined): Promise<ClusterWorker> {
  const { clusterWorker } = await import('../cluster/worker.js');
  return clusterWorker(capacityRetryAfter === undefined ? {} : { capacityRetryAfter });
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
 *   `redis` not a `redis://` URL, `nodeId` or `watchLeaseTtl` without `redis`, a listen, session or
 *   file option as {@link McpEndpoint} and `FileResources` check it. `trustProxy` and `corsOrigins`
 *   are checked by the endpoint, after the folder is opened.
 */
export async function startReferenceServer(options: ReferenceServerOptions = {}): Promise<ReferenceServer> {
  const { hub, endpoint, files, fleet, worker, watching, createdDemoData, abort } = await openReference(options);
  const { port = 3000, host = '127.0.0.1' } = options;
  const handle = nodeHandler(endpoint);
  // Slow headers are cut by node:http, slow bodies by the endpoint's bodyTimeout, and a request
  // answered before its body arrived closes its connection (whenParsed, answerHeaders):
  // requestTimeout 0 leaves no request holding a socket without a stream.
  const server = http.createServer({ headersTimeout: 10_000, requestTimeout: 0 }, (req, res) => {
    // Which worker of the machine answered (an operator's, or a test's, way to see the spread).
    if (worker !== undefined) res.setHeader('X-Served-By', worker.nodeId);
    const pathname = (req.url ?? '/').split('?')[0];
    if (pathname === '/mcp' || pathname === '/') return handle(req, res);
    whenParsed(req, () => res.writeHead(404, answerHeaders(req, { 'Content-Type': 'text/plain' })).end('not found: the MCP endpoint is /mcp\n'));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  }).catch((error: unknown) => {
    watching.unsubscribe();
    endpoint.close();
    return abort(error);
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
    fleet: fleet?.view,
    createdDemoData,
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        watching.unsubscribe();
        files.close();
        endpoint.close();
        server.close(() => resolve());
        // Streams whose closing frames are written end on their own; idle keep-alive sockets don't.
        server.closeIdleConnections();
        setTimeout(() => server.closeAllConnections(), 2_000).unref();
      }).then(async () => {
        // After the streams: their cap releases and session updates go out first.
        hub.close();
        worker?.close();
        await fleet?.close();
      })),
  };
}

const LISTEN_OPTION_NAMES = Object.keys(DEFAULT_LISTEN_OPTIONS) as (keyof ListenOptions)[];
const STREAM_LIMIT_NAMES = Object.keys(DEFAULT_STREAM_LIMITS) as (keyof StreamLimits)[];
const SESSION_OPTION_NAMES = Object.keys(DEFAULT_SESSION_OPTIONS) as (keyof SessionOptions)[];
const REFERENCE_OPTIONS: readonly (keyof ReferenceServerOptions)[] = [
  'dir', 'port', 'host', 'tokenSecret', 'capacityRetryAfter', 'emptyListen', 'debounceMs', 'maxReadBytes', 'redis', 'nodeId', 'watchLeaseTtl', 'redisConnectTimeout',
  'trustProxy', 'corsOrigins', 'cluster', 'logger', ...LISTEN_OPTION_NAMES, ...STREAM_LIMIT_NAMES, ...SESSION_OPTION_NAMES,
];

/** The members of `options` named `names`. */
function only<T, K extends keyof T>(options: T, names: readonly K[]): Pick<T, K> {
  return Object.fromEntries(names.map((name) => [name, options[name]])) as Pick<T, K>;
}

/** Checks the options of {@link startReferenceServer} before anything is created, opened or connected. */
function checkOptions(options: ReferenceServerOptions): void {
  const { dir, port, host, tokenSecret, debounceMs, maxReadBytes, redis, nodeId, watchLeaseTtl, redisConnectTimeout, capacityRetryAfter } = options;
  if (dir !== undefined) string('dir', dir, { nonEmpty: true, what: 'a non-empty string (a directory path)' });
  if (port !== undefined) validPort('port', port);
  if (host !== undefined) string('host', host, { nonEmpty: true, what: 'a non-empty string (an interface address or host name)' });
  if (tokenSecret !== undefined) string('tokenSecret', tokenSecret, { nonEmpty: true, what: 'a non-empty string (the HS256 secret)' });
  if (redis !== undefined) string('redis', redis, { pattern: /^rediss?:\/\/./, what: 'a redis:// or rediss:// URL' });
  if (redis === undefined && (nodeId !== undefined || watchLeaseTtl !== undefined)) {
    throw new InvalidOptionError(nodeId === undefined ? 'watchLeaseTtl' : 'nodeId', 'used only together with redis', nodeId ?? watchLeaseTtl);
  }
  if (watchLeaseTtl !== undefined && (!Number.isSafeInteger(watchLeaseTtl) || watchLeaseTtl < 30 || watchLeaseTtl > 2_147_483_647)) {
    throw new InvalidOptionError('watchLeaseTtl', 'a positive integer of milliseconds, at least 30', watchLeaseTtl);
  }
  if (redisConnectTimeout !== undefined) nonNegativeInteger('redisConnectTimeout', redisConnectTimeout, 'milliseconds');
  if (options.cluster !== undefined && boolean('cluster', options.cluster) && redis !== undefined) {
    throw new InvalidOptionError('cluster', "used without redis (a cluster's workers reach the fleet through their primary: give the primary the fleet's parts)", options.cluster);
  }
  if (capacityRetryAfter !== undefined) milliseconds('capacityRetryAfter', capacityRetryAfter);
  if (options.logger !== undefined) implementing('logger', options.logger, ['info', 'warn', 'error', 'debug'], 'a Logger (pino, or any object with info, warn, error and debug)');
  resolveFileResourcesOptions({ debounceMs, maxReadBytes });
  resolveListenOptions(only(options, LISTEN_OPTION_NAMES));
  resolveStreamLimits(only(options, STREAM_LIMIT_NAMES));
  resolveSessionOptions(only(options, SESSION_OPTION_NAMES));
}

/** What the server tells `logger` about the files it serves. */
function referenceLogs(logger: Logger, dir: string): { onWarning: (message: string) => void; onRootChange: (present: boolean) => void } {
  return {
    onWarning: (message) => logger.warn({ event: 'reference_warning' }, message),
    onRootChange: (present) =>
      present
        ? logger.info({ event: 'directory_found', dir }, `the served directory is back: ${dir} (rescanned; changes made meanwhile are reported)`)
        : logger.warn({ event: 'directory_lost', dir }, `the served directory is gone: ${dir} (nothing is served or reported until it is back)`),
  };
}

/** The fleet parts, and whether this node publishes the folder's changes. @internal */
export interface Fleet extends ReferenceFleet {
  readonly view: ReferenceFleet;
  /**
   * This node holds the watch lease, or held it when Redis became unreachable and Redis is not
   * back yet: the lease lapses after 2/3 of its ttl without Redis, but nobody else can take it
   * meanwhile, and the bus's outbox relays what the holder publishes when Redis returns. (When only
   * this node lost Redis, another takes the lease after its ttl and both publish until this one is
   * back: a change may then reach a stream twice, never not at all.)
   */
  readonly publishes: boolean;
  close(): Promise<void>;
}

/** The Redis parts of a fleet node, connected (within `connectTimeout` milliseconds; 0: in the background). @internal */
export async function openFleet(
  redis: string,
  nodeId: string,
  watchLeaseTtl: number | undefined,
  root: string,
  limits: Partial<SessionOptions> & Partial<StreamLimits>,
  connectTimeout: number,
): Promise<Fleet> {
  // With their defaults (the values are valid: startReferenceServer checked them).
  const { sessionIdleTimeout, sessionPruneInterval, replayBufferSize } = resolveSessionOptions(only(limits, SESSION_OPTION_NAMES));
  const { maxListensPerPrincipal } = resolveStreamLimits({ maxListensPerPrincipal: limits.maxListensPerPrincipal });
  const { RedisBus, RedisLease, RedisPrincipalCap, RedisSessionBus, RedisSessionStore, redisEventLogs } = await import('../redis/index.js');
  // A node holding a session's GET stream refreshes the record once per prune interval: the margin.
  const ttl = Math.min(sessionIdleTimeout + sessionPruneInterval, 2_147_483_647);
  const parts: { close(): Promise<void> }[] = [];
  const open = <T extends { close(): Promise<void> }>(part: T): T => (parts.push(part), part);
  const close = async () => void (await Promise.all(parts.map((part) => part.close())));
  try {
    const bus = open(new RedisBus({ redis, nodeId }));
    const lease = open(new RedisLease({ redis, nodeId, key: `mcp-rx-streams:watch:${root}`, ...(watchLeaseTtl === undefined ? {} : { ttl: watchLeaseTtl }) }));
    const principals = open(new RedisPrincipalCap({ redis, nodeId, maxPerPrincipal: maxListensPerPrincipal }));
    const sessionStore = open(new RedisSessionStore({ redis, ttl }));
    const eventLog = open(redisEventLogs({ redis, ttl, capacity: replayBufferSize }));
    const sessionBus = open(new RedisSessionBus({ redis, nodeId }));
    if (connectTimeout > 0) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`Redis at ${redactedUrl(redis)} did not answer within ${connectTimeout} ms; is it running?`)), connectTimeout);
      });
      await Promise.race([Promise.all([bus.ready(), sessionStore.ready(), eventLog.ready(), sessionBus.ready()]), timeout]).finally(() => clearTimeout(timer));
    }
    const members = { nodeId, bus, lease, principals, sessionStore, eventLog, sessionBus };
    let carrying = false;
    sessionBus.connected$.subscribe((connected) => (carrying = !connected && (carrying || lease.held)));
    return {
      ...members,
      get publishes() {
        return lease.held || carrying;
      },
      close,
      view: members,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

const REDIS_CONNECT_TIMEOUT = 10_000;

/**
 * The one URI template of the served directory (`resources/templates/list`): a file by its path
 * under the directory, percent-encoded as `pathToFileURL` writes it (a folder: with a trailing `/`).
 */
function fileTemplates(files: FileResources): readonly ResourceTemplate[] {
  return [
    {
      uriTemplate: `${files.rootUri}{+path}`,
      name: 'file',
      title: 'File',
      description: 'A file of the served directory, by its path under it (a folder: the path with a trailing /)',
    },
  ];
}


/**
 * The hub events a change of the folder's files stands for, in publishing order (a change of
 * `tools.json` or `prompts.json` is the {@link Catalog}'s to judge).
 *
 * A change under `private/` carries scope `private` on every event, the public collection URIs
 * (`DIR/`) and `resources/list_changed` included: those are published, not dropped, so that a
 * principal with the scope who watches `DIR/` hears every member's change (DESIGN L5), while
 * one without it hears nothing at all of activity it may not read (issue 11).
 */
function hubEvents(change: Extract<FileChange, { kind: 'updated' | 'listChanged' }>): HubEvent[] {
  const scoped = change.scope === undefined ? {} : { scope: change.scope };
  const uris = change.uris.map((uri): HubEvent => ({ topic: 'resource', uri, ...scoped }));
  return change.kind === 'updated' ? uris : [{ topic: 'resources', ...scoped }, ...uris];
}

/** Publishes `event` on the hub (with its read scope): to this node's streams and, with a bus, to the fleet's. */
function notify(hub: Hub, event: HubEvent): void {
  const options = event.scope === undefined ? undefined : { scope: event.scope };
  switch (event.topic) {
    case 'tools':
      return hub.notifyToolsChanged(options);
    case 'prompts':
      return hub.notifyPromptsChanged(options);
    case 'resources':
      return hub.notifyResourcesChanged(options);
    case 'resource':
      return hub.notifyResourceUpdated(event.uri, options);
    case 'task':
      return hub.notifyTask(event.task, options);
  }
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

const SERVER_INFO = Object.freeze({ name: 'mcp-rx-streams-reference', version: '0.1.0' });

function methods(files: FileResources, catalog: Catalog): Record<string, MethodHandler> {
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
