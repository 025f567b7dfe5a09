// The CPU of one publish's turn, interleaved between servers (issue 33): for each server (the
// ceiling, builds of ours), N streams open at once, then rounds in which every server in turn
// publishes one notification; what the server's process spent (user + system CPU, its syscalls
// included) from the publish to the end of its event-loop turn (the per-turn writes of
// process.nextTick included), over N: µs per stream-frame of the fan-out itself, without the IPC,
// the load generator's reads or the idle time a wall-clock figure carries on a shared box.
//
// Method. One bench/server.mjs process per variant (its peer; ours with BENCH_DIST naming a copy of
// the build), one load-generator pool each (bench/harness.mjs, fresh loopback source addresses),
// N listen streams (or N legacy sessions + GET stream) on each, all open together. Round r: the
// variants, in an order rotated every round, each publish one notification (resources/updated and
// tools/list_changed alternating between rounds) and wait until every one of its N streams has it;
// `publishTurnCpu` replies with the turn's CPU. Per variant: the median over the rounds; per
// build, the median over the rounds of its ratio to the ceiling of the same round. GC that runs
// outside the turn is not in it; compare-builds.mjs measures the whole process.
//
//   npm run build && node bench/turn-cpu.mjs --builds /tmp/a,/tmp/b [--era listen|legacy] [--n 10000] [--rounds 40]
//   … --paced K    instead of rounds of one notification: passes of K notifications published one per
//                  turn as bench/run.mjs publishes them (`publishPaced`: back to back, waiting only
//                  for a backed-up socket; 10 URIs per stream or session, the publishes rotating over
//                  them), the server's whole CPU (process.cpuUsage) over the pass per delivered frame;
//                  the variants take turns pass by pass (--rounds passes each)
//   … --perf DIR   also a CPU-time profile of every server over the rounds: `perf record -e cpu-clock`
//                  (samples only while the process runs, kernel included; V8's own profiler samples
//                  wall time, which on a loaded box lands on the syscall a preempted process returns
//                  from), servers run with --perf-basic-prof; DIR/perf.data and DIR/<variant>.txt
//                  (perf report by symbol, per process)
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { describeBuild, resolveBuild, snapshotBuild } from './build.mjs';
import { child, loadgenPool } from './harness.mjs';

const { values } = parseArgs({
  options: {
    builds: { type: 'string' },
    era: { type: 'string', default: 'listen' },
    n: { type: 'string', default: '10000' },
    rounds: { type: 'string', default: '40' },
    'no-ceiling': { type: 'boolean', default: false },
    perf: { type: 'string' },
    paced: { type: 'string' },
  },
});
const N = Number(values.n);
const ROUNDS = Number(values.rounds);
const LEGACY = values.era === 'legacy';
const PACED = values.paced === undefined ? undefined : Number(values.paced);
const builds = (values.builds ?? '').split(',').filter(Boolean).map((dir) => describeBuild(resolveBuild(dir)));
const variants = [
  ...(values['no-ceiling'] ? [] : [{ label: 'ceiling', peer: LEGACY ? 'legacy-ceiling' : 'ceiling' }]),
  ...builds.map((build, i) => ({ label: `ours ${String.fromCharCode(65 + i)}`, peer: 'ours', build, dist: snapshotBuild(build.dir, `turn-cpu-${i}`) })),
];
const median = (list) => {
  const sorted = [...list].sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted[Math.floor((sorted.length - 1) / 2)];
};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

console.log(`node ${process.version} · ${os.cpus().length} cores · load ${os.loadavg().map((v) => v.toFixed(1)).join(' ')} · ${values.era} · N=${N} · ${ROUNDS} rounds`);
for (const v of variants) if (v.build) console.log(`${v.label}: ${v.build.text}`);

let block = 200;
for (const v of variants) {
  if (v.dist !== undefined) process.env.BENCH_DIST = v.dist;
  v.server = child('server.mjs', [v.peer], values.perf === undefined ? [] : ['--perf-basic-prof']);
  delete process.env.BENCH_DIST;
  const b = block++;
  v.loadgen = loadgenPool(Math.ceil(N / 16_000), { address: (w) => `127.${b}.0.${1 + w}` });
}
try {
  for (const v of variants) {
    const [{ port }] = await Promise.all([v.server.ready, v.loadgen.ready]);
    const uris = PACED === undefined ? 1 : 10;
    const opened = await v.loadgen.call('open', { port, n: N, legacy: LEGACY, uris: LEGACY ? 1 : uris, closeIdle: true });
    if (opened.opened !== N) throw new Error(`${v.label}: opened ${opened.opened}/${N}: ${opened.errors.join('; ')}`);
    if (LEGACY && uris > 1) await v.loadgen.call('subscribeMore', { port, uris });
    await v.loadgen.call('reset');
    v.samples = [];
    console.error(`# ${v.label}: ${N} open in ${(opened.ms / 1000).toFixed(1)} s`);
  }
  let perf;
  for (let r = 1; r <= ROUNDS + 2; r++) {
    if (r === 3 && values.perf !== undefined) {
      mkdirSync(values.perf, { recursive: true });
      perf = spawn('perf', ['record', '-e', 'cpu-clock', '-F', '1999', '-g', '-o', path.join(values.perf, 'perf.data'), '-p', variants.map((v) => v.server.pid).join(',')], { stdio: 'ignore' });
      await sleep(500);
    }
    for (let i = 0; i < variants.length; i++) {
      const v = variants[(i + r) % variants.length];
      if (PACED !== undefined) {
        await v.loadgen.call('reset');
        const seen = v.loadgen.call('expect', { target: PACED, idleMs: 20_000 });
        await seen.armed;
        const cpu0 = await v.server.call('cpu');
        await v.server.call('publishPaced', { k: PACED, batch: 1, uris: 10 });
        const got = await seen;
        const cpu1 = await v.server.call('cpu');
        if (!got.complete) throw new Error(`${v.label}: pass ${r} incomplete`);
        if (r > 2) v.samples.push((cpu1.us - cpu0.us) / got.received);
        continue;
      }
      const seen = v.loadgen.call('expect', { target: r, idleMs: 20_000 });
      await seen.armed;
      const { us } = await v.server.call('publishTurnCpu', { marker: r % 2 === 0 });
      const got = await seen;
      if (!got.complete) throw new Error(`${v.label}: round ${r} incomplete`);
      // The first two rounds warm up (JIT, socket buffers).
      if (r > 2) v.samples.push(us / N);
      await sleep(20);
    }
  }
  if (perf !== undefined) {
    const exited = new Promise((resolve) => perf.once('exit', resolve));
    perf.kill('SIGINT');
    await exited;
    for (const v of variants) {
      const report = spawnSync('perf', ['report', '-i', path.join(values.perf, 'perf.data'), '--stdio', '--no-children', '--pid', String(v.server.pid), '--sort', 'sym', '--percent-limit', '0.3'], { encoding: 'utf8', maxBuffer: 1 << 28 });
      writeFileSync(path.join(values.perf, `${v.label.replace(/ /g, '-')}.txt`), report.stdout);
    }
    console.log(`perf: ${values.perf}/perf.data, ${variants.map((v) => `${v.label.replace(/ /g, '-')}.txt (pid ${v.server.pid})`).join(', ')}`);
  }
  const ceiling = variants.find((v) => v.label === 'ceiling');
  console.log('');
  console.log(`| variant | CPU µs per stream-frame (median of ${ROUNDS}) | ÷ ceiling (median of the rounds' ratios) | range of the rounds |`);
  console.log('|---|---:|---:|---|');
  for (const v of variants) {
    const ratios = ceiling === undefined ? [] : v.samples.map((us, i) => us / ceiling.samples[i]);
    const sorted = [...v.samples].sort((a, b) => a - b);
    console.log(`| ${v.label} | ${median(v.samples).toFixed(2)} | ${ceiling === undefined ? '—' : median(ratios).toFixed(3)} | ${sorted[0].toFixed(2)}–${sorted[sorted.length - 1].toFixed(2)} |`);
  }
  if (builds.length > 1) {
    const [a, ...rest] = variants.filter((v) => v.build);
    for (const b of rest) console.log(`\n${b.label} ÷ ${a.label}: ${median(b.samples.map((us, i) => us / a.samples[i])).toFixed(3)} (median of the rounds' ratios)`);
  }
  console.log(`\nload at the end ${os.loadavg().map((v) => v.toFixed(1)).join(' ')}`);
} finally {
  await Promise.all(variants.map((v) => Promise.all([v.loadgen.close(), v.server.close()])));
}
