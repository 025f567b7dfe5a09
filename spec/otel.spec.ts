// mcp-rx-streams/otel (issue 25, part 3) with the OpenTelemetry SDK's in-memory exporters: the
// Prometheus entry's instruments through the metrics API, and a span per listen admission carrying
// the request's trace context (its `traceparent` header, or `params._meta`), with the stream's start
// and stop as events.
import { strict as assert } from 'node:assert';
import { propagation, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader, type MetricData } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { spawn } from 'node:child_process';
import { test } from 'uvu';
import { serveStdio, stdioChannel } from '../adapters/channel/stdio.js';
import { McpEndpoint } from '../adapters/http/endpoint.js';
import { collectOtelMetrics, traceListens } from '../adapters/otel/index.js';
import { redisChannels } from '../adapters/redis/telemetry.js';
import type { EndpointRequest } from '../lib/context.js';
import { channels } from '../lib/telemetry.js';
import { Hub } from '../lib/hub.js';
import { eventually, LISTEN_HEADERS, listenBody, post, SseConnection, withEndpoint } from './helpers/http.js';
import { GetStream, initialize } from './helpers/legacy.js';

propagation.setGlobalPropagator(new W3CTraceContextPropagator());

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_ID = '00f067aa0ba902b7';
const traceparent = (traceId = TRACE_ID, parent = PARENT_ID) => `00-${traceId}-${parent}-01`;

function tracing(spanUntil?: 'start' | 'stop') {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const traced = traceListens(provider.getTracer('spec'), spanUntil === undefined ? {} : { spanUntil });
  return {
    spans: () => exporter.getFinishedSpans(),
    close: async () => {
      traced.close();
      await provider.shutdown();
    },
  };
}

const events = (span: ReadableSpan) => span.events.map((event) => event.name);

test('a listen with a traceparent header: its admission span is a child of it, ends when the stream starts (start event); the stop is a linked span with the reason', async () => {
  const traces = tracing();
  try {
    await withEndpoint({}, async ({ url, endpoint }) => {
      const conn = await SseConnection.open(url, listenBody(1, { toolsListChanged: true }), { ...LISTEN_HEADERS, traceparent: traceparent() });
      await conn.until((c) => c.messages.length === 1);
      await eventually(() => traces.spans().length === 1, 3000, 'the admission span');
      const [admission] = traces.spans();
      assert.equal(admission!.name, 'subscriptions/listen');
      assert.equal(admission!.kind, SpanKind.SERVER);
      assert.equal(admission!.spanContext().traceId, TRACE_ID);
      assert.equal(admission!.parentSpanContext?.spanId, PARENT_ID);
      assert.deepEqual(admission!.attributes, { 'mcp.method.name': 'subscriptions/listen', 'mcp.protocol.version': '2026-07-28' });
      assert.deepEqual(events(admission!), ['mcp.stream.start']);
      assert.deepEqual(admission!.events[0]!.attributes, { 'mcp.stream.era': 'modern', 'mcp.stream.filters': ['tools_list_changed'], 'mcp.stream.resource_subscriptions': 0 });
      await endpoint.revoke('addr:127.0.0.1');
      await eventually(() => traces.spans().length === 2, 3000, 'the stop span');
      const stop = traces.spans()[1]!;
      assert.equal(stop.name, 'subscriptions/listen stop');
      assert.equal(stop.spanContext().traceId, TRACE_ID);
      assert.equal(stop.parentSpanContext?.spanId, PARENT_ID);
      assert.equal(stop.links[0]!.context.spanId, admission!.spanContext().spanId);
      assert.deepEqual(events(stop), ['mcp.stream.stop']);
      assert.equal(stop.events[0]!.attributes!['mcp.stream.close_reason'], 'revoked');
      assert.equal(typeof stop.events[0]!.attributes!['mcp.stream.duration_ms'], 'number');
    });
  } finally {
    await traces.close();
  }
});

test("spanUntil 'stop': one span from admission to the stream's end, with both events; the trace context of params._meta wins over the header", async () => {
  const traces = tracing('stop');
  const metaTrace = '0af7651916cd43dd8448eb211c80319c';
  try {
    await withEndpoint({}, async ({ url }) => {
      const body = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true }, _meta: { traceparent: traceparent(metaTrace, 'b7ad6b7169203331') } } });
      const conn = await SseConnection.open(url, body, { ...LISTEN_HEADERS, traceparent: traceparent() });
      await conn.until((c) => c.messages.length === 1);
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.equal(traces.spans().length, 0, 'still open while the stream is');
      conn.destroy();
      await eventually(() => traces.spans().length === 1, 3000, 'the span to end');
      const [span] = traces.spans();
      assert.equal(span!.spanContext().traceId, metaTrace);
      assert.equal(span!.parentSpanContext?.spanId, 'b7ad6b7169203331');
      assert.deepEqual(events(span!), ['mcp.stream.start', 'mcp.stream.stop']);
      assert.equal(span!.events[1]!.attributes!['mcp.stream.close_reason'], 'client_closed');
    });
  } finally {
    await traces.close();
  }
});

test('a refused listen gets its span too, with the status and the JSON-RPC code; without a trace context it starts a trace; a client gone before the open ends it abandoned', async () => {
  const traces = tracing();
  try {
    await withEndpoint({ maxStreams: 1 }, async ({ url, endpoint }) => {
      const bad = await post(url, listenBody(3, { toolsListChanged: 'yes' }), { ...LISTEN_HEADERS, traceparent: traceparent() });
      assert.equal(bad.status, 200);
      const first = await SseConnection.open(url, listenBody(4, { toolsListChanged: true }), LISTEN_HEADERS);
      await first.until((c) => c.messages.length === 1);
      const full = await post(url, listenBody(5, { toolsListChanged: true }), LISTEN_HEADERS);
      assert.equal(full.status, 503);
      await eventually(() => traces.spans().length === 3, 3000, 'three spans');
      const [refused, admitted, overCapacity] = traces.spans();
      assert.deepEqual([refused!.status.code, refused!.attributes['http.response.status_code'], refused!.attributes['rpc.jsonrpc.error_code']], [SpanStatusCode.ERROR, 200, -32602]);
      assert.equal(refused!.spanContext().traceId, TRACE_ID);
      assert.deepEqual(events(admitted!), ['mcp.stream.start']);
      assert.equal(admitted!.parentSpanContext, undefined, 'a root span of its own trace');
      assert.deepEqual([overCapacity!.attributes['http.response.status_code'], overCapacity!.attributes['rpc.jsonrpc.error_code']], [503, -32000]);
      first.destroy();
      await eventually(() => endpoint.stats.streams === 0, 3000, 'the stream to end');

      // The response of a listen that is never opened (its client left) is abandoned.
      const request: EndpointRequest = {
        method: 'POST',
        header: (name) => ({ 'content-type': 'application/json', accept: 'text/event-stream' } as Record<string, string>)[name],
        body: listenBody(6, { toolsListChanged: true }),
        remoteAddress: '127.0.0.1',
      };
      const response = await endpoint.handle(request);
      assert.equal(response.kind, 'stream');
      if (response.kind === 'stream') response.abandon();
      const abandoned = traces.spans().at(-1)!;
      assert.equal(abandoned.attributes['mcp.stream.abandoned'], true);
    });
  } finally {
    await traces.close();
  }
});

test('without a subscriber to channels.trace, a listen builds no trace object (nothing published)', async () => {
  let published = 0;
  const count = () => published++;
  await withEndpoint({}, async ({ url }) => {
    const conn = await SseConnection.open(url, listenBody(1, { toolsListChanged: true }), LISTEN_HEADERS);
    await conn.until((c) => c.messages.length === 1);
    channels.trace.subscribe(count);
    conn.destroy();
    await new Promise((resolve) => setTimeout(resolve, 50));
    channels.trace.unsubscribe(count);
  });
  assert.equal(published, 0, 'a listen admitted untraced is never traced later');
});

/* Metrics */

function metricsHarness(endpoint: McpEndpoint) {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  const provider = new MeterProvider({ readers: [reader] });
  const bridge = collectOtelMetrics(provider.getMeter('spec'), endpoint);
  return {
    bridge,
    /** The metrics of a fresh collection, by name. */
    collect: async (): Promise<Map<string, MetricData>> => {
      exporter.reset();
      await reader.forceFlush();
      const metrics = new Map<string, MetricData>();
      for (const resource of exporter.getMetrics()) for (const scope of resource.scopeMetrics) for (const metric of scope.metrics) metrics.set(metric.descriptor.name, metric);
      return metrics;
    },
    close: async () => {
      bridge.close();
      await provider.shutdown();
    },
  };
}

/** The value of `name` for exactly `attributes`. */
function value(metrics: Map<string, MetricData>, name: string, attributes: Record<string, string> = {}): number | undefined {
  const point = metrics.get(name)?.dataPoints.find((p) => JSON.stringify(p.attributes) === JSON.stringify(attributes));
  return point === undefined ? undefined : (point.value as number);
}

test('a listen over stdio (real pipes) is traced like one over HTTP: the span follows params._meta, starts and stops with the stream (the client cancels it); a refused one over stdio gets its span with the JSON-RPC code', async () => {
  const traces = tracing();
  // Two real pipes through child processes: client -> cat -> server, server -> cat -> client.
  const toServer = spawn('cat', [], { stdio: ['pipe', 'pipe', 'inherit'] });
  const toClient = spawn('cat', [], { stdio: ['pipe', 'pipe', 'inherit'] });
  const endpoint = new McpEndpoint({ hub: new Hub() });
  const session = serveStdio(endpoint, { input: toServer.stdout!, output: toClient.stdin! });
  const client = stdioChannel({ input: toClient.stdout!, output: toServer.stdin! });
  const heard: Record<string, unknown>[] = [];
  const reading = client.incoming.subscribe((input) => heard.push(JSON.parse(String(input instanceof Uint8Array ? Buffer.from(input) : input))));
  try {
    const meta = { traceparent: traceparent() };
    client.send(JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true }, _meta: meta } }));
    await eventually(() => heard.length === 1, 3000, 'the acknowledgment');
    assert.equal(heard[0]!.method, 'notifications/subscriptions/acknowledged');
    await eventually(() => traces.spans().length === 1, 3000, 'the admission span');
    const [admission] = traces.spans();
    assert.equal(admission!.name, 'subscriptions/listen');
    assert.equal(admission!.spanContext().traceId, TRACE_ID);
    assert.equal(admission!.parentSpanContext?.spanId, PARENT_ID);
    assert.deepEqual(events(admission!), ['mcp.stream.start']);
    assert.deepEqual(admission!.events[0]!.attributes, { 'mcp.stream.era': 'modern', 'mcp.stream.filters': ['tools_list_changed'], 'mcp.stream.resource_subscriptions': 0 });
    client.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7 } }));
    await eventually(() => traces.spans().length === 2, 3000, 'the stop span');
    const stop = traces.spans()[1]!;
    assert.equal(stop.name, 'subscriptions/listen stop');
    assert.equal(stop.spanContext().traceId, TRACE_ID);
    assert.equal(stop.links[0]!.context.spanId, admission!.spanContext().spanId);
    assert.equal(stop.events[0]!.attributes!['mcp.stream.close_reason'], 'client_closed');
    client.send(JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'subscriptions/listen', params: { notifications: 'all', _meta: meta } }));
    await eventually(() => traces.spans().length === 3, 3000, 'the refused span');
    const refused = traces.spans()[2]!;
    assert.equal(refused.status.code, SpanStatusCode.ERROR);
    assert.equal(refused.attributes['rpc.jsonrpc.error_code'], -32602);
    assert.equal(refused.spanContext().traceId, TRACE_ID);
    await eventually(() => heard.some((message) => message.id === 8), 3000, 'the answer to the refused listen');
    assert.equal((heard.find((message) => message.id === 8) as { error?: { code?: number } }).error?.code, -32602);
  } finally {
    reading.unsubscribe();
    session.close();
    client.close();
    endpoint.close();
    toServer.kill();
    toClient.kill();
    await traces.close();
  }
});

test('collectOtelMetrics: the Prometheus entry\'s instruments, streams by era, closes by reason, sessions, slots, principals, drops, errors, Redis', async () => {
  await withEndpoint({}, async ({ url, endpoint }) => {
    const harness = metricsHarness(endpoint);
    try {
      assert.deepEqual([...harness.bridge.names].sort(), [
        'mcp_rx.dropped_queue_bytes',
        'mcp_rx.errors',
        'mcp_rx.notifications_coalesced',
        'mcp_rx.notifications_dropped',
        'mcp_rx.principals',
        'mcp_rx.queued_bytes',
        'mcp_rx.queued_frames',
        'mcp_rx.redis_connection_up',
        'mcp_rx.redis_unrelayed_events',
        'mcp_rx.session_subscriptions',
        'mcp_rx.sessions',
        'mcp_rx.slots_in_use',
        'mcp_rx.stream_closes',
        'mcp_rx.streams_open',
      ]);
      let metrics = await harness.collect();
      assert.equal(value(metrics, 'mcp_rx.streams_open', { era: 'modern' }), 0);
      const listen = await SseConnection.open(url, listenBody(1, { toolsListChanged: true }), LISTEN_HEADERS);
      await listen.until((c) => c.messages.length === 1);
      const session = await initialize(url);
      const get = GetStream.open(url, session.sessionId);
      await get.response;
      await eventually(() => endpoint.stats.streams === 2, 3000, 'both streams');
      metrics = await harness.collect();
      assert.deepEqual(
        [
          value(metrics, 'mcp_rx.streams_open', { era: 'modern' }),
          value(metrics, 'mcp_rx.streams_open', { era: 'legacy' }),
          value(metrics, 'mcp_rx.sessions'),
          value(metrics, 'mcp_rx.slots_in_use'),
          value(metrics, 'mcp_rx.principals'),
        ],
        [1, 1, 1, 2, 1],
      );
      await endpoint.revoke('addr:127.0.0.1');
      await eventually(() => endpoint.stats.streams === 0, 3000, 'the revoke');
      channels.drop.publish({ queueLength: 1000, queueBytes: 4096, topic: 'tools' });
      channels.error.publish({ where: 'source', error: new Error('x') });
      redisChannels.unrelayed.publish({ topic: 'resource', reason: 'overflow', unrelayed: 1 });
      redisChannels.connection.publish({ component: 'bus', role: 'reader', status: 'lost' });
      metrics = await harness.collect();
      assert.equal(value(metrics, 'mcp_rx.stream_closes', { reason: 'revoked' }), 1);
      assert.equal(value(metrics, 'mcp_rx.streams_open', { era: 'modern' }), 0);
      assert.equal(value(metrics, 'mcp_rx.sessions'), 0);
      assert.equal(value(metrics, 'mcp_rx.notifications_dropped', { topic: 'tools' }), 1);
      assert.equal(value(metrics, 'mcp_rx.dropped_queue_bytes'), 4096);
      assert.equal(value(metrics, 'mcp_rx.errors', { where: 'source' }), 1);
      assert.equal(value(metrics, 'mcp_rx.redis_unrelayed_events', { topic: 'resource', reason: 'overflow' }), 1);
      assert.equal(value(metrics, 'mcp_rx.redis_connection_up', { component: 'bus', role: 'reader' }), 0);
      assert.equal(metrics.get('mcp_rx.queued_bytes')?.descriptor.unit, 'By');

      // close(): the channels no longer count.
      harness.bridge.close();
      channels.error.publish({ where: 'source', error: new Error('y') });
      metrics = await harness.collect();
      assert.equal(value(metrics, 'mcp_rx.errors', { where: 'source' }), 1);
    } finally {
      await harness.close();
    }
  });
});

test('the otel entry loads no OpenTelemetry package until it is called, and its functions need only @opentelemetry/api', async () => {
  const source = await import('node:fs/promises').then((fs) => fs.readFile(new URL('../adapters/otel/index.ts', import.meta.url), 'utf8'));
  const imports = [...source.matchAll(/^import (?!type )[^;]*from '([^']+)'/gm)].map((match) => match[1]);
  assert.ok(!imports.some((name) => name!.startsWith('@opentelemetry/')), imports.join(', '));
  // Called with a meter and a tracer of the API's no-op providers: nothing breaks.
  const endpoint = new McpEndpoint({ hub: new Hub() });
  const { metrics, trace } = await import('@opentelemetry/api');
  collectOtelMetrics(metrics.getMeter('noop'), endpoint).close();
  traceListens(trace.getTracer('noop')).close();
  endpoint.close();
});

test.run();
