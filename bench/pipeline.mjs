// In-process cost of one listen stream, per variant, side by side (issue 12):
//   endpoint what McpEndpoint serves for a listen request (endpoint.handle, then the response's
//            stream opened with its own demand): the stages, the plans the endpoint made once, the
//            slot and the admission, everything a served stream holds but the socket
//   served   listenStream(): the fused listen operator (public; makes its plans per call)
//   chain    the README's composition example as written there: notifications(...).pipe(ackThenNotify,
//            keepAlive, closeWhen([lifetimeCap, idleTimeout]), tagSubscriptionId, dropWhenQueueExceeds) with a
//            BehaviorSubject demand$
// each measured for this build (dist/) and, with --baseline DIR, for another build of the package
// (e.g. a worktree of an older commit after `npm run build`), in its own child process. DIR is that
// checkout's root (holding dist/index.js) or its dist/ itself (holding index.js). Both builds are
// copied at the start under this checkout's node_modules/.cache/ (bench/build.mjs), so both run on
// this checkout's rxjs and a rebuild meanwhile changes nothing.
//
//   npm run build && node --expose-gc bench/pipeline.mjs [--streams 10000] [--frames 200] [--rounds 3] [--baseline /path/to/old/checkout | /path/to/old/checkout/dist]
//
// Per variant: µs per stream-frame (one publish reaching N streams, the sink counts), heap per idle
// stream (after GC), µs per open+close, GC pauses per 1M stream-frames (count and ms), medians of
// the rounds (a round runs every build and variant once, in a fresh process each, interleaved).
// Same sink work for every variant.
import { performance, PerformanceObserver } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import path from 'node:path';
import { buildsToCompare, childJson, medians, readFlags, rounds } from './inProcess.mjs';

const USAGE = 'usage: node --expose-gc bench/pipeline.mjs [--streams 10000] [--frames 200] [--rounds 3] [--baseline CHECKOUT_ROOT | DIST_DIR]';
const { values, fail } = readFlags(
  'bench/pipeline.mjs',
  USAGE,
  {
    streams: { type: 'string', default: '10000' },
    frames: { type: 'string', default: '200' },
    rounds: { type: 'string', default: '3' },
    baseline: { type: 'string' },
    variant: { type: 'string' },
  },
  ['streams', 'frames', 'rounds'],
);
const N = Number(values.streams);
const FRAMES = Number(values.frames);
const ROUNDS = Number(values.rounds);

if (values.child !== undefined) {
  process.stdout.write(JSON.stringify(await measure(values.child, values.variant)));
  process.exit(0);
}

const builds = buildsToCompare(values.baseline, 'pipeline', fail);
// Every (build, variant) once per round, the order rotated (bench/inProcess.mjs).
const cells = builds.flatMap(({ label, build, copy }) => ['endpoint', 'served', 'chain'].map((variant) => ({ label, build, copy, variant, runs: [] })));
await rounds(cells, ROUNDS, (cell) =>
  childJson(fileURLToPath(import.meta.url), ['--child', cell.copy, '--variant', cell.variant, '--streams', String(N), '--frames', String(FRAMES)]).catch((error) => {
    console.error(`bench/pipeline.mjs: ${cell.label} (${cell.build.text}): ${error.message}`);
    process.exit(1);
  }),
);
const rows = cells.map(({ label, variant, runs }) => ({ label, variant, ...medians(runs) }));
const served = rows.find((row) => row.label === 'this build' && row.variant === 'endpoint');
console.log(`N = ${N} idle streams on one URI, ${FRAMES} publishes, ${ROUNDS} rounds (medians), node ${process.version}`);
for (const { label, build } of builds) console.log(`${label}: ${build.text}`);
console.log('');
console.log('| build | variant | µs per stream-frame | × this build\'s endpoint | heap per idle stream | µs per open+close | GC pauses per 1M frames |');
console.log('|---|---|---:|---:|---:|---:|---:|');
for (const row of rows) {
  console.log(
    `| ${row.label} | ${row.variant} | ${row.usPerFrame.toFixed(3)} | ${(row.usPerFrame / served.usPerFrame).toFixed(2)}× | ${(row.heapPerStream / 1024).toFixed(2)} KB | ${row.usPerOpenClose.toFixed(2)} | ${row.gcCount.toFixed(1)} (${row.gcMs.toFixed(1)} ms) |`,
  );
}

async function measure(dist, variant) {
  const lib = await import(pathToFileURL(path.join(dist, 'index.js')).href);
  const { Broadcast } = await import(pathToFileURL(path.join(dist, 'lib', 'broadcast.js')).href);
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

  const endpoint = new lib.McpEndpoint({ hub, capabilities: { resources: true }, maxStreams: N + 1000, maxListensPerPrincipal: N + 1000 });
  const headers = { accept: 'application/json, text/event-stream', 'content-type': 'application/json', 'mcp-protocol-version': '2026-07-28' };
  const served = async (id) => {
    const response = await endpoint.handle({
      method: 'POST',
      header: (name) => headers[name],
      remoteAddress: '127.0.0.1',
      body: { parsed: { jsonrpc: '2.0', id, method: 'subscriptions/listen', params: { notifications: filter } } },
    });
    if (response.kind !== 'stream') throw new Error(`the endpoint answered ${response.status}: ${response.body}`);
    return response.open(new Broadcast()).subscribe(sink);
  };
  // What the endpoint hands each served stream: its own demand and supersede signals.
  const open = variant === 'endpoint'
    ? served
    : variant === 'served'
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
  for (let i = 0; i < 200; i++) warm.push(await open(i));
  for (let i = 0; i < 200; i++) hub.notifyResourceUpdated(uri);
  for (const subscription of warm) subscription.unsubscribe();

  gc(); gc();
  const heapBefore = process.memoryUsage().heapUsed;
  const subscriptions = new Array(N);
  let t = performance.now();
  for (let i = 0; i < N; i++) subscriptions[i] = await open(i + 1);
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
