// A cluster worker's own work for a legacy frame (issue 33), in one process and interleaved between
// builds: N legacy sessions (LiveSession) whose event log is the worker's ClusterEventLogs, each
// with a GET stream whose first stage only counts; a publish hands every session the frame
// (`deliver`, as the hub's subscriptions do), the appends travel as one request to a stand-in
// primary that answers ids in a later turn (setImmediate, as an IPC reply comes), and the reply's
// continuation stamps each frame and hands it to its stream. Measured: the process's CPU
// (user + system) from the publish to the last stream's frame, over N: µs per session-frame of the
// worker's library code, without sockets, IPC serialization or the primary, which
// bench/cluster.mjs measures whole (and which moves by ±15 % from one session to the next here).
//
//   npm run build && node bench/cluster-log-turn.mjs --builds /tmp/before,/tmp/after [--n 10000] [--rounds 200]
//
// A build is a directory with a dist/ (and node_modules reachable from it: a symlink to this
// checkout's). Round r: each build in turn (the order rotated every round) publishes one frame to
// its N sessions. Per build: the median over the rounds; the ratio of each build to the first,
// the median of the per-round ratios.
import { setImmediate as nextTurn } from 'node:timers/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const argv = process.argv.slice(2);
const option = (name, fallback) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : fallback;
};
const builds = (option('builds') ?? '').split(',').filter(Boolean);
if (builds.length === 0) {
  console.error('usage: node bench/cluster-log-turn.mjs --builds DIR[,DIR…] [--n 10000] [--rounds 200]');
  process.exit(2);
}
const N = Number(option('n', '10000'));
const ROUNDS = Number(option('rounds', '200'));
const WARMUP = Math.min(20, Math.floor(ROUNDS / 5));

/** A stand-in for the worker's link to the primary: ids for every append, one turn later. */
class Primary {
  batch = 0;
  #next = new Map();
  call(name, args) {
    if (name !== 'log.append') return Promise.reject(new Error(`not a call this bench makes: ${name}`));
    // The batch goes out at the end of this run: the appends that follow join it until then.
    queueMicrotask(() => this.batch++);
    const appends = args[1];
    return nextTurn().then(() => {
      const ids = [];
      for (let i = 0; i < appends.length; i += 2) {
        const session = appends[i];
        const id = (this.#next.get(session) ?? 0) + 1;
        this.#next.set(session, id);
        ids.push(String(id));
      }
      return ids;
    });
  }
}

async function load(dir) {
  const dist = (file) => import(pathToFileURL(path.join(path.resolve(dir), 'dist', file)).href);
  const [{ ClusterEventLogs }, { LiveSession }, { encodeResourceUpdated }] = await Promise.all([
    dist('adapters/cluster/eventLog.js'),
    dist('protocol/legacy/liveSession.js'),
    dist('lib/encode.js'),
  ]);
  const logs = new ClusterEventLogs(new Primary(), false);
  let heard = 0;
  const entry = { next: () => void heard++, complete: () => undefined };
  const sessions = Array.from({ length: N }, (_, i) => {
    const id = `session-${i}`;
    const session = new LiveSession({ id, principal: 'p', protocolVersion: '2025-06-18', subscriptions: [], lastActivity: Date.now() }, logs.of(id));
    session.stream = { entry, context: undefined };
    return session;
  });
  let round = 0;
  return {
    dir,
    /** One publish to every session; resolves with µs of CPU per session-frame. */
    async publish() {
      const uri = `file:///srv/bench/${round++ % 2}.txt`;
      const message = Object.freeze({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: Object.freeze({ uri }) });
      const frame = Object.freeze({ type: 'message', message, priority: 'notification', topic: 'resource', coalesceKey: `notifications/resources/updated ${uri}`, encoded: encodeResourceUpdated(uri) });
      heard = 0;
      const before = process.cpuUsage();
      for (const session of sessions) session.deliver(frame);
      while (heard < N) await nextTurn();
      const used = process.cpuUsage(before);
      return (used.user + used.system) / N;
    },
  };
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

const variants = [];
for (const dir of builds) variants.push(await load(dir));
const per = variants.map(() => []);
for (let r = 0; r < ROUNDS + WARMUP; r++) {
  const order = variants.map((_, i) => (i + r) % variants.length);
  const round = [];
  for (const i of order) round[i] = await variants[i].publish();
  if (r >= WARMUP) round.forEach((us, i) => per[i].push(us));
}
console.log(`node ${process.version}; N ${N} sessions per build, ${ROUNDS} rounds (after ${WARMUP} warm-up), one frame per session per round`);
console.log('| build | µs CPU per session-frame, median | p25–p75 | ÷ first build, median of per-round ratios |');
console.log('|---|---:|---:|---:|');
for (const [i, variant] of variants.entries()) {
  const sorted = [...per[i]].sort((a, b) => a - b);
  const q = (p) => sorted[Math.floor(p * (sorted.length - 1))];
  const ratio = median(per[i].map((us, r) => us / per[0][r]));
  console.log(`| ${variant.dir} | ${median(per[i]).toFixed(3)} | ${q(0.25).toFixed(3)}–${q(0.75).toFixed(3)} | ${ratio.toFixed(3)} |`);
}
