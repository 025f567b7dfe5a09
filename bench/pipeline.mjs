// In-process cost of one listen stream, per variant, side by side (issue 12):
//   served   listenStream(): the fused listen operator the endpoint serves
//   chain    the README's composition example as written there: notifications(...).pipe(ackThenNotify,
//            keepAlive, closeWhen([lifetimeCap, idleTimeout]), tagSubscriptionId, dropWhenQueueExceeds) with a
//            BehaviorSubject demand$
// each measured for this build (dist/) and, with --baseline DIR, for another build of the package
// (e.g. a worktree of an older commit after `npm run build`), in its own child process.
//
//   npm run build && node --expose-gc bench/pipeline.mjs [--streams 10000] [--frames 200] [--rounds 3] [--baseline /path/to/old/checkout]
//
// Per variant: µs per stream-frame (one publish reaching N streams, the sink counts), heap per idle
// stream (after GC), µs per open+close, GC pauses per 1M stream-frames (count and ms), medians of
// the rounds. Same sink work for every variant.
import { spawn } from 'node:child_process';
import { performance, PerformanceObserver } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    streams: { type: 'string', default: '10000' },
    frames: { type: 'string', default: '200' },
    rounds: { type: 'string', default: '3' },
    baseline: { type: 'string' },
    child: { type: 'string' },
    variant: { type: 'string' },
  },
});
const N = Number(values.streams);
const FRAMES = Number(values.frames);
const ROUNDS = Number(values.rounds);
const here = fileURLToPath(new URL('..', import.meta.url));

if (values.child !== undefined) {
  process.stdout.write(JSON.stringify(await measure(values.child, values.variant)));
  process.exit(0);
}

const builds = [['this build', here]];
if (values.baseline !== undefined) builds.unshift(['baseline', values.baseline]);
const rows = [];
for (const [label, root] of builds) {
  for (const variant of ['served', 'chain']) {
    const runs = [];
    for (let round = 0; round < ROUNDS; round++) runs.push(await child(root, variant));
    rows.push({ label, variant, ...medians(runs) });
  }
}
const served = rows.find((row) => row.label === 'this build' && row.variant === 'served');
console.log(`N = ${N} idle streams on one URI, ${FRAMES} publishes, ${ROUNDS} rounds (medians), node ${process.version}\n`);
console.log('| build | variant | µs per stream-frame | × served | heap per idle stream | µs per open+close | GC pauses per 1M frames |');
console.log('|---|---|---:|---:|---:|---:|---:|');
for (const row of rows) {
  console.log(
    `| ${row.label} | ${row.variant} | ${row.usPerFrame.toFixed(3)} | ${(row.usPerFrame / served.usPerFrame).toFixed(2)}× | ${(row.heapPerStream / 1024).toFixed(2)} KB | ${row.usPerOpenClose.toFixed(2)} | ${row.gcCount.toFixed(1)} (${row.gcMs.toFixed(1)} ms) |`,
  );
}

function child(root, variant) {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ['--expose-gc', fileURLToPath(import.meta.url), '--child', root, '--variant', variant, '--streams', String(N), '--frames', String(FRAMES)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    proc.stdout.on('data', (chunk) => (out += chunk));
    proc.on('close', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`${variant} in ${root} exited with ${code}`))));
  });
}

function medians(runs) {
  const median = (key) => {
    const sorted = runs.map((run) => run[key]).sort((a, b) => a - b);
    return sorted[Math.floor(sorted.length / 2)];
  };
  return Object.fromEntries(Object.keys(runs[0]).map((key) => [key, median(key)]));
}

async function measure(root, variant) {
  const lib = await import(pathToFileURL(`${root}/dist/index.js`).href);
  const { Broadcast } = await import(pathToFileURL(`${root}/dist/lib/broadcast.js`).href);
  const { BehaviorSubject } = await import('rxjs');
  const { Hub, listenStream, notifications, ackThenNotify, keepAlive, closeWhen, lifetimeCap, idleTimeout, tagSubscriptionId, dropWhenQueueExceeds, controlFrame, acknowledgedNotification } = lib;
  const uri = 'file:///bench/one.txt';
  const filter = { resourceSubscriptions: [uri] };
  // Every publish is the same notification in one turn: without coalesce: false the hub would
  // rightly deliver it once (storm collapse) and there would be nothing to measure. Builds from
  // before the option ignore it.
  const hub = new Hub({ coalesce: false });
  const shutdown$ = new Broadcast();
  const options = Object.freeze({});
  let received = 0;
  const sink = { next: () => received++, error: (error) => { throw error; } };

  // What the endpoint hands each served stream: its own demand and supersede signals.
  const open = variant === 'served'
    ? (id) => listenStream({ requestId: id, filter, hub, options, demand$: new Broadcast(), supersede$: new Broadcast(), shutdown$ }).subscribe(sink)
    : (id) => {
        // The README's composition example, as written there.
        const demand$ = new BehaviorSubject(true);
        return notifications(hub, filter)
          .pipe(
            ackThenNotify(controlFrame(acknowledgedNotification(filter))),
            keepAlive(15_000),
            closeWhen([lifetimeCap(3_600_000), idleTimeout(1_800_000)], { requestId: id }),
            tagSubscriptionId(id),
            dropWhenQueueExceeds({ notifications: 1000, bytes: 1 << 20 }, demand$),
          )
          .subscribe(sink);
      };

  // Warm the code paths up on a few streams first.
  const warm = [];
  for (let i = 0; i < 200; i++) warm.push(open(i));
  for (let i = 0; i < 200; i++) hub.notifyResourceUpdated(uri);
  for (const subscription of warm) subscription.unsubscribe();

  gc(); gc();
  const heapBefore = process.memoryUsage().heapUsed;
  const subscriptions = new Array(N);
  let t = performance.now();
  for (let i = 0; i < N; i++) subscriptions[i] = open(i + 1);
  const openMs = performance.now() - t;
  gc(); gc();
  const heapPerStream = (process.memoryUsage().heapUsed - heapBefore) / N;

  const pauses = [];
  const observer = new PerformanceObserver((list) => { for (const entry of list.getEntries()) pauses.push(entry.duration); });
  observer.observe({ entryTypes: ['gc'] });
  received = 0;
  t = performance.now();
  for (let i = 0; i < FRAMES; i++) hub.notifyResourceUpdated(uri);
  const publishMs = performance.now() - t;
  await new Promise((resolve) => setTimeout(resolve, 50));
  observer.disconnect();
  if (received !== FRAMES * N) throw new Error(`received ${received} frames, expected ${FRAMES * N}`);

  t = performance.now();
  for (const subscription of subscriptions) subscription.unsubscribe();
  const closeMs = performance.now() - t;
  const perMillion = 1e6 / (FRAMES * N);
  return {
    usPerFrame: (publishMs * 1000) / (FRAMES * N),
    heapPerStream,
    usPerOpenClose: ((openMs + closeMs) * 1000) / N,
    gcCount: pauses.length * perMillion,
    gcMs: pauses.reduce((a, b) => a + b, 0) * perMillion,
  };
}
