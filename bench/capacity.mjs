// The capacity curve (issue 33): how the cost of a stream grows from 1 000 to 100 000 streams on
// one machine, for listen streams and for legacy sessions with their GET stream, served by the
// library's real endpoint, beside the hand-written baseline and Node's ceiling where they hold.
//
// Method. Every point (era, peer, N) is one session of fresh processes on this machine, talking
// over loopback:
//   server      ours: the server code of bench/cluster.mjs (Hub + McpEndpoint + nodeHandler, the
//               caps raised to fit N), as ONE process (`--role plain`) while N fits its descriptor
//               limit, else node:cluster (`--role primary`, clusterPrimary + W workers with
//               clusterWorker) with W = ⌈N / --per-worker (12 500)⌉: node:cluster hands connections
//               to the workers that are free, not evenly, so a worker gets room for half as many
//               again before its descriptor limit. A process may hold `ulimit -n`
//               descriptors (20 000 here, the hard limit, which root cannot raise on this box), so
//               one server process holds fewer than 20 000 streams: the points above
//               --max-single (19 000) are served by W workers, and the output says how many.
//               The baseline and the ceiling (bench/peers/baseline.mjs, ceiling.mjs and their
//               legacy-* twins, run by bench/server.mjs) are single processes: they run up to
//               --max-single and not beyond.
//   load        bench/loadgen.mjs through bench/harness.mjs: ⌈N / 16 000⌉ load-generator processes,
//               each binding its own loopback source address (one address has ~28 000 ephemeral
//               ports), fresh addresses for every session (the ports a session left in TIME_WAIT
//               stay out of the way). A listen stream is the official client's POST; a legacy
//               session is initialize, notifications/initialized, GET /mcp, resources/subscribe.
//               Every stream subscribes to one URI. Once all are open the load generators close
//               their keep-alive POST sockets, so that the server holds the N streams alone.
// Per point, in this order:
//   open        time to open N (from the first connect to the last ack / subscribe answer).
//   memory      heap and RSS of every server process after two full GCs, before and after the N
//               are open: (after − before) / N, summed over the processes (primary included).
//               "Before" comes after one second of churn (500 streams opened and closed, none
//               left), so that the code V8 compiles once for the open path is not counted per stream.
//   throughput  a warm-up of K/10, then K notifications (K = --frames / N, 20 to 1000) with a
//               window of two: notification r+1 is published, then the run waits until every stream
//               has notification r. They alternate between resources/updated of the stream's URI and
//               tools/list_changed (every stream hears both), so the two in flight are never the same
//               notification: a hub that hears several events of a topic in one event-loop turn
//               sends an identical one once (issue 15), which a cluster worker that reads two relayed
//               events in one turn would rightly do. Delivered frames/s = N·K / (first publish → last
//               stream's last frame); server CPU (user + system of every server process) per
//               delivered frame; busy = each side's CPU over the wall time. In a cluster worker 1
//               publishes and the others hear it through the primary. Nothing may be lost: the load
//               generators count every frame.
//   latency     rounds of one notification (--latency-frames / N, 10 to --latency-rounds): publish →
//               every one of the N streams has it; p50 and p99 (with 50 rounds or fewer the p99 is
//               the slowest round).
//   churn       for --churn-seconds, a separate load-generator process opens and closes
//               --churn-rate short streams per second (a listen closed once acked; a legacy session
//               initialized, its GET opened and closed, then DELETEd), at most 100 at a time, while
//               one notification per round goes to the N standing streams as in "latency" (their
//               p99 during churn). Counted: admitted, refused (HTTP status), errors, cycles skipped
//               because 100 were in flight; then the server's stream count is read again (all N, no
//               churn stream left).
// On a shared box wall-clock figures move with the other processes: every row carries the load
// average at its start, and the CPU µs per frame and the memory per stream are the figures to
// compare. Ratios are between rows of the same run (one session each, back to back).
//
//   npm run build && node bench/capacity.mjs                      the whole curve (about an hour)
//   node bench/capacity.mjs --n 1000,5000 --eras listen           a quick check of the script
//   node bench/capacity.mjs --peers ours --ours-build /tmp/other --label 'abc123 + fix'   another build's
//        curve (--label: what the header says of the build, beside its directory)
//   node bench/capacity.mjs --profile /tmp/prof --n 19000 --peers ours   CPU profiles of the
//        measured pass (and of the churn phase) of every server process: <dir>/<era>-<peer>-<n>/
//
// Results: a markdown table on stdout and in <out>/table.md, every figure in <out>/results.json
// (default bench/results/capacity/).
import { fork, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { describeBuild, OWN_DIST, resolveBuild, snapshotBuild } from './build.mjs';
import { child, loadgenPool } from './harness.mjs';
import { URI } from './peers/common.mjs';

const started = performance.now();
const here = (file) => fileURLToPath(new URL(file, import.meta.url));
const argv = process.argv.slice(2);
const USAGE =
  'usage: node bench/capacity.mjs [--n 1000,10000,19000,25000,50000,100000] [--eras listen,legacy] [--peers ours,baseline,ceiling]\n' +
  '       [--max-single 19000] [--per-worker 12500] [--frames 1000000] [--latency-rounds 50] [--latency-frames 1000000]\n' +
  '       [--churn-seconds 10] [--churn-rate 1000] [--ours-build DIR] [--label TEXT] [--profile DIR] [--out DIR]';

function fail(message) {
  console.error(`bench/capacity.mjs: ${message}\n${USAGE}`);
  process.exit(2);
}

let values;
try {
  ({ values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      n: { type: 'string', default: '1000,10000,19000,25000,50000,100000' },
      eras: { type: 'string', default: 'listen,legacy' },
      peers: { type: 'string', default: 'ceiling,baseline,ours' },
      'max-single': { type: 'string', default: '19000' },
      'per-worker': { type: 'string', default: '12500' },
      frames: { type: 'string', default: '1000000' },
      'latency-frames': { type: 'string', default: '1000000' },
      'latency-rounds': { type: 'string', default: '50' },
      'churn-seconds': { type: 'string', default: '10' },
      'churn-rate': { type: 'string', default: '1000' },
      'ours-build': { type: 'string' },
      label: { type: 'string' },
      profile: { type: 'string' },
      out: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  }));
} catch (error) {
  fail(error.message);
}
if (values.help) {
  console.error(USAGE);
  process.exit(0);
}
const integer = (name, min = 1) => {
  const v = Number(values[name]);
  if (!(Number.isInteger(v) && v >= min)) fail(`--${name}: an integer ≥ ${min}, got ${values[name]}`);
  return v;
};
const NS = values.n.split(',').map((s) => Number(s.trim()));
for (const n of NS) if (!(Number.isInteger(n) && n > 0)) fail(`--n: not a positive integer in ${values.n}`);
NS.sort((a, b) => a - b);
const ERAS = values.eras.split(',').map((s) => s.trim());
for (const era of ERAS) if (!['listen', 'legacy'].includes(era)) fail(`--eras: unknown era ${era} (listen, legacy)`);
const PEER_IDS = values.peers.split(',').map((s) => s.trim());
for (const id of PEER_IDS) if (!['ours', 'baseline', 'ceiling'].includes(id)) fail(`--peers: unknown peer ${id} (ours, baseline, ceiling)`);
const MAX_SINGLE = integer('max-single');
const PER_WORKER = integer('per-worker');
const FRAMES = integer('frames');
const LATENCY_ROUNDS = integer('latency-rounds', 0);
const LATENCY_FRAMES = integer('latency-frames');
const CHURN_SECONDS = integer('churn-seconds', 0);
const CHURN_RATE = integer('churn-rate');
const CHURN_INFLIGHT = 100;
/** Streams opened and closed per second in the one-second warm-up before the memory is read (see `point`). */
const WARM_UP_RATE = 500;
const PROFILE = values.profile === undefined ? undefined : path.resolve(values.profile);
const OUT = path.resolve(values.out ?? here('results/capacity'));

// ---------- descriptors ----------

const sh = (script) => spawnSync('sh', ['-c', script], { encoding: 'utf8' }).stdout.trim();
const [softText, hardText] = sh('ulimit -Sn; ulimit -Hn').split('\n');
// As bench/run.mjs: a soft limit below the hard one is raised by running again under it.
if (softText !== hardText && process.env.BENCH_NOFILE_RAISED === undefined) {
  const target = hardText === 'unlimited' ? '1048576' : hardText;
  const again = spawnSync('sh', ['-c', `ulimit -n ${target} 2>/dev/null; exec "$@"`, 'sh', process.execPath, ...process.execArgv, fileURLToPath(import.meta.url), ...argv], {
    stdio: 'inherit',
    env: { ...process.env, BENCH_NOFILE_RAISED: '1' },
  });
  process.exit(again.status ?? 1);
}
const FD_LIMIT = softText === 'unlimited' ? Infinity : Number(softText);
const PER_LOADGEN = Math.min(16_000, FD_LIMIT - 1_000);
if (MAX_SINGLE + CHURN_INFLIGHT + 200 > FD_LIMIT) fail(`--max-single ${MAX_SINGLE}: one process may hold ${FD_LIMIT} descriptors (ulimit -n), the streams, the churn's ${CHURN_INFLIGHT} and a few more must fit`);
if (1.4 * PER_WORKER + CHURN_INFLIGHT > FD_LIMIT) fail(`--per-worker ${PER_WORKER}: a worker may hold ${FD_LIMIT} descriptors (ulimit -n); leave room for the uneven spread (40 % more) and the churn`);

const loadgensFor = (n) => Math.max(1, Math.ceil(n / PER_LOADGEN));
const workersFor = (n) => (n <= MAX_SINGLE ? 0 : Math.ceil(n / PER_WORKER));

// Fresh loopback source addresses for every session: 127.<block>.0.<1 + w>.
let addressBlock = 0;
const addresses = () => {
  const block = 1 + (addressBlock++ % 250);
  return (w) => `127.${block}.0.${1 + w}`;
};

// ---------- the build ----------

for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(130));
let BUILD;
try {
  BUILD = describeBuild(resolveBuild(values['ours-build'] ?? OWN_DIST));
} catch (error) {
  fail(values['ours-build'] === undefined ? `no build in dist/ (run npm run build first): ${error.message}` : `--ours-build: ${error.message}`);
}
process.env.BENCH_DIST = snapshotBuild(BUILD.dir, 'capacity');

// ---------- servers: one interface for ours (plain or cluster) and the single-process peers ----------

const sum = (list) => list.reduce((a, b) => a + b, 0);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Ours: bench/cluster.mjs as one process (`workers` 0) or a primary with `workers` workers. */
function clusterServer(workers, profileDir) {
  const args = workers === 0 ? ['--role', 'plain'] : ['--role', 'primary', '--workers', String(workers)];
  const env = { ...process.env, ...(profileDir === undefined ? {} : { BENCH_PROFILE: profileDir }) };
  const proc = fork(here('cluster.mjs'), args, { execArgv: ['--expose-gc', '--max-old-space-size=8192'], env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  let nextId = 1;
  const pending = new Map();
  let hello;
  const ready = new Promise((resolve, reject) => {
    hello = resolve;
    proc.once('exit', (code) => reject(new Error(`cluster.mjs exited with ${code} before it was ready`)));
  });
  proc.on('message', (message) => {
    if (message.id === 0) return hello(message.result);
    pending.get(message.id)?.resolve(message.result);
    pending.delete(message.id);
  });
  proc.on('exit', () => {
    for (const entry of pending.values()) entry.reject(new Error('the server exited'));
    pending.clear();
  });
  const call = (command, args = {}) =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve, reject });
      proc.send({ id, command, args });
    });
  return {
    ready: ready.then((r) => r.port),
    processes: workers === 0 ? 1 : workers + 1,
    async mem() {
      const m = await call('mem');
      if (workers === 0) return { processes: [{ role: 'process', heap: m.heap, rss: m.rss }], streams: m.streams, sessions: m.sessions };
      return {
        processes: [{ role: 'primary', heap: m.primary, rss: m.primaryRss }, ...m.workers.map((w, i) => ({ role: `worker ${i + 1}`, heap: w.heap, rss: w.rss, streams: w.streams, sessions: w.sessions }))],
        streams: sum(m.workers.map((w) => w.streams)),
        sessions: sum(m.workers.map((w) => w.sessions)),
      };
    },
    async cpu() {
      const c = await call('cpu');
      return workers === 0 ? c.us : c.primary + sum(c.workers);
    },
    publishOne: async () => ({ t: (await call('publish', { list: [URI] })).t }),
    publishTools: () => call('publishTools'),
    profile: (start, name) => call('profile', { start, name }),
    async stop() {
      if (proc.exitCode !== null) return;
      const exited = new Promise((resolve) => proc.once('exit', resolve));
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** A single-process peer: bench/server.mjs <peer>. */
function peerServer(name, profileDir) {
  if (profileDir !== undefined) process.env.BENCH_PROFILE = profileDir;
  const server = child('server.mjs', [name]);
  delete process.env.BENCH_PROFILE;
  return {
    ready: server.ready.then((r) => r.port),
    processes: 1,
    async mem() {
      const m = await server.call('mem');
      const r = await server.call('registry');
      return { processes: [{ role: 'process', heap: m.heapUsed, rss: m.rss }], streams: r.streams, sessions: r.sessions };
    },
    cpu: async () => (await server.call('cpu')).us,
    publishOne: () => server.call('publishOne'),
    publishTools: () => server.call('publishMarker'),
    profile: (start, name) => server.call('profile', { start, name }),
    stop: () => server.close(),
  };
}

const PEERS = {
  ours: { label: 'mcp-rx-streams', server: (era, n, dir) => clusterServer(workersFor(n), dir) },
  baseline: { label: 'baseline (node:http res.write)', single: true, server: (era, n, dir) => peerServer(era === 'legacy' ? 'legacy-baseline' : 'baseline', dir) },
  ceiling: { label: 'ceiling (socket.write per frame)', single: true, server: (era, n, dir) => peerServer(era === 'legacy' ? 'legacy-ceiling' : 'ceiling', dir) },
};

// ---------- one point ----------

const quantile = (values, q) => {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
};
const load1 = () => os.loadavg()[0];
const log = (...a) => console.error(`# [${((performance.now() - started) / 1000).toFixed(0).padStart(5)} s, load ${os.loadavg().map((v) => v.toFixed(1)).join(' ')}]`, ...a);

/** K per stream for N: --frames / N, from 20 to 1000. */
const notificationsFor = (n) => Math.max(20, Math.min(1000, Math.round(FRAMES / n)));
/** Latency rounds for N: --latency-frames / N, from 10 to --latency-rounds. */
const latencyRoundsFor = (n) => Math.min(LATENCY_ROUNDS, Math.max(10, Math.round(LATENCY_FRAMES / n)));

/** One throughput pass: `k` notifications with a window of two, alternating resources/updated and tools/list_changed. */
async function pass(server, loadgen, n, k) {
  const publish = (r) => (r % 2 === 1 ? server.publishOne() : server.publishTools());
  await loadgen.call('reset');
  const [cpu0, gen0] = await Promise.all([server.cpu(), loadgen.call('cpu')]);
  const w0 = process.hrtime.bigint();
  const first = await publish(1);
  let t = first.t;
  let complete = true;
  let received = 0;
  for (let r = 1; r <= k; r++) {
    if (r < k) await publish(r + 1);
    const seen = await loadgen.call('expect', { target: r, idleMs: 20_000, firstIdleMs: 60_000 });
    received = seen.received;
    if (!seen.complete) {
      complete = false;
      break;
    }
    // The last frame any stream received (a round that was complete before the load generator
    // was asked has no time of its own): after the last round, the end of the pass.
    t = seen.tLast;
  }
  const [cpu1, gen1] = await Promise.all([server.cpu(), loadgen.call('cpu')]);
  const wallUs = Number(process.hrtime.bigint() - w0) / 1000;
  return {
    k,
    complete,
    lost: n * k - received,
    fps: received / ((t - first.t) / 1e9),
    cpuPerFrame: (cpu1 - cpu0) / received,
    serverBusy: (cpu1 - cpu0) / wallUs,
    loadgenBusy: (gen1.us - gen0.us) / wallUs,
  };
}

/** `rounds` rounds of one notification (or until `until()` says stop): ms until every stream had it. */
async function latency(server, loadgen, rounds, gapMs, until = () => false) {
  await loadgen.call('reset');
  const samples = [];
  let incomplete = 0;
  for (let r = 1; r <= rounds && !until(); r++) {
    const done = loadgen.call('expect', { target: r, idleMs: 20_000, firstIdleMs: 60_000 });
    await done.armed;
    const published = await server.publishOne();
    const seen = await done;
    if (seen.complete) samples.push((seen.t - published.t) / 1e6);
    else incomplete++;
    await sleep(gapMs);
  }
  return { p50: quantile(samples, 0.5), p99: quantile(samples, 0.99), rounds: samples.length, incomplete };
}

async function point(era, peerId, n) {
  const legacy = era === 'legacy';
  const peer = PEERS[peerId];
  const workers = peerId === 'ours' ? workersFor(n) : 0;
  const procs = loadgensFor(n);
  const profileDir = PROFILE === undefined ? undefined : path.join(PROFILE, `${era}-${peerId}-${n}`);
  if (profileDir !== undefined) mkdirSync(profileDir, { recursive: true });
  const result = { era, peer: peerId, n, workers, loadgens: procs, loadAtStart: os.loadavg() };
  const server = peer.server(era, n, profileDir);
  const address = addresses();
  const loadgen = loadgenPool(procs, { address });
  const churner = loadgenPool(1, { address: () => address(procs) });
  try {
    const [port] = await Promise.all([server.ready, loadgen.ready, churner.ready]);
    await sleep(500);
    // Warm-up: what the first streams compile and allocate once (V8's bytecode, feedback and
    // optimized code for the open path: 0.8 MB for the ceiling and 1.7 MB for ours in a heap
    // snapshot of 2 000 legacy sessions) is not a cost per stream, yet at N = 1 000 it would count
    // for 0.8 and 1.7 KB of each. One second of churn (streams opened and closed, none left) runs
    // that path first; the memory per stream is then what the N open streams add.
    await churner.call('churn', { port, legacy, rate: WARM_UP_RATE, seconds: 1, inflight: CHURN_INFLIGHT, localAddress: address(procs), base: 2e8 });
    await sleep(500);
    const before = await server.mem();
    const opened = await loadgen.call('open', { port, n, legacy, uris: 1, closeIdle: true });
    if (opened.opened !== n) throw new Error(`opened ${opened.opened}/${n}: ${opened.errors.join('; ')}`);
    result.openSeconds = opened.ms / 1000;
    await sleep(1000); // the closed POST sockets leave the server; relayed subscribes settle
    const after = await server.mem();
    result.processes = after.processes.map((p, i) => ({ role: p.role, heapDelta: p.heap - before.processes[i].heap, rssDelta: p.rss - before.processes[i].rss, streams: p.streams, sessions: p.sessions }));
    for (const p of result.processes) Object.assign(p, { heapPerStream: p.heapDelta / n, rssPerStream: p.rssDelta / n });
    result.heapPerStream = sum(result.processes.map((p) => p.heapPerStream));
    result.rssPerStream = sum(result.processes.map((p) => p.rssPerStream));
    result.heldAfterOpen = after.streams;
    log(`${era} ${peerId} N=${n}${workers ? ` (${workers} workers)` : ''}: opened in ${result.openSeconds.toFixed(1)} s; heap ${(result.heapPerStream / 1024).toFixed(2)} KB, RSS ${(result.rssPerStream / 1024).toFixed(2)} KB per ${legacy ? 'session' : 'stream'}`);

    const k = notificationsFor(n);
    await pass(server, loadgen, n, Math.max(10, Math.round(k / 10)));
    await sleep(200);
    if (profileDir !== undefined) await server.profile(true, 'pass');
    result.throughput = await pass(server, loadgen, n, k);
    if (profileDir !== undefined) await server.profile(false, 'pass');
    const tp = result.throughput;
    log(`${era} ${peerId} N=${n}: K=${tp.k} ${Math.round(tp.fps).toLocaleString('en-US')} frames/s, ${tp.cpuPerFrame.toFixed(2)} µs CPU/frame (busy ${Math.round(tp.serverBusy * 100)} % / ${Math.round(tp.loadgenBusy * 100)} %)${tp.complete ? '' : `, INCOMPLETE, lost ${tp.lost}`}`);

    if (LATENCY_ROUNDS > 0) {
      await sleep(200);
      result.latency = await latency(server, loadgen, latencyRoundsFor(n), 2);
      log(`${era} ${peerId} N=${n}: latency p50 ${result.latency.p50.toFixed(1)} ms, p99 ${result.latency.p99.toFixed(1)} ms (${result.latency.rounds} rounds)`);
    }

    if (CHURN_SECONDS > 0) {
      await sleep(200);
      const cpu0 = await server.cpu();
      if (profileDir !== undefined) await server.profile(true, 'churn');
      let churning = true;
      const churn = churner.call('churn', { port, legacy, rate: CHURN_RATE, seconds: CHURN_SECONDS, inflight: CHURN_INFLIGHT, localAddress: address(procs), base: 1e8 }).finally(() => (churning = false));
      const during = await latency(server, loadgen, Infinity, 50, () => !churning);
      const counts = await churn;
      if (profileDir !== undefined) await server.profile(false, 'churn');
      const cpu1 = await server.cpu();
      let held;
      for (let i = 0; i < 50; i++) {
        await sleep(200);
        const m = await server.mem();
        held = m.streams;
        if (held === n) break;
      }
      result.churn = { ...counts, rate: counts.started / counts.seconds, serverBusy: (cpu1 - cpu0) / (counts.seconds * 1e6), cpuMsPerCycle: (cpu1 - cpu0) / 1000 / Math.max(1, counts.started), standing: during, heldAfter: held };
      log(`${era} ${peerId} N=${n}: churn ${Math.round(result.churn.rate)}/s: admitted ${counts.admitted}, refused ${counts.refused}, errors ${counts.errors}${counts.errorSamples.length ? ` (${counts.errorSamples.join('; ')})` : ''}, skipped ${counts.skipped}; standing p99 ${during.p99.toFixed(1)} ms; held after ${held}`);
    }
  } catch (error) {
    result.error = String(error?.message ?? error);
    log(`${era} ${peerId} N=${n}: FAILED ${result.error}`);
  } finally {
    await Promise.all([loadgen.close(), churner.close()]);
    await server.stop();
  }
  result.loadAtEnd = os.loadavg();
  return result;
}

// ---------- the run ----------

const versionOf = (pkg) => {
  try {
    return JSON.parse(readFileSync(here(`../node_modules/${pkg}/package.json`), 'utf8')).version;
  } catch {
    return 'missing';
  }
};
const header = [
  '# Capacity: cost per stream from 1 000 to 100 000 streams (bench/capacity.mjs)',
  '',
  `- node ${process.version} · ${os.cpus()[0]?.model ?? 'unknown cpu'} × ${os.cpus().length} cores · ${os.platform()} ${os.arch()} · ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB · load average at start ${os.loadavg().map((v) => v.toFixed(2)).join(' ')} · rxjs ${versionOf('rxjs')}`,
  `- ours: ${BUILD.text}${values.label === undefined ? '' : ` — ${values.label}`}`,
  `- descriptors: \`ulimit -n\` ${softText} per process (hard ${hardText}): one server process holds fewer than ${FD_LIMIT.toLocaleString('en-US')} streams, so N ≤ ${MAX_SINGLE.toLocaleString('en-US')} runs on one process and N above it on node:cluster, ⌈N / ${PER_WORKER.toLocaleString('en-US')}⌉ workers plus the primary (${NS.filter((n) => n > MAX_SINGLE).map((n) => `${workersFor(n)} at N=${n.toLocaleString('en-US')}`).join(', ') || 'none in this run'}); the baseline and the ceiling are single processes and stop at ${MAX_SINGLE.toLocaleString('en-US')}`,
  `- load generators: ⌈N / ${PER_LOADGEN.toLocaleString('en-US')}⌉ processes, each on its own loopback source address; every stream on 1 URI; K notifications per stream = ${FRAMES.toLocaleString('en-US')} / N (20–1000) with a window of two, alternating resources/updated and tools/list_changed; latency rounds = ${LATENCY_FRAMES.toLocaleString('en-US')} / N (10–${LATENCY_ROUNDS}); churn ${CHURN_RATE}/s for ${CHURN_SECONDS} s (at most ${CHURN_INFLIGHT} in flight); one session per point, all processes (server, load generators, other users) share the ${os.cpus().length} cores`,
];
console.log(header.join('\n'));

const results = [];
for (const n of NS) {
  for (const era of ERAS) {
    for (const peerId of PEER_IDS) {
      if (PEERS[peerId].single && n > MAX_SINGLE) continue;
      results.push(await point(era, peerId, n));
    }
  }
}

// ---------- tables ----------

const fmt = {
  int: (v) => (Number.isFinite(v) ? Math.round(v).toLocaleString('en-US') : '—'),
  n: (v, digits = 2) => (Number.isFinite(v) ? v.toFixed(digits) : '—'),
  us: (v) => (Number.isFinite(v) ? (v < 10 ? v.toFixed(2) : v.toFixed(1)) : '—'),
  ms: (v) => (Number.isFinite(v) ? (v < 10 ? v.toFixed(2) : v.toFixed(1)) : '—'),
  kb: (v) => (Number.isFinite(v) ? (v / 1024).toFixed(2) : '—'),
  pct: (v) => (Number.isFinite(v) ? `${Math.round(v * 100)} %` : '—'),
  ratio: (v, base) => (Number.isFinite(v) && Number.isFinite(base) && base !== 0 ? `${(v / base).toFixed(2)}×` : '—'),
};
const table = (headers, rows) => [`| ${headers.join(' | ')} |`, `|${headers.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
const setupOf = (r) => (r.workers === 0 ? '1 process' : `${r.workers} workers + primary`);

const out = [];
for (const era of ERAS) {
  const rows = results.filter((r) => r.era === era);
  if (rows.length === 0) continue;
  const unit = era === 'legacy' ? 'session' : 'stream';
  const get = (peer, n) => rows.find((r) => r.peer === peer && r.n === n && !r.error);
  out.push('', `## ${era === 'legacy' ? 'Legacy sessions (initialize, GET /mcp stream, resources/subscribe)' : 'Listen streams (subscriptions/listen)'}`, '');
  out.push(
    table(
      ['N · peer', 'server', 'open N (s)', `heap KB/${unit}`, `RSS KB/${unit}`, 'frames/s', 'CPU µs/frame', 'busy server / load gen', 'p50 ms', 'p99 ms (rounds)', 'load avg'],
      rows.map((r) =>
        r.error
          ? [`N=${fmt.int(r.n)} · ${PEERS[r.peer].label}`, setupOf(r), `failed: ${r.error}`, '', '', '', '', '', '', '', fmt.n(r.loadAtStart[0], 1)]
          : [
              `N=${fmt.int(r.n)} · ${PEERS[r.peer].label}`,
              setupOf(r),
              fmt.n(r.openSeconds, 1),
              fmt.kb(r.heapPerStream),
              fmt.kb(r.rssPerStream),
              `${fmt.int(r.throughput?.fps)}${r.throughput?.complete === false ? ' (incomplete)' : ''}`,
              fmt.us(r.throughput?.cpuPerFrame),
              `${fmt.pct(r.throughput?.serverBusy)} / ${fmt.pct(r.throughput?.loadgenBusy)}`,
              fmt.ms(r.latency?.p50),
              r.latency === undefined ? '—' : `${fmt.ms(r.latency.p99)} (${r.latency.rounds})`,
              fmt.n(r.loadAtStart[0], 1),
            ],
      ),
    ),
  );
  // Ours beside the single-process peers at the same N: CPU per frame, heap, p99.
  const shared = [...new Set(rows.filter((r) => r.peer === 'ours').map((r) => r.n))].filter((n) => get('baseline', n) || get('ceiling', n));
  if (shared.length > 0 && get('ours', shared[0])) {
    out.push('', `Ours beside the peers of the same run (ratios of this session's figures; below 1 is less):`, '');
    out.push(
      table(
        ['N', 'frames/s ÷ baseline', 'frames/s ÷ ceiling', 'CPU/frame ÷ baseline', 'CPU/frame ÷ ceiling', 'heap ÷ baseline', 'heap ÷ ceiling', 'p99 ÷ baseline', 'p99 ÷ ceiling'],
        shared.map((n) => {
          const o = get('ours', n);
          const b = get('baseline', n);
          const c = get('ceiling', n);
          return [
            fmt.int(n),
            fmt.ratio(o?.throughput?.fps, b?.throughput?.fps),
            fmt.ratio(o?.throughput?.fps, c?.throughput?.fps),
            fmt.ratio(o?.throughput?.cpuPerFrame, b?.throughput?.cpuPerFrame),
            fmt.ratio(o?.throughput?.cpuPerFrame, c?.throughput?.cpuPerFrame),
            fmt.ratio(o?.heapPerStream, b?.heapPerStream),
            fmt.ratio(o?.heapPerStream, c?.heapPerStream),
            fmt.ratio(o?.latency?.p99, b?.latency?.p99),
            fmt.ratio(o?.latency?.p99, c?.latency?.p99),
          ];
        }),
      ),
    );
  }
  const churned = rows.filter((r) => r.churn !== undefined);
  if (churned.length > 0) {
    out.push('', `Churn: ${CHURN_RATE} short ${era === 'legacy' ? 'sessions (initialize, GET, close, DELETE)' : 'listens (open, ack, close)'} per second for ${CHURN_SECONDS} s beside the N standing ones, one notification to the N every round:`, '');
    out.push(
      table(
        ['N · peer', 'cycles/s', 'admitted', 'refused', 'errors', `skipped (${CHURN_INFLIGHT} in flight)`, 'open→ack p50 / p99 ms', 'standing p50 / p99 ms', 'server busy', 'server CPU ms/cycle', 'GET streams held after'],
        churned.map((r) => {
          const c = r.churn;
          const refused = c.refused === 0 ? '0' : `${c.refused} (${Object.entries(c.refusedBy).map(([s, v]) => `${s}: ${v}`).join(', ')})`;
          return [
            `N=${fmt.int(r.n)} · ${PEERS[r.peer].label}`,
            fmt.int(c.rate),
            fmt.int(c.admitted),
            refused,
            `${fmt.int(c.errors)}${c.errorSamples.length ? ` (${c.errorSamples[0]})` : ''}`,
            fmt.int(c.skipped),
            `${fmt.ms(c.openMsP50)} / ${fmt.ms(c.openMsP99)}`,
            `${fmt.ms(c.standing.p50)} / ${fmt.ms(c.standing.p99)}`,
            fmt.pct(c.serverBusy),
            fmt.n(c.cpuMsPerCycle),
            `${fmt.int(c.heldAfter)} of ${fmt.int(r.n)}`,
          ];
        }),
      ),
    );
  }
  const clustered = rows.filter((r) => r.workers > 0 && !r.error);
  if (clustered.length > 0) {
    out.push('', `Where the memory is, cluster points (after GC): the primary's growth per ${unit} of N, each worker's per stream it holds:`, '');
    out.push(
      table(
        ['N', 'primary heap / RSS KB', 'each worker: heap / RSS KB per stream held', 'streams held per worker'],
        clustered.map((r) => {
          const [primary, ...workers] = r.processes;
          return [
            fmt.int(r.n),
            `${fmt.kb(primary.heapPerStream)} / ${fmt.kb(primary.rssPerStream)}`,
            workers.map((w) => `${fmt.kb(w.heapDelta / w.streams)} / ${fmt.kb(w.rssDelta / w.streams)}`).join(', '),
            workers.map((w) => fmt.int(w.streams)).join(', '),
          ];
        }),
      ),
    );
  }
}
const seconds = (performance.now() - started) / 1000;
out.push('', `_${Math.round(seconds)} s; load average at the end ${os.loadavg().map((v) => v.toFixed(2)).join(' ')}; \`node bench/capacity.mjs ${argv.join(' ')}\`_`);
const body = out.join('\n');
console.log(body);
mkdirSync(OUT, { recursive: true });
writeFileSync(path.join(OUT, 'table.md'), `${header.join('\n')}\n${body}\n`);
writeFileSync(
  path.join(OUT, 'results.json'),
  JSON.stringify({ command: `node bench/capacity.mjs ${argv.join(' ')}`.trim(), build: BUILD, seconds: Math.round(seconds), config: { ns: NS, eras: ERAS, peers: PEER_IDS, maxSingle: MAX_SINGLE, perWorker: PER_WORKER, perLoadgen: PER_LOADGEN, frames: FRAMES, latencyFrames: LATENCY_FRAMES, latencyRounds: LATENCY_ROUNDS, churnSeconds: CHURN_SECONDS, churnRate: CHURN_RATE, fdLimit: FD_LIMIT }, results }, null, 1),
);
log(`wrote ${path.relative(process.cwd(), OUT)}/table.md and results.json`);
