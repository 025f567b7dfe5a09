// What every prom-client bridge of `mcp-rx-streams/metrics` takes and returns (collectMetrics,
// collectUpstreamMetrics, collectClusterMetrics): the prefix option, the bridge, the prefix check.
import { options as validOptions, string } from '../../lib/validate.js';

/** Options of `collectMetrics`, `collectUpstreamMetrics` and `collectClusterMetrics`. */
export interface MetricsOptions {
  /** Prepended to every metric name; defaults to `mcp_rx_`. */
  readonly prefix?: string;
}

/** What `collectMetrics` (and the other bridges) return. */
export interface MetricsBridge {
  /** The names of the metrics registered, prefix included. */
  readonly names: readonly string[];
  /** Stops counting (unsubscribes from the channels) and removes the metrics from the registry. Idempotent. */
  close(): void;
}

const METRIC_PREFIX = "a metric name prefix Prometheus accepts ([a-zA-Z_:][a-zA-Z0-9_:]*, or '')";

/**
 * The prefix of a bridge's metric names, from its options (`mcp_rx_` by default).
 * @param owner names the options in an error (`collectMetrics options`).
 * @throws InvalidOptionError naming `<owner> options` or `prefix`.
 * @internal
 */
export function metricPrefix(owner: string, options: MetricsOptions | undefined): string {
  const given = validOptions<keyof MetricsOptions>(`${owner} options`, options, ['prefix']);
  return given.prefix === undefined ? 'mcp_rx_' : string('prefix', given.prefix, { pattern: /^[a-zA-Z_:][a-zA-Z0-9_:]*$|^$/, what: METRIC_PREFIX });
}
