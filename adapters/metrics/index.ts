// The `mcp-rx-streams/metrics` entry: an endpoint's counts and the library's diagnostics channels
// as Prometheus metrics, through prom-client (an optional peer dependency).
import type { Counter, Gauge, Registry } from 'prom-client';
import type { McpEndpoint } from '../http/endpoint.js';
import type { UpstreamGateway } from '../upstream/gateway.js';
import { UPSTREAM_STATES, type UpstreamStats } from '../upstream/telemetry.js';
import { queueTotals } from '../../lib/telemetry.js';
import { endpoint as validEndpoint, implementing } from '../../lib/validate.js';
import { requirePeer } from '../peer.js';
import { followMetricEvents, once } from '../metricEvents.js';
import { metricPrefix, type MetricsBridge, type MetricsOptions } from './bridge.js';

export { MissingPeerDependencyError } from '../peer.js';
export type { MetricsBridge, MetricsOptions } from './bridge.js';
export { collectClusterMetrics } from './cluster.js';

type PromClient = typeof import('prom-client');

/**
 * Registers an endpoint's metrics on a prom-client `Registry`: counts read from `endpoint.stats`
 * at each scrape, and counters fed by the library's `node:diagnostics_channel` channels.
 *
 * Registered (with the default prefix `mcp_rx_`):
 * - `mcp_rx_streams_open{era}` gauge: open streams, `era` = `modern` (`subscriptions/listen`) or
 *   `legacy` (a session's `GET` stream);
 * - `mcp_rx_stream_closes_total{reason}` counter: listen streams ended, by reason (`client_closed`,
 *   `max_lifetime`, `token_expired`, `idle_timeout`, `superseded`, `shutdown`, `revoked`,
 *   `empty_filter`, `error`);
 * - `mcp_rx_notifications_dropped_total{topic}` counter: notifications skipped for a slow consumer;
 * - `mcp_rx_dropped_queue_bytes` gauge: bytes a stream held when it last had to drop one;
 * - `mcp_rx_queued_bytes`, `mcp_rx_queued_frames` gauges: what the queues for slow consumers hold
 *   now, over every stream of the process (`queueTotals()`);
 * - `mcp_rx_notifications_coalesced_total` counter: notifications a slow consumer's queue
 *   discarded because an identical one was already held;
 * - `mcp_rx_sessions`, `mcp_rx_session_subscriptions`, `mcp_rx_slots_in_use`, `mcp_rx_principals` gauges;
 * - `mcp_rx_errors_total{where}` counter: isolated failures (`hub`, `source`, `endpoint`);
 * - `mcp_rx_redis_unrelayed_events_total{topic,reason}` counter: hub events a Redis bus could not relay;
 * - `mcp_rx_redis_connection_up{component,role}` gauge: 1 while that Redis connection is ready.
 *
 * The channel-fed metrics count every endpoint of the process (the channels are process-wide), so
 * use one bridge per process; `era="modern"` is the listen streams opened minus those stopped since
 * the bridge was created, which is exact when it is created before the endpoint serves.
 *
 * @example
 * import { Registry } from 'prom-client';
 * import { collectMetrics } from 'mcp-rx-streams/metrics';
 * const registry = new Registry();
 * collectMetrics(registry, endpoint);
 * http.createServer(async (req, res) => res.setHeader('Content-Type', registry.contentType).end(await registry.metrics()));
 * @param registry the prom-client registry to register on (prom-client's global `register` works too).
 * @param endpoint the endpoint whose `stats` are read at each scrape.
 * @param options see {@link MetricsOptions}.
 * @throws MissingPeerDependencyError when prom-client is not installed.
 * @throws InvalidOptionError naming `collectMetrics registry` when `registry` is not a prom-client
 *   `Registry`, `collectMetrics endpoint` when `endpoint` is not an McpEndpoint (a Hub given instead
 *   is told to pass `new McpEndpoint({ hub })`), `collectMetrics options` when `options` is not an
 *   object, or the option that is unknown or unusable (`prefix`: what Prometheus allows to start a
 *   metric name, or `''`).
 */
export function collectMetrics(registry: Registry, endpoint: McpEndpoint, options: MetricsOptions = {}): MetricsBridge {
  const prom = requirePeer<PromClient>('prom-client', 'mcp-rx-streams/metrics');
  implementing('collectMetrics registry', registry, ['registerMetric', 'removeSingleMetric'], "a prom-client Registry (new Registry(), or prom-client's register)");
  validEndpoint('collectMetrics endpoint', endpoint);
  const prefix = metricPrefix('collectMetrics', options);
  const names: string[] = [];
  const registers = [registry];
  const gauge = <L extends string>(name: string, help: string, labelNames: readonly L[], collect?: (this: Gauge<L>) => void): Gauge<L> => {
    names.push(prefix + name);
    return new prom.Gauge({ name: prefix + name, help, labelNames, registers, ...(collect === undefined ? {} : { collect }) });
  };
  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[]): Counter<L> => {
    names.push(prefix + name);
    return new prom.Counter({ name: prefix + name, help, labelNames, registers });
  };

  let events: ReturnType<typeof followMetricEvents> | undefined;
  gauge('streams_open', 'Open streams: era="modern" for subscriptions/listen, era="legacy" for a session\'s GET stream.', ['era'], function () {
    const { streams } = endpoint.stats;
    const modern = Math.min(Math.max(events?.modernOpen() ?? 0, 0), streams);
    this.set({ era: 'modern' }, modern);
    this.set({ era: 'legacy' }, streams - modern);
  });
  const stats = (name: string, help: string, read: (stats: McpEndpoint['stats']) => number) =>
    gauge(name, help, [], function () {
      this.set(read(endpoint.stats));
    });
  stats('sessions', 'Legacy sessions held on this node.', (s) => s.sessions);
  stats('session_subscriptions', 'Live change-source subscriptions of legacy sessions.', (s) => s.sessionSubscriptions);
  stats('slots_in_use', 'Stream slots held in the server-wide pool (maxStreams).', (s) => s.slots);
  stats('principals', 'Principals with at least one live listen stream.', (s) => s.principals);
  const closes = counter('stream_closes_total', 'Listen streams ended, by reason.', ['reason']);
  const drops = counter('notifications_dropped_total', 'Notifications skipped because a slow consumer\'s queue was full.', ['topic']);
  const dropBytes = gauge('dropped_queue_bytes', 'Bytes of frames a stream held when it last had to drop a notification.', []);
  gauge('queued_bytes', 'Bytes of frames held for slow consumers right now, over every stream of the process.', [], function () {
    this.set(queueTotals().bytes);
  });
  gauge('queued_frames', 'Frames held for slow consumers right now, over every stream of the process.', [], function () {
    this.set(queueTotals().frames);
  });
  // A counter read at each scrape: it grows by what the process coalesced since the last one.
  let coalescedSeen = queueTotals().coalesced;
  names.push(prefix + 'notifications_coalesced_total');
  new prom.Counter({
    name: prefix + 'notifications_coalesced_total',
    help: 'Notifications discarded for a slow consumer because an identical one was already queued.',
    registers,
    collect(this: Counter) {
      const now = queueTotals().coalesced;
      if (now > coalescedSeen) this.inc(now - coalescedSeen);
      coalescedSeen = now;
    },
  });
  const errors = counter('errors_total', 'Failures of a subscriber or change source that delivery went on without.', ['where']);
  const unrelayed = counter('redis_unrelayed_events_total', 'Hub events a Redis bus could not relay to the other nodes.', ['topic', 'reason']);
  const redisUp = gauge('redis_connection_up', '1 while the Redis connection is ready, 0 after it was lost.', ['component', 'role']);

  events = followMetricEvents({
    closed: (reason) => closes.inc({ reason }),
    dropped: (topic, queueBytes) => {
      drops.inc({ topic });
      dropBytes.set(queueBytes);
    },
    failed: (where) => errors.inc({ where }),
    unrelayed: (topic, reason) => unrelayed.inc({ topic, reason }),
    connection: (component, role, up) => redisUp.set({ component, role }, up ? 1 : 0),
  });
  return {
    names,
    close: once(() => {
      events?.close();
      for (const name of names) registry.removeSingleMetric(name);
    }),
  };
}

/**
 * Registers a gateway's upstream metrics on a prom-client `Registry` (the upstreams of
 * `mcp-rx-streams/upstream`), read from `gateway.stats` at each scrape, labelled by upstream name:
 * - `mcp_rx_upstream_state{upstream,state}` gauge: 1 for the upstream's state now (`idle`,
 *   `connecting`, `open`, `retrying`, `closed`), 0 for the others;
 * - `mcp_rx_upstream_reconnects_total{upstream}` counter: streams opened again after they failed or ended;
 * - `mcp_rx_upstream_frames_in_total{upstream}` counter: messages received from the upstream;
 * - `mcp_rx_upstream_frames_out_total{upstream}` counter: notifications handed to downstream streams;
 * - `mcp_rx_upstream_uris{upstream}`, `mcp_rx_upstream_streams{upstream}` gauges: resource URIs
 *   held, upstream streams open or being opened.
 *
 * @example
 * collectMetrics(registry, endpoint);
 * collectUpstreamMetrics(registry, gateway);
 * @param registry the prom-client registry to register on.
 * @param gateway the gateway (`upstreamGateway(...)`) whose `stats` are read at each scrape.
 * @param options see {@link MetricsOptions}.
 * @throws MissingPeerDependencyError when prom-client is not installed.
 * @throws InvalidOptionError naming `collectUpstreamMetrics registry`, `collectUpstreamMetrics
 *   gateway` (not an UpstreamGateway), `collectUpstreamMetrics options` or `prefix`, as {@link collectMetrics} does.
 */
export function collectUpstreamMetrics(registry: Registry, gateway: UpstreamGateway, options: MetricsOptions = {}): MetricsBridge {
  const prom = requirePeer<PromClient>('prom-client', 'mcp-rx-streams/metrics');
  implementing('collectUpstreamMetrics registry', registry, ['registerMetric', 'removeSingleMetric'], "a prom-client Registry (new Registry(), or prom-client's register)");
  implementing('collectUpstreamMetrics gateway', gateway, ['methods', 'start', 'close'], 'an UpstreamGateway (upstreamGateway({ hub, upstreams }) of mcp-rx-streams/upstream)');
  const prefix = metricPrefix('collectUpstreamMetrics', options);
  const names: string[] = [];
  const registers = [registry];
  const gauge = (name: string, help: string, labelNames: readonly string[], collect: (this: Gauge<string>, stats: readonly UpstreamStats[]) => void) => {
    names.push(prefix + name);
    new prom.Gauge({ name: prefix + name, help, labelNames, registers, collect(this: Gauge<string>) {
      collect.call(this, gateway.stats);
    } });
  };
  // A counter read at each scrape: it grows by what each upstream counted since the last one.
  const counter = (name: string, help: string, read: (stats: UpstreamStats) => number) => {
    names.push(prefix + name);
    const seen = new Map<string, number>();
    new prom.Counter({ name: prefix + name, help, labelNames: ['upstream'], registers, collect(this: Counter<string>) {
      for (const stats of gateway.stats) {
        const now = read(stats);
        const before = seen.get(stats.upstream) ?? 0;
        // Incremented by 0 too: an upstream that never reconnected shows 0, not nothing.
        this.inc({ upstream: stats.upstream }, Math.max(0, now - before));
        seen.set(stats.upstream, now);
      }
    } });
  };
  gauge('upstream_state', "1 for the upstream's state now, 0 for the other states.", ['upstream', 'state'], function (all) {
    for (const stats of all) for (const state of UPSTREAM_STATES) this.set({ upstream: stats.upstream, state }, stats.state === state ? 1 : 0);
  });
  counter('upstream_reconnects_total', 'Upstream streams opened again after they failed or ended.', (stats) => stats.reconnects);
  counter('upstream_frames_in_total', 'Messages received from the upstream.', (stats) => stats.framesIn);
  counter('upstream_frames_out_total', 'Notifications from the upstream handed to downstream streams.', (stats) => stats.framesOut);
  gauge('upstream_uris', 'Resource URIs of the upstream held now.', ['upstream'], function (all) {
    for (const stats of all) this.set({ upstream: stats.upstream }, stats.uris);
  });
  gauge('upstream_streams', 'Upstream streams open or being opened now.', ['upstream'], function (all) {
    for (const stats of all) this.set({ upstream: stats.upstream }, stats.streams);
  });
  return { names, close: once(() => names.forEach((name) => registry.removeSingleMetric(name))) };
}
