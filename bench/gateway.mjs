// What the gateway (mcp-rx-streams/upstream) adds per frame, against a direct connection (issue 34).
//
// Method. Three processes: the upstream (bench/peers/gateway-upstream.mjs: an endpoint publishing on
// its own hub), the gateway (bench/peers/gateway-front.mjs: upstreamGateway over that upstream, in
// front of an endpoint of its own) and this one, the client (this library's undici `listen`). Two
// peers side by side in one run, alternated (their order rotated each repetition): `direct`, the
// client listening to the upstream, and `gateway`, the client listening to the gateway, which
// listens to the upstream. Same client, same upstream, same publishes.
//   1. Latency: one URI; SAMPLES times, one publish at a time (asked of the upstream over IPC), the
//      time until the client has the notification. Both peers pay the same IPC hop and client, so
//      the difference of the medians is the gateway's hop (its parse, hub, encode and write, and one
//      more loopback socket).
//   2. CPU per frame: URIS URIs, ROUNDS rounds of URIS distinct publishes (one round per event-loop
//      turn), then one publish of a last URI that says the rounds are through; the CPU time (user +
//      system) of each process per frame published. The gateway's is what it adds; the ratio is the
//      whole chain's (upstream + gateway + client) against the direct one's (upstream + client).
//      The client may receive fewer frames through the gateway than published: rounds that reach
//      the gateway in one socket read are parsed in one turn, where the hub's coalescing makes two
//      identical notifications one (DESIGN M10); both counts are printed.
// Medians over the repetitions; the machine, versions and load average are printed with the
// figures. On a shared machine the figures are indicative; the ratios are the point.
//   npm run bench:gateway -- [--samples 300] [--uris 100] [--rounds 50] [--repeat 3]
import { fork } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Agent } from 'undici';
import { listen } from '../dist/client.js';
import { upstreamUri } from '../dist/adapters/upstream/index.js';

const { values } = parseArgs({
  options: { samples: { type: 'string', default: '300' }, uris: { type: 'string', default: '100' }, rounds: { type: 'string', default: '50' }, repeat: { type: 'string', default: '3' } },
});
const SAMPLES = Number(values.samples);
const URIS = Number(values.uris);
const ROUNDS = Number(values.rounds);
const REPEAT = Number(values.repeat);
for (const [flag, value] of Object.entries({ samples: SAMPLES, uris: URIS, rounds: ROUNDS, repeat: REPEAT })) {
  if (!Number.isSafeInteger(value) || value < 1) throw new Error(`--${flag} must be a positive integer, got ${values[flag]}`);
}

const here = (file) => fileURLToPath(new URL(file, import.meta.url));
const say = (line) => process.stderr.write(`# ${line}\n`);

/** A child process driven over IPC: `call(cmd, args)` resolves with its answer. */
function child(script, args = []) {
  const proc = fork(here(script), args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  let seq = 0;
  const pending = new Map();
  const ready = new Promise((resolve, reject) => {
    proc.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
    proc.on('message', (message) => {
      if (message.ready) return resolve(message);
      pending.get(message.id)?.(message);
      pending.delete(message.id);
    });
  });
  const call = (cmd, callArgs) =>
    new Promise((resolve) => {
      const id = ++seq;
      pending.set(id, resolve);
      proc.send({ id, cmd, args: callArgs });
    });
  return { ready, call, kill: () => proc.kill() };
}

const cpuMicros = ({ user, system }) => user + system;
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const quantile = (values, q) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * q))];

const upstream = child('./peers/gateway-upstream.mjs');
const { url: upstreamUrl } = await upstream.ready;
const gateway = child('./peers/gateway-front.mjs', [upstreamUrl]);
const { url: gatewayUrl } = await gateway.ready;
const dispatcher = new Agent({ connections: null });
const uris = Array.from({ length: URIS }, (_, i) => `file:///bench/doc-${i}`);
const END = 'file:///bench/end';

/** One client listen on `names` at `url`: counts notifications and resolves waiters. */
async function client(url, names) {
  let received = 0;
  const heard = new Map();
  let acked;
  const ack = new Promise((resolve) => (acked = resolve));
  const waiters = [];
  const subscription = listen({ url, notifications: { resourceSubscriptions: names }, dispatcher }).subscribe({
    next: (message) => {
      if (message.method === 'notifications/subscriptions/acknowledged') return acked(message);
      if (message.method !== 'notifications/resources/updated') return;
      received++;
      heard.get(message.params.uri)?.();
      while (waiters.length > 0 && waiters[0].count <= received) waiters.shift().resolve();
    },
    error: (error) => {
      throw error;
    },
  });
  const honoured = (await ack).params.notifications.resourceSubscriptions ?? [];
  if (honoured.length !== names.length) throw new Error(`${url} honoured ${honoured.length} of ${names.length} URIs`);
  return {
    received: () => received,
    /** Resolves once `count` notifications in all have arrived. */
    reach: (count) => (received >= count ? Promise.resolve() : new Promise((resolve) => waiters.push({ count, resolve }))),
    /** Resolves at the next notification for `name`. */
    next: (name) => new Promise((resolve) => heard.set(name, resolve)),
    close: () => subscription.unsubscribe(),
  };
}

const PEERS = {
  direct: { url: upstreamUrl, name: (uri) => uri },
  gateway: { url: gatewayUrl, name: (uri) => upstreamUri('up', uri) },
};

async function latency(peer) {
  say(`${peer}: latency`);
  const listener = await client(PEERS[peer].url, [PEERS[peer].name(uris[0])]);
  const samples = [];
  try {
    // Warm-up: the paths compiled, the sockets open.
    for (let i = 0; i < 20; i++) {
      await Promise.all([upstream.call('publish', { uris: [uris[0]], rounds: 1 }), listener.reach(i + 1)]);
    }
    for (let i = 0; i < SAMPLES; i++) {
      const target = listener.received() + 1;
      const started = performance.now();
      const heard = listener.reach(target).then(() => performance.now() - started);
      await upstream.call('publish', { uris: [uris[0]], rounds: 1 });
      samples.push(await heard);
    }
  } finally {
    listener.close();
  }
  return { medianMs: median(samples), p99Ms: quantile(samples, 0.99) };
}

async function cpuPerFrame(peer) {
  say(`${peer}: CPU per frame`);
  const { name } = PEERS[peer];
  const listener = await client(PEERS[peer].url, [...uris, END].map(name));
  // Publishes `rounds` rounds, then the end marker; resolves once the client heard the marker.
  const publish = async (rounds) => {
    await upstream.call('publish', { uris, rounds });
    const end = listener.next(name(END));
    await upstream.call('publish', { uris: [END], rounds: 1 });
    await end;
  };
  try {
    await publish(2);
    const before = { upstream: (await upstream.call('cpu')).cpu, gateway: (await gateway.call('cpu')).cpu, client: process.cpuUsage() };
    const frames = ROUNDS * URIS + 1;
    const start = listener.received();
    const started = performance.now();
    await publish(ROUNDS);
    const wallMs = performance.now() - started;
    const after = { upstream: (await upstream.call('cpu')).cpu, gateway: (await gateway.call('cpu')).cpu, client: process.cpuUsage() };
    const per = (who) => (cpuMicros(after[who]) - cpuMicros(before[who])) / frames;
    return { frames, received: listener.received() - start, framesPerSecond: frames / (wallMs / 1000), upstreamUs: per('upstream'), gatewayUs: peer === 'gateway' ? per('gateway') : 0, clientUs: per('client') };
  } finally {
    listener.close();
  }
}

const versions = { node: process.version, rxjs: JSON.parse(readFileSync(here('../node_modules/rxjs/package.json'), 'utf8')).version, undici: JSON.parse(readFileSync(here('../node_modules/undici/package.json'), 'utf8')).version };
const machine = { cpu: os.cpus()[0]?.model ?? 'unknown', cores: os.cpus().length, loadAverage: os.loadavg().map((load) => Number(load.toFixed(2))) };
say(`${machine.cpu} × ${machine.cores}, load ${machine.loadAverage.join(' ')}, node ${versions.node}; ${SAMPLES} latency samples, ${ROUNDS} × ${URIS} frames, ${REPEAT} repetitions`);

const runs = { direct: [], gateway: [] };
for (let repetition = 0; repetition < REPEAT; repetition++) {
  const order = repetition % 2 === 0 ? ['direct', 'gateway'] : ['gateway', 'direct'];
  for (const peer of order) {
    const lat = await latency(peer);
    const cpu = await cpuPerFrame(peer);
    runs[peer].push({ ...lat, ...cpu });
    say(`${peer} #${repetition + 1}: latency median ${lat.medianMs.toFixed(3)} ms p99 ${lat.p99Ms.toFixed(3)} ms; ${cpu.framesPerSecond.toFixed(0)} frames/s, ${cpu.received} of ${cpu.frames} received; CPU/frame upstream ${cpu.upstreamUs.toFixed(2)} µs, gateway ${cpu.gatewayUs.toFixed(2)} µs, client ${cpu.clientUs.toFixed(2)} µs`);
  }
}

const summary = {};
for (const peer of Object.keys(runs)) {
  const of = (key) => median(runs[peer].map((run) => run[key]));
  summary[peer] = { medianMs: of('medianMs'), p99Ms: of('p99Ms'), framesPerSecond: of('framesPerSecond'), received: of('received'), upstreamUs: of('upstreamUs'), gatewayUs: of('gatewayUs'), clientUs: of('clientUs') };
}
const chain = (peer) => summary[peer].upstreamUs + summary[peer].gatewayUs + summary[peer].clientUs;
const ratios = {
  latencyMedian: summary.gateway.medianMs / summary.direct.medianMs,
  latencyAddedMs: summary.gateway.medianMs - summary.direct.medianMs,
  cpuPerFrameChain: chain('gateway') / chain('direct'),
  gatewayUsPerFrame: summary.gateway.gatewayUs,
  throughput: summary.gateway.framesPerSecond / summary.direct.framesPerSecond,
};
const f = (value, digits = 2) => value.toFixed(digits);
const table = [
  `Gateway against a direct connection (bench/gateway.mjs), ${new Date().toISOString().slice(0, 10)}: ${machine.cpu} × ${machine.cores}, load average ${machine.loadAverage.join(' ')} at the end, node ${versions.node}, rxjs ${versions.rxjs}, undici ${versions.undici}. ${SAMPLES} latency samples, ${ROUNDS} × ${URIS} frames, median of ${REPEAT} repetitions.`,
  '',
  '| peer | latency median (ms) | latency p99 (ms) | frames/s | received of published | CPU µs/frame: upstream | gateway | client | chain |',
  '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  ...['direct', 'gateway'].map((peer) => `| ${peer} | ${f(summary[peer].medianMs, 3)} | ${f(summary[peer].p99Ms, 3)} | ${f(summary[peer].framesPerSecond, 0)} | ${summary[peer].received} of ${ROUNDS * URIS + 1} | ${f(summary[peer].upstreamUs)} | ${f(summary[peer].gatewayUs)} | ${f(summary[peer].clientUs)} | ${f(chain(peer))} |`),
  '',
  `Gateway ÷ direct: latency ${f(ratios.latencyMedian)}× (+${f(ratios.latencyAddedMs, 3)} ms median), CPU per frame of the chain ${f(ratios.cpuPerFrameChain)}× (the gateway ${f(ratios.gatewayUsPerFrame)} µs per frame), throughput ${f(ratios.throughput)}×.`,
];
process.stdout.write(`${table.join('\n')}\n`);
const out = here('./results/gateway/');
mkdirSync(out, { recursive: true });
writeFileSync(`${out}table.md`, `${table.join('\n')}\n`);
writeFileSync(`${out}results.json`, `${JSON.stringify({ command: process.argv.slice(2), config: { SAMPLES, URIS, ROUNDS, REPEAT }, machine, versions, runs, summary, ratios }, null, 2)}\n`);

upstream.kill();
gateway.kill();
await dispatcher.close();
process.exit(0);
