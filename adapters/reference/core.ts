// The reference server without its transport: the served folder, the hub its changes are published
// on, the endpoint (both eras, the reference tools and prompt) and, with `redis`, the fleet or, with
// `cluster`, the machine. `startReferenceServer` puts it on HTTP, `startReferenceStdio` on stdio.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { Subscription } from 'rxjs';
import type { RequestContext } from '../../lib/context.js';
import { Hub } from '../../lib/hub.js';
import { hubResources } from '../../lib/resources.js';
import type { ClusterWorker } from '../cluster/worker.js';
import { McpEndpoint } from '../http/endpoint.js';
import { localhostHosts } from '../http/hostCheck.js';
import type { Logger } from '../logTo.js';
import type { UpstreamGateway } from '../upstream/gateway.js';
import { referenceAuthenticate } from './auth.js';
import { Catalog } from './catalog.js';
import { ensureDemoData, FileResources } from './files.js';
import { openFleet, type Fleet } from './fleet.js';
import { fileTemplates, methods, SERVER_INFO } from './methods.js';
import { resolveReferenceOptions, type ReferenceServerOptions, type ResolvedReferenceOptions } from './options.js';
import { publishFolder } from './publisher.js';

/** What a reference server is, whatever carries it (HTTP, or a message channel: `startReferenceStdio`). @internal */
export interface ReferenceCore {
  /** The options it was started with, checked, with their defaults. */
  readonly options: ResolvedReferenceOptions;
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
 * @param url the server's own URL when it listens (`http://HOST:PORT/mcp`): the resource tokens of
 *   the `issuer` are issued for, unless `resource` says otherwise.
 * @internal
 */
export async function openReference(options: ReferenceServerOptions = {}, url?: string): Promise<ReferenceCore> {
  const resolved = resolveReferenceOptions(options);
  const { dir, host, tokenSecret, auth, endpoint: settings, redis, nodeId, watchLeaseTtl, redisConnectTimeout, cluster, logger } = resolved;
  const createdDemoData = await ensureDemoData(path.resolve(dir));
  const files = await FileResources.open(path.resolve(dir), { ...resolved.files, ...(logger === undefined ? {} : referenceLogs(logger, path.resolve(dir))) });
  let fleet: Fleet | undefined;
  let worker: ClusterWorker | undefined;
  try {
    fleet = redis === undefined ? undefined : await openFleet(redis, nodeId ?? randomUUID(), watchLeaseTtl, files.root, settings, redisConnectTimeout);
    worker = cluster ? await joinMachine(settings.capacityRetryAfter) : undefined;
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
  // Other MCP servers served beside the folder (--upstream): their URIs are the gateway's to decide.
  const gateway = await servedUpstreams(resolved, hub).catch(abort);
  const canRead = (uri: string, { auth }: RequestContext) => gateway?.owns(uri) === true || files.canRead(uri, auth.scopes);
  const catalog = new Catalog(files);
  // Bound to a loopback address, the server refuses DNS-rebinding requests (foreign Host or Origin).
  const loopback = ['127.0.0.1', 'localhost', '::1', '[::1]'].includes(host) || host.startsWith('127.');
  let endpoint: McpEndpoint;
  try {
    // None, --token-secret's, or the authorization server's (--issuer): the resource is the server's own URL unless --resource says.
    const authenticate = await referenceAuthenticate(auth, tokenSecret, url);
    endpoint = new McpEndpoint({
      hub,
      ...settings,
      capabilities: { tools: true, prompts: true, resources: true },
      authenticate,
      canRead,
      methods: gateway === undefined ? methods(files, catalog) : gateway.methods(methods(files, catalog)),
      ...(fleet === undefined
        ? {}
        : { principals: fleet.principals, sessionStore: fleet.sessionStore, eventLog: fleet.eventLog, sessionBus: fleet.sessionBus }),
      ...worker?.endpointOptions,
      serverInfo: SERVER_INFO,
      // Legacy resources/subscribe: files and folders (collections) that exist, changes pushed by the watcher.
      resourceProviders: [
        ...(gateway === undefined ? [] : [gateway.resources]),
        hubResources(hub, { subscribable: (uri) => files.isSubscribable(uri), canRead, templates: () => fileTemplates(files) }),
      ],
      ...(loopback ? { allowedHosts: [...localhostHosts, host], allowedOrigins: [...localhostHosts, host] } : {}),
    });
  } catch (error) {
    gateway?.close();
    return abort(error);
  }
  // Published by this process, or by the holder of the folder's watch lease, which catches up at each takeover.
  const watching = publishFolder(files, hub, catalog, { fleet, worker });
  // Whichever way the server closes (HTTP, stdio), the upstreams close with the folder's watch.
  if (gateway !== undefined) watching.add(() => gateway.close());

  return { options: resolved, hub, endpoint, files, fleet, worker, watching, createdDemoData, abort };
}

/** The gateway over `upstream` (mcp-rx-streams/upstream is loaded only then); none without upstreams. */
async function servedUpstreams({ upstreams: { upstream = [], ackTimeout, failMode, requestTimeout } }: ResolvedReferenceOptions, hub: Hub): Promise<UpstreamGateway | undefined> {
  if (upstream.length === 0) return undefined;
  const { upstreamGateway } = await import('../upstream/gateway.js');
  return upstreamGateway({ hub, upstreams: upstream, ackTimeout, failMode, requestTimeout });
}

/** Joins the machine's cluster (mcp-rx-streams/cluster is loaded only then). */
async function joinMachine(capacityRetryAfter: number): Promise<ClusterWorker> {
  const { clusterWorker } = await import('../cluster/worker.js');
  return clusterWorker({ capacityRetryAfter });
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
