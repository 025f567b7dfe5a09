// Telemetry of both eras (issue 25): a legacy session's GET stream publishes `start` and `stop`
// with era `legacy` and why it stopped; sessions publish `sessionCreated` and `sessionEnded`; none
// of these carries a URI, an id or a principal.
import { strict as assert } from 'node:assert';
import { Registry } from 'prom-client';
import { test } from 'uvu';
import { collectMetrics } from '../adapters/metrics/index.js';
import type { EndpointRequest } from '../lib/context.js';
import { channels, type SessionCreatedEvent, type SessionEndedEvent, type StartEvent, type StopEvent } from '../lib/telemetry.js';
import { eventually, LISTEN_HEADERS, listenBody, SseConnection, startEndpoint, withEndpoint } from './helpers/http.js';
import { call, GetStream, initialize, send, sessionHeaders } from './helpers/legacy.js';

const byHeader = (request: EndpointRequest) => ({ principal: `user:${request.header('x-principal') ?? 'anon'}`, scopes: new Set<string>() });
const who = { 'x-principal': 'secret-principal' };

interface Recorded {
  readonly starts: StartEvent[];
  readonly stops: StopEvent[];
  readonly created: SessionCreatedEvent[];
  readonly ended: SessionEndedEvent[];
}

async function recording(body: (events: Recorded) => Promise<void>): Promise<Recorded> {
  const events: Recorded = { starts: [], stops: [], created: [], ended: [] };
  const subscriptions = [
    [channels.start, (e: unknown) => events.starts.push(e as StartEvent)],
    [channels.stop, (e: unknown) => events.stops.push(e as StopEvent)],
    [channels.sessionCreated, (e: unknown) => events.created.push(e as SessionCreatedEvent)],
    [channels.sessionEnded, (e: unknown) => events.ended.push(e as SessionEndedEvent)],
  ] as const;
  for (const [channel, listener] of subscriptions) channel.subscribe(listener);
  try {
    await body(events);
  } finally {
    for (const [channel, listener] of subscriptions) channel.unsubscribe(listener);
  }
  return events;
}

async function openGet(url: string, sessionId: string): Promise<GetStream> {
  const get = GetStream.open(url, sessionId, { headers: who });
  await get.response;
  return get;
}

test('a GET stream: start (era legacy, its list changes and subscriptions), then stop for each way it ends', async () => {
  const events = await recording(async ({ starts, stops }) => {
    await withEndpoint({ authenticate: byHeader }, async ({ url, endpoint }) => {
      const session = await initialize(url, { headers: who });
      // client_closed
      const first = await openGet(url, session.sessionId);
      await call(url, session.sessionId, 2, 'resources/subscribe', { uri: 'file:///secret-uri' }, who);
      first.destroy();
      await eventually(() => stops.length === 1, 3000, 'the first stop');
      // replaced by a second GET of the session
      const second = await openGet(url, session.sessionId);
      await eventually(() => starts.length === 2, 3000, 'the second start');
      const third = await openGet(url, session.sessionId);
      await second.until((g) => g.ended, 3000, 'the second GET to be replaced');
      await eventually(() => stops.length === 2, 3000, 'the second stop');
      // session_ended: DELETE
      const deleted = await send(url, 'DELETE', sessionHeaders(session.sessionId, who));
      assert.equal(deleted.status, 204);
      await third.until((g) => g.ended, 3000, 'the third GET to end');
      await eventually(() => stops.length === 3, 3000, 'the third stop');
      // shutdown
      const other = await initialize(url, { headers: who });
      await openGet(url, other.sessionId);
      await eventually(() => starts.length === 4, 3000, 'the fourth start');
      endpoint.close();
      await eventually(() => stops.length === 4, 3000, 'the fourth stop');
    });
    assert.deepEqual(
      starts.map((start) => [start.era, start.filters, start.resourceSubscriptions]),
      [
        ['legacy', ['tools_list_changed', 'prompts_list_changed', 'resources_list_changed'], 0],
        ['legacy', ['tools_list_changed', 'prompts_list_changed', 'resources_list_changed', 'resource_subscriptions'], 1],
        ['legacy', ['tools_list_changed', 'prompts_list_changed', 'resources_list_changed', 'resource_subscriptions'], 1],
        ['legacy', ['tools_list_changed', 'prompts_list_changed', 'resources_list_changed'], 0],
      ],
    );
    assert.deepEqual(
      stops.map((stop) => [stop.era, stop.reason]),
      [
        ['legacy', 'client_closed'],
        ['legacy', 'replaced'],
        ['legacy', 'session_ended'],
        ['legacy', 'shutdown'],
      ],
    );
    assert.ok(stops.every((stop) => stop.duration >= 0));
  });
  const text = JSON.stringify(events);
  assert.ok(!/secret|[0-9a-f]{8}-[0-9a-f]{4}-/.test(text), text);
});

test('a GET stream at its lifetime cap stops with max_lifetime', async () => {
  await recording(async ({ stops }) => {
    await withEndpoint({ maxStreamLifetime: 200 }, async ({ url }) => {
      const session = await initialize(url);
      const get = GetStream.open(url, session.sessionId);
      await get.until((g) => g.ended, 3000, 'the lifetime cap');
      await eventually(() => stops.length === 1, 3000, 'the stop');
      assert.deepEqual(stops.map((stop) => [stop.era, stop.reason]), [['legacy', 'max_lifetime']]);
    });
  });
});

test('sessions: created with their revision; ended deleted, displaced and idle', async () => {
  const server = await startEndpoint({ authenticate: byHeader, maxSessionsPerPrincipal: 1, sessionIdleTimeout: 100 });
  try {
    const events = await recording(async ({ created, ended }) => {
      const first = await initialize(server.url, { headers: who, protocolVersion: '2025-06-18' });
      await send(server.url, 'DELETE', sessionHeaders(first.sessionId, who));
      await initialize(server.url, { headers: who });
      await initialize(server.url, { headers: who }); // displaces the previous one (cap 1)
      await new Promise((resolve) => setTimeout(resolve, 150));
      await server.endpoint.pruneSessions();
      assert.deepEqual(created, [{ protocolVersion: '2025-06-18' }, { protocolVersion: '2025-11-25' }, { protocolVersion: '2025-11-25' }]);
      assert.deepEqual(
        ended.map((event) => event.reason),
        ['deleted', 'displaced', 'idle'],
      );
      assert.equal(server.endpoint.stats.sessions, 0);
    });
    assert.ok(!JSON.stringify(events).includes('secret'));
  } finally {
    await server.close();
  }
});

test('listen streams say era modern; legacy GET streams do not move the Prometheus bridge\'s listen counts', async () => {
  await recording(async ({ starts, stops }) => {
    await withEndpoint({}, async ({ url, endpoint }) => {
      const registry = new Registry();
      const bridge = collectMetrics(registry, endpoint);
      try {
        const session = await initialize(url);
        const get = GetStream.open(url, session.sessionId);
        await get.response;
        const listen = await SseConnection.open(url, listenBody(1, { toolsListChanged: true }), LISTEN_HEADERS);
        await listen.until((c) => c.messages.length === 1);
        let text = await registry.metrics();
        assert.match(text, /^mcp_rx_streams_open\{era="modern"\} 1$/m);
        assert.match(text, /^mcp_rx_streams_open\{era="legacy"\} 1$/m);
        get.destroy();
        listen.destroy();
        await eventually(() => stops.length === 2, 3000, 'both stops');
        text = await registry.metrics();
        assert.match(text, /^mcp_rx_stream_closes_total\{reason="client_closed"\} 1$/m, text);
        assert.match(text, /^mcp_rx_streams_open\{era="modern"\} 0$/m);
        assert.deepEqual(starts.map((start) => start.era).sort(), ['legacy', 'modern']);
      } finally {
        bridge.close();
      }
    });
  });
});

test.run();
