// Cross-node fan-out (issue 5): what a Redis hop costs when a notification published on one node
// reaches listen streams served by other nodes, next to the same workload on a single node.
//
// Method. Every repetition starts fresh processes, all on this machine, talking over loopback:
//   single node  one server process (Hub + McpEndpoint + nodeHandler, no Redis) holding all N
//                streams; it publishes itself (hub.notifyResourceUpdated).
//   fleet        a redis-server, one publisher process (a Hub on a RedisBus, no streams), two
//                serving processes (Hub on a RedisBus + McpEndpoint) holding N/2 streams each;
//                the publisher's notifications reach the streams only through Redis (the bus's stream:
//                XADD on the publisher, XREAD + a read script on each serving node).
//   relay        the same with one serving process holding all N streams: the cost of the Redis
//                hop alone (the fleet row also gains a second core for serving).
// A separate load-generator process opens the N `subscriptions/listen` streams on raw TCP
// sockets and only counts `data:` occurrences (Buffer#indexOf, never JSON.parse). This process
// only orchestrates over IPC. Times are process.hrtime (CLOCK_MONOTONIC, shared by every process
// on the machine).
//   throughput  K notifications on one URI, published in batches of B with a window of two
//               batches: batch r+2 is published once every stream has all of batch r, so the
//               pipeline stays full but no stream's queue grows (nothing is coalesced or dropped,
//               which is checked). Delivered frames/s = N·K / (first publish → the last stream's
//               K-th frame). One warm-up pass, then the measured pass.
//   latency     one notification per round, from just before the publish call to the moment the
//               last of the N streams has it; p50 and p99 over R rounds.
// Figures are medians over the repetitions; the ratio is fleet / single node from the same run.
//
//   npm run build && node bench/fleet.mjs                 defaults: N 1000, K 2000, B 50, R 50, 3 repetitions
//   node bench/fleet.mjs --n 1000 --k 1000 --reps 5
import { fork, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SELF = fileURLToPath(import.meta.url);
const URI = 'file:///srv/bench/fleet/config.json';
const now = () => Number(process.hrtime.bigint());
const argv = process.argv.slice(2);
const option = (name, fallback) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : fallback;
};
const role = option('role');


// ---------------------------------------------------------------- node processes

/** A serving node: Hub (on a RedisBus with --redis), McpEndpoint, node:http on a free port. */
async function runServer() {
  const { Hub, McpEndpoint, nodeHandler, channels } = await import('../dist/index.js');
  const redis = option('redis');
  const bus = redis === undefined ? undefined : new (await import('../dist/adapters/redis/index.js')).RedisBus({ redis });
  // The publisher sends the same notification k times in one turn: coalesce: false, so that every
  // one is relayed and delivered (a hub collapses such a storm by default).
  const hub = new Hub(bus === undefined ? { coalesce: false } : { bus, coalesce: false });
  const endpoint = new McpEndpoint({ hub, capabilities: { tools: true, resources: true }, maxStreams: 1_000_000, maxListensPerPrincipal: 1_000_000 });
  let drops = 0;
  channels.drop.subscribe(() => drops++);
  const server = http.createServer(nodeHandler(endpoint));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  await bus?.ready();
  serveCommands(hub, { port: server.address().port }, () => ({ drops, streams: endpoint.stats.streams, bus: bus?.stats }));
}

/** The fleet's publisher: a Hub on a RedisBus and nothing else. */
async function runPublisher() {
  const { Hub } = await import('../dist/index.js');
  const { RedisBus } = await import('../dist/adapters/redis/index.js');
  const bus = new RedisBus({ redis: option('redis') });
  const hub = new Hub({ bus, coalesce: false });
  await bus.ready();
  serveCommands(hub, {}, () => ({ bus: bus.stats }));
}

function serveCommands(hub, hello, stats) {
  process.on('message', ({ id, command, args }) => {
    let result;
    switch (command) {
      case 'publish': {
        const t = now();
        for (let i = 0; i < args.k; i++) hub.notifyResourceUpdated(URI);
        result = { t };
        break;
      }
      case 'stats':
        result = stats();
        break;
      case 'exit':
        process.exit(0);
    }
    process.send({ id, result });
  });
  process.send({ id: 0, result: hello });
}

// ---------------------------------------------------------------- load generator

const DATA = Buffer.from('data:');

function countIn(buffer, needle) {
  let n = 0;
  for (let i = buffer.indexOf(needle); i !== -1; i = buffer.indexOf(needle, i + needle.length)) n++;
  return n;
}

async function runLoadgen() {
  const conns = [];
  // Tells the orchestrator each time every stream has reached the next multiple of `step` frames.
  let watch;
  const arm = (step, target) => {
    watch = { step, target, next: step, below: conns.length };
  };
  const reached = (conn) => {
    if (watch === undefined || conn.frames < watch.next || conn.counted >= watch.next) return;
    conn.counted = watch.next;
    watch.below--;
    while (watch !== undefined && watch.below === 0) {
      process.send({ event: 'reached', frames: watch.next, t: now() });
      if (watch.next >= watch.target) {
        watch = undefined;
        return;
      }
      watch.next += watch.step;
      for (const c of conns) {
        if (c.frames >= watch.next) c.counted = watch.next;
        else watch.below++;
      }
    }
  };
  const open = (port, i) =>
    new Promise((resolve, reject) => {
      const body = JSON.stringify({
        jsonrpc: '2.0',
        id: `listen:${i}`,
        method: 'subscriptions/listen',
        params: { notifications: { resourceSubscriptions: [URI] } },
      });
      const socket = net.connect({ port, host: '127.0.0.1' });
      const conn = { socket, frames: 0, counted: 0, tail: Buffer.alloc(0), ok: false };
      socket.setNoDelay(true);
      socket.on('connect', () =>
        socket.write(
          `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n` +
            `Accept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2026-07-28\r\n` +
            `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
        ),
      );
      socket.on('error', reject);
      socket.on('data', (chunk) => {
        let d = countIn(chunk, DATA);
        if (conn.tail.length > 0) d += countIn(Buffer.concat([conn.tail, chunk.subarray(0, DATA.length - 1)]), DATA);
        conn.tail = chunk.subarray(Math.max(0, chunk.length - (DATA.length - 1)));
        if (d === 0) return;
        conn.frames += d;
        if (!conn.ok) {
          conn.ok = true;
          resolve(conn);
        }
        reached(conn);
      });
    });
  process.on('message', async ({ id, command, args }) => {
    let result;
    switch (command) {
      case 'open': {
        // args.ports: streams are split evenly over them; 200 opening at a time.
        for (let i = 0; i < args.n; i += 200) {
          const batch = [];
          for (let j = i; j < Math.min(args.n, i + 200); j++) batch.push(open(args.ports[j % args.ports.length], j));
          conns.push(...(await Promise.all(batch)));
        }
        result = { opened: conns.length };
        break;
      }
      case 'reset':
        for (const conn of conns) {
          conn.frames = 0;
          conn.counted = 0;
        }
        watch = undefined;
        result = {};
        break;
      case 'watch':
        arm(args.step, args.target);
        result = {};
        break;
      case 'counts': {
        let min = Infinity;
        let max = 0;
        for (const conn of conns) {
          min = Math.min(min, conn.frames);
          max = Math.max(max, conn.frames);
        }
        result = { min, max };
        break;
      }
      case 'exit':
        for (const conn of conns) conn.socket.destroy();
        process.exit(0);
    }
    process.send({ id, result });
  });
  process.send({ id: 0, result: {} });
}

// ---------------------------------------------------------------- orchestration

function child(roleName, args = []) {
  const proc = fork(SELF, ['--role', roleName, ...args], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  let nextId = 1;
  const pending = new Map();
  const listeners = new Set();
  let hello;
  const ready = new Promise((resolve, reject) => {
    hello = resolve;
    proc.once('exit', (code) => reject(new Error(`${roleName} exited (${code}) before it was ready`)));
  });
  proc.on('message', (message) => {
    if (message.event !== undefined) {
      for (const listener of listeners) listener(message);
      return;
    }
    if (message.id === 0) return hello(message.result);
    pending.get(message.id)?.(message.result);
    pending.delete(message.id);
  });
  return {
    ready,
    call: (command, args) =>
      new Promise((resolve) => {
        const id = nextId++;
        pending.set(id, resolve);
        proc.send({ id, command, args });
      }),
    on: (listener) => listeners.add(listener),
    off: (listener) => listeners.delete(listener),
    stop: async () => {
      if (proc.exitCode !== null) return;
      const exited = new Promise((resolve) => proc.once('exit', resolve));
      proc.send({ command: 'exit' });
      await Promise.race([exited, sleep(2000).then(() => proc.kill('SIGKILL'))]);
    },
  };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const quantile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
};

/** Waits for the load generator's `reached` event for `frames`; returns its time. */
function whenReached(loadgen, frames, ms = 20_000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      loadgen.off(listener);
      reject(new Error(`the streams did not all reach ${frames} frames within ${ms} ms`));
    }, ms);
    const listener = (message) => {
      if (message.event !== 'reached' || message.frames !== frames) return;
      clearTimeout(timer);
      loadgen.off(listener);
      resolve(message.t);
    };
    loadgen.on(listener);
  });
}

/** K notifications in batches of B, at most two batches ahead of the slowest stream. */
async function throughput(publisher, loadgen, { n, k, b }) {
  await loadgen.call('reset');
  await loadgen.call('watch', { step: b, target: k });
  const batches = Math.ceil(k / b);
  const done = whenReached(loadgen, batches * b, 60_000);
  let t0;
  let published = 0;
  const publish = async () => {
    published++;
    const { t } = await publisher.call('publish', { k: b });
    t0 ??= t;
  };
  const onReached = (message) => {
    if (message.event === 'reached' && published < batches) publish();
  };
  loadgen.on(onReached);
  await publish();
  await publish();
  const t1 = await done;
  loadgen.off(onReached);
  const { min, max } = await loadgen.call('counts');
  return { fps: (n * batches * b) / ((t1 - t0) / 1e9), exact: min === batches * b && max === batches * b };
}

async function latency(publisher, loadgen, rounds) {
  await loadgen.call('reset');
  await loadgen.call('watch', { step: 1, target: rounds });
  const samples = [];
  for (let r = 1; r <= rounds; r++) {
    const reached = whenReached(loadgen, r);
    const { t } = await publisher.call('publish', { k: 1 });
    samples.push(((await reached) - t) / 1e6);
    await sleep(2);
  }
  return { p50: quantile(samples, 0.5), p99: quantile(samples, 0.99) };
}

async function startRedis() {
  const port = await new Promise((resolve) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const { port: free } = probe.address();
      probe.close(() => resolve(free));
    });
  });
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mcp-rx-bench-redis-'));
  const proc = spawn(process.env.REDIS_SERVER ?? 'redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], {
    stdio: 'ignore',
  });
  const failed = new Promise((_, reject) => proc.once('error', (error) => reject(new Error(`redis-server could not start (${error.message}); Debian: apt-get install redis-server`))));
  for (let i = 0; ; i++) {
    const up = await Promise.race([
      failed,
      new Promise((resolve) => {
        const socket = net.connect(port, '127.0.0.1', () => (socket.destroy(), resolve(true)));
        socket.on('error', () => resolve(false));
      }),
    ]);
    if (up) break;
    if (i > 250) throw new Error('redis-server did not start within 5 s');
    await sleep(20);
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    stop: async () => {
      const exited = new Promise((resolve) => proc.once('exit', resolve));
      proc.kill('SIGKILL');
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** One repetition of one setup: fresh processes, warm-up, throughput, latency. */
async function repetition(setup, config) {
  const stops = [];
  try {
    let publisher;
    let ports;
    if (setup === 'single') {
      const server = child('server');
      stops.push(server.stop);
      ports = [(await server.ready).port];
      publisher = server;
    } else {
      const redis = await startRedis();
      stops.push(redis.stop);
      const servers = Array.from({ length: setup === 'fleet' ? 2 : 1 }, () => child('server', ['--redis', redis.url]));
      publisher = child('publisher', ['--redis', redis.url]);
      stops.push(...servers.map((s) => s.stop), publisher.stop);
      ports = (await Promise.all(servers.map((s) => s.ready))).map((hello) => hello.port);
      await publisher.ready;
    }
    const loadgen = child('loadgen');
    stops.unshift(loadgen.stop);
    await loadgen.ready;
    const { opened } = await loadgen.call('open', { n: config.n, ports });
    if (opened !== config.n) throw new Error(`opened ${opened}/${config.n} streams`);
    await sleep(200);
    await throughput(publisher, loadgen, { ...config, k: Math.max(config.b * 2, Math.round(config.k / 10)) });
    await sleep(100);
    const pass = await throughput(publisher, loadgen, config);
    await sleep(100);
    const lat = await latency(publisher, loadgen, config.rounds);
    return { ...pass, ...lat };
  } finally {
    for (const stop of stops) await stop();
  }
}

async function orchestrate() {
  const config = {
    n: Number(option('n', 1000)),
    k: Number(option('k', 2000)),
    b: Number(option('b', 50)),
    rounds: Number(option('rounds', 50)),
    reps: Number(option('reps', 3)),
  };
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  console.log(`node ${process.version}, ${cpu} (${os.cpus().length} cores), ${os.platform()} ${os.release()}, load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')} at start`);
  console.log(`N ${config.n} streams, K ${config.k} notifications in batches of ${config.b}, ${config.rounds} latency rounds, ${config.reps} repetitions`);
  const results = { single: [], fleet: [], relay: [] };
  for (let rep = 1; rep <= config.reps; rep++) {
    for (const setup of Object.keys(results)) {
      const result = await repetition(setup, config);
      results[setup].push(result);
      console.log(
        `  rep ${rep} ${setup.padEnd(6)} ${Math.round(result.fps).toLocaleString('en-US')} frames/s, p50 ${result.p50.toFixed(2)} ms, p99 ${result.p99.toFixed(2)} ms${result.exact ? '' : ' (NOT every frame delivered exactly once)'}`,
      );
    }
  }
  const summary = Object.fromEntries(
    Object.entries(results).map(([setup, runs]) => [
      setup,
      { fps: median(runs.map((r) => r.fps)), p50: median(runs.map((r) => r.p50)), p99: median(runs.map((r) => r.p99)), exact: runs.every((r) => r.exact) },
    ]),
  );
  const { single, fleet, relay } = summary;
  const fmt = (x) => Math.round(x).toLocaleString('en-US');
  const ms = (x) => x.toFixed(2);
  console.log('');
  console.log(`| setup (${config.n} listen streams) | delivered frames/s | latency p50 ms | latency p99 ms | every frame once |`);
  console.log('|---|---:|---:|---:|:---:|');
  console.log(`| single node (in-process hub) | ${fmt(single.fps)} | ${ms(single.p50)} | ${ms(single.p99)} | ${single.exact ? 'yes' : 'no'} |`);
  console.log(`| fleet: 1 publisher + 2 serving nodes on Redis | ${fmt(fleet.fps)} | ${ms(fleet.p50)} | ${ms(fleet.p99)} | ${fleet.exact ? 'yes' : 'no'} |`);
  console.log(`| ratio fleet / single | ${(fleet.fps / single.fps).toFixed(2)}× | ${(fleet.p50 / single.p50).toFixed(2)}× | ${(fleet.p99 / single.p99).toFixed(2)}× | |`);
  console.log(`| relay: 1 publisher + 1 serving node on Redis | ${fmt(relay.fps)} | ${ms(relay.p50)} | ${ms(relay.p99)} | ${relay.exact ? 'yes' : 'no'} |`);
  console.log(`| ratio relay / single | ${(relay.fps / single.fps).toFixed(2)}× | ${(relay.p50 / single.p50).toFixed(2)}× | ${(relay.p99 / single.p99).toFixed(2)}× | |`);
  console.log('');
  console.log(`Medians of ${config.reps} repetitions (fresh processes each). Latency: publish call → the last of the ${config.n} streams has the frame.`);
}

// Last: the helpers above are initialized before any role runs.
if (role === undefined) await orchestrate();
else {
  // A child never outlives the orchestrator.
  process.on('disconnect', () => process.exit(0));
  if (role === 'server') await runServer();
  else if (role === 'publisher') await runPublisher();
  else if (role === 'loadgen') await runLoadgen();
}
