// Side-by-side benchmarks of MCP `subscriptions/listen` servers (issue 6): mcp-rx-streams against a
// hand-written node:http baseline, the official TypeScript SDK v2 and better-sse; and of the legacy
// GET-SSE path (2025-11-25 sessions, `resources/subscribe`) against a hand-written legacy baseline
// and the official SDK 1.x.
//
// Method. Every run of a workload forks a fresh server process (bench/server.mjs <peer>, with
// --expose-gc) and a separate load-generator process (bench/loadgen.mjs), talking over loopback;
// this process only orchestrates them over IPC and prints. The load generator opens raw TCP
// listen streams (the official client's request) and only counts `data:` occurrences, so its cost
// per frame is the same for every peer. Publishing runs inside the server process, triggered over
// IPC, with the same code for every peer. Times come from CLOCK_MONOTONIC (process.hrtime), shared
// by all processes on the machine. Every figure is the median over the repetitions (fresh processes
// for each repetition), and the ratio is to the baseline's median in the same run.
//   1. fan-out throughput: N streams on one URI; K notifications published `batch` per event-loop
//      turn, pausing while any socket has more than its high-water mark buffered; delivered
//      frames/s = N·K / (first publish → last stream's last frame); lost = N·K − counted.
//   2. fan-out latency: one notification per round, time until all N streams have it; p50/p99 of
//      50 rounds (rounds 2 ms apart).
//   3. idle memory: heap and RSS growth of the server per open idle stream at N (after 2 GCs).
//   4. slow consumer: 100 healthy streams and 1 that stops reading (socket paused right after the
//      ack), K notifications at a steady rate over ~T s, every 100th a tools/list_changed marker
//      whose latency to all healthy streams is sampled; the same run without the stalled stream
//      gives the reference latency. Server heap+external / RSS growth is measured while stalled;
//      then the stalled stream reads again and what it gets is counted.
//   5. encode: bench/encode.mjs (mitata, in process).
//   6. churn: open and reset (RST) C streams in batches of 1000; then registry, slots and heap
//      after GC against the same figures taken after a 500-stream warm-up.
//   legacy (2025-11-25): workloads 1–3 again over legacy sessions, each opened as the SDK 1.x
//      client does (POST initialize, POST notifications/initialized, GET /mcp, POST
//      resources/subscribe), against a hand-written legacy baseline, ours and the SDK 1.x; ratios
//      to the legacy baseline. Idle memory is per session + GET stream at every N run.
//
//   npm run bench                  full run (builds first)
//   npm run bench -- --quick       smaller K/N-repetitions, finishes in under 3 minutes
//   node --expose-gc bench/run.mjs --only throughput,latency --peers baseline,ours
//   node --expose-gc bench/run.mjs --quick --only legacy --peers baseline,ours,sdk-v1
import { fork, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';

const here = (file) => fileURLToPath(new URL(file, import.meta.url));
const argv = process.argv.slice(2);
const flag = (name) => argv.includes(`--${name}`);
const option = (name) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : undefined;
};

const QUICK = flag('quick');
const PEERS = [
  { id: 'baseline', label: 'baseline (node:http res.write)' },
  { id: 'ours', label: 'mcp-rx-streams' },
  { id: 'sdk-v2', label: '@modelcontextprotocol/server 2.x' },
  { id: 'better-sse', label: 'better-sse Channel' },
].filter((p) => !option('peers') || option('peers').split(',').includes(p.id));
// The legacy era (2025-11-25 sessions, GET SSE, `resources/subscribe`) has its own peers: a
// hand-written legacy baseline, ours (the same McpEndpoint, which serves both eras) and the SDK 1.x.
// `--peers baseline` selects both baselines.
const LEGACY_PEERS = [
  { id: 'baseline', server: 'legacy-baseline', label: 'legacy baseline (node:http res.write)' },
  { id: 'ours', server: 'ours', label: 'mcp-rx-streams' },
  { id: 'sdk-v1', server: 'sdk-v1', label: '@modelcontextprotocol/sdk 1.x' },
].filter((p) => !option('peers') || option('peers').split(',').includes(p.id));
const WORKLOADS = (option('only') ?? 'throughput,latency,memory,slow,encode,churn,legacy').split(',');

// quick: one session per shape with three throughput passes in it (medians over the passes),
// smaller K, no latency rounds at N = 10 000 (a round there costs ~0.5 s per peer; full mode has
// them) and a shorter slow-consumer run, so that `npm run bench -- --quick` (build included)
// stays under 3 minutes on a 2-core box; full: three sessions (fresh processes) per shape, one
// pass each. Memory and latency come from every session.
const config = QUICK
  ? {
      sessions: 1,
      passes: 3,
      fanout: [
        { n: 100, k: 500, rounds: 0 },
        { n: 1000, k: 100, rounds: 50 },
        { n: 10_000, k: 10, rounds: 0 },
      ],
      legacy: [{ n: 1000, k: 100, rounds: 50 }],
      batch: 10,
      slow: { healthy: 100, k: 10_000, ms: 2_000 },
      churn: 5_000,
      slowReps: 1,
    }
  : {
      sessions: 3,
      passes: 1,
      fanout: [
        { n: 100, k: 10_000, rounds: 0 },
        { n: 1000, k: 1000, rounds: 50 },
        { n: 10_000, k: 100, rounds: 50 },
      ],
      legacy: [
        { n: 1000, k: 1000, rounds: 50 },
        { n: 10_000, k: 100, rounds: 50 },
      ],
      batch: 10,
      slow: { healthy: 100, k: 100_000, ms: 10_000 },
      churn: 20_000,
      slowReps: 3,
    };
const SERVER_ARGS = (process.env.BENCH_SERVER_ARGS ?? '').split(' ').filter(Boolean);

// ---------- child processes ----------

function child(script, args, extra = []) {
  const proc = fork(here(script), args, { execArgv: ['--expose-gc', '--max-old-space-size=4096', ...extra], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  let seq = 0;
  const pending = new Map();
  let onReady;
  const ready = new Promise((resolve, reject) => {
    onReady = resolve;
    proc.once('exit', (code) => reject(new Error(`${script} exited with ${code} before it was ready`)));
  });
  proc.on('message', (msg) => {
    if (msg.ready) return onReady(msg);
    const entry = pending.get(msg.id);
    if (entry === undefined) return;
    if (msg.armed) return entry.armed();
    pending.delete(msg.id);
    if (msg.error) entry.reject(new Error(`${script}: ${msg.error}`));
    else entry.resolve(msg.result);
  });
  proc.on('exit', () => {
    for (const entry of pending.values()) entry.reject(new Error(`${script} exited`));
    pending.clear();
  });
  const call = (cmd, args = {}) => {
    const id = ++seq;
    let armed;
    const armedP = new Promise((resolve) => (armed = resolve));
    const done = new Promise((resolve, reject) => pending.set(id, { resolve, reject, armed }));
    proc.send({ id, cmd, args });
    return Object.assign(done, { armed: armedP });
  };
  return {
    ready,
    call,
    async close() {
      if (proc.exitCode !== null) return;
      const exited = new Promise((resolve) => proc.once('exit', resolve));
      try {
        await Promise.race([call('exit'), new Promise((r) => setTimeout(r, 2000))]);
      } catch {}
      await Promise.race([exited, new Promise((r) => setTimeout(r, 2000))]);
      if (proc.exitCode === null) proc.kill('SIGKILL');
    },
  };
}

async function session(peer, body) {
  // `peer` names the server module (bench/peers/<peer>.mjs).
  const server = child('server.mjs', [peer], SERVER_ARGS);
  const loadgen = child('loadgen.mjs', []);
  try {
    const [{ port }] = await Promise.all([server.ready, loadgen.ready]);
    return await body({ server: server.call, loadgen: loadgen.call, port });
  } finally {
    await Promise.all([loadgen.close(), server.close()]);
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function openStreams(loadgen, port, n, legacy = false) {
  const opened = await loadgen('open', { port, n, legacy });
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
async function deliver(loadgen, target, publish, idleMs = IDLE_MS) {
  const done = loadgen('expect', { target, idleMs });
  await done.armed;
  const published = await publish();
  const seen = await done;
  return { published, seen };
}

// ---------- workloads ----------

async function fanout(peer, { n, k, rounds }, wantLatency, legacy = false) {
  return session(peer, async ({ server, loadgen, port }) => {
    const before = await server('mem');
    const { ms: openMs } = await openStreams(loadgen, port, n, legacy);
    const after = await server('mem');
    const result = {
      n,
      k,
      openMs,
      heapPerStream: (after.heapUsed - before.heapUsed) / n,
      rssPerStream: (after.rss - before.rss) / n,
      passes: [],
    };
    // Warm-up (not measured): JIT, socket buffers.
    const warm = Math.max(1, Math.round(k / 10));
    await loadgen('reset');
    await deliver(loadgen, warm, () => server('publishPaced', { k: warm, batch: config.batch }));
    for (let pass = 0; pass < config.passes; pass++) {
      await sleep(100);
      await loadgen('reset');
      const { published, seen } = await deliver(loadgen, k, () => server('publishPaced', { k, batch: config.batch }));
      const elapsed = (seen.complete ? seen.t : published.t1) - published.t0;
      result.passes.push({
        fps: seen.received / (elapsed / 1e9),
        complete: seen.complete,
        lost: seen.expected - seen.received,
        gateWaits: published.waits,
      });
    }
    result.fps = median(result.passes.map((p) => p.fps));
    result.lost = Math.max(...result.passes.map((p) => p.lost));
    result.complete = result.passes.every((p) => p.complete);
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

async function slowConsumer(peer, stall) {
  const { healthy, k, ms } = config.slow;
  return session(peer, async ({ server, loadgen, port }) => {
    await openStreams(loadgen, port, healthy + (stall ? 1 : 0));
    if (stall) await loadgen('stall', { index: 0 });
    await sleep(50);
    const before = await server('mem');
    await loadgen('watchMarkers');
    const published = await server('publishRate', { k, ms, markerEvery: 100 });
    // Let the healthy streams catch up (they stop at K + 1 frames), then sample.
    for (let i = 0; i < 100; i++) {
      const c = await loadgen('counts');
      if (c.healthyMin >= k + 1) break;
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
    if (stall) {
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
    return result;
  });
}

async function churn(peer) {
  const total = config.churn;
  const batch = 1000;
  return session(peer, async ({ server, loadgen, port }) => {
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

function encode() {
  const out = spawnSync(process.execPath, ['--expose-gc', here('encode.mjs'), '--json'], { encoding: 'utf8' });
  if (out.status !== 0) throw new Error(`encode.mjs failed: ${out.stderr}`);
  return JSON.parse(out.stdout.trim().split('\n').pop());
}

// ---------- statistics and printing ----------

function quantile(values, q) {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}
const median = (values) => quantile(values.filter((v) => Number.isFinite(v)), 0.5);

const fmt = {
  int: (v) => (Number.isFinite(v) ? Math.round(v).toLocaleString('en-US') : '—'),
  ms: (v) => (Number.isFinite(v) ? (v < 10 ? v.toFixed(2) : v.toFixed(1)) : '—'),
  kb: (v) => (Number.isFinite(v) ? (v / 1024).toFixed(2) : '—'),
  mb: (v) => (Number.isFinite(v) ? (v / 1048576).toFixed(2) : '—'),
  ratio: (v, base) => (Number.isFinite(v) && Number.isFinite(base) && base !== 0 ? `${(v / base).toFixed(2)}x` : '—'),
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

function header() {
  const ours = JSON.parse(readFileSync(here('../package.json'), 'utf8')).version;
  const limit = spawnSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).stdout.trim();
  return [
    `# mcp-rx-streams benchmarks${QUICK ? ' (--quick)' : ''}`,
    '',
    `- node ${process.version} · ${os.cpus()[0]?.model ?? 'unknown cpu'} × ${os.cpus().length} cores · ${os.platform()} ${os.arch()} · ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB · ulimit -n ${limit}`,
    `- mcp-rx-streams ${ours} (dist/) · @modelcontextprotocol/server ${versionOf('@modelcontextprotocol/server')} (+ @hono/node-server ${versionOf('@hono/node-server')}) · @modelcontextprotocol/sdk ${versionOf('@modelcontextprotocol/sdk')} · better-sse ${versionOf('better-sse')} · rxjs ${versionOf('rxjs')} · mitata ${versionOf('mitata')}`,
    `- medians over ${config.sessions} session(s) per shape (fresh server and load-generator processes each) × ${config.passes} throughput pass(es) per session; ratios to the baseline's median (legacy rows: to the legacy baseline's); server and load generator share the machine's 2 cores`,
  ].join('\n');
}

const log = (...a) => console.error('#', ...a);

// ---------- main ----------

const started = performance.now();
console.log(header());
const results = {};
const want = (w) => WORKLOADS.includes(w);

if (want('throughput') || want('latency') || want('memory')) {
  for (const shape of config.fanout) {
    const wantLatency = want('latency') && shape.rounds > 0;
    if (!want('throughput') && !wantLatency && !(want('memory') && shape.n === 10_000)) continue;
    for (const peer of PEERS) {
      const runs = [];
      for (let rep = 0; rep < config.sessions; rep++) {
        try {
          const r = await fanout(peer.id, shape, wantLatency);
          runs.push(r);
          log(`${peer.id} N=${shape.n} K=${shape.k}: ${fmt.int(r.fps)} frames/s, lost ${r.lost}${r.latency ? `, p50 ${fmt.ms(r.latency.p50)} ms p99 ${fmt.ms(r.latency.p99)} ms` : ''}, heap/stream ${fmt.kb(r.heapPerStream)} KB, open ${fmt.int(r.openMs)} ms`);
        } catch (error) {
          log(`${peer.id} N=${shape.n}: ${error.message}`);
          runs.push({ error: error.message });
        }
      }
      (results.fanout ??= {})[`${peer.id}:${shape.n}`] = runs;
    }
  }
}

if (want('slow')) {
  for (const peer of PEERS) {
    const runs = { healthy: [], stalled: [] };
    for (let rep = 0; rep < config.slowReps; rep++) {
      for (const stall of [false, true]) {
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
    for (const peer of LEGACY_PEERS) {
      const runs = [];
      for (let rep = 0; rep < config.sessions; rep++) {
        try {
          const r = await fanout(peer.server, shape, shape.rounds > 0, true);
          runs.push(r);
          log(`legacy ${peer.id} N=${shape.n} K=${shape.k}: ${fmt.int(r.fps)} frames/s, lost ${r.lost}${r.latency ? `, p50 ${fmt.ms(r.latency.p50)} ms p99 ${fmt.ms(r.latency.p99)} ms` : ''}, heap/session ${fmt.kb(r.heapPerStream)} KB, open ${fmt.int(r.openMs)} ms`);
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

if (want('churn')) {
  for (const peer of PEERS) {
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

// ---------- tables ----------

const out = [];

// Fan-out tables (throughput, latency, idle memory), shared by the modern and the legacy sections:
// `map` is `${peer id}:${n}` → runs, `baseId` the peer the ratios are to, `unit` what N counts.
function fanoutTables(map, peers, shapes, baseId, unit, headings) {
  const runsOf = (id, n) => (map[`${id}:${n}`] ?? []).filter((r) => !r.error);
  const errOf = (id, n) => (map[`${id}:${n}`] ?? []).find((r) => r.error)?.error;
  const ran = shapes.filter(({ n }) => peers.some((p) => map[`${p.id}:${n}`] !== undefined));
  const versus = `vs ${peers.find((p) => p.id === baseId)?.label.replace(/ \(.*/, '') ?? baseId}`;
  if (headings.throughput) {
    out.push('', headings.throughput, '');
    const rows = [];
    for (const { n, k } of ran) {
      const base = median(runsOf(baseId, n).flatMap((r) => r.passes.map((p) => p.fps)));
      for (const peer of peers) {
        const runs = runsOf(peer.id, n);
        if (runs.length === 0) {
          rows.push([`N=${fmt.int(n)} ${peer.label}`, '—', '—', '—', `failed: ${errOf(peer.id, n) ?? 'not run'}`]);
          continue;
        }
        const fps = median(runs.flatMap((r) => r.passes.map((p) => p.fps)));
        const lost = Math.max(...runs.map((r) => r.lost));
        rows.push([
          `N=${fmt.int(n)} ${peer.label}`,
          fmt.int(fps),
          fmt.ratio(fps, base),
          String(lost),
          `K=${k}, ${runs.reduce((a, r) => a + r.passes.length, 0)} passes${runs.some((r) => !r.complete) ? ', incomplete' : ''}${runs.some((r) => r.drops) ? `, dropped ${Math.max(...runs.map((r) => r.drops))}` : ''}`,
        ]);
      }
    }
    out.push(table([`${unit} · peer`, 'frames/s', versus, 'lost (max)', 'notes'], rows));
  }
  if (headings.latency) {
    out.push('', headings.latency, '');
    const rows = [];
    for (const { n, rounds } of ran.filter((s) => s.rounds > 0)) {
      const base50 = median(runsOf(baseId, n).map((r) => r.latency?.p50));
      const base99 = median(runsOf(baseId, n).map((r) => r.latency?.p99));
      for (const peer of peers) {
        const runs = runsOf(peer.id, n).filter((r) => r.latency);
        if (runs.length === 0) {
          rows.push([`N=${fmt.int(n)} ${peer.label}`, '—', '—', '—', '—']);
          continue;
        }
        const p50 = median(runs.map((r) => r.latency.p50));
        const p99 = median(runs.map((r) => r.latency.p99));
        const done = Math.min(...runs.map((r) => r.latency.rounds));
        const note = done === rounds ? `${rounds} rounds` : `${done}/${rounds} rounds complete`;
        rows.push([`N=${fmt.int(n)} ${peer.label} (${note})`, fmt.ms(p50), fmt.ratio(p50, base50), fmt.ms(p99), fmt.ratio(p99, base99)]);
      }
    }
    out.push(table([`${unit} · peer`, 'p50', versus, 'p99', versus], rows));
  }
  if (headings.memory) {
    out.push('', headings.memory, '');
    const rows = [];
    for (const { n } of ran.filter((s) => headings.memoryAt === undefined || s.n === headings.memoryAt)) {
      const baseHeap = median(runsOf(baseId, n).map((r) => r.heapPerStream));
      const baseRss = median(runsOf(baseId, n).map((r) => r.rssPerStream));
      for (const peer of peers) {
        const runs = runsOf(peer.id, n);
        const heap = median(runs.map((r) => r.heapPerStream));
        const rss = median(runs.map((r) => r.rssPerStream));
        rows.push([`N=${fmt.int(n)} ${peer.label}`, fmt.kb(heap), fmt.ratio(heap, baseHeap), fmt.kb(rss), fmt.ratio(rss, baseRss)]);
      }
    }
    out.push(table([`${unit} · peer`, `heap KB/${headings.memoryUnit}`, versus, `RSS KB/${headings.memoryUnit}`, versus], rows));
  }
}

if (results.fanout) {
  fanoutTables(results.fanout, PEERS, config.fanout, 'baseline', 'streams', {
    throughput: want('throughput') && '## 1. Fan-out throughput (delivered frames/s, one URI)',
    latency: want('latency') && '## 2. Fan-out latency (publish → all N streams have it, ms; p50/p99 over the rounds)',
    memory: want('memory') && '## 3. Idle memory per listen stream (server, after GC)',
    memoryAt: 10_000,
    memoryUnit: 'stream',
  });
}

if (results.slow) {
  const { healthy, k, ms } = config.slow;
  out.push('', `## 4. Slow consumer (${healthy} healthy streams + 1 stalled; ${fmt.int(k)} notifications over ~${ms / 1000} s)`, '');
  const rows = [];
  for (const peer of PEERS) {
    const runs = results.slow[peer.id];
    if (!runs || runs.stalled.length === 0) {
      rows.push([peer.label, '—', '—', '—', '—', '—', '—', '—']);
      continue;
    }
    const p99ref = median(runs.healthy.map((r) => r.p99));
    const p99 = median(runs.stalled.map((r) => r.p99));
    const got = median(runs.stalled.map((r) => r.stalledReceived));
    const drops = median(runs.stalled.map((r) => r.drops));
    rows.push([
      peer.label,
      fmt.mb(median(runs.stalled.map((r) => r.heapGrowth))),
      fmt.mb(median(runs.stalled.map((r) => r.rssGrowth))),
      fmt.int(got),
      fmt.int(drops),
      fmt.int(k - got - drops),
      `${fmt.ms(p99ref)} → ${fmt.ms(p99)}`,
      fmt.ratio(p99, p99ref),
    ]);
  }
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
  for (const peer of PEERS) {
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

if (results.legacy) {
  const baseId = LEGACY_PEERS.some((p) => p.id === 'baseline') ? 'baseline' : 'ours';
  out.push('', '## Legacy (2025-11-25): sessions, GET SSE stream, `resources/subscribe`');
  fanoutTables(results.legacy, LEGACY_PEERS, config.legacy, baseId, 'sessions', {
    throughput: '### L1. Fan-out throughput (delivered frames/s, one URI, every session subscribed to it)',
    latency: '### L2. Fan-out latency (publish → all N GET streams have it, ms; p50/p99 over the rounds)',
    memory: '### L3. Idle memory per session + GET stream (server, after GC; initialize, GET, one subscribe)',
    memoryUnit: 'session',
  });
}

out.push('', `_${((performance.now() - started) / 1000).toFixed(0)} s; \`node --expose-gc bench/run.mjs ${argv.join(' ')}\`_`);
console.log(out.join('\n'));
