// Two builds of mcp-rx-streams and the ceiling (peers/ceiling.mjs, legacy-ceiling.mjs) in one run,
// interleaved (issue 22): is a change faster or slower through sockets, and how far is each build
// from what Node allows?
//
//   node bench/compare-builds.mjs --before DIR [--after DIR] [--rounds R] [--n 1000,10000] [--only listen,legacy] [--quick] [--out DIR]
//
// DIR is a built dist/ or a checkout root holding one (`npm run build` done there); --after defaults
// to this checkout's dist/. Both are copied once at the start under this checkout's node_modules/
// (bench/build.mjs): a rebuild meanwhile changes nothing, and both builds resolve rxjs and the other
// dependencies from this checkout, so the same versions run under both.
//
// Method. A session is one `bench/run.mjs` run (`--sessions 1 --pattern single --latency-rounds 0`,
// `--peers ours` with BENCH_DIST naming one build's copy, or `--peers ceiling`): fresh server and
// load-generator processes, N streams (`--only throughput`) or N legacy sessions with their GET
// stream (`--only legacy`) opened on loopback, idle heap per stream measured after GC, a warm-up of
// K/10 notifications, then K notifications published one per event-loop turn (K is run.mjs's for
// that N and mode), pausing while a socket is backed up, every stream subscribed to 10 URIs. Each
// round runs before, after and ceiling for every era and N, one after the other, and the order of
// the three is rotated from one (round, shape) to the next, so that none always runs first or right
// after another process's burst. Reported per session: delivered frames/s, server CPU (user +
// system) µs per delivered frame, the share of a core the server and the load generator were busy,
// heap per idle stream, the load average when it started; per (era, N): the medians over the rounds
// and, for each ratio (÷ ceiling, after ÷ before), the median of the rounds' ratios (each taken
// within one round, between sessions minutes apart at most) with their range. Frames/s is end to
// end and moves with whatever else runs on the box; CPU µs per frame is the figure to trust when the
// busy shares say the machine was shared (bench/README.md, "Reading frames/s on a shared box").
//
// Prints the tables (markdown) on stdout and writes them with every session's figures to
// <out>/table.md and <out>/results.json (default bench/results/compare/, git-ignored). Exits 2 on a
// bad flag, 1 when a session failed, 130 when interrupted (its processes are stopped first).
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { describeBuild, OWN_DIST, resolveBuild, snapshotBuild } from './build.mjs';
import { modeConfig } from './modes.mjs';

const started = performance.now();
const here = (file) => fileURLToPath(new URL(file, import.meta.url));
const USAGE =
  'usage: node bench/compare-builds.mjs --before DIR [--after DIR] [--rounds R] [--n N,…] [--only listen,legacy] [--quick] [--out DIR]\n' +
  '  DIR: a built dist/ or a checkout root with dist/index.js; --after defaults to this checkout\'s dist/\n' +
  '  --rounds 3, --n 1000,10000 (the quick mode: every N of its shapes), --only listen,legacy; see bench/README.md';

const fmt = {
  int: (v) => (Number.isFinite(v) ? Math.round(v).toLocaleString('en-US') : '—'),
  us: (v) => (Number.isFinite(v) ? (v < 10 ? v.toFixed(2) : v.toFixed(1)) : '—'),
  pct: (v) => (Number.isFinite(v) ? `${Math.round(v * 100)} %` : '—'),
  kb: (v) => (Number.isFinite(v) ? (v / 1024).toFixed(2) : '—'),
};

function fail(message) {
  console.error(`bench/compare-builds.mjs: ${message}\n${USAGE}`);
  process.exit(2);
}

let values;
try {
  ({ values } = parseArgs({
    strict: true,
    allowPositionals: false,
    options: {
      before: { type: 'string' },
      after: { type: 'string' },
      rounds: { type: 'string', default: '3' },
      n: { type: 'string' },
      only: { type: 'string', default: 'listen,legacy' },
      quick: { type: 'boolean', default: false },
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
if (values.before === undefined) fail('--before DIR is required');
const ROUNDS = Number(values.rounds);
if (!(Number.isInteger(ROUNDS) && ROUNDS > 0)) fail(`--rounds: a positive integer, got ${values.rounds}`);
const ERAS = values.only.split(',').map((s) => s.trim()).filter(Boolean);
for (const era of ERAS) if (!['listen', 'legacy'].includes(era)) fail(`--only: unknown era ${era} (listen, legacy)`);
if (ERAS.length === 0) fail('--only: name listen, legacy or both');
const QUICK = values.quick;
const mode = modeConfig(QUICK);
const shapesOf = (era) => (era === 'listen' ? mode.fanout : mode.legacy);
const nWanted = values.n?.split(',').map((s) => s.trim()).filter(Boolean).map(Number);
for (const n of nWanted ?? []) if (!Number.isInteger(n) || n <= 0) fail(`--n: not a positive integer: ${values.n}`);
// Every (era, N) compared, with run.mjs's K for it; an N that is not a shape of an era asked for is
// an error rather than a silently empty row.
const SHAPES = [];
for (const era of ERAS) {
  const shapes = shapesOf(era);
  const ns = nWanted ?? (QUICK ? shapes.map((s) => s.n) : [1000, 10_000]);
  for (const n of ns) {
    const shape = shapes.find((s) => s.n === n);
    if (shape === undefined) fail(`--n: N=${n} is not a ${era} shape of run.mjs's ${QUICK ? 'quick' : 'full'} mode (${shapes.map((s) => s.n).join(', ')}; bench/modes.mjs)`);
    SHAPES.push({ era, n, k: shape.k });
  }
}

let before;
let after;
try {
  before = describeBuild(resolveBuild(values.before));
} catch (error) {
  fail(`--before: ${error.message}`);
}
try {
  after = describeBuild(resolveBuild(values.after ?? OWN_DIST));
} catch (error) {
  fail(`--after: ${values.after === undefined ? 'no build in this checkout\'s dist/ (npm run build): ' : ''}${error.message}`);
}
const OUT = path.resolve(values.out ?? here('results/compare'));

// ---------- processes: one run.mjs at a time, in its own process group ----------

let current; // the run.mjs child running now
let stopping = false; // a signal came: start nothing more
const tmp = mkdtempSync(path.join(os.tmpdir(), 'compare-builds-'));
process.on('exit', () => {
  // Whatever way this process ends, the session's processes end with it.
  if (current?.pid !== undefined) {
    try {
      process.kill(-current.pid, 'SIGKILL');
    } catch {}
  }
  rmSync(tmp, { recursive: true, force: true });
});
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, async () => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: stopping the session's processes`);
    await stopGroup(current);
    process.exit(130);
  });
}

/** Stops a run.mjs child and everything it forked (its process group): TERM, then KILL after 3 s. */
async function stopGroup(proc) {
  if (proc === undefined || proc.pid === undefined) return;
  const alive = () => {
    try {
      process.kill(-proc.pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  if (!alive()) return;
  try {
    process.kill(-proc.pid, 'SIGTERM');
  } catch {}
  for (let i = 0; i < 30 && alive(); i++) await new Promise((resolve) => setTimeout(resolve, 100));
  if (alive()) {
    try {
      process.kill(-proc.pid, 'SIGKILL');
    } catch {}
  }
}

const BUILDS = { before: snapshotBuild(before.dir, 'before'), after: snapshotBuild(after.dir, 'after') };

/** One session (see the header): run.mjs for one contender, era and N; its row of results.json. */
async function session(who, { era, n }, tag) {
  if (stopping) return new Promise(() => {}); // the signal handler exits
  const out = path.join(tmp, tag);
  const args = [
    '--expose-gc',
    here('run.mjs'),
    ...(QUICK ? ['--quick'] : []),
    '--only', era === 'listen' ? 'throughput' : 'legacy',
    '--pattern', 'single',
    '--n', String(n),
    '--sessions', '1',
    '--latency-rounds', '0',
    '--peers', who === 'ceiling' ? 'ceiling' : 'ours',
    '--no-charts',
    '--out', out,
  ];
  // The ceiling does not load the package; BENCH_DIST only spares run.mjs a copy of dist/.
  const env = { ...process.env, BENCH_DIST: BUILDS[who === 'ceiling' ? 'after' : who] };
  const load = os.loadavg()[0];
  const proc = spawn(process.execPath, args, { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  current = proc;
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (chunk) => (stdout += chunk));
  proc.stderr.on('data', (chunk) => (stderr += chunk));
  const code = await new Promise((resolve) => proc.on('close', (c, signal) => resolve(c ?? signal)));
  // run.mjs closes its server and load generators; anything of its group still alive is stopped.
  await stopGroup(proc);
  if (stopping) return new Promise(() => {}); // the signal handler exits
  current = undefined;
  if (code !== 0) return { error: `run.mjs exited with ${code}: ${(stderr || stdout).trim().split('\n').slice(-3).join(' / ')}`, load };
  const doc = JSON.parse(readFileSync(path.join(out, 'results.json'), 'utf8'));
  const row = doc.summary.fanout.find((r) => r.era === era && r.n === n);
  if (row === undefined) return { error: 'no row in results.json', load };
  if (row.error) return { error: row.error, load };
  const p = row.patterns.single;
  return {
    fps: p.fps,
    cpuPerFrame: p.cpuPerFrame,
    serverBusy: p.serverBusy,
    loadgenBusy: p.loadgenBusy,
    lost: p.lost,
    complete: p.complete,
    heapPerStream: row.heapPerStream,
    load,
  };
}

// ---------- the rounds ----------

const WHO = ['before', 'after', 'ceiling'];
const sessions = [];
const loadAtStart = os.loadavg();
log(`before: ${before.text}`);
log(`after:  ${after.text}`);
if (before.dir === after.dir) log('before and after are the same directory: an A/A comparison (the spread is the noise)');
for (let round = 1; round <= ROUNDS; round++) {
  for (const [s, shape] of SHAPES.entries()) {
    const shift = (round - 1 + s) % WHO.length;
    const order = [...WHO.slice(shift), ...WHO.slice(0, shift)];
    for (const [position, who] of order.entries()) {
      const r = await session(who, shape, `${round}-${shape.era}-${shape.n}-${who}`);
      sessions.push({ round, era: shape.era, n: shape.n, k: shape.k, who, position: position + 1, ...r });
      log(
        `round ${round}/${ROUNDS} ${shape.era} N=${shape.n} ${who}: ` +
          (r.error
            ? `failed: ${r.error}`
            : `${fmt.int(r.fps)} frames/s, ${fmt.us(r.cpuPerFrame)} µs CPU/frame (busy ${fmt.pct(r.serverBusy)} / ${fmt.pct(r.loadgenBusy)}), heap ${fmt.kb(r.heapPerStream)} KB/${shape.era === 'listen' ? 'stream' : 'session'}, lost ${r.lost}${r.complete ? '' : ', incomplete'} (load ${r.load.toFixed(2)})`),
      );
    }
  }
}

// ---------- tables ----------

const get = (round, era, n, who) => sessions.find((x) => x.round === round && x.era === era && x.n === n && x.who === who && !x.error);
const ok = (era, n, who) => sessions.filter((x) => x.era === era && x.n === n && x.who === who && !x.error);
/** Per-round ratios a ÷ b of `key` (both sessions of the same round), as a median and a range. */
function pairedRatio(era, n, a, b, key) {
  const ratios = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const x = get(round, era, n, a);
    const y = get(round, era, n, b);
    if (x !== undefined && y !== undefined && Number.isFinite(x[key] / y[key]) && y[key] !== 0) ratios.push(x[key] / y[key]);
  }
  return ratios;
}
const ratioText = (ratios) => {
  if (ratios.length === 0) return '—';
  const m = median(ratios);
  return ratios.length === 1 ? m.toFixed(2) : `${m.toFixed(2)} (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`;
};

const out = [];
const label = { before: `before (${before.commit})`, after: `after (${after.commit})`, ceiling: 'ceiling' };
const unit = (era) => (era === 'listen' ? 'streams' : 'sessions');
out.push(
  `# Two builds and the ceiling, interleaved (bench/compare-builds.mjs)${QUICK ? ' (--quick)' : ''}`,
  '',
  `- node ${process.version} · ${os.cpus()[0]?.model ?? 'unknown cpu'} × ${os.cpus().length} cores · ${os.platform()} ${os.arch()} · load average at start ${loadAtStart.map((v) => v.toFixed(2)).join(' ')}, at the end ${os.loadavg().map((v) => v.toFixed(2)).join(' ')}`,
  `- before: ${before.text}`,
  `- after: ${after.text}`,
  `- ceiling: peers/ceiling.mjs (listen), peers/legacy-ceiling.mjs (legacy): the hand-written baselines with each frame one chunk string written on the socket`,
  `- ${ROUNDS} round(s); a session = one bench/run.mjs run (fresh server and load-generator processes), one publish per turn, every stream on 10 URIs; K per N: ${SHAPES.map((s) => `${s.era} N=${fmt.int(s.n)} K=${fmt.int(s.k)}`).join(', ')}; the order of before / after / ceiling rotated per (round, N)`,
  '- ratios: the median over the rounds of the ratio within each round (range in brackets)',
);

out.push('', '## Medians', '');
const rows = [];
for (const { era, n } of SHAPES) {
  for (const who of WHO) {
    const xs = ok(era, n, who);
    const failed = sessions.filter((x) => x.era === era && x.n === n && x.who === who && x.error).length;
    if (xs.length === 0) {
      rows.push([`${era} N=${fmt.int(n)} · ${label[who]}`, '—', '—', '—', '—', '—', '—', `${failed} failed`]);
      continue;
    }
    const overCeiling = (key) => (who === 'ceiling' ? '1.00' : ratioText(pairedRatio(era, n, who, 'ceiling', key)));
    rows.push([
      `${era} N=${fmt.int(n)} · ${label[who]}`,
      fmt.int(median(xs.map((x) => x.fps))),
      overCeiling('fps'),
      fmt.us(median(xs.map((x) => x.cpuPerFrame))),
      overCeiling('cpuPerFrame'),
      `${fmt.pct(median(xs.map((x) => x.serverBusy)))} / ${fmt.pct(median(xs.map((x) => x.loadgenBusy)))}`,
      fmt.kb(median(xs.map((x) => x.heapPerStream))),
      [`${xs.length} session${xs.length === 1 ? '' : 's'}`, failed ? `${failed} failed` : '', xs.some((x) => x.lost > 0) ? `lost up to ${Math.max(...xs.map((x) => x.lost))}` : '', xs.some((x) => !x.complete) ? 'incomplete' : ''].filter(Boolean).join(', '),
    ]);
  }
}
out.push(table(['era · N · build', 'frames/s (1/turn)', '÷ ceiling', 'server CPU µs/frame', '÷ ceiling', 'busy: server / load gen', 'heap KB per idle stream / session', 'notes'], rows));

out.push('', '## after ÷ before', '');
out.push(
  table(
    ['era · N', 'frames/s', 'server CPU µs/frame', 'heap per idle stream / session'],
    SHAPES.map(({ era, n }) => [`${era} N=${fmt.int(n)} ${unit(era)}`, ratioText(pairedRatio(era, n, 'after', 'before', 'fps')), ratioText(pairedRatio(era, n, 'after', 'before', 'cpuPerFrame')), ratioText(pairedRatio(era, n, 'after', 'before', 'heapPerStream'))]),
  ),
);

out.push('', '## Every round', '', 'frames/s, then server CPU µs per frame in brackets, in the order the sessions ran; the load average (1 min) when the first of them started.', '');
const roundRows = [];
for (let round = 1; round <= ROUNDS; round++) {
  for (const { era, n } of SHAPES) {
    const mine = sessions.filter((x) => x.round === round && x.era === era && x.n === n).sort((a, b) => a.position - b.position);
    const cell = (x) => (x.error ? `${x.who}: failed` : `${x.who} ${fmt.int(x.fps)} (${fmt.us(x.cpuPerFrame)})`);
    const a = get(round, era, n, 'after');
    const b = get(round, era, n, 'before');
    const c = get(round, era, n, 'ceiling');
    const r = (x, y, key) => (x && y ? (x[key] / y[key]).toFixed(2) : '—');
    roundRows.push([`${round} · ${era} N=${fmt.int(n)}`, mine.map(cell).join(' → '), r(b, c, 'fps'), r(a, c, 'fps'), r(a, b, 'fps'), r(a, b, 'cpuPerFrame'), mine[0]?.load.toFixed(2) ?? '—']);
  }
}
out.push(table(['round · era · N', 'sessions in order', 'before ÷ ceiling', 'after ÷ ceiling', 'after ÷ before', 'after ÷ before CPU', 'load'], roundRows));

const seconds = (performance.now() - started) / 1000;
const command = `node bench/compare-builds.mjs ${process.argv.slice(2).join(' ')}`.trim();
out.push('', `_${seconds.toFixed(0)} s; \`${command}\`_`);
const body = out.join('\n');
console.log(body);
mkdirSync(OUT, { recursive: true });
writeFileSync(path.join(OUT, 'table.md'), `${body}\n`);
writeFileSync(path.join(OUT, 'results.json'), JSON.stringify({ command, quick: QUICK, rounds: ROUNDS, shapes: SHAPES, before, after, loadAtStart, loadAtEnd: os.loadavg(), seconds: Math.round(seconds), sessions }, null, 1));
log(`wrote ${path.relative(process.cwd(), OUT) || '.'}/: table.md, results.json`);
process.exit(sessions.some((x) => x.error) ? 1 : 0);

// ---------- helpers ----------

function median(values) {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

function table(headers, rows) {
  const lines = [`| ${headers.join(' | ')} |`, `|${headers.map((_, i) => (i === 0 ? ' --- ' : ' ---: ')).join('|')}|`];
  for (const row of rows) lines.push(`| ${row.join(' | ')} |`);
  return lines.join('\n');
}

function log(...a) {
  console.error(`# [${((performance.now() - started) / 1000).toFixed(1).padStart(6)} s]`, ...a);
}
