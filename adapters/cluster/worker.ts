import cluster from 'node:cluster';
import type { EventLog } from '../../lib/replayBuffer.js';
import { milliseconds, options as validOptions } from '../../lib/validate.js';
import { DEFAULT_CAPACITY_RETRY_AFTER } from '../../protocol/options.js';
import { ClusterBus } from './bus.js';
import { ClusterEventLogs } from './eventLog.js';
import { ClusterLease } from './lease.js';
import { ClusterError, WorkerLink, type WorkerPort } from './link.js';
import { ClusterPrincipalCap } from './principals.js';
import { ClusterSessionBus, ClusterSessionStore } from './sessions.js';
import { ClusterSlots } from './slots.js';

/** Options of {@link clusterWorker}. */
export interface ClusterWorkerOptions {
  /**
   * Milliseconds an `initialize` refused at the machine's `maxSessions` is told to wait (HTTP 503
   * `Retry-After`): give the endpoint's `capacityRetryAfter`. Defaults to 5000, as the endpoint's.
   */
  readonly capacityRetryAfter?: number;
  /** Milliseconds to wait for the primary's answer before `clusterWorker` rejects; defaults to 10 000. */
  readonly timeout?: number;
}

/**
 * The parts of an `McpEndpoint` that make it machine-wide, as {@link ClusterWorker.endpointOptions}
 * gives them: spread them into the endpoint's options.
 */
export interface ClusterEndpointOptions {
  readonly slots: ClusterSlots;
  readonly principals: ClusterPrincipalCap;
  readonly sessionStore: ClusterSessionStore;
  readonly eventLog: (sessionId: string) => EventLog;
  readonly sessionBus: ClusterSessionBus;
}

/** One worker of a machine's cluster, joined to its primary (see {@link clusterWorker}). */
export interface ClusterWorker extends ClusterEndpointOptions {
  /** This worker's id: the primary's node id, a slash, `cluster.worker.id` (a restarted worker has a new one). */
  readonly nodeId: string;
  /** The hub's bus: `new Hub({ bus: worker.bus })`. */
  readonly bus: ClusterBus;
  /** `slots`, `principals`, `sessionStore`, `eventLog` and `sessionBus`, for `new McpEndpoint({ hub, ...worker.endpointOptions })`. */
  readonly endpointOptions: ClusterEndpointOptions;
  /** Contends for the lease `key` among the machine's workers (one holds it at a time). */
  lease(key: string): ClusterLease;
  /**
   * Leaves the cluster: lets go of its leases, sends what is still batched and stops listening to
   * the primary. Call after the endpoint has closed its streams (their slots and caps are given
   * back first); the primary releases whatever is left when the worker exits. Idempotent.
   */
  close(): void;
}

/**
 * Joins this `node:cluster` worker to the machine's primary ({@link clusterPrimary}): the hub bus,
 * the stream slots, the per-principal cap, the legacy sessions' store, event logs and commands, and
 * leases, all shared with the other workers through the primary, so that every core of a machine
 * serves one endpoint (DESIGN 2.1, "Every core").
 *
 * With it, on a machine of N workers: a change published on any worker reaches every matching
 * stream on every worker once, in order per topic; a legacy session is served by whichever worker
 * a request lands on, and a GET that reconnects on another worker is replayed exactly what its
 * client missed (`Last-Event-ID`) and gets its subscriptions back; `maxStreams`, the per-principal
 * caps and the session caps hold for the machine (the primary's options); one worker at a time
 * holds a lease. A worker that dies loses nothing the primary holds: its clients reconnect to the
 * others.
 *
 * @example
 * const worker = await clusterWorker();
 * const hub = new Hub({ bus: worker.bus });
 * const endpoint = new McpEndpoint({ hub, ...worker.endpointOptions });
 * http.createServer(nodeHandler(endpoint)).listen(3000);
 * @param options `capacityRetryAfter` (milliseconds, default 5000), `timeout` (milliseconds, default 10 000).
 * @returns once the primary has answered.
 * @throws InvalidOptionError naming `clusterWorker options` (or the option) for options it cannot
 *   use; rejects with a `ClusterError` outside a cluster worker, or when no primary answers in time.
 * @see clusterPrimary
 */
export function clusterWorker(options?: ClusterWorkerOptions): Promise<ClusterWorker> {
  const { capacityRetryAfter, timeout } = checkWorkerOptions(options);
  if (!cluster.isWorker || typeof process.send !== 'function') {
    return Promise.reject(new ClusterError('hello', 'clusterWorker() runs in a node:cluster worker; in the primary, call clusterPrimary() and cluster.fork()'));
  }
  return joinCluster(process as unknown as WorkerPort, { capacityRetryAfter, timeout });
}

/** The options of {@link clusterWorker}, checked, with their defaults. */
function checkWorkerOptions(options: ClusterWorkerOptions | undefined): Required<ClusterWorkerOptions> {
  const given = validOptions<keyof ClusterWorkerOptions>('clusterWorker options', options, ['capacityRetryAfter', 'timeout']);
  return {
    capacityRetryAfter: given.capacityRetryAfter === undefined ? DEFAULT_CAPACITY_RETRY_AFTER : milliseconds('capacityRetryAfter', given.capacityRetryAfter),
    timeout: given.timeout === undefined ? 10_000 : milliseconds('timeout', given.timeout),
  };
}

/** {@link clusterWorker} on `port` (a worker's `process`, or a test's channel). @internal */
export async function joinCluster(port: WorkerPort, options: Required<ClusterWorkerOptions>): Promise<ClusterWorker> {
  const link = new WorkerLink(port);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new ClusterError('hello', `no clusterPrimary() answered within ${options.timeout} ms: the primary must call clusterPrimary() before it forks`)),
      options.timeout,
    );
  });
  let welcome;
  try {
    welcome = await Promise.race([link.call('hello', []), late]);
  } catch (error) {
    link.close();
    throw error;
  } finally {
    clearTimeout(timer);
  }
  const { nodeId } = welcome;
  const logs = new ClusterEventLogs(link, welcome.newestId);
  const endpointOptions: ClusterEndpointOptions = Object.freeze({
    slots: new ClusterSlots(link, welcome.maxStreams),
    principals: new ClusterPrincipalCap(link, welcome.maxListensPerPrincipal),
    sessionStore: new ClusterSessionStore(link, options.capacityRetryAfter),
    eventLog: (sessionId: string) => logs.of(sessionId),
    sessionBus: new ClusterSessionBus(link, nodeId),
  });
  const leases = new Map<string, ClusterLease>();
  link.on('lease', ({ key, held, state }) => leases.get(key)?.set(held, state));
  return {
    nodeId,
    bus: new ClusterBus(link),
    ...endpointOptions,
    endpointOptions,
    lease: (key) => {
      let lease = leases.get(key);
      if (lease === undefined) leases.set(key, (lease = new ClusterLease(link, key, (closed) => leases.get(key) === closed && leases.delete(key))));
      return lease;
    },
    close: () => {
      for (const lease of [...leases.values()]) lease.close();
      link.close();
    },
  };
}
