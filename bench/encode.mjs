// Workload 5, encode (in process, mitata): the per-stream cost of writing one published
// notification to N streams.
//
// What is measured and why: a `notifications/resources/updated` published once reaches every
// stream subscribed to its URI, and each stream's copy differs only by its subscription id. The
// library encodes the message once at publish time (fast-json-stringify) and tags it per stream by
// concatenation; the obvious alternative builds the tagged object and calls JSON.stringify per
// stream. Both produce identical bytes (checked below before timing). Results are per stream-frame
// (mitata's median time per iteration divided by N).
//
// Run alone: npm run build && node --expose-gc bench/encode.mjs [--json]
// (bench/run.mjs runs it as workload 5 and puts it in the table.)
import os from 'node:os';
import { bench, do_not_optimize, run, summary } from 'mitata';
// bench/run.mjs points BENCH_DIST at its copy of dist/ (one build for the whole run).
const { encodeFrame, encodeResourceUpdated, notificationFrame } = await import(process.env.BENCH_DIST ?? '../dist/index.js');

const N = 1000;
const json = process.argv.includes('--json');
const ids = Array.from({ length: N }, (_, i) => (i % 2 ? i : `listen-${i}`));
const uri = 'file:///srv/project/src/components/Button.tsx';
const message = { jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri } };

function encodeOnceTagPerStream() {
  const shared = { ...notificationFrame(message, 'resource'), encoded: encodeResourceUpdated(uri) };
  let bytes = 0;
  for (let i = 0; i < N; i++) bytes += encodeFrame({ ...shared, subscriptionId: ids[i] }).length;
  return bytes;
}

function stringifyPerStream() {
  let bytes = 0;
  for (let i = 0; i < N; i++) {
    const tagged = { ...message, params: { ...message.params, _meta: { 'io.modelcontextprotocol/subscriptionId': ids[i] } } };
    bytes += `event: message\ndata: ${JSON.stringify(tagged)}\n\n`.length;
  }
  return bytes;
}

if (encodeOnceTagPerStream() !== stringifyPerStream()) throw new Error('the two encoders disagree on the bytes');
{
  const shared = { ...notificationFrame(message, 'resource'), encoded: encodeResourceUpdated(uri), subscriptionId: 'listen-0' };
  const tagged = { ...message, params: { ...message.params, _meta: { 'io.modelcontextprotocol/subscriptionId': 'listen-0' } } };
  if (encodeFrame(shared) !== `event: message\ndata: ${JSON.stringify(tagged)}\n\n`) throw new Error('bytes differ');
}

if (!json) {
  console.log(`node ${process.version} · ${os.cpus()[0]?.model ?? 'unknown cpu'} × ${os.cpus().length} · ${os.platform()} ${os.arch()}`);
  console.log(`one notification to ${N} streams per iteration\n`);
}

const ONCE = `encode once, tag per stream (${N} streams)`;
const NAIVE = `JSON.stringify per stream (${N} streams)`;
summary(() => {
  bench(ONCE, () => do_not_optimize(encodeOnceTagPerStream())).baseline(true);
  bench(NAIVE, () => do_not_optimize(stringifyPerStream()));
});

const { benchmarks } = await run(json ? { format: 'quiet', colors: false } : { colors: false });
if (json) {
  const perFrame = (name) => {
    const stats = benchmarks.find((b) => b.alias === name)?.runs[0]?.stats;
    return stats && { p50: stats.p50 / N, avg: stats.avg / N, p99: stats.p99 / N };
  };
  console.log(JSON.stringify({ streams: N, once: perFrame(ONCE), naive: perFrame(NAIVE) }));
}
