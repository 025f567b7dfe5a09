// Side-by-side benchmarks of MCP `subscriptions/listen` servers (issue 6): mcp-rx-streams against a
// hand-written node:http baseline, the official TypeScript SDK v2 and better-sse; and of the legacy
// GET-SSE path (2025-11-25 sessions, `resources/subscribe`) against a hand-written legacy baseline
// and the official SDK 1.x. bench/README.md documents every workload, mode and flag.
//
// Method. Every run of a workload forks a fresh server process (bench/server.mjs <peer>, with
// --expose-gc) and a separate load generator (bench/loadgen.mjs: one process, or several on their
// own loopback source addresses when N exceeds what one process may hold, bench/harness.mjs),
// talking over loopback; this process only orchestrates them over IPC, prints the markdown table
// and writes it with the results (JSON) and the SVG charts (bench/charts.mjs) to the output
// directory. The load generator opens raw TCP streams (the official client's request) and only
// counts `data:` occurrences, so its cost per frame is the same for every peer. Publishing runs
// inside the server process, triggered over IPC, with the same code for every peer. Times come
// from CLOCK_MONOTONIC (process.hrtime), shared by all processes on the machine. Every figure is
// the median over the repetitions (fresh processes for each repetition), and the ratio is to the
// baseline's median in the same run.
//   1. fan-out throughput: N streams on one URI; K notifications published per publish pattern
//      (10 per event-loop turn, "batched", and 1 per turn, "single"), pausing while any socket has
//      more than its high-water mark buffered; delivered frames/s = N·K / (first publish → last
//      stream's last frame); server CPU (user + system) per delivered frame; lost = N·K − counted.
//   2. fan-out latency: one notification per round, time until all N streams have it; p50/p99 of
//      50 rounds (rounds 2 ms apart).
//   3. idle memory: heap and RSS growth of the server per open idle stream at N (after 2 GCs).
//   4. slow consumer: 100 healthy streams and 1 that stops reading (socket paused right after the
//      ack), K notifications at a steady rate over ~T s, every 100th a tools/list_changed marker
//      whose latency to all healthy streams is sampled; the same run without the stalled stream
//      gives the reference latency. Server heap+external / RSS growth is measured while stalled,
//      and sampled over time (the chart); then the stalled stream reads again and what it gets is
//      counted.
//   5. encode: bench/encode.mjs (mitata, in process).
//   6. churn: open and reset (RST) C streams in batches of 1000; then registry, slots and heap
//      after GC against the same figures taken after a 500-stream warm-up.
//   7. storm: K tools/list_changed published in one event-loop turn to N streams (listen) and N
//      sessions (legacy): frames the clients received, bytes the server wrote, time from the turn
//      until every stream had its last frame; ours against each peer.
//   legacy (2025-11-25): workloads 1–3 again over legacy sessions, each opened as the SDK 1.x
//      client does (POST initialize, POST notifications/initialized, GET /mcp, POST
//      resources/subscribe), against a hand-written legacy baseline, ours and the SDK 1.x; ratios
//      to the legacy baseline. Idle memory is per session + GET stream at every N run.
//
//   npm run bench                  full run (builds first)
//   npm run bench -- --quick       small K and N, about a minute (smoke check)
//   node --expose-gc bench/run.mjs --only throughput,latency --peers baseline,ours --pattern single
//   node --expose-gc bench/run.mjs --quick --only legacy,storm --peers baseline,ours,sdk-v1
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeBuild, OWN_DIST, resolveBuild, snapshotBuild } from './build.mjs';
import { child, loadgenPool } from './harness.mjs';
import { modeConfig } from './modes.mjs';

const started = performance.now();
const here = (file) => fileURLToPath(new URL(file, import.meta.url));
const argv = process.argv.slice(2);
const KNOWN_FLAGS = new Set(['quick', 'no-charts', 'help']);
const KNOWN_OPTIONS = new Set(['only', 'peers', 'pattern', 'n', 'sessions', 'loadgens', 'uris', 'latency-rounds', 'ours-build', 'out']);
for (let i = 0; i < argv.length; i++) {
  const name = argv[i].replace(/^--/, '');
  if (!argv[i].startsWith('--') || !(KNOWN_FLAGS.has(name) || KNOWN_OPTIONS.has(name))) {
    console.error(`bench/run.mjs: unknown argument ${argv[i]} (see bench/README.md, "Flags")`);
    process.exit(2);
  }
  if (KNOWN_OPTIONS.has(name)) {
    if (argv[i + 1] === undefined || argv[i + 1].startsWith('--')) {
      console.error(`bench/run.mjs: --${name} needs a value`);
      process.exit(2);
    }
    i++;
  }
}
const flag = (name) => argv.includes(`--${name}`);
const option = (name) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : undefined;
};
const list = (name) => option(name)?.split(',').map((s) => s.trim()).filter(Boolean);
function fail(message) {
  console.error(`bench/run.mjs: ${message}`);
  process.exit(2);
}
if (flag('help')) {
  console.error('usage: node --expose-gc bench/run.mjs [--quick] [--only w,…] [--peers p,…] [--pattern batched,single] [--n N,…] [--sessions S] [--loadgens L] [--uris U] [--latency-rounds R] [--ours-build DIR] [--out DIR] [--no-charts]\nsee bench/README.md');
  process.exit(0);
}

// ---------- file descriptors: every stream is one in the server and one in the load generator ----------

const sh = (script) => spawnSync('sh', ['-c', script], { encoding: 'utf8' }).stdout.trim();
const [softText, hardText] = sh('ulimit -Sn; ulimit -Hn').split('\n');
// A soft limit below the hard one is raised for this process and its children by running again
// under `ulimit -n <hard>` (node cannot call setrlimit itself).
if (softText !== hardText && process.env.BENCH_NOFILE_RAISED === undefined) {
  const target = hardText === 'unlimited' ? '1048576' : hardText;
  const again = spawnSync('sh', ['-c', `ulimit -n ${target} 2>/dev/null; exec "$@"`, 'sh', process.execPath, ...process.execArgv, fileURLToPath(import.meta.url), ...argv], {
    stdio: 'inherit',
    env: { ...process.env, BENCH_NOFILE_RAISED: '1' },
  });
  process.exit(again.status ?? 1);
}
const FD_LIMIT = softText === 'unlimited' ? Infinity : Number(softText);
// Sockets one load-generator process holds at most: room for its keep-alive POST sockets (256),
// stdio and IPC under the descriptor limit, and under the ~28 000 ephemeral ports of one source
// address. Beyond it the streams are spread over more processes, one loopback address each.
const PER_LOADGEN = Math.min(16_000, FD_LIMIT - 1_000);

// ---------- selection ----------

const QUICK = flag('quick');
const PEERS = [
  { id: 'baseline', label: 'baseline (node:http res.write)' },
  { id: 'ceiling', label: 'ceiling (node:http, socket.write per frame)' },
  { id: 'ours', label: 'mcp-rx-streams' },
  { id: 'sdk-v2', label: '@modelcontextprotocol/server 2.x' },
  { id: 'better-sse', label: 'better-sse Channel' },
];
// The legacy era (2025-11-25 sessions, GET SSE, `resources/subscribe`) has its own peers: a
// hand-written legacy baseline, ours (the same McpEndpoint, which serves both eras) and the SDK 1.x.
// `--peers baseline` selects both baselines, `--peers ceiling` both ceilings (issue 22: the
// baselines with each frame one chunk string written on the socket, peers/ceiling.mjs).
const LEGACY_PEERS = [
  { id: 'baseline', server: 'legacy-baseline', label: 'legacy baseline (node:http res.write)' },
  { id: 'ceiling', server: 'legacy-ceiling', label: 'legacy ceiling (node:http, socket.write per frame)' },
  { id: 'ours', server: 'ours', label: 'mcp-rx-streams' },
  { id: 'sdk-v1', server: 'sdk-v1', label: '@modelcontextprotocol/sdk 1.x' },
];
const ALL_WORKLOADS = ['throughput', 'latency', 'memory', 'slow', 'encode', 'churn', 'legacy', 'storm'];
const PATTERNS = [
  { id: 'batched', batch: 10, label: '10/turn' },
  { id: 'single', batch: 1, label: '1/turn' },
];

const peersWanted = list('peers');
for (const id of peersWanted ?? []) if (![...PEERS, ...LEGACY_PEERS].some((p) => p.id === id)) fail(`--peers: unknown peer ${id} (${[...new Set([...PEERS, ...LEGACY_PEERS].map((p) => p.id))].join(', ')})`);
const pick = (peers) => peers.filter((p) => peersWanted === undefined || peersWanted.includes(p.id));
const MODERN = pick(PEERS);
const LEGACY = pick(LEGACY_PEERS);
const WORKLOADS = list('only') ?? ALL_WORKLOADS;
for (const w of WORKLOADS) if (!ALL_WORKLOADS.includes(w)) fail(`--only: unknown workload ${w} (${ALL_WORKLOADS.join(', ')})`);
const patternIds = list('pattern') ?? PATTERNS.map((p) => p.id);
for (const id of patternIds) if (!PATTERNS.some((p) => p.id === id)) fail(`--pattern: unknown pattern ${id} (batched, single)`);
const PATTERN = PATTERNS.filter((p) => patternIds.includes(p.id));
const nWanted = list('n')?.map(Number);
for (const n of nWanted ?? []) if (!Number.isInteger(n) || n <= 0) fail(`--n: not a positive integer: ${n}`);
const sessionsOption = option('sessions') === undefined ? undefined : Number(option('sessions'));
if (sessionsOption !== undefined && !(Number.isInteger(sessionsOption) && sessionsOption > 0)) fail('--sessions: a positive integer');
// URIs every stream / session subscribes to; the throughput passes and the slow consumer rotate
// their publishes over them, so that the 10 of a batched turn are distinct (the library collapses
// identical pending notifications, issue 15; --uris 1 shows that collapse instead).
const URI_COUNT = option('uris') === undefined ? 10 : Number(option('uris'));
if (!(Number.isInteger(URI_COUNT) && URI_COUNT > 0 && URI_COUNT <= 100)) fail('--uris: an integer from 1 to 100');
const loadgensOption = option('loadgens') === undefined ? undefined : Number(option('loadgens'));
if (loadgensOption !== undefined && !(Number.isInteger(loadgensOption) && loadgensOption > 0 && loadgensOption < 250)) fail('--loadgens: an integer from 1 to 249');
const latencyRounds = option('latency-rounds') === undefined ? undefined : Number(option('latency-rounds'));
if (latencyRounds !== undefined && !(Number.isInteger(latencyRounds) && latencyRounds >= 0)) fail('--latency-rounds: an integer from 0 (no latency rounds)');

const config = modeConfig(QUICK);
if (sessionsOption !== undefined) config.sessions = config.slowReps = sessionsOption;
if (latencyRounds !== undefined) for (const shape of [...config.fanout, ...config.legacy]) if (shape.rounds > 0) shape.rounds = latencyRounds;
if (nWanted !== undefined) {
  const modeNs = `listen ${config.fanout.map((s) => s.n).join(', ')}; legacy ${config.legacy.map((s) => s.n).join(', ')}`;
  config.fanout = config.fanout.filter((s) => nWanted.includes(s.n));
  config.legacy = config.legacy.filter((s) => nWanted.includes(s.n));
  const fanoutAsked = ['throughput', 'latency', 'memory', 'legacy'].some((w) => WORKLOADS.includes(w));
  if (fanoutAsked && config.fanout.length === 0 && config.legacy.length === 0) {
    fail(`--n: none of ${nWanted.join(', ')} is an N of the ${QUICK ? 'quick' : 'full'} mode (${modeNs})`);
  }
}
const SERVER_ARGS = (process.env.BENCH_SERVER_ARGS ?? '').split(' ').filter(Boolean);

// The whole run uses one build: dist/ (or --ours-build DIR) is copied once, and every server process
// (peers/ours.mjs) and encode.mjs import the copy through BENCH_DIST, so a rebuild during a long run
// (the tree is shared) cannot mix two builds in one table (bench/build.mjs). A BENCH_DIST already
// set (bench/compare-builds.mjs sets it to its own copy) is used as it is.
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(130));
let BUILD;
if (option('ours-build') !== undefined && process.env.BENCH_DIST !== undefined) fail('--ours-build and BENCH_DIST both name a build: give one');
if (process.env.BENCH_DIST === undefined) {
  let dist;
  try {
    dist = resolveBuild(option('ours-build') ?? OWN_DIST);
  } catch (error) {
    fail(option('ours-build') === undefined ? `no build in dist/ (run npm run build first): ${error.message}` : `--ours-build: ${error.message}`);
  }
  BUILD = describeBuild(dist);
  process.env.BENCH_DIST = snapshotBuild(dist, 'dist');
}
const loadgensFor = (n) => loadgensOption ?? Math.max(1, Math.ceil(n / PER_LOADGEN));

const partial = ['only', 'peers', 'pattern', 'n', 'sessions', 'loadgens', 'uris', 'latency-rounds', 'ours-build'].some((o) => option(o) !== undefined) || SERVER_ARGS.length > 0;
const OUT = path.resolve(option('out') ?? here(`results/${QUICK ? 'quick' : partial ? 'partial' : 'full'}`));

// ---------- child processes ----------

async function session(peer, n, body) {
  // `peer` names the server module (bench/peers/<peer>.mjs); `n` sizes the load generator.
  const procs = loadgensFor(n);
  // The server holds N streams, every load generator's keep-alive POST sockets and a few more.
  if (n + 256 * procs + 100 > FD_LIMIT) log(`warning: N=${n} needs about ${n + 256 * procs + 100} descriptors in the server process, ulimit -n is ${FD_LIMIT}`);
  const server = child('server.mjs', [peer], SERVER_ARGS);
  const loadgen = loadgenPool(procs);
  try {
    const [{ port }] = await Promise.all([server.ready, loadgen.ready]);
    return await body({ server: server.call, loadgen: loadgen.call, port });
  } finally {
    await Promise.all([loadgen.close(), server.close()]);
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function openStreams(loadgen, port, n, legacy = false, uris = URI_COUNT) {
  const opened = await loadgen('open', { port, n, legacy, uris });
  if (opened.opened !== n) throw new Error(`opened ${opened.opened}/${n} streams: ${opened.errors.join('; ')}`);
  return opened;
}

/**
 * Arms the load generator for `target` frames per stream, runs `publish`, waits for both. The
 * load generator gives up after `idleMs` without any frame: long enough for a slow peer's first
 * frame on a loaded box (the SDK 1.x at N = 10 000 needed more than 3 s), since a pass that gives up
 * early also leaves its late frames to be counted in the next one.
 */
const IDLE_MS = 20_000;
async function deliver(loadgen, target, publish, idleMs = IDLE_MS, firstIdleMs = idleMs) {
  const done = loadgen('expect', { target, idleMs, firstIdleMs });
  await done.armed;
  const published = await publish();
  const seen = await done;
  return { published, seen };
}

// ---------- workloads ----------

/**
 * One fan-out session: open N streams (idle memory), a warm-up, then `passes` passes per publish
 * pattern (the order rotated by `rep`, so that neither pattern always runs first), then the latency
 * rounds.
 */
async function fanout(peer, { n, k, rounds }, wantThroughput, wantLatency, legacy, rep) {
  return session(peer, n, async ({ server, loadgen, port }) => {
    // Idle memory is per stream / session with ONE subscription (the definition issue 15 measures
    // against); with --uris > 1 the throughput passes need more: a legacy session then subscribes
    // to the others after the measurement, listen streams are reset and opened again with all.
    const before = await server('mem');
    const opened = await openStreams(loadgen, port, n, legacy, 1);
    const after = await server('mem');
    if (wantThroughput && URI_COUNT > 1) {
      if (legacy) {
        const { errors } = await loadgen('subscribeMore', { port, uris: URI_COUNT });
        if (errors.length > 0) throw new Error(`subscribing to ${URI_COUNT} URIs: ${errors.join('; ')}`);
      } else {
        await loadgen('destroy');
        for (let i = 0; i < 100; i++) {
          const r = await server('registry');
          if (r.streams === 0 && r.sockets === 0) break;
          await sleep(100);
        }
        await openStreams(loadgen, port, n, false, URI_COUNT);
      }
    }
    const result = {
      n,
      k,
      openMs: opened.ms,
      loadgens: opened.procs,
      heapPerStream: (after.heapUsed - before.heapUsed) / n,
      rssPerStream: (after.rss - before.rss) / n,
      passes: [],
    };
    const order = PATTERN.map((_, i) => PATTERN[(i + rep) % PATTERN.length]);
    if (wantThroughput && order.length > 0) {
      // Warm-up (not measured): JIT, socket buffers.
      const warm = Math.max(1, Math.round(k / 10));
      await loadgen('reset');
      await deliver(loadgen, warm, () => server('publishPaced', { k: warm, batch: order[0].batch, uris: URI_COUNT }));
      for (const pattern of order) {
        for (let pass = 0; pass < config.passes; pass++) {
          await sleep(100);
          await loadgen('reset');
          const reg0 = await server('registry');
          const [cpu0, gen0] = await Promise.all([server('cpu'), loadgen('cpu')]);
          const { published, seen } = await deliver(loadgen, k, () => server('publishPaced', { k, batch: pattern.batch, uris: URI_COUNT }));
          const [cpu1, gen1] = await Promise.all([server('cpu'), loadgen('cpu')]);
          const reg1 = await server('registry');
          const elapsed = (seen.complete ? seen.t : published.t1) - published.t0;
          const wallUs = (cpu1.t - cpu0.t) / 1000;
          result.passes.push({
            pattern: pattern.id,
            fps: seen.received / (elapsed / 1e9),
            cpuPerFrame: seen.received > 0 ? (cpu1.us - cpu0.us) / seen.received : NaN,
            // Share of one core each process was busy over the pass: a load generator near 100 %
            // while the server is well below it means the figure is the load generator's.
            serverBusy: (cpu1.us - cpu0.us) / wallUs,
            loadgenBusy: (gen1.us - gen0.us) / wallUs,
            complete: seen.complete,
            lost: seen.expected - seen.received,
            // What our telemetry says became of the frames not counted: dropped (channels.drop)
            // or coalesced into a later identical one (queueTotals); undefined for other peers.
            dropped: reg1.drops - reg0.drops,
            coalesced: reg1.coalesced === undefined ? undefined : reg1.coalesced - reg0.coalesced,
            gateWaits: published.waits,
          });
        }
      }
    }
    result.drops = (await server('registry')).drops;
    if (wantLatency && rounds > 0) {
      await sleep(100);
      await loadgen('reset');
      const samples = [];
      for (let r = 1; r <= rounds; r++) {
        const { published: p, seen: s } = await deliver(loadgen, r, () => server('publishOne'));
        if (s.complete) samples.push((s.t - p.t) / 1e6);
        await sleep(2);
      }
      result.latency = { p50: quantile(samples, 0.5), p99: quantile(samples, 0.99), rounds: samples.length };
    }
    return result;
  });
}

/** At most `max` points of a series, evenly picked (the first and the last kept). */
function thin(series, max) {
  if (series.length <= max) return series;
  const step = (series.length - 1) / (max - 1);
  return Array.from({ length: max }, (_, i) => series[Math.round(i * step)]);
}

async function slowConsumer(peer, stall) {
  const { healthy, k, ms } = config.slow;
  return session(peer, healthy + 1, async ({ server, loadgen, port }) => {
    await openStreams(loadgen, port, healthy + (stall ? 1 : 0));
    if (stall) await loadgen('stall', { index: 0 });
    await sleep(50);
    const before = await server('mem');
    await loadgen('watchMarkers');
    await server('sampleStart', { everyMs: 50 });
    const published = await server('publishRate', { k, ms, markerEvery: 100, uris: URI_COUNT });
    // Let the healthy streams catch up (the last notification is a marker; counting markers, not
    // frames, since a server may collapse identical notifications), then sample.
    for (let i = 0; i < 100; i++) {
      const c = await loadgen('counts');
      if (c.healthyMarkersMin >= published.markers.length) break;
      await sleep(100);
    }
    const { times } = await loadgen('markers');
    const lat = [];
    published.markers.forEach((t, i) => {
      if (times[i + 1] !== undefined) lat.push((times[i + 1] - t) / 1e6);
    });
    const during = await server('mem');
    const registry = await server('registry');
    const result = {
      publishSeconds: (published.t1 - published.t0) / 1e9,
      heapGrowth: during.heapUsed + during.external - (before.heapUsed + before.external),
      rssGrowth: during.rss - before.rss,
      p50: quantile(lat, 0.5),
      p99: quantile(lat, 0.99),
      samples: lat.length,
      markers: published.markers.length,
      drops: registry.drops,
    };
    let resumedAt;
    if (stall) {
      resumedAt = (await server('cpu')).t;
      await loadgen('resume');
      let last = -1;
      for (let i = 0; i < 200; i++) {
        await sleep(250);
        const c = await loadgen('counts');
        if (c.stalled === last) break;
        last = c.stalled;
      }
      result.stalledReceived = last - 1; // minus the ack
    }
    // Memory over time, from the publish's start (s) as growth over the first sample (MB).
    const series = await server('sampleStop');
    const t0 = published.t0;
    const first = series[0] ?? { heap: 0, rss: 0 };
    result.series = thin(series, 400).map((p) => ({
      s: round((p.t - t0) / 1e9, 3),
      heapMB: round((p.heap - first.heap) / 1048576, 3),
      rssMB: round((p.rss - first.rss) / 1048576, 3),
    }));
    result.events = { publishedS: round((published.t1 - t0) / 1e9, 3), ...(resumedAt !== undefined && { resumedS: round((resumedAt - t0) / 1e9, 3) }) };
    return result;
  });
}

async function churn(peer) {
  const total = config.churn;
  const batch = 1000;
  return session(peer, batch, async ({ server, loadgen, port }) => {
    const settle = async () => {
      for (let i = 0; i < 50; i++) {
        const r = await server('registry');
        if (r.streams === 0 && r.sockets === 0) return r;
        await sleep(100);
      }
      return server('registry');
    };
    await openStreams(loadgen, port, 500);
    await loadgen('destroy');
    const base = await settle();
    const before = await server('mem');
    const t0 = performance.now();
    for (let done = 0; done < total; done += batch) {
      await openStreams(loadgen, port, Math.min(batch, total - done));
      await loadgen('destroy');
    }
    const seconds = (performance.now() - t0) / 1000;
    const end = await settle();
    const after = await server('mem');
    return { total, seconds, base, end, heapDelta: after.heapUsed - before.heapUsed, rssDelta: after.rss - before.rss };
  });
}

/**
 * Storm: K tools/list_changed in one turn to N streams or sessions. The load generator waits until
 * every stream has K frames or, for a server that collapses them, until no frame came for
 * STORM_IDLE_MS after the first (60 s before it); the time is to the last frame any stream got,
 * so the idle wait is not in it.
 */
const STORM_IDLE_MS = 3_000;
async function storm(peer, legacy) {
  const { n, k } = config.storm;
  return session(peer, n, async ({ server, loadgen, port }) => {
    await openStreams(loadgen, port, n, legacy);
    await sleep(200);
    await loadgen('reset');
    const registry0 = await server('registry');
    const bytes0 = await server('bytes');
    const cpu0 = await server('cpu');
    const { published, seen } = await deliver(loadgen, k, () => server('storm', { k }), STORM_IDLE_MS, 60_000);
    const cpu1 = await server('cpu');
    const bytes1 = await server('bytes');
    const registry1 = await server('registry');
    return {
      n,
      k,
      frames: seen.received,
      minPerStream: seen.min,
      maxPerStream: seen.max,
      bytesWritten: bytes1 - bytes0,
      bytesReceived: seen.bytes,
      ms: seen.received > 0 ? (seen.tLast - published.t0) / 1e6 : NaN,
      turnMs: (published.t1 - published.t0) / 1e6,
      cpuMs: (cpu1.us - cpu0.us) / 1000,
      everyStreamGotK: seen.complete,
      dropped: registry1.drops - registry0.drops,
      coalesced: registry1.coalesced === undefined ? undefined : registry1.coalesced - registry0.coalesced,
    };
  });
}

function encode() {
  const out = spawnSync(process.execPath, ['--expose-gc', here('encode.mjs'), '--json'], { encoding: 'utf8' });
  if (out.status !== 0) throw new Error(`encode.mjs failed: ${out.stderr}`);
  return JSON.parse(out.stdout.trim().split('\n').pop());
}

// ---------- statistics and formatting ----------

function quantile(values, q) {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}
const median = (values) => quantile(values.filter((v) => Number.isFinite(v)), 0.5);
const round = (v, digits) => (Number.isFinite(v) ? Number(v.toFixed(digits)) : null);

const fmt = {
  int: (v) => (Number.isFinite(v) ? Math.round(v).toLocaleString('en-US') : '—'),
  ms: (v) => (Number.isFinite(v) ? (v < 10 ? v.toFixed(2) : v.toFixed(1)) : '—'),
  us: (v) => (Number.isFinite(v) ? (v < 10 ? v.toFixed(2) : v.toFixed(1)) : '—'),
  pct: (v) => (Number.isFinite(v) ? `${Math.round(v * 100)} %` : '—'),
  kb: (v) => (Number.isFinite(v) ? (v / 1024).toFixed(2) : '—'),
  mb: (v) => (Number.isFinite(v) ? (v / 1048576).toFixed(2) : '—'),
  ratio: (v, base) => {
    if (!(Number.isFinite(v) && Number.isFinite(base) && base !== 0)) return '—';
    const r = v / base;
    return `${r >= 0.1 || r === 0 ? r.toFixed(2) : r.toPrecision(2)}x`;
  },
};

function table(headers, rows) {
  const lines = [`| ${headers.join(' | ')} |`, `|${headers.map((h, i) => (i === 0 ? ' --- ' : ' ---: ')).join('|')}|`];
  for (const row of rows) lines.push(`| ${row.join(' | ')} |`);
  return lines.join('\n');
}

function versionOf(pkg) {
  try {
    return JSON.parse(readFileSync(here(`../node_modules/${pkg}/package.json`), 'utf8')).version;
  } catch {
    return 'missing';
  }
}

const want = (w) => WORKLOADS.includes(w);

function header() {
  const ours = JSON.parse(readFileSync(here('../package.json'), 'utf8')).version;
  const spread = [...new Set([...config.fanout, ...config.legacy].map((s) => s.n))]
    .map((n) => `${loadgensFor(n)} at N=${fmt.int(n)}`)
    .join(', ');
  return [
    `# mcp-rx-streams benchmarks${QUICK ? ' (--quick)' : ''}`,
    '',
    `- node ${process.version} · ${os.cpus()[0]?.model ?? 'unknown cpu'} × ${os.cpus().length} cores · ${os.platform()} ${os.arch()} · ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB · ulimit -n ${softText} · load average at start ${os.loadavg().map((v) => v.toFixed(2)).join(' ')}`,
    `- mcp-rx-streams ${ours} (the build below) · @modelcontextprotocol/server ${versionOf('@modelcontextprotocol/server')} (+ @hono/node-server ${versionOf('@hono/node-server')}) · @modelcontextprotocol/sdk ${versionOf('@modelcontextprotocol/sdk')} · better-sse ${versionOf('better-sse')} · rxjs ${versionOf('rxjs')} · mitata ${versionOf('mitata')}`,
    `- medians over ${config.sessions} session(s) per shape (fresh server and load-generator processes each) × ${config.passes} throughput pass(es) per publish pattern per session; publish patterns: ${PATTERN.map((p) => `${p.id} = ${p.label}`).join(', ') || 'none'}; ratios to the baseline's median (legacy rows: to the legacy baseline's), and ÷ ceiling to the ceiling's when it ran (issue 22; it bounds the 1/turn rows only); server and load generator share the machine's 2 cores`,
    `- load-generator processes: ${spread || '—'} (at most ${fmt.int(PER_LOADGEN)} sockets each, one loopback source address each); every stream / session subscribes to ${URI_COUNT} URI${URI_COUNT === 1 ? '' : 's'} and the throughput and slow-consumer publishes rotate over them`,
    `- ours: ${BUILD === undefined ? 'the build BENCH_DIST names' : BUILD.text}, copied at the start of the run (${process.env.BENCH_DIST}): one build throughout`,
  ].join('\n');
}

const log = (...a) => console.error(`# [${((performance.now() - started) / 1000).toFixed(1).padStart(6)} s]`, ...a);

// ---------- main ----------

const headerText = header();
console.log(headerText);
const results = {};

const fanoutWanted = want('throughput') || want('latency') || want('memory');
if (fanoutWanted) {
  for (const shape of config.fanout) {
    const wantLatency = want('latency') && shape.rounds > 0;
    if (!want('throughput') && !wantLatency && !want('memory')) continue;
    for (const peer of MODERN) {
      const runs = [];
      for (let rep = 0; rep < config.sessions; rep++) {
        try {
          const r = await fanout(peer.id, shape, want('throughput'), wantLatency, false, rep);
          runs.push(r);
          log(`${peer.id} N=${shape.n} K=${shape.k}: ${passSummary(r)}${r.latency ? `, p50 ${fmt.ms(r.latency.p50)} ms p99 ${fmt.ms(r.latency.p99)} ms` : ''}, heap/stream ${fmt.kb(r.heapPerStream)} KB, open ${fmt.int(r.openMs)} ms`);
        } catch (error) {
          log(`${peer.id} N=${shape.n}: ${error.message}`);
          runs.push({ error: error.message });
        }
      }
      (results.fanout ??= {})[`${peer.id}:${shape.n}`] = runs;
    }
  }
}

function passSummary(r) {
  return PATTERN.map((p) => {
    const passes = r.passes.filter((x) => x.pattern === p.id);
    if (passes.length === 0) return undefined;
    return `${p.label} ${fmt.int(median(passes.map((x) => x.fps)))} frames/s ${fmt.us(median(passes.map((x) => x.cpuPerFrame)))} µs CPU/frame (busy ${fmt.pct(median(passes.map((x) => x.serverBusy)))} / ${fmt.pct(median(passes.map((x) => x.loadgenBusy)))}) lost ${Math.max(...passes.map((x) => x.lost))}`;
  })
    .filter(Boolean)
    .join('; ');
}

if (want('slow')) {
  for (const peer of MODERN) {
    const runs = { healthy: [], stalled: [] };
    for (let rep = 0; rep < config.slowReps; rep++) {
      for (const stall of config.slowReference ? [false, true] : [true]) {
        try {
          const r = await slowConsumer(peer.id, stall);
          runs[stall ? 'stalled' : 'healthy'].push(r);
          log(`${peer.id} slow consumer ${stall ? 'stalled' : 'none'}: p50 ${fmt.ms(r.p50)} p99 ${fmt.ms(r.p99)} ms (${r.samples}/${r.markers}), heap+ext +${fmt.mb(r.heapGrowth)} MB, rss +${fmt.mb(r.rssGrowth)} MB, published in ${r.publishSeconds.toFixed(1)} s${stall ? `, stalled got ${r.stalledReceived}, drops ${r.drops}` : ''}`);
        } catch (error) {
          log(`${peer.id} slow consumer: ${error.message}`);
        }
      }
    }
    (results.slow ??= {})[peer.id] = runs;
  }
}

if (want('encode')) {
  results.encode = encode();
  log(`encode: once ${results.encode.once.p50.toFixed(0)} ns/frame, JSON.stringify ${results.encode.naive.p50.toFixed(0)} ns/frame`);
}

if (want('legacy')) {
  for (const shape of config.legacy) {
    for (const peer of LEGACY) {
      const runs = [];
      for (let rep = 0; rep < config.sessions; rep++) {
        try {
          const r = await fanout(peer.server, shape, true, shape.rounds > 0, true, rep);
          runs.push(r);
          log(`legacy ${peer.id} N=${shape.n} K=${shape.k}: ${passSummary(r)}${r.latency ? `, p50 ${fmt.ms(r.latency.p50)} ms p99 ${fmt.ms(r.latency.p99)} ms` : ''}, heap/session ${fmt.kb(r.heapPerStream)} KB, open ${fmt.int(r.openMs)} ms`);
        } catch (error) {
          log(`legacy ${peer.id} N=${shape.n}: ${error.message}`);
          runs.push({ error: error.message });
          break; // a peer that cannot open N sessions once will not the next time: say why, move on
        }
      }
      (results.legacy ??= {})[`${peer.id}:${shape.n}`] = runs;
    }
  }
}

if (want('storm')) {
  for (const [era, peers] of [
    ['listen', MODERN],
    ['legacy', LEGACY],
  ]) {
    for (const peer of peers) {
      const runs = [];
      for (let rep = 0; rep < config.sessions; rep++) {
        try {
          const r = await storm(peer.server ?? peer.id, era === 'legacy');
          runs.push(r);
          log(`storm ${era} ${peer.id} N=${r.n} K=${r.k}: ${fmt.int(r.frames)} frames (${r.minPerStream}–${r.maxPerStream} per stream), ${fmt.int(r.bytesWritten)} bytes written (${fmt.int(r.bytesReceived)} received), last after ${fmt.ms(r.ms)} ms, turn ${fmt.ms(r.turnMs)} ms`);
        } catch (error) {
          log(`storm ${era} ${peer.id}: ${error.message}`);
          runs.push({ error: error.message });
          break;
        }
      }
      (results.storm ??= {})[`${era}:${peer.id}`] = runs;
    }
  }
}

if (want('churn')) {
  for (const peer of MODERN) {
    try {
      const r = await churn(peer.id);
      (results.churn ??= {})[peer.id] = r;
      log(`${peer.id} churn ${r.total}: ${r.seconds.toFixed(1)} s, left ${JSON.stringify(r.end)}, heap ${fmt.mb(r.heapDelta)} MB`);
    } catch (error) {
      log(`${peer.id} churn: ${error.message}`);
      (results.churn ??= {})[peer.id] = { error: error.message };
    }
  }
}

// ---------- summary: the medians every table and chart is drawn from ----------

/**
 * One row per (era, peer, N) with the medians over the sessions: per publish pattern the frames/s
 * and server CPU µs per frame, then latency and idle memory. Rows of peers that failed carry the
 * error.
 */
function fanoutSummary(map, peers, era) {
  const rows = [];
  for (const [key, runs] of Object.entries(map ?? {})) {
    const [id, nText] = key.split(':');
    const peer = peers.find((p) => p.id === id);
    const ok = runs.filter((r) => !r.error);
    const row = { era, peerId: id, peer: peer?.label ?? id, n: Number(nText), k: ok[0]?.k, sessions: ok.length };
    if (ok.length === 0) {
      row.error = runs.find((r) => r.error)?.error ?? 'not run';
      rows.push(row);
      continue;
    }
    row.patterns = {};
    for (const pattern of PATTERN) {
      const passes = ok.flatMap((r) => r.passes.filter((p) => p.pattern === pattern.id));
      if (passes.length === 0) continue;
      row.patterns[pattern.id] = {
        fps: median(passes.map((p) => p.fps)),
        cpuPerFrame: median(passes.map((p) => p.cpuPerFrame)),
        serverBusy: median(passes.map((p) => p.serverBusy)),
        loadgenBusy: median(passes.map((p) => p.loadgenBusy)),
        lost: Math.max(...passes.map((p) => p.lost)),
        dropped: Math.max(...passes.map((p) => p.dropped ?? 0)),
        coalesced: passes.some((p) => p.coalesced !== undefined) ? Math.max(...passes.map((p) => p.coalesced ?? 0)) : undefined,
        passes: passes.length,
        complete: passes.every((p) => p.complete),
      };
    }
    const lat = ok.filter((r) => r.latency);
    if (lat.length > 0) {
      row.p50 = median(lat.map((r) => r.latency.p50));
      row.p99 = median(lat.map((r) => r.latency.p99));
      row.rounds = Math.min(...lat.map((r) => r.latency.rounds));
    }
    row.heapPerStream = median(ok.map((r) => r.heapPerStream));
    row.rssPerStream = median(ok.map((r) => r.rssPerStream));
    row.drops = Math.max(...ok.map((r) => r.drops ?? 0));
    row.loadgens = ok[0].loadgens;
    rows.push(row);
  }
  return rows;
}

function slowSummary() {
  const rows = [];
  for (const peer of MODERN) {
    const runs = results.slow?.[peer.id];
    if (!runs || runs.stalled.length === 0) continue;
    const got = median(runs.stalled.map((r) => r.stalledReceived));
    // The memory-over-time series of the stalled session with the median heap growth.
    const byGrowth = [...runs.stalled].sort((a, b) => a.heapGrowth - b.heapGrowth);
    const typical = byGrowth[Math.floor((byGrowth.length - 1) / 2)];
    rows.push({
      peerId: peer.id,
      peer: peer.label,
      heapGrowth: median(runs.stalled.map((r) => r.heapGrowth)),
      rssGrowth: median(runs.stalled.map((r) => r.rssGrowth)),
      stalledReceived: got,
      drops: median(runs.stalled.map((r) => r.drops)),
      p99ref: median(runs.healthy.map((r) => r.p99)),
      p99: median(runs.stalled.map((r) => r.p99)),
      publishSeconds: median(runs.stalled.map((r) => r.publishSeconds)),
      series: typical.series,
      events: typical.events,
    });
  }
  return rows;
}

function stormSummary() {
  const rows = [];
  for (const [key, runs] of Object.entries(results.storm ?? {})) {
    const [era, id] = key.split(':');
    const peer = (era === 'legacy' ? LEGACY : MODERN).find((p) => p.id === id);
    const ok = runs.filter((r) => !r.error);
    if (ok.length === 0) {
      rows.push({ era, peerId: id, peer: peer?.label ?? id, error: runs.find((r) => r.error)?.error ?? 'not run' });
      continue;
    }
    rows.push({
      era,
      peerId: id,
      peer: peer?.label ?? id,
      n: ok[0].n,
      k: ok[0].k,
      sessions: ok.length,
      frames: median(ok.map((r) => r.frames)),
      minPerStream: Math.min(...ok.map((r) => r.minPerStream)),
      maxPerStream: Math.max(...ok.map((r) => r.maxPerStream)),
      bytesWritten: median(ok.map((r) => r.bytesWritten)),
      bytesReceived: median(ok.map((r) => r.bytesReceived)),
      ms: median(ok.map((r) => r.ms)),
      turnMs: median(ok.map((r) => r.turnMs)),
      cpuMs: median(ok.map((r) => r.cpuMs)),
      dropped: median(ok.map((r) => r.dropped)),
      coalesced: ok[0].coalesced === undefined ? undefined : median(ok.map((r) => r.coalesced)),
    });
  }
  return rows;
}

const summary = {
  fanout: [...fanoutSummary(results.fanout, MODERN, 'listen'), ...fanoutSummary(results.legacy, LEGACY, 'legacy')],
  slow: slowSummary(),
  storm: stormSummary(),
};

// ---------- tables ----------

const out = [];

// Fan-out tables (throughput, latency, idle memory), shared by the modern and the legacy sections.
function fanoutTables(era, peers, baseId, unit, headings) {
  const rowsOf = summary.fanout.filter((r) => r.era === era);
  const get = (id, n) => rowsOf.find((r) => r.peerId === id && r.n === n);
  const ns = [...new Set(rowsOf.map((r) => r.n))].sort((a, b) => a - b);
  const versus = `vs ${peers.find((p) => p.id === baseId)?.label.replace(/ \(.*/, '') ?? baseId}`;
  const failed = (row) => `failed: ${row?.error ?? 'not run'}`;
  // A "÷ ceiling" column after each "vs baseline" one when the ceiling ran in this era (issue 22):
  // every peer's figure over the ceiling's median of the same N (and publish pattern).
  const ceilingLabel = peers.find((p) => p.id === 'ceiling')?.label.replace(/ \(.*/, '');
  const withCeiling = ceilingLabel !== undefined && rowsOf.some((r) => r.peerId === 'ceiling' && !r.error);
  const overCeiling = withCeiling ? `÷ ${ceilingLabel}` : undefined;
  const ceilingRatio = (v, ceilingValue) => (withCeiling ? [fmt.ratio(v, ceilingValue)] : []);
  if (headings.throughput) {
    out.push('', headings.throughput, '');
    const rows = [];
    for (const n of ns) {
      for (const pattern of PATTERN) {
        const base = get(baseId, n)?.patterns?.[pattern.id];
        const ceiling = get('ceiling', n)?.patterns?.[pattern.id];
        for (const peer of peers) {
          const row = get(peer.id, n);
          const p = row?.patterns?.[pattern.id];
          if (p === undefined) {
            if (row?.error) rows.push([`N=${fmt.int(n)} · ${pattern.label} · ${peer.label}`, '—', '—', ...ceilingRatio(), '—', '—', ...ceilingRatio(), '—', '—', failed(row)]);
            continue;
          }
          rows.push([
            `N=${fmt.int(n)} · ${pattern.label} · ${peer.label}`,
            fmt.int(p.fps),
            fmt.ratio(p.fps, base?.fps),
            ...ceilingRatio(p.fps, ceiling?.fps),
            fmt.us(p.cpuPerFrame),
            fmt.ratio(p.cpuPerFrame, base?.cpuPerFrame),
            ...ceilingRatio(p.cpuPerFrame, ceiling?.cpuPerFrame),
            `${fmt.pct(p.serverBusy)} / ${fmt.pct(p.loadgenBusy)}`,
            String(p.lost),
            `K=${row.k}, ${p.passes} pass${p.passes === 1 ? '' : 'es'}${p.complete ? '' : ', incomplete'}${p.dropped ? `, dropped ${fmt.int(p.dropped)}` : ''}${p.coalesced ? `, coalesced ${fmt.int(p.coalesced)}` : ''}`,
          ]);
        }
      }
    }
    out.push(table([`${unit} · publish pattern · peer`, 'frames/s', versus, ...(withCeiling ? [overCeiling] : []), 'server CPU µs/frame', versus, ...(withCeiling ? [overCeiling] : []), 'busy: server / load gen', 'lost (max)', 'notes'], rows));
    if (withCeiling) {
      out.push(
        '',
        `"${overCeiling}": the peer's median over the ${ceilingLabel}'s (peers/${era === 'legacy' ? 'legacy-ceiling' : 'ceiling'}.mjs: the hand-written baseline with each frame one chunk string written on the socket, what Node allows). It bounds the 1/turn rows only: at 10/turn it makes a syscall per frame where a peer that writes once per stream per turn makes one, so a peer may beat it there.`,
      );
    }
  }
  if (headings.latency) {
    const rows = [];
    for (const n of ns) {
      const base = get(baseId, n);
      const ceiling = get('ceiling', n);
      for (const peer of peers) {
        const row = get(peer.id, n);
        if (row?.p99 === undefined) continue;
        rows.push([
          `N=${fmt.int(n)} ${peer.label} (${row.rounds} rounds)`,
          fmt.ms(row.p50),
          fmt.ratio(row.p50, base?.p50),
          ...ceilingRatio(row.p50, ceiling?.p50),
          fmt.ms(row.p99),
          fmt.ratio(row.p99, base?.p99),
          ...ceilingRatio(row.p99, ceiling?.p99),
        ]);
      }
    }
    if (rows.length > 0) {
      out.push('', headings.latency, '');
      out.push(table([`${unit} · peer`, 'p50', versus, ...(withCeiling ? [overCeiling] : []), 'p99', versus, ...(withCeiling ? [overCeiling] : [])], rows));
    }
  }
  if (headings.memory) {
    out.push('', headings.memory, '');
    const rows = [];
    for (const n of ns.filter((n) => n >= headings.memoryFrom)) {
      const base = get(baseId, n);
      const ceiling = get('ceiling', n);
      for (const peer of peers) {
        const row = get(peer.id, n);
        if (row === undefined || row.error) continue;
        rows.push([
          `N=${fmt.int(n)} ${peer.label}`,
          fmt.kb(row.heapPerStream),
          fmt.ratio(row.heapPerStream, base?.heapPerStream),
          ...ceilingRatio(row.heapPerStream, ceiling?.heapPerStream),
          fmt.kb(row.rssPerStream),
          fmt.ratio(row.rssPerStream, base?.rssPerStream),
          ...ceilingRatio(row.rssPerStream, ceiling?.rssPerStream),
        ]);
      }
    }
    out.push(table([`${unit} · peer`, `heap KB/${headings.memoryUnit}`, versus, ...(withCeiling ? [overCeiling] : []), `RSS KB/${headings.memoryUnit}`, versus, ...(withCeiling ? [overCeiling] : [])], rows));
  }
}

if (results.fanout) {
  fanoutTables('listen', MODERN, 'baseline', 'streams', {
    throughput: want('throughput') && `## 1. Fan-out throughput (delivered frames/s and server CPU per frame; every stream on ${URI_COUNT} URI${URI_COUNT === 1 ? '' : 's'}, the publishes rotating over them)`,
    latency: want('latency') && '## 2. Fan-out latency (publish → all N streams have it, ms; p50/p99 over the rounds)',
    memory: want('memory') && '## 3. Idle memory per listen stream (server, after GC)',
    memoryFrom: 1000,
    memoryUnit: 'stream',
  });
}

if (summary.slow.length > 0) {
  const { healthy, k, ms } = config.slow;
  out.push('', `## 4. Slow consumer (${healthy} healthy streams + 1 stalled; ${fmt.int(k)} notifications over ~${ms / 1000} s)`, '');
  const rows = summary.slow.map((r) => [
    r.peer,
    fmt.mb(r.heapGrowth),
    fmt.mb(r.rssGrowth),
    fmt.int(r.stalledReceived),
    fmt.int(r.drops),
    fmt.int(k - r.stalledReceived - r.drops),
    `${fmt.ms(r.p99ref)} → ${fmt.ms(r.p99)}`,
    fmt.ratio(r.p99, r.p99ref),
  ]);
  out.push(table(['peer', 'heap+ext growth MB', 'RSS growth MB', 'stalled stream got', 'dropped', 'coalesced/never sent', 'healthy p99 ms (no stall → stall)', 'p99 ratio'], rows));
}

if (results.encode) {
  const { once, naive, streams } = results.encode;
  out.push('', `## 5. Encode (in process, mitata; one notification to ${streams} streams, per stream-frame)`, '');
  out.push(
    table(
      ['path', 'median ns/frame', 'vs JSON.stringify'],
      [
        ['encode once, tag per stream (ours)', once.p50.toFixed(0), fmt.ratio(once.p50, naive.p50)],
        ['JSON.stringify per stream', naive.p50.toFixed(0), '1.00x'],
      ],
    ),
  );
}

if (results.churn) {
  out.push('', `## 6. Churn (${fmt.int(config.churn)} streams opened and reset, batches of 1000)`, '');
  const rows = [];
  for (const peer of MODERN) {
    const r = results.churn[peer.id];
    if (!r || r.error) {
      rows.push([peer.label, '—', '—', '—', '—', r?.error ?? 'not run']);
      continue;
    }
    const left = Object.entries(r.end)
      .filter(([key, v]) => key !== 'drops' && typeof v === 'number')
      .map(([key, v]) => `${key} ${v}`)
      .join(', ');
    rows.push([peer.label, r.seconds.toFixed(1), left, fmt.mb(r.heapDelta), fmt.mb(r.rssDelta), '']);
  }
  out.push(table(['peer', 'seconds', 'left after (registry, slots, sockets)', 'heap Δ MB', 'RSS Δ MB', 'notes'], rows));
}

if (summary.storm.length > 0) {
  const { n, k } = config.storm;
  out.push(
    '',
    `## 7. Storm (${fmt.int(k)} tools/list_changed in one event-loop turn to N=${fmt.int(n)} streams / sessions)`,
    '',
    'Frames as the clients counted them; bytes as the server wrote them (socket.bytesWritten: SSE frames and HTTP chunk framing); time from the turn to the last frame the last stream got. "ours ÷ peer": below 1 is less than that peer.',
  );
  for (const era of ['listen', 'legacy']) {
    const rows = summary.storm.filter((r) => r.era === era);
    if (rows.length === 0) continue;
    const ours = rows.find((r) => r.peerId === 'ours' && !r.error);
    out.push('', era === 'listen' ? '### 7a. Listen streams' : '### 7b. Legacy sessions (GET stream)', '');
    out.push(
      table(
        ['peer', 'frames received', 'per stream (min–max)', 'bytes written', 'ms until every stream had its last', 'publish turn ms', 'frames: ours ÷ peer', 'bytes: ours ÷ peer', 'time: ours ÷ peer', 'notes'],
        rows.map((r) =>
          r.error
            ? [r.peer, '—', '—', '—', '—', '—', '—', '—', '—', `failed: ${r.error}`]
            : [
                r.peer,
                fmt.int(r.frames),
                `${fmt.int(r.minPerStream)}–${fmt.int(r.maxPerStream)}`,
                fmt.int(r.bytesWritten),
                fmt.ms(r.ms),
                fmt.ms(r.turnMs),
                fmt.ratio(ours?.frames, r.frames),
                fmt.ratio(ours?.bytesWritten, r.bytesWritten),
                fmt.ratio(ours?.ms, r.ms),
                [r.sessions > 1 ? `${r.sessions} sessions` : '', r.dropped ? `dropped ${fmt.int(r.dropped)}` : '', r.coalesced !== undefined ? `coalesced ${fmt.int(r.coalesced)} (telemetry)` : ''].filter(Boolean).join(', '),
              ],
        ),
      ),
    );
  }
}

if (results.legacy) {
  const baseId = LEGACY.some((p) => p.id === 'baseline') ? 'baseline' : 'ours';
  out.push('', '## Legacy (2025-11-25): sessions, GET SSE stream, `resources/subscribe`');
  fanoutTables('legacy', LEGACY, baseId, 'sessions', {
    throughput: `### L1. Fan-out throughput (delivered frames/s and server CPU per frame; every session subscribed to ${URI_COUNT} URI${URI_COUNT === 1 ? '' : 's'}, the publishes rotating over them)`,
    latency: '### L2. Fan-out latency (publish → all N GET streams have it, ms; p50/p99 over the rounds)',
    memory: '### L3. Idle memory per session + GET stream (server, after GC; initialize, GET, one subscribe)',
    memoryFrom: 0,
    memoryUnit: 'session',
  });
}

const seconds = (performance.now() - started) / 1000;
out.push('', `_${seconds.toFixed(0)} s; load average at the end ${os.loadavg().map((v) => v.toFixed(2)).join(' ')}; \`node --expose-gc bench/run.mjs ${argv.join(' ')}\`_`);
const body = out.join('\n');
console.log(body);

// ---------- files: results.json, table.md, charts ----------

mkdirSync(OUT, { recursive: true });
const doc = {
  command: `node --expose-gc bench/run.mjs ${argv.join(' ')}`.trim(),
  quick: QUICK,
  seconds: Math.round(seconds),
  config,
  patterns: PATTERN,
  header: headerText,
  summary,
  results,
};
writeFileSync(path.join(OUT, 'results.json'), JSON.stringify(doc, null, 1));
let charts = [];
if (!flag('no-charts')) {
  try {
    const { writeCharts } = await import('./charts.mjs');
    charts = await writeCharts(doc, OUT);
  } catch (error) {
    log(`charts: ${error.stack ?? error}`);
  }
}
const pictures = charts.map((c) => `![${c.title}](${c.file})`).join('\n\n');
writeFileSync(path.join(OUT, 'table.md'), `${headerText}\n${pictures ? `\n${pictures}\n` : ''}${body}\n`);
log(`wrote ${path.relative(process.cwd(), OUT)}/: table.md, results.json${charts.map((c) => `, ${c.file}`).join('')}`);
