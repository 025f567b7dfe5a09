// What the endpoint's stream registry costs (issue 25): the heap per idle stream the endpoint holds
// (listen streams; legacy sessions with their GET stream), for this build and, with --baseline, for
// another build (one without the registry), and what `endpoint.streams()` costs at N streams.
//
//   npm run build && node --expose-gc bench/snapshot.mjs [--streams 10000] [--rounds 3] [--baseline CHECKOUT_ROOT | DIST_DIR]
//
// Method: each (build, era) runs in a fresh child process. N streams are opened through
// `McpEndpoint.handle` as an adapter opens them (a listen request, or `initialize` then a GET), each
// with its own principal and a `Broadcast` demand, without sockets: what is measured is what the
// endpoint and the stream hold, not node:http's. Heap per stream: `heapUsed` after two `gc()` before
// and after opening them, divided by N. Snapshot: the median time of 21 calls of `streams()` (and of
// `streams({ uris: true })`, and of `JSON.stringify` of the result, what `GET /streams` sends),
// after 3 warm-up calls. Medians of the rounds; a round runs every cell once, the order rotated.
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { buildsToCompare, childJson, medians, readFlags, rounds } from './inProcess.mjs';

const USAGE = 'usage: node --expose-gc bench/snapshot.mjs [--streams 10000] [--rounds 3] [--baseline CHECKOUT_ROOT | DIST_DIR]';
const { values, fail } = readFlags(
  'bench/snapshot.mjs',
  USAGE,
  {
    streams: { type: 'string', default: '10000' },
    rounds: { type: 'string', default: '3' },
    baseline: { type: 'string' },
    era: { type: 'string' },
  },
  ['streams', 'rounds'],
);
const N = Number(values.streams);
const ROUNDS = Number(values.rounds);
if (typeof gc !== 'function') fail('run it with node --expose-gc');

if (values.child !== undefined) {
  process.stdout.write(JSON.stringify(await measure(values.child, values.era)));
  process.exit(0);
}

const builds = buildsToCompare(values.baseline, 'snapshot', fail);
const cells = builds.flatMap(({ label, build, copy }) => ['modern', 'legacy'].map((era) => ({ label, build, copy, era, runs: [] })));
await rounds(cells, ROUNDS, (cell) => childJson(fileURLToPath(import.meta.url), ['--child', cell.copy, '--era', cell.era, '--streams', String(N)]));
console.log(`N = ${N} idle streams, each of its own principal, opened through McpEndpoint.handle without sockets; ${ROUNDS} rounds (medians), node ${process.version}`);
for (const { label, build } of builds) console.log(`${label}: ${build.text}`);
console.log('');
console.log('| build | era | heap per idle stream | streams() | streams({ uris: true }) | JSON.stringify(streams()) | per stream |');
console.log('|---|---|---:|---:|---:|---:|---:|');
for (const { label, era, runs } of cells) {
  const m = medians(runs);
  const ms = (value) => (value === undefined ? '—' : `${value.toFixed(2)} ms`);
  const per = m.snapshotMs === undefined ? '—' : `${((m.snapshotMs * 1000) / N).toFixed(2)} µs`;
  console.log(`| ${label} | ${era === 'modern' ? 'listen' : 'session + GET'} | ${(m.heapPerStream / 1024).toFixed(2)} KB | ${ms(m.snapshotMs)} | ${ms(m.urisMs)} | ${ms(m.jsonMs)} | ${per} |`);
}

async function measure(dist, era) {
  const lib = await import(pathToFileURL(path.join(dist, 'index.js')).href);
  const { Broadcast } = await import(pathToFileURL(path.join(dist, 'lib', 'broadcast.js')).href);
  const { Hub, McpEndpoint } = lib;
  const scopes = new Set();
  const endpoint = new McpEndpoint({
    hub: new Hub(),
    capabilities: { tools: true, resources: true },
    // Room for the warm-up's 200 too (their sessions stay, idle).
    maxStreams: N + 1000,
    maxSessions: N + 1000,
    authenticate: (request) => ({ principal: request.header('x-principal'), scopes }),
  });
  const request = (principal, headers, body) => ({
    method: body === undefined ? 'GET' : 'POST',
    header: (name) => (name === 'x-principal' ? principal : headers[name]),
    body,
    remoteAddress: '127.0.0.1',
  });
  const listenHeaders = { 'content-type': 'application/json', accept: 'text/event-stream' };
  const uri = 'file:///bench/one.txt';
  const sink = { next: () => undefined, error: () => undefined };
  const open = async (i) => {
    const principal = `user:${i}`;
    if (era === 'modern') {
      const body = JSON.stringify({ jsonrpc: '2.0', id: i, method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true, resourceSubscriptions: [uri] } } });
      const response = await endpoint.handle(request(principal, listenHeaders, body));
      return response.open(new Broadcast()).subscribe(sink);
    }
    const init = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } });
    const initialized = await endpoint.handle(request(principal, listenHeaders, init));
    const sessionId = initialized.headers['Mcp-Session-Id'];
    const response = await endpoint.handle(request(principal, { accept: 'text/event-stream', 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' }, undefined));
    return response.open(new Broadcast()).subscribe(sink);
  };
  // Warm the code paths up on a few streams first.
  const warm = [];
  for (let i = 0; i < 200; i++) warm.push(await open(`warm${i}`));
  for (const subscription of warm) subscription.unsubscribe();

  gc();
  gc();
  const before = process.memoryUsage().heapUsed;
  const held = new Array(N);
  for (let i = 0; i < N; i++) held[i] = await open(i);
  gc();
  gc();
  const heapPerStream = (process.memoryUsage().heapUsed - before) / N;
  if (endpoint.stats.streams !== N) throw new Error(`${endpoint.stats.streams} streams open, expected ${N}`);

  const result = { heapPerStream, snapshotMs: undefined, urisMs: undefined, jsonMs: undefined };
  if (typeof endpoint.streams === 'function') {
    const time = (fn) => {
      for (let i = 0; i < 3; i++) fn();
      const samples = [];
      for (let i = 0; i < 21; i++) {
        const t = performance.now();
        fn();
        samples.push(performance.now() - t);
      }
      return samples.sort((a, b) => a - b)[10];
    };
    // Legacy: the warm-up's sessions are held too (idle, no GET stream).
    if (endpoint.streams().length !== (era === 'modern' ? N : N + 200)) throw new Error(`streams() gave ${endpoint.streams().length} entries`);
    result.snapshotMs = time(() => endpoint.streams());
    result.urisMs = time(() => endpoint.streams({ uris: true }));
    result.jsonMs = time(() => JSON.stringify({ takenAt: Date.now(), streams: endpoint.streams() }));
  }
  for (const subscription of held) subscription.unsubscribe();
  endpoint.close();
  return result;
}
