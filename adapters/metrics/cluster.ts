// `collectClusterMetrics`: what a machine's node:cluster primary knows (mcp-rx-streams/cluster), and
// the Redis connections it holds for the machine in a fleet, as Prometheus metrics.
import type { Counter, Gauge, Registry } from 'prom-client';
import type { ClusterPrimary } from '../cluster/primary.js';
import { implementing } from '../../lib/validate.js';
import { followMetricEvents, once } from '../metricEvents.js';
import { requirePeer } from '../peer.js';
import { metricPrefix, type MetricsBridge, type MetricsOptions } from './bridge.js';

type PromClient = typeof import('prom-client');

/**
 * Registers a machine's primary's metrics on a prom-client `Registry`, in the primary (the workers'
 * endpoints have `collectMetrics`, each in its worker):
 * - `mcp_rx_cluster_workers` gauge: workers that joined and have not exited;
 * - `mcp_rx_cluster_worker_exits_total{cause}` counter: workers that exited, `cause` the signal
 *   (`SIGKILL`) or the exit code (`code_1`); a crash loop shows here;
 * - `mcp_rx_cluster_sessions` gauge: legacy sessions the machine knows;
 * - `mcp_rx_cluster_hub_events_total` counter: hub events the workers published through the primary;
 * - `mcp_rx_redis_unrelayed_events_total{topic,reason}`, `mcp_rx_redis_connection_up{component,role}`:
 *   as `collectMetrics` counts them, for the fleet's Redis parts the primary holds (`clusterPrimary`
 *   given `mcp-rx-streams/redis` parts): in a machine, the workers hold no Redis connection.
 *
 * To serve one machine-wide text, gather each worker's `registry.getMetricsAsJSON()` and this
 * registry's, and join them with prom-client's `AggregatorRegistry.aggregate` (what `serve --workers
 * --metrics-port` does).
 *
 * @example
 * const primary = clusterPrimary({ maxStreams: 10_000 });
 * const registry = new Registry();
 * collectClusterMetrics(registry, primary);
 * @param registry the prom-client registry to register on.
 * @param primary the primary (`clusterPrimary(...)`) whose `stats` and `events$` are read.
 * @param options see {@link MetricsOptions}.
 * @throws MissingPeerDependencyError when prom-client is not installed.
 * @throws InvalidOptionError naming `collectClusterMetrics registry`, `collectClusterMetrics primary`
 *   (not a ClusterPrimary), `collectClusterMetrics options` or `prefix`, as `collectMetrics` does.
 * @see collectMetrics
 */
export function collectClusterMetrics(registry: Registry, primary: ClusterPrimary, options: MetricsOptions = {}): MetricsBridge {
  const prom = requirePeer<PromClient>('prom-client', 'mcp-rx-streams/metrics');
  implementing('collectClusterMetrics registry', registry, ['registerMetric', 'removeSingleMetric'], "a prom-client Registry (new Registry(), or prom-client's register)");
  implementing('collectClusterMetrics primary', primary, ['close'], 'a ClusterPrimary (clusterPrimary() of mcp-rx-streams/cluster)');
  const prefix = metricPrefix('collectClusterMetrics', options);
  const names: string[] = [];
  const registers = [registry];
  const gauge = <L extends string>(name: string, help: string, labelNames: readonly L[], collect?: (this: Gauge<L>) => void): Gauge<L> => {
    names.push(prefix + name);
    return new prom.Gauge({ name: prefix + name, help, labelNames, registers, ...(collect === undefined ? {} : { collect }) });
  };
  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[], collect?: (this: Counter<L>) => void): Counter<L> => {
    names.push(prefix + name);
    return new prom.Counter({ name: prefix + name, help, labelNames, registers, ...(collect === undefined ? {} : { collect }) });
  };
  gauge('cluster_workers', 'Workers that joined the machine and have not exited.', [], function () {
    this.set(primary.stats.workers);
  });
  gauge('cluster_sessions', 'Legacy sessions the machine knows.', [], function () {
    this.set(primary.stats.sessions);
  });
  // A counter read at each scrape: it grows by what the primary relayed since the last one.
  let relayed = primary.stats.hubEvents;
  counter('cluster_hub_events_total', 'Hub events the workers published through the primary.', [], function () {
    const now = primary.stats.hubEvents;
    this.inc(Math.max(0, now - relayed));
    relayed = now;
  });
  const exits = counter('cluster_worker_exits_total', 'Workers that exited, by signal or exit code.', ['cause']);
  const left = primary.events$.subscribe((event) => {
    if (event.kind === 'left') exits.inc({ cause: event.signal ?? `code_${event.code ?? 'unknown'}` });
  });
  const unrelayed = counter('redis_unrelayed_events_total', 'Hub events a Redis bus could not relay to the other nodes.', ['topic', 'reason']);
  const redisUp = gauge('redis_connection_up', '1 while the Redis connection is ready, 0 after it was lost.', ['component', 'role']);
  const events = followMetricEvents({
    closed: () => undefined,
    dropped: () => undefined,
    failed: () => undefined,
    unrelayed: (topic, reason) => unrelayed.inc({ topic, reason }),
    connection: (component, role, up) => redisUp.set({ component, role }, up ? 1 : 0),
  });
  return {
    names,
    close: once(() => {
      left.unsubscribe();
      events.close();
      for (const name of names) registry.removeSingleMetric(name);
    }),
  };
}
