// `serve --metrics-port`: Prometheus metrics (and, with --admin-token, the admin endpoints) on a port
// of their own: one process's, or with --workers the machine's, served by the primary (each worker
// keeps its own registry and hands it over when asked; the primary joins them with its own).
// prom-client is loaded only then.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { MetricObjectWithValues, MetricValue, Registry } from 'prom-client';
import type { AdminTarget } from '../admin.js';
import type { ClusterPrimary } from '../cluster/primary.js';
import type { McpEndpoint } from '../http/endpoint.js';
import type { ReferencePrimary } from '../reference/primary.js';
import { RunError } from './errors.js';
import type { CliLogger } from './logLevels.js';

type PromClient = typeof import('prom-client');

/** prom-client and the library's bridges, loaded before anything listens. */
export interface MetricsKit {
  readonly prom: PromClient;
  readonly bridges: typeof import('../metrics/index.js');
}

/** The Prometheus text a metrics port serves, and what its admin endpoints act on. */
export interface MetricsSource {
  readonly contentType: string;
  metrics(): Promise<string>;
  readonly admin: AdminTarget;
  /** Stops counting. */
  close(): void;
}

/**
 * Loads prom-client and the metrics bridges for `serve --metrics-port`, before anything listens:
 * without prom-client the command fails at once, saying how to install it, and never prints its
 * ready line; and the bridges can count from the endpoint's first stream.
 * @throws MissingPeerDependencyError when prom-client is not installed.
 */
export async function loadMetrics(): Promise<MetricsKit> {
  const { requirePeer } = await import('../peer.js');
  const prom = requirePeer<PromClient>('prom-client', 'serve --metrics-port');
  return { prom, bridges: await import('../metrics/index.js') };
}

/** A registry of one endpoint's metrics and its process's (prom-client's default metrics). */
function endpointRegistry({ prom, bridges }: MetricsKit, endpoint: McpEndpoint): { registry: Registry; close(): void } {
  const registry = new prom.Registry();
  prom.collectDefaultMetrics({ register: registry });
  const bridge = bridges.collectMetrics(registry, endpoint);
  return { registry, close: () => bridge.close() };
}

/** The metrics and admin target of one process: its endpoint's. */
export function processMetrics(kit: MetricsKit, endpoint: McpEndpoint): MetricsSource {
  const { registry, close } = endpointRegistry(kit, endpoint);
  return { contentType: registry.contentType, metrics: () => registry.metrics(), admin: endpoint, close };
}

/** A worker's registry (`serve --workers --metrics-port`), handed to the primary as JSON at each scrape. */
export function workerMetrics(kit: MetricsKit, endpoint: McpEndpoint): { json(): Promise<MetricObjectWithValues<MetricValue<string>>[]>; close(): void } {
  const { registry, close } = endpointRegistry(kit, endpoint);
  return { json: () => registry.getMetricsAsJSON(), close };
}

/** The primary's own metrics (`serve --workers --metrics-port`): its process's and `collectClusterMetrics`. */
export interface PrimaryMetrics {
  readonly registry: Registry;
  /** Set at each scrape: how many workers answered. */
  readonly scraped: { set(value: number): void };
  close(): void;
}

/** The primary's own registry, made as soon as the primary exists: its Redis connections are counted from their start. */
export function primaryMetrics({ prom, bridges }: MetricsKit, primary: ClusterPrimary): PrimaryMetrics {
  const registry = new prom.Registry();
  prom.collectDefaultMetrics({ register: registry });
  const bridge = bridges.collectClusterMetrics(registry, primary);
  const scraped = new prom.Gauge({ name: 'mcp_rx_cluster_workers_scraped', help: 'Workers whose metrics this scrape joins (a worker that did not answer within 3 s is left out).', registers: [registry] });
  return { registry, scraped, close: () => bridge.close() };
}

/**
 * The machine's metrics, in the primary: at each scrape every serving worker's registry (asked over
 * IPC) and the primary's own ({@link primaryMetrics}) joined by prom-client's
 * `AggregatorRegistry.aggregate` (counters and most gauges summed; see prom-client for the default
 * metrics' own). The admin endpoints act on every worker (`ReferencePrimary.streams`, `revoke`).
 */
export function machineMetrics({ prom }: MetricsKit, own: PrimaryMetrics, machine: ReferencePrimary): MetricsSource {
  return {
    contentType: own.registry.contentType,
    metrics: async () => {
      const answers = await machine.ask('metrics');
      const workers = answers.flatMap((answer) => ('value' in answer ? [answer.value as MetricObjectWithValues<MetricValue<string>>[]] : []));
      own.scraped.set(workers.length);
      return prom.AggregatorRegistry.aggregate([await own.registry.getMetricsAsJSON(), ...workers]).metrics();
    },
    admin: machine,
    close: () => own.close(),
  };
}

/**
 * Serves `source` on `http://host:port/metrics`, and the admin endpoints with `adminToken`.
 * @throws RunError when the port cannot be listened on (taken, say).
 */
export async function serveMetrics(source: MetricsSource, host: string, port: number, adminToken: string | undefined, logger: CliLogger): Promise<{ url: string; close: () => Promise<void> }> {
  const { answerHeaders, whenParsed } = await import('../http/node.js');
  // Without --admin-token there are no admin endpoints at all: /streams and /revoke are 404 like any other path.
  const admin = adminToken === undefined ? undefined : (await import('../admin.js')).adminRoutes(source.admin, adminToken, logger);
  // Only POST /revoke reads a body: any other request answered while its body is still coming closes its connection (whenParsed, answerHeaders).
  const server = http.createServer({ requestTimeout: 10_000, headersTimeout: 10_000 }, (req, res) => {
    if (admin?.(req, res) === true) return;
    if ((req.url ?? '/').split('?')[0] !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      whenParsed(req, () => res.writeHead(404, answerHeaders(req, { 'Content-Type': 'text/plain' })).end('not found: metrics are at GET /metrics\n'));
      return;
    }
    source.metrics().then(
      (text) => whenParsed(req, () => res.writeHead(200, answerHeaders(req, { 'Content-Type': source.contentType })).end(req.method === 'HEAD' ? undefined : text)),
      (error: unknown) => whenParsed(req, () => res.writeHead(500, answerHeaders(req, { 'Content-Type': 'text/plain' })).end(`${String(error)}\n`)),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      source.close();
      reject(new RunError(`--metrics-port ${port}: cannot listen on ${host}:${port} (${error.code ?? error.message})`));
    });
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shownHost}:${address.port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        source.close();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Logs where the metrics (and the admin endpoints) are, once they are served. */
export function logMetrics(logger: CliLogger, url: string, adminToken: string | undefined): void {
  logger.info({ event: 'metrics', url }, `Prometheus metrics on ${url}`);
  if (adminToken === undefined) return;
  const base = url.replace(/\/metrics$/, '');
  logger.info({ event: 'admin', streams: `${base}/streams`, revoke: `${base}/revoke` }, `admin endpoints on ${base}: GET /streams, POST /revoke (Authorization: Bearer <--admin-token>)`);
}
