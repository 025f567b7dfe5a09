// Prometheus metrics: `serve --metrics-port` scraped over loopback while streams of both eras come
// and go, and the `mcp-rx-streams/metrics` bridge (collectMetrics) on a registry of its own.
import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Registry } from 'prom-client';
import { test } from 'uvu';
import { collectMetrics, MissingPeerDependencyError } from '../adapters/metrics/index.js';
import { requirePeer } from '../adapters/peer.js';
import { redisChannels } from '../adapters/redis/telemetry.js';
import { BehaviorSubject } from 'rxjs';
import { listenStream } from '../operators/listenPipeline.js';
import { channels, queueTotals } from '../lib/telemetry.js';
import { listenBody, SseConnection, startEndpoint } from './helpers/http.js';
import { GetStream, initialize } from './helpers/legacy.js';

const CLI = fileURLToPath(new URL('../dist/adapters/cli.js', import.meta.url));

function scrape(url: string): Promise<{ status: number; type: string; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, type: String(res.headers['content-type']), body }));
      })
      .on('error', reject);
  });
}

/** The value of the sample `name{labels}` (exactly as written in the text format), or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

async function until(read: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await read())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

test('serve --metrics-port: /metrics over loopback counts streams by era, slots, principals, sessions and closes by reason', async () => {
  assert.ok(existsSync(CLI), `${CLI} is missing: run npm run build (npm test does)`);
  const root = await mkdtemp(path.join(tmpdir(), 'mcp-rx-metrics-'));
  const child = spawn(process.execPath, [CLI, 'serve', '--port', '0', '--dir', path.join(root, 'data'), '--demo', '--metrics-port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  let listen: SseConnection | undefined;
  let get: GetStream | undefined;
  try {
    await until(async () => /^metrics on \S+$/m.test(out), 10_000, 'the metrics line');
    const url = /^mcp-rx-streams listening on (\S+)$/m.exec(out)![1]!;
    const metrics = /^metrics on (\S+)$/m.exec(out)![1]!;
    assert.match(metrics, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);

    const idle = await scrape(metrics);
    assert.equal(idle.status, 200);
    assert.match(idle.type, /^text\/plain; version=0\.0\.4/);
    assert.equal(sample(idle.body, 'mcp_rx_streams_open{era="modern"}'), 0);
    assert.equal(sample(idle.body, 'mcp_rx_streams_open{era="legacy"}'), 0);
    assert.ok((sample(idle.body, 'process_resident_memory_bytes') ?? 0) > 0, 'prom-client process metrics');

    listen = await SseConnection.open(url, listenBody(4, { toolsListChanged: true }));
    await listen.until((c) => c.text.includes('acknowledged'), 3000, 'the ack');
    const { sessionId } = await initialize(url);
    get = GetStream.open(url, sessionId);
    await get.response;
    await until(async () => sample((await scrape(metrics)).body, 'mcp_rx_streams_open{era="legacy"}') === 1, 3000, 'the legacy stream');
    const busy = (await scrape(metrics)).body;
    assert.equal(sample(busy, 'mcp_rx_streams_open{era="modern"}'), 1, busy);
    assert.equal(sample(busy, 'mcp_rx_slots_in_use'), 2, busy);
    assert.equal(sample(busy, 'mcp_rx_principals'), 1, busy);
    assert.equal(sample(busy, 'mcp_rx_sessions'), 1, busy);

    listen.destroy();
    await until(async () => sample((await scrape(metrics)).body, 'mcp_rx_stream_closes_total{reason="client_closed"}') === 1, 3000, 'the close');
    const after = (await scrape(metrics)).body;
    assert.equal(sample(after, 'mcp_rx_streams_open{era="modern"}'), 0, after);
    assert.equal(sample(after, 'mcp_rx_streams_open{era="legacy"}'), 1, after);

    assert.equal((await scrape(metrics.replace('/metrics', '/other'))).status, 404);
    child.kill('SIGTERM');
    assert.equal(await exited, 0);
  } finally {
    listen?.destroy();
    get?.destroy();
    child.kill('SIGKILL');
    await rm(root, { recursive: true, force: true });
  }
});

test('collectMetrics: drops, errors and unrelayed Redis events from the channels; close() stops counting and unregisters', async () => {
  const server = await startEndpoint();
  const registry = new Registry();
  const bridge = collectMetrics(registry, server.endpoint, { prefix: 'app_' });
  try {
    channels.drop.publish({ queueLength: 1000, queueBytes: 4096, topic: 'tools' });
    channels.drop.publish({ queueLength: 1000, queueBytes: 5000, topic: 'tools' });
    channels.error.publish({ where: 'source', error: new Error('x') });
    redisChannels.unrelayed.publish({ topic: 'resource', reason: 'offline', unrelayed: 1 });
    redisChannels.connection.publish({ component: 'bus', role: 'publisher', status: 'lost' });
    const text = await registry.metrics();
    assert.equal(sample(text, 'app_notifications_dropped_total{topic="tools"}'), 2, text);
    assert.equal(sample(text, 'app_dropped_queue_bytes'), 5000, text);
    assert.equal(sample(text, 'app_errors_total{where="source"}'), 1, text);
    assert.equal(sample(text, 'app_redis_unrelayed_events_total{topic="resource",reason="offline"}'), 1, text);
    assert.equal(sample(text, 'app_redis_connection_up{component="bus",role="publisher"}'), 0, text);
    assert.equal(sample(text, 'app_sessions'), 0, text);
    assert.ok(bridge.names.includes('app_streams_open'));

    bridge.close();
    channels.drop.publish({ queueLength: 1000, queueBytes: 1, topic: 'tools' });
    assert.equal((await registry.metrics()).trim(), '');
    // A second bridge on the same registry registers afresh.
    collectMetrics(registry, server.endpoint, { prefix: 'app_' }).close();
  } finally {
    bridge.close();
    await server.close();
  }
});

test('collectMetrics: queued bytes and frames of every slow consumer now, coalesced notifications since the start', async () => {
  const server = await startEndpoint();
  const registry = new Registry();
  const bridge = collectMetrics(registry, server.endpoint, { prefix: 'q_' });
  const demand$ = new BehaviorSubject(true);
  const uris = ['file:///a', 'file:///b'];
  const subscription = listenStream({ requestId: 1, filter: { resourceSubscriptions: uris }, hub: server.hub, demand$ }).subscribe();
  try {
    const before = queueTotals();
    demand$.next(false);
    for (const uri of uris) server.hub.notifyResourceUpdated(uri);
    server.hub.notifyResourceUpdated('file:///a'); // coalesced
    const held = queueTotals();
    assert.equal(held.frames - before.frames, 2);
    assert.ok(held.bytes - before.bytes > 200, `${held.bytes - before.bytes} bytes held`);
    assert.equal(held.coalesced - before.coalesced, 1);
    const text = await registry.metrics();
    assert.equal(sample(text, 'q_queued_bytes'), held.bytes, text);
    assert.equal(sample(text, 'q_queued_frames'), held.frames, text);
    assert.equal(sample(text, 'q_notifications_coalesced_total'), 1, text);
    demand$.next(true);
    assert.deepEqual({ bytes: queueTotals().bytes, frames: queueTotals().frames }, { bytes: before.bytes, frames: before.frames }, 'the queue drained');
    assert.equal(sample(await registry.metrics(), 'q_queued_bytes'), before.bytes);
  } finally {
    subscription.unsubscribe();
    bridge.close();
    await server.close();
  }
});

test('collectMetrics refuses a prefix Prometheus cannot name a metric with', async () => {
  const server = await startEndpoint();
  try {
    assert.throws(() => collectMetrics(new Registry(), server.endpoint, { prefix: 'my-app.' }), /^InvalidOptionError: prefix must be a metric name prefix Prometheus accepts/);
  } finally {
    await server.close();
  }
});

test('a missing optional peer dependency is reported by name with the command that installs it', () => {
  assert.throws(
    () => requirePeer('mcp-rx-streams-no-such-package', 'mcp-rx-streams/metrics'),
    (error: unknown) =>
      error instanceof MissingPeerDependencyError &&
      error.code === 'ERR_MCP_RX_MISSING_PEER_DEPENDENCY' &&
      error.message ===
        'mcp-rx-streams/metrics needs the mcp-rx-streams-no-such-package package, an optional peer dependency that is not installed: run npm install mcp-rx-streams-no-such-package',
  );
});

test.run();
