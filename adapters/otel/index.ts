// The `mcp-rx-streams/otel` entry: an endpoint's metrics through the OpenTelemetry metrics API (the
// instruments of `mcp-rx-streams/metrics`), and a span per listen admission carrying the request's
// trace context, through @opentelemetry/api (an optional peer dependency).
import type { Attributes, BatchObservableResult, Context, Meter, Span, SpanContext, Tracer } from '@opentelemetry/api';
import { httpStatus, type McpEndpoint } from '../http/endpoint.js';
import type { UpstreamGateway } from '../upstream/gateway.js';
import { UPSTREAM_STATES } from '../upstream/telemetry.js';
import { channels, queueTotals, type ListenTrace, type TraceEvent } from '../../lib/telemetry.js';
import { MODERN_PROTOCOL_VERSION } from '../../lib/protocol.js';
import { endpoint as validEndpoint, implementing, oneOf, options as validOptions, string } from '../../lib/validate.js';
import { requirePeer } from '../peer.js';
import { followMetricEvents, once } from '../metricEvents.js';

export { MissingPeerDependencyError } from '../peer.js';

type OtelApi = typeof import('@opentelemetry/api');

const ENTRY = 'mcp-rx-streams/otel';

/** An instrument name prefix OpenTelemetry accepts (letters first; letters, digits, `_`, `.`, `-`, `/`). */
const PREFIX_RULE = { pattern: /^[A-Za-z][A-Za-z0-9_.\-/]*$/, what: 'an instrument name prefix (a letter, then letters, digits, _ . - /)' };

/** Options of {@link collectOtelMetrics}. */
export interface OtelMetricsOptions {
  /** Prepended to every instrument name; defaults to `mcp_rx.` (a Prometheus exporter then writes the names `mcp-rx-streams/metrics` registers). */
  readonly prefix?: string;
}

/** What {@link collectOtelMetrics} returns. */
export interface OtelMetricsBridge {
  /** The names of the instruments created, prefix included. */
  readonly names: readonly string[];
  /**
   * Stops counting: unsubscribes from the channels and removes the observable callback (the
   * OpenTelemetry API cannot delete instruments: they stay, and report nothing more). Idempotent.
   */
  close(): void;
}

/**
 * Creates an endpoint's instruments on an OpenTelemetry `Meter`: the same as `collectMetrics` of
 * `mcp-rx-streams/metrics` registers on prom-client, under the same names with the prefix
 * `mcp_rx.` (so a Prometheus exporter writes `mcp_rx_streams_open`, `mcp_rx_stream_closes_total`…):
 *
 * - `streams_open{era}` observable gauge: open streams, `era` = `modern` or `legacy`;
 * - `stream_closes{reason}` counter: listen streams ended, by reason;
 * - `notifications_dropped{topic}` counter; `dropped_queue_bytes` observable gauge (bytes a stream
 *   held when it last dropped one);
 * - `queued_bytes`, `queued_frames` observable gauges; `notifications_coalesced` observable counter;
 * - `sessions`, `session_subscriptions`, `slots_in_use`, `principals` observable gauges;
 * - `errors{where}`, `redis_unrelayed_events{topic,reason}` counters;
 * - `redis_connection_up{component,role}` observable gauge.
 *
 * The observable instruments read `endpoint.stats` once per collection (one batch callback); the
 * counters are fed by the diagnostics channels, which are process-wide: use one bridge per process.
 *
 * @example
 * import { metrics } from '@opentelemetry/api';
 * import { collectOtelMetrics } from 'mcp-rx-streams/otel';
 * collectOtelMetrics(metrics.getMeter('mcp-rx-streams'), endpoint);
 * @param meter where the instruments are created (`metrics.getMeter(name)` of an SDK's provider).
 * @param endpoint the endpoint whose `stats` are read at each collection.
 * @param options see {@link OtelMetricsOptions}.
 * @throws MissingPeerDependencyError when `@opentelemetry/api` is not installed (checked first).
 * @throws InvalidOptionError naming it when the meter, the endpoint or an option is not what it takes.
 * @see collectMetrics
 */
export function collectOtelMetrics(meter: Meter, endpoint: McpEndpoint, options?: OtelMetricsOptions): OtelMetricsBridge {
  // Without the peer nothing else matters: say so first.
  requirePeer<OtelApi>('@opentelemetry/api', ENTRY);
  implementing('collectOtelMetrics meter', meter, ['createObservableGauge', 'createCounter'], 'an OpenTelemetry Meter (metrics.getMeter(name))');
  validEndpoint<McpEndpoint>('collectOtelMetrics endpoint', endpoint);
  const given = validOptions('collectOtelMetrics options', options, ['prefix']);
  const prefix = given.prefix === undefined ? 'mcp_rx.' : string('prefix', given.prefix, PREFIX_RULE);
  const names: string[] = [];
  const named = (name: string) => {
    names.push(prefix + name);
    return prefix + name;
  };
  const gauge = (name: string, description: string, unit?: string) => meter.createObservableGauge(named(name), { description, ...(unit === undefined ? {} : { unit }) });
  const counter = (name: string, description: string) => meter.createCounter(named(name), { description });

  const streamsOpen = gauge('streams_open', 'Open streams: era="modern" for subscriptions/listen, era="legacy" for a session\'s GET stream.');
  const sessions = gauge('sessions', 'Legacy sessions held on this node.');
  const sessionSubscriptions = gauge('session_subscriptions', 'Live change-source subscriptions of legacy sessions.');
  const slots = gauge('slots_in_use', 'Stream slots held in the server-wide pool (maxStreams).');
  const principals = gauge('principals', 'Principals with at least one live listen stream.');
  const closes = counter('stream_closes', 'Listen streams ended, by reason.');
  const drops = counter('notifications_dropped', 'Notifications skipped because a slow consumer\'s queue was full.');
  const dropBytes = gauge('dropped_queue_bytes', 'Bytes of frames a stream held when it last had to drop a notification.', 'By');
  const queuedBytes = gauge('queued_bytes', 'Bytes of frames held for slow consumers right now, over every stream of the process.', 'By');
  const queuedFrames = gauge('queued_frames', 'Frames held for slow consumers right now, over every stream of the process.');
  const coalesced = meter.createObservableCounter(named('notifications_coalesced'), { description: 'Notifications discarded for a slow consumer because an identical one was already queued.' });
  const errors = counter('errors', 'Failures of a subscriber or change source that delivery went on without.');
  const unrelayed = counter('redis_unrelayed_events', 'Hub events a Redis bus could not relay to the other nodes.');
  const redisUp = gauge('redis_connection_up', '1 while the Redis connection is ready, 0 after it was lost or closed.');

  let events: ReturnType<typeof followMetricEvents> | undefined;
  let lastDropBytes: number | undefined;
  const connections = new Map<string, { readonly attributes: Attributes; up: number }>();
  const coalescedAtStart = queueTotals().coalesced;
  const observe = (observer: BatchObservableResult) => {
    const stats = endpoint.stats;
    const modern = Math.min(Math.max(events?.modernOpen() ?? 0, 0), stats.streams);
    observer.observe(streamsOpen, modern, { era: 'modern' });
    observer.observe(streamsOpen, stats.streams - modern, { era: 'legacy' });
    observer.observe(sessions, stats.sessions);
    observer.observe(sessionSubscriptions, stats.sessionSubscriptions);
    observer.observe(slots, stats.slots);
    observer.observe(principals, stats.principals);
    const totals = queueTotals();
    observer.observe(queuedBytes, totals.bytes);
    observer.observe(queuedFrames, totals.frames);
    observer.observe(coalesced, totals.coalesced - coalescedAtStart);
    if (lastDropBytes !== undefined) observer.observe(dropBytes, lastDropBytes);
    for (const { attributes, up } of connections.values()) observer.observe(redisUp, up, attributes);
  };
  const observables = [streamsOpen, sessions, sessionSubscriptions, slots, principals, queuedBytes, queuedFrames, coalesced, dropBytes, redisUp];
  meter.addBatchObservableCallback(observe, observables);

  events = followMetricEvents({
    closed: (reason) => closes.add(1, { reason }),
    dropped: (topic, queueBytes) => {
      drops.add(1, { topic });
      lastDropBytes = queueBytes;
    },
    failed: (where) => errors.add(1, { where }),
    unrelayed: (topic, reason) => unrelayed.add(1, { topic, reason }),
    connection: (component, role, up) => connections.set(`${component} ${role}`, { attributes: { component, role }, up: up ? 1 : 0 }),
  });
  return {
    names,
    close: once(() => {
      events?.close();
      meter.removeBatchObservableCallback(observe, observables);
    }),
  };
}

/**
 * Creates a gateway's upstream instruments on an OpenTelemetry `Meter` (the upstreams of
 * `mcp-rx-streams/upstream`), the same as `collectUpstreamMetrics` of `mcp-rx-streams/metrics`
 * registers on prom-client, under the same names with the prefix `mcp_rx.`, each with the attribute
 * `upstream` (its name), read from `gateway.stats` once per collection:
 *
 * - `upstream_state{upstream,state}` observable gauge: 1 for the upstream's state now, 0 for the others;
 * - `upstream_reconnects`, `upstream_frames_in`, `upstream_frames_out` observable counters;
 * - `upstream_uris`, `upstream_streams` observable gauges.
 *
 * @example
 * collectUpstreamOtelMetrics(metrics.getMeter('mcp-rx-streams'), gateway);
 * @param meter where the instruments are created.
 * @param gateway the gateway (`upstreamGateway(...)`) whose `stats` are read at each collection.
 * @param options see {@link OtelMetricsOptions}.
 * @throws MissingPeerDependencyError when `@opentelemetry/api` is not installed (checked first).
 * @throws InvalidOptionError naming it when the meter, the gateway or an option is not what it takes.
 * @see collectOtelMetrics
 */
export function collectUpstreamOtelMetrics(meter: Meter, gateway: UpstreamGateway, options?: OtelMetricsOptions): OtelMetricsBridge {
  requirePeer<OtelApi>('@opentelemetry/api', ENTRY);
  implementing('collectUpstreamOtelMetrics meter', meter, ['createObservableGauge', 'createObservableCounter'], 'an OpenTelemetry Meter (metrics.getMeter(name))');
  implementing('collectUpstreamOtelMetrics gateway', gateway, ['methods', 'start', 'close'], 'an UpstreamGateway (upstreamGateway({ hub, upstreams }) of mcp-rx-streams/upstream)');
  const given = validOptions('collectUpstreamOtelMetrics options', options, ['prefix']);
  const prefix = given.prefix === undefined ? 'mcp_rx.' : string('prefix', given.prefix, PREFIX_RULE);
  const names: string[] = [];
  const named = (name: string) => {
    names.push(prefix + name);
    return prefix + name;
  };
  const state = meter.createObservableGauge(named('upstream_state'), { description: "1 for the upstream's state now, 0 for the other states." });
  const reconnects = meter.createObservableCounter(named('upstream_reconnects'), { description: 'Upstream streams opened again after they failed or ended.' });
  const framesIn = meter.createObservableCounter(named('upstream_frames_in'), { description: 'Messages received from the upstream.' });
  const framesOut = meter.createObservableCounter(named('upstream_frames_out'), { description: 'Notifications from the upstream handed to downstream streams.' });
  const uris = meter.createObservableGauge(named('upstream_uris'), { description: 'Resource URIs of the upstream held now.' });
  const streams = meter.createObservableGauge(named('upstream_streams'), { description: 'Upstream streams open or being opened now.' });
  const observe = (observer: BatchObservableResult) => {
    for (const stats of gateway.stats) {
      const upstream = { upstream: stats.upstream };
      for (const each of UPSTREAM_STATES) observer.observe(state, stats.state === each ? 1 : 0, { ...upstream, state: each });
      observer.observe(reconnects, stats.reconnects, upstream);
      observer.observe(framesIn, stats.framesIn, upstream);
      observer.observe(framesOut, stats.framesOut, upstream);
      observer.observe(uris, stats.uris, upstream);
      observer.observe(streams, stats.streams, upstream);
    }
  };
  const observables = [state, reconnects, framesIn, framesOut, uris, streams];
  meter.addBatchObservableCallback(observe, observables);
  return { names, close: once(() => meter.removeBatchObservableCallback(observe, observables)) };
}

/** Options of {@link traceListens}. */
export interface ListenTracingOptions {
  /**
   * How long the admission span lasts: `'start'` (the default) until the stream starts (or the
   * listen is refused), with the `mcp.stream.start` event, the stream's stop then being a short
   * span of its own in the same trace, linked to it, with the `mcp.stream.stop` event; `'stop'`
   * until the stream stops, with both events on it (one open span per stream meanwhile, which
   * exporters send only when it ends).
   */
  readonly spanUntil?: 'start' | 'stop';
}

/** What {@link traceListens} returns. */
export interface ListenTracing {
  /** Stops tracing (listens admitted before keep their spans to the end). Idempotent. */
  close(): void;
}

/**
 * Traces every `subscriptions/listen` admission of the process (from `channels.trace`): one span
 * per admission (refused ones included), a child of the request's trace context — the
 * `traceparent` (and `tracestate`) of the listen's `params._meta`, else of its HTTP headers, else
 * the context active when the endpoint handles the request (an instrumented HTTP server's span).
 *
 * The span `subscriptions/listen` (kind `SERVER`) has the attributes `mcp.method.name` and
 * `mcp.protocol.version`; a refused listen sets `http.response.status_code`,
 * `rpc.jsonrpc.error_code` and the error status; one whose client left before it opened ends with
`mcp.stream.abandoned`. When the stream opens it gets the event
 * `mcp.stream.start` (`mcp.stream.era`, `mcp.stream.filters`, `mcp.stream.resource_subscriptions`);
 * when it stops, the event `mcp.stream.stop` (`mcp.stream.close_reason`, `mcp.stream.duration_ms`),
 * on the admission span with `spanUntil: 'stop'`, else on a span `subscriptions/listen stop` of the
 * same trace linked to it. Nothing identifies the caller: no URI, id or principal.
 *
 * @example
 * import { trace } from '@opentelemetry/api';
 * import { traceListens } from 'mcp-rx-streams/otel';
 * traceListens(trace.getTracer('mcp-rx-streams'));
 * @param tracer where spans are started (`trace.getTracer(name)` of an SDK's provider).
 * @param options see {@link ListenTracingOptions}.
 * @throws MissingPeerDependencyError when `@opentelemetry/api` is not installed.
 */
export function traceListens(tracer: Tracer, options?: ListenTracingOptions): ListenTracing {
  const api = requirePeer<OtelApi>('@opentelemetry/api', ENTRY);
  implementing('traceListens tracer', tracer, ['startSpan'], 'an OpenTelemetry Tracer (trace.getTracer(name))');
  const given = validOptions('traceListens options', options, ['spanUntil']);
  const until = given.spanUntil === undefined ? 'start' : oneOf('spanUntil', given.spanUntil, ['start', 'stop'] as const);
  // Per traced listen, while it lives: its open span, or (spanUntil 'start') what its stop span needs.
  const open = new WeakMap<ListenTrace, Span>();
  const started = new WeakMap<ListenTrace, { readonly parent: Context; readonly admission: SpanContext }>();
  const parents = new WeakMap<ListenTrace, Context>();
  const onTrace = (message: unknown) => {
    const event = message as TraceEvent;
    const { listen } = event;
    switch (event.phase) {
      case 'admission': {
        const carrier: Record<string, string> = {};
        if (listen.traceparent !== undefined) carrier.traceparent = listen.traceparent;
        if (listen.tracestate !== undefined) carrier.tracestate = listen.tracestate;
        const parent = api.propagation.extract(api.context.active(), carrier);
        const span = tracer.startSpan(
          'subscriptions/listen',
          { kind: api.SpanKind.SERVER, attributes: { 'mcp.method.name': 'subscriptions/listen', 'mcp.protocol.version': MODERN_PROTOCOL_VERSION } },
          parent,
        );
        open.set(listen, span);
        parents.set(listen, parent);
        return;
      }
      case 'abandoned': {
        const span = open.get(listen);
        if (span === undefined) return;
        open.delete(listen);
        span.setAttribute('mcp.stream.abandoned', true);
        span.end();
        return;
      }
      case 'refused': {
        const span = open.get(listen);
        if (span === undefined) return;
        open.delete(listen);
        // Over HTTP the status line the refusal got; a channel has none.
        const status = listen.transport === 'http' ? httpStatus(event.refusal, event.code, false) : undefined;
        span.setAttributes({ 'rpc.jsonrpc.error_code': event.code, ...(status === undefined ? {} : { 'http.response.status_code': status }), ...(event.refusal === undefined ? {} : { 'mcp.refusal': event.refusal }) });
        span.setStatus({ code: api.SpanStatusCode.ERROR, message: `refused: ${status === undefined ? '' : `HTTP ${status}, `}JSON-RPC ${event.code}` });
        span.end();
        return;
      }
      case 'start': {
        const span = open.get(listen);
        if (span === undefined) return;
        const { era, filters, resourceSubscriptions, systemTime } = event.event;
        span.addEvent('mcp.stream.start', { 'mcp.stream.era': era, 'mcp.stream.filters': [...filters], 'mcp.stream.resource_subscriptions': resourceSubscriptions }, systemTime);
        if (until === 'stop') return;
        open.delete(listen);
        started.set(listen, { parent: parents.get(listen)!, admission: span.spanContext() });
        span.end();
        return;
      }
      case 'stop': {
        const { reason, duration } = event.event;
        const attributes = { 'mcp.stream.close_reason': reason, 'mcp.stream.duration_ms': duration };
        const span = open.get(listen);
        if (span !== undefined) {
          open.delete(listen);
          span.addEvent('mcp.stream.stop', attributes);
          span.end();
          return;
        }
        const start = started.get(listen);
        if (start === undefined) return;
        started.delete(listen);
        const stop = tracer.startSpan('subscriptions/listen stop', { kind: api.SpanKind.INTERNAL, links: [{ context: start.admission }], attributes }, start.parent);
        stop.addEvent('mcp.stream.stop', attributes);
        stop.end();
        return;
      }
    }
  };
  channels.trace.subscribe(onTrace);
  return { close: once(() => channels.trace.unsubscribe(onTrace)) };
}
