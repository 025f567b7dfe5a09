// Telemetry per upstream (issue 34): state, reconnects, frames in and out, URIs and streams, on the
// metrics entry (prom-client) and the OTel entry (OpenTelemetry metrics), and state changes on the
// `mcp-rx-streams:upstream:state` diagnostics channel; a gateway's options checked with messages
// that say what to write.
import { deepStrictEqual, ok, strictEqual, throws } from 'node:assert';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader, type MetricData } from '@opentelemetry/sdk-metrics';
import { Registry } from 'prom-client';
import { test } from 'uvu';
import { listen } from '../../adapters/client.js';
import { collectUpstreamMetrics } from '../../adapters/metrics/index.js';
import { collectUpstreamOtelMetrics } from '../../adapters/otel/index.js';
import { Upstream, upstreamChannels, upstreamGateway, upstreamUri, type UpstreamStateEvent } from '../../adapters/upstream/index.js';
import { InvalidOptionError } from '../../lib/errors.js';
import { Hub } from '../../lib/hub.js';
import type { JsonRpcMessage } from '../../lib/jsonrpc.js';
import { referenceUpstream, startGateway, until } from '../helpers/gateway.js';

test('prom-client and OpenTelemetry see each upstream: its state, reconnects, frames in and out, URIs and streams; the state channel tells each change', async () => {
  const upstream = await referenceUpstream({ 'a.txt': 'a' });
  const front = await startGateway({ upstreams: [{ name: 'notes', url: upstream.server.url, era: 'modern', reconnect: { initialDelay: 20, jitter: 0 } }] });
  const registry = new Registry();
  const prom = collectUpstreamMetrics(registry, front.gateway);
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  const provider = new MeterProvider({ readers: [reader] });
  const otel = collectUpstreamOtelMetrics(provider.getMeter('spec'), front.gateway);
  const collect = async (): Promise<Map<string, MetricData>> => {
    exporter.reset();
    await reader.forceFlush();
    const metrics = new Map<string, MetricData>();
    for (const resource of exporter.getMetrics()) for (const scope of resource.scopeMetrics) for (const metric of scope.metrics) metrics.set(metric.descriptor.name, metric);
    return metrics;
  };
  const value = (metrics: Map<string, MetricData>, name: string, attributes: Record<string, string>) =>
    metrics.get(name)?.dataPoints.find((point) => JSON.stringify(point.attributes) === JSON.stringify(attributes))?.value;
  const states: string[] = [];
  const onState = (event: unknown) => void states.push((event as UpstreamStateEvent).state);
  upstreamChannels.state.subscribe(onState);
  const a = upstreamUri('notes', upstream.uri('a.txt'));
  const messages: JsonRpcMessage[] = [];
  const subscription = listen({ url: front.url, notifications: { resourceSubscriptions: [a] } }).subscribe((message) => messages.push(message));
  try {
    await until(() => messages.length === 1 && front.gateway.stats[0]!.state === 'open', 'the acknowledgment');
    upstream.server.hub.notifyResourceUpdated(upstream.uri('a.txt'));
    await until(() => messages.length === 2, 'the update');
    deepStrictEqual(prom.names, ['mcp_rx_upstream_state', 'mcp_rx_upstream_reconnects_total', 'mcp_rx_upstream_frames_in_total', 'mcp_rx_upstream_frames_out_total', 'mcp_rx_upstream_uris', 'mcp_rx_upstream_streams']);
    const text = await registry.metrics();
    for (const line of [
      'mcp_rx_upstream_state{upstream="notes",state="open"} 1',
      'mcp_rx_upstream_state{upstream="notes",state="retrying"} 0',
      'mcp_rx_upstream_reconnects_total{upstream="notes"} 0',
      'mcp_rx_upstream_frames_in_total{upstream="notes"} 3',
      'mcp_rx_upstream_frames_out_total{upstream="notes"} 1',
      'mcp_rx_upstream_uris{upstream="notes"} 1',
      'mcp_rx_upstream_streams{upstream="notes"} 2',
    ]) {
      ok(text.includes(line), `${line} in:\n${text}`);
    }
    let metrics = await collect();
    deepStrictEqual(
      [value(metrics, 'mcp_rx.upstream_state', { upstream: 'notes', state: 'open' }), value(metrics, 'mcp_rx.upstream_frames_in', { upstream: 'notes' }), value(metrics, 'mcp_rx.upstream_frames_out', { upstream: 'notes' }), value(metrics, 'mcp_rx.upstream_streams', { upstream: 'notes' })],
      [1, 3, 1, 2],
    );

    // Cut off and back: a reconnect counted in both, the states told on the channel.
    upstream.server.server.closeAllConnections();
    await until(() => front.gateway.stats[0]!.reconnects >= 1 && front.gateway.stats[0]!.state === 'open', 'the reconnect');
    ok(states.includes('retrying') && states.at(-1) === 'open', states.join(' '));
    ok((await registry.metrics()).includes('mcp_rx_upstream_reconnects_total{upstream="notes"} '), 'the reconnects counted');
    ok(!(await registry.metrics()).includes('mcp_rx_upstream_reconnects_total{upstream="notes"} 0'), 'more than none');
    metrics = await collect();
    ok(Number(value(metrics, 'mcp_rx.upstream_reconnects', { upstream: 'notes' })) >= 1);
  } finally {
    upstreamChannels.state.unsubscribe(onState);
    subscription.unsubscribe();
    prom.close();
    otel.close();
    await provider.shutdown();
    await front.close();
    await upstream.server.close();
  }
  strictEqual((await registry.getMetricsAsJSON()).length, 0, 'close() removed the metrics');
});

test('options are checked with messages that say what to write', () => {
  const hub = new Hub();
  const refused = (make: () => unknown, message: RegExp) => throws(make, (error: unknown) => error instanceof InvalidOptionError && message.test(error.message));
  refused(() => new Upstream({ name: 'notes' } as never), /^Upstream options must be an object with one of url .* and command/);
  refused(() => new Upstream({ name: 'notes', url: 'http://x/mcp', command: 'node s.js' }), /^Upstream options must be an object with one of url/);
  refused(() => new Upstream({ name: 'Notes', url: 'http://x/mcp' }), /^name must be an upstream name: 1 to 63 lower-case letters/);
  refused(() => new Upstream({ name: 'notes', url: 'ftp://x' }), /^url must be an http:\/\/ or https:\/\/ URL/);
  refused(() => new Upstream({ name: 'notes', url: 'http://x/mcp', era: 'new' as never }), /^era must be "auto" or "modern" or "legacy", got "new"$/);
  refused(() => new Upstream({ name: 'notes', command: 'node "s.js' }), /^command must be a command line whose double quotes are closed/);
  refused(() => new Upstream({ name: 'notes', command: 'node s.js', token: 't' }), /^token must be absent for an upstream launched with command/);
  refused(() => new Upstream({ name: 'notes', url: 'http://x/mcp', bodyTimeout: -1 }), /^bodyTimeout must be a non-negative integer of milliseconds, got -1$/);
  refused(() => new Upstream({ name: 'notes', url: 'http://x/mcp', reconnect: { maxDelay: 0 } }), /^reconnect\.maxDelay must be a positive integer of milliseconds, got 0$/);
  refused(() => new Upstream({ name: 'notes', url: 'http://x/mcp', lingr: 5 } as never), /^lingr must be one of the 13 known Upstream options, got 5: did you mean linger\?$/);
  refused(() => upstreamGateway({ hub, upstreams: [{ name: 'a', url: 'http://x/mcp' }, { name: 'a', url: 'http://y/mcp' }] }), /^upstreams\[1\]\.name must be a name no other upstream of the gateway has, got "a"$/);
  refused(() => upstreamGateway({ hub, upstreams: [{ name: 'a', url: 'http://x/mcp', maxUris: 0 }] }), /^upstreams\[0\]\.maxUris must be a positive integer, got 0$/);
  refused(() => upstreamGateway({ hub, upstreams: [], failMode: 'maybe' as never }), /^failMode must be "open" or "closed", got "maybe"$/);
  refused(() => upstreamGateway({ hub, upstreams: [], ackTimeout: -1 }), /^ackTimeout must be a positive integer of milliseconds, got -1$/);
  refused(() => upstreamGateway({ upstreams: [] } as never), /^hub must be/);
  refused(() => collectUpstreamMetrics(new Registry(), hub as never), /^collectUpstreamMetrics gateway must be an UpstreamGateway/);
  hub.close();
});

test.run();
