// Every core of one machine (issue 26): fan-out through `mcp-rx-streams/cluster` with 1 and 2
// workers next to one plain process, in the same run, for N listen streams and N legacy sessions.
//
// Method. Every setup starts fresh processes on this machine, all talking over loopback:
//   plain       one process: Hub + McpEndpoint + nodeHandler, no cluster (the reference point);
//   1 worker    a node:cluster primary (clusterPrimary) and one worker (clusterWorker: the hub's
//               events, the slots and caps, the sessions' records and replay logs through the
//               primary, over IPC): what the cluster costs before it buys a second core;
//   2 workers   the same with two workers on the shared port (node:cluster hands them the
//               connections in turn, so each serves about N/2).
// The publisher is worker 1 (in a cluster, one worker publishes: the one watching the folder);
// worker 2 hears its events through the primary. The load generator (bench/loadgen.mjs through
// bench/harness.mjs) opens the N streams or sessions on raw sockets and only counts `data:`.
//   throughput  R rounds of B notifications (B distinct URIs in one event-loop turn, alternating
//               between two sets of B so that no stream ever holds two identical pending ones),
//               with a window of two rounds: round r+1 is published, then the run waits until every
//               stream has all of round r. Delivered frames/s = N·B·R / (first publish → the last
//               stream's last frame); nothing may be lost (the load generator counts every frame).
//   CPU         process.cpuUsage() of every server process (primary and workers) and of the load
//               generator over the measured pass: server CPU µs per delivered frame, and each
//               process's busy share of the wall time. On a 2-core box the load generator and the
//               primary compete with the workers for the two cores: read the server CPU per frame,
//               not only the frames/s.
//   IPC cost    the primary's CPU per publish (it relays each hub event to the other worker and, for
//               sessions, logs every session's frame); and, alone, K hub events on a URI nobody
//               listens to from worker 1 to worker 2 through the primary: CPU µs per event of the
//               publishing worker, the primary and the receiving worker.
//   memory      each worker's heap (after two full GCs) before and after the N are open, per
//               stream or session it holds; the primary's heap growth per session (records, logs).
//
//   npm run build && node bench/cluster.mjs                    N 10 000, B 2, R 60, both kinds
//   node bench/cluster.mjs --n 2000 --rounds 20 --kinds listen   a quicker look
//   BENCH_WORKER_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" node bench/cluster.mjs --workers 1 --kinds legacy
//                                              a CPU profile of the workers (BENCH_SERVER_ARGS: of the
//                                              plain process or the primary)
//   BENCH_PROFILE=/tmp/prof node bench/cluster.mjs …   a CPU profile of each server process during
//                                              the measured passes only (pass-<pid>.cpuprofile)
//   BENCH_DIST=file:///…/index.js              the build to serve (a copy of a dist/, bench/build.mjs);
//                                              default this checkout's dist/
// bench/capacity.mjs runs the roles below (plain, primary + workers) as its servers.
import cluster from 'node:cluster';
import { fork } from 'node:child_process';
import http from 'node:http';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { loadgenPool } from './harness.mjs';
import { uris } from './peers/common.mjs';

const SELF = fileURLToPath(import.meta.url);
const argv = process.argv.slice(2);
const option = (name, fallback) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : fallback;
};
const role = option('role');
const now = () => Number(process.hrtime.bigint());
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const LIMITS = { maxStreams: 1_000_000, maxListensPerPrincipal: 1_000_000, maxSessions: 1_000_000, maxSessionsPerPrincipal: 1_000_000 };
const NOBODY = 'file:///srv/bench/nobody-listens';
// The build served: BENCH_DIST (a file: URL of a copied dist/index.js) or this checkout's dist/.
const DIST = process.env.BENCH_DIST ?? new URL('../dist/index.js', import.meta.url).href;
const distFile = (file) => new URL(file, DIST).href;

function heap() {
  global.gc?.();
  global.gc?.();
  return process.memoryUsage().heapUsed;
}

const cpuUs = () => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

// ---------------------------------------------------------------- server processes

/** What one serving process (plain, or a worker) answers. */
function serving(hub, endpoint, bus) {
  return {
    publish: ({ list }) => {
      const t = now();
      for (const uri of list) hub.notifyResourceUpdated(uri);
      return { t };
    },
    publishTools: () => {
      const t = now();
      hub.notifyToolsChanged();
      return { t };
    },
    relay: async ({ k }) => {
      // k events on a URI nobody listens to, 1000 per turn: the relay alone.
      for (let i = 0; i < k; i += 1000) {
        for (let j = i; j < Math.min(k, i + 1000); j++) hub.notifyResourceUpdated(NOBODY);
        await new Promise((resolve) => setImmediate(resolve));
      }
      return {};
    },
    received: () => ({ received: bus?.stats.received ?? 0 }),
    cpu: () => ({ us: cpuUs() }),
    mem: () => ({ heap: heap(), rss: process.memoryUsage().rss, streams: endpoint.stats.streams, sessions: endpoint.stats.sessions }),
    profile: ({ start, name }) => profile(start, name),
  };
}

let inspector;
/** BENCH_PROFILE=DIR: a CPU profile of the measured pass alone, one file per serving process. */
async function profile(start, name = 'pass') {
  const dir = process.env.BENCH_PROFILE;
  if (dir === undefined) return {};
  const { Session } = await import('node:inspector/promises');
  if (start) {
    inspector = new Session();
    inspector.connect();
    await inspector.post('Profiler.enable');
    await inspector.post('Profiler.start');
    return {};
  }
  const { profile: taken } = await inspector.post('Profiler.stop');
  const { writeFile } = await import('node:fs/promises');
  inspector.disconnect();
  await writeFile(`${dir}/${name}-${process.pid}.cpuprofile`, JSON.stringify(taken));
  return {};
}

async function endpointOn(parts) {
  const { Hub, McpEndpoint, nodeHandler } = await import(DIST);
  const hub = new Hub(parts === undefined ? {} : { bus: parts.bus });
  const endpoint = new McpEndpoint({ hub, capabilities: { tools: true, resources: true }, ...LIMITS, ...(parts?.endpointOptions ?? {}) });
  const server = http.createServer(nodeHandler(endpoint));
  server.keepAliveTimeout = 0;
  server.headersTimeout = 0;
  server.requestTimeout = 0;
  await new Promise((resolve) => server.listen(Number(option('port', 0)), '127.0.0.1', resolve));
  return { hub, endpoint, port: server.address().port };
}

/** `--role plain`: one process; commands from the orchestrator. */
async function runPlain() {
  const { hub, endpoint, port } = await endpointOn(undefined);
  const answers = serving(hub, endpoint, undefined);
  process.on('message', async ({ id, command, args }) => process.send({ id, result: await answers[command](args) }));
  process.send({ id: 0, result: { port } });
}

/** `--role primary --workers W`: the machine's primary, forwarding the orchestrator's commands. */
async function runPrimary() {
  const { clusterPrimary } = await import(distFile('adapters/cluster/index.js'));
  const count = Number(option('workers', 2));
  const primary = clusterPrimary({ ...LIMITS });
  cluster.setupPrimary({ exec: SELF, args: ['--role', 'worker'], execArgv: ['--expose-gc', '--max-old-space-size=4096', ...(process.env.BENCH_WORKER_ARGS?.split(' ').filter(Boolean) ?? [])], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const workers = Array.from({ length: count }, () => cluster.fork());
  let port;
  await new Promise((resolve) => {
    let up = 0;
    cluster.on('listening', (_worker, address) => {
      port = address.port;
      if (++up === count) resolve();
    });
  });
  let nextId = 1;
  const pending = new Map();
  cluster.on('message', (_worker, message) => {
    if (message?.benchReply === undefined) return;
    pending.get(message.benchReply.id)?.(message.benchReply.result);
    pending.delete(message.benchReply.id);
  });
  const ask = (worker, command, args) =>
    new Promise((resolve) => {
      const id = nextId++;
      pending.set(id, resolve);
      worker.send({ bench: { id, command, args } });
    });
  const all = (command, args) => Promise.all(workers.map((worker) => ask(worker, command, args)));
  const answers = {
    publish: (args) => ask(workers[0], 'publish', args),
    publishTools: (args) => ask(workers[0], 'publishTools', args),
    cpu: async () => ({ primary: cpuUs(), workers: (await all('cpu')).map((r) => r.us) }),
    mem: async () => ({ primary: heap(), primaryRss: process.memoryUsage().rss, workers: await all('mem') }),
    stats: () => primary.stats,
    profile: async (args) => (await Promise.all([all('profile', args), profile(args.start, args.name)]), {}),
    relay: async ({ k }) => {
      // From worker 1 to the others through the primary; done when the last worker has them all.
      const before = await all('received');
      const cpu0 = await answers.cpu();
      const t0 = now();
      await ask(workers[0], 'relay', { k });
      const target = before.map((r, i) => r.received + (i === 0 ? 0 : k));
      for (;;) {
        const got = await all('received');
        if (got.every((r, i) => r.received >= target[i])) break;
        await sleep(2);
      }
      const t1 = now();
      const cpu1 = await answers.cpu();
      return { ms: (t1 - t0) / 1e6, primary: cpu1.primary - cpu0.primary, workers: cpu1.workers.map((us, i) => us - cpu0.workers[i]) };
    },
  };
  process.on('message', async ({ id, command, args }) => process.send({ id, result: await answers[command](args) }));
  process.send({ id: 0, result: { port } });
}

/** `--role worker`: one worker of the primary above. */
async function runWorker() {
  const { clusterWorker } = await import(distFile('adapters/cluster/index.js'));
  const parts = await clusterWorker();
  const { hub, endpoint } = await endpointOn(parts);
  const answers = serving(hub, endpoint, parts.bus);
  process.on('message', async (message) => {
    if (message?.bench === undefined) return;
    const { id, command, args } = message.bench;
    process.send({ benchReply: { id, result: await answers[command](args) } });
  });
}

// ---------------------------------------------------------------- orchestration

function server(workers) {
  const proc = fork(SELF, workers === 0 ? ['--role', 'plain'] : ['--role', 'primary', '--workers', String(workers)], {
    execArgv: ['--expose-gc', '--max-old-space-size=4096', ...(process.env.BENCH_SERVER_ARGS?.split(' ').filter(Boolean) ?? [])],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let nextId = 1;
  const pending = new Map();
  let hello;
  const ready = new Promise((resolve) => (hello = resolve));
  proc.on('message', (message) => {
    if (message.id === 0) return hello(message.result);
    pending.get(message.id)?.(message.result);
    pending.delete(message.id);
  });
  return {
    ready,
    call: (command, args = {}) =>
      new Promise((resolve) => {
        const id = nextId++;
        pending.set(id, resolve);
        proc.send({ id, command, args });
      }),
    /** CPU of every server process, µs: [primary?, ...workers] (a plain process is one worker). */
    cpu: async function () {
      const reply = await this.call('cpu');
      return workers === 0 ? { primary: 0, workers: [reply.us] } : reply;
    },
    stop: async () => {
      const exited = new Promise((resolve) => proc.once('exit', resolve));
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(timer);
    },
  };
}

const sum = (list) => list.reduce((a, b) => a + b, 0);

/** One throughput pass: R rounds of B, window of two; returns the figures. */
async function pass(srv, loadgen, { n, b, rounds }) {
  const sets = [uris(2 * b).slice(0, b), uris(2 * b).slice(b)];
  await loadgen.call('reset');
  const [cpu0, gen0] = await Promise.all([srv.cpu(), loadgen.call('cpu')]);
  const first = await srv.call('publish', { list: sets[0] });
  let complete = true;
  let t = first.t;
  for (let r = 1; r <= rounds; r++) {
    if (r < rounds) await srv.call('publish', { list: sets[r % 2] });
    const seen = await loadgen.call('expect', { target: r * b, idleMs: 5000 });
    if (!seen.complete) {
      complete = false;
      break;
    }
    // The last frame any stream received: after the last round, the end of the pass.
    t = seen.tLast;
  }
  const [cpu1, gen1] = await Promise.all([srv.cpu(), loadgen.call('cpu')]);
  const wallUs = (t - first.t) / 1000;
  const frames = n * b * rounds;
  const serverUs = cpu1.primary - cpu0.primary + sum(cpu1.workers) - sum(cpu0.workers);
  return {
    complete,
    fps: frames / (wallUs / 1e6),
    frames,
    serverCpuPerFrame: serverUs / frames,
    primaryCpuPerFrame: (cpu1.primary - cpu0.primary) / frames,
    busy: { primary: (cpu1.primary - cpu0.primary) / wallUs, workers: cpu1.workers.map((us, i) => (us - cpu0.workers[i]) / wallUs), loadgen: (gen1.us - gen0.us) / wallUs },
    loadgenCpuPerFrame: (gen1.us - gen0.us) / frames,
  };
}

async function setup(workers, kind, config) {
  const srv = server(workers);
  const loadgen = loadgenPool(1);
  try {
    const { port } = await srv.ready;
    await loadgen.ready;
    const before = await srv.call('mem');
    const opened = await loadgen.call('open', { port, n: config.n, legacy: kind === 'legacy', uris: 2 * config.b });
    if (opened.opened !== config.n) throw new Error(`${kind} ${workers}: opened ${opened.opened}/${config.n}: ${opened.errors.join('; ')}`);
    await sleep(1000); // subscribes relayed to another worker settle
    const after = await srv.call('mem');
    const memory = memoryFigures(workers, before, after);
    await pass(srv, loadgen, { ...config, rounds: Math.max(4, Math.round(config.rounds / 5)) });
    await sleep(200);
    await srv.call('profile', { start: true });
    const measured = await pass(srv, loadgen, config);
    await srv.call('profile', { start: false });
    const relay = workers === 2 && kind === 'listen' ? await srv.call('relay', { k: config.relay }) : undefined;
    const stats = workers === 0 ? undefined : await srv.call('stats');
    return { workers, kind, openMs: opened.ms, ...measured, memory, relay, stats };
  } finally {
    await loadgen.close();
    await srv.stop();
  }
}

function memoryFigures(workers, before, after) {
  if (workers === 0) return { perStream: [(after.heap - before.heap) / Math.max(1, after.streams)], held: [after.streams], primaryPerSession: undefined };
  return {
    perStream: after.workers.map((w, i) => (w.heap - before.workers[i].heap) / Math.max(1, w.streams)),
    held: after.workers.map((w) => w.streams),
    primary: after.primary - before.primary,
  };
}

const int = (x) => Math.round(x).toLocaleString('en-US');
const us = (x) => (x < 10 ? x.toFixed(2) : x.toFixed(1));
const pct = (x) => `${Math.round(x * 100)} %`;
const kib = (bytes) => (bytes / 1024).toFixed(2);

async function orchestrate() {
  const config = {
    n: Number(option('n', 10_000)),
    b: Number(option('b', 2)),
    rounds: Number(option('rounds', 60)),
    relay: Number(option('relay', 50_000)),
  };
  const kinds = option('kinds', 'listen,legacy').split(',');
  const shapes = option('workers', '0,1,2').split(',').map(Number);
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  console.log(`node ${process.version}, ${cpu} × ${os.cpus().length} cores, ${os.platform()} ${os.release()}, load average ${os.loadavg().map((x) => x.toFixed(2)).join(' ')} at start`);
  console.log(`N ${config.n} per kind, ${config.rounds} rounds of ${config.b} notifications (window of two rounds); one load-generator process; every server process and the load generator share these cores`);
  const results = [];
  for (const kind of kinds) {
    for (const workers of shapes) {
      const result = await setup(workers, kind, config);
      results.push(result);
      process.stderr.write(`# ${kind} ${workers === 0 ? 'plain' : `${workers} worker(s)`}: ${int(result.fps)} frames/s${result.complete ? '' : ' (INCOMPLETE)'}\n`);
    }
  }
  const name = (w) => (w === 0 ? 'plain (one process, no cluster)' : `cluster, ${w} worker${w === 1 ? '' : 's'}`);
  for (const kind of kinds) {
    const rows = results.filter((r) => r.kind === kind);
    const plain = rows.find((r) => r.workers === 0);
    console.log('');
    console.log(`### ${kind === 'listen' ? `${int(config.n)} listen streams` : `${int(config.n)} legacy sessions (GET streams, event ids logged)`}`);
    console.log('');
    console.log('| setup | delivered frames/s | vs plain | server CPU µs/frame | of which the primary | busy: primary / workers / load gen | heap per stream, per worker (KiB) | every frame delivered |');
    console.log('|---|---:|---:|---:|---:|---|---|:---:|');
    for (const r of rows) {
      const busy = `${r.workers === 0 ? '–' : pct(r.busy.primary)} / ${r.busy.workers.map(pct).join(' + ')} / ${pct(r.busy.loadgen)}`;
      const heapCell = r.memory.perStream.map((bytes, i) => `${kib(bytes)} (${int(r.memory.held[i])})`).join(', ');
      console.log(
        `| ${name(r.workers)} | ${int(r.fps)} | ${plain === undefined ? '' : `${(r.fps / plain.fps).toFixed(2)}×`} | ${us(r.serverCpuPerFrame)} | ${r.workers === 0 ? '–' : us(r.primaryCpuPerFrame)} | ${busy} | ${heapCell} | ${r.complete ? 'yes' : 'NO'} |`,
      );
    }
    for (const r of rows.filter((row) => row.memory.primary !== undefined)) {
      console.log(`\n${name(r.workers)}: the primary's heap grew ${kib(r.memory.primary / config.n)} KiB per ${kind === 'listen' ? 'stream' : 'session'} (slots and admissions${kind === 'legacy' ? ', records and replay logs' : ''}); load generator ${us(r.loadgenCpuPerFrame)} µs CPU/frame.`);
    }
  }
  const relay = results.find((r) => r.relay !== undefined)?.relay;
  if (relay !== undefined) {
    console.log('');
    console.log(`### IPC cost per publish (${int(config.relay)} hub events on a URI nobody listens to, worker 1 → primary → worker 2, 1000 per turn)`);
    console.log('');
    console.log('| events/s through the primary | publishing worker µs CPU/event | primary µs CPU/event | receiving worker µs CPU/event |');
    console.log('|---:|---:|---:|---:|');
    console.log(`| ${int(config.relay / (relay.ms / 1000))} | ${us(relay.workers[0] / config.relay)} | ${us(relay.primary / config.relay)} | ${us(relay.workers[1] / config.relay)} |`);
  }
  console.log('');
  console.log(`Load average at the end ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}.`);
}

if (role === undefined) await orchestrate();
else {
  process.on('disconnect', () => process.exit(0));
  // An exit of its own, so that a --cpu-prof profile is written.
  process.on('SIGTERM', () => process.exit(0));
  if (role === 'plain') await runPlain();
  else if (role === 'primary') await runPrimary();
  else if (role === 'worker') await runWorker();
}
