// Where a server's time goes, from V8 CPU profiles (`.cpuprofile`, as node --cpu-prof or
// bench/capacity.mjs --profile write them): self time per function, the top ones, and per group
// (this library's code, node:http/net internals, GC, the rest), each as a share of the samples and
// as µs per delivered frame when `--frames N` says how many frames the profile covers.
//
//   node bench/profile-top.mjs /tmp/prof/listen-ours-10000/pass-123.cpuprofile [more …] [--top 25] [--frames 1000000]
//
// Several files are summed (the workers of one cluster run, say). Idle time (`(idle)`, `(program)`
// while waiting) is left out of the shares: they are of the time the process was busy.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '25' }, frames: { type: 'string' } } });
if (positionals.length === 0) {
  console.error('usage: node bench/profile-top.mjs FILE.cpuprofile [FILE …] [--top 25] [--frames N]');
  process.exit(2);
}
const TOP = Number(values.top);
const FRAMES = values.frames === undefined ? undefined : Number(values.frames);

const self = new Map(); // key → µs
let busy = 0;
let idle = 0;
const IDLE = new Set(['(idle)']);
for (const file of positionals) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const deltas = profile.timeDeltas;
  for (let i = 0; i < profile.samples.length; i++) {
    const node = byId.get(profile.samples[i]);
    const us = deltas[i + 1] ?? 0;
    const { functionName, url, lineNumber } = node.callFrame;
    if (IDLE.has(functionName)) {
      idle += us;
      continue;
    }
    busy += us;
    const where = url ? `${url.replace(/^.*\/(dist|node_modules)\//, '$1/').replace(/^node:/, 'node:')}:${lineNumber + 1}` : '';
    const key = `${functionName || '(anonymous)'} ${where}`.trim();
    self.set(key, (self.get(key) ?? 0) + us);
  }
}

const groupOf = (key) => {
  if (key.startsWith('(garbage collector)')) return 'GC';
  if (key.includes('dist/') || key.includes('mcp-rx-streams-bench')) return 'this library';
  if (key.includes('node_modules/rxjs')) return 'rxjs';
  if (key.includes('node:')) return 'node internals (JS)';
  if (key.includes('bench/')) return 'bench harness';
  if (/^\((program|root)\)/.test(key)) return '(program): native, outside JS';
  return 'native / builtins (writev, writeUtf8String, …)';
};
const groups = new Map();
for (const [key, us] of self) groups.set(groupOf(key), (groups.get(groupOf(key)) ?? 0) + us);

const pct = (us) => `${((100 * us) / busy).toFixed(1)} %`;
const perFrame = (us) => (FRAMES === undefined ? '' : ` | ${(us / FRAMES).toFixed(3)}`);
const unit = FRAMES === undefined ? '' : ' | µs/frame';
const line = FRAMES === undefined ? '' : '|---:';
console.log(`busy ${(busy / 1e6).toFixed(2)} s, idle ${(idle / 1e6).toFixed(2)} s; ${positionals.length} profile(s)${FRAMES === undefined ? '' : `; ${FRAMES.toLocaleString('en-US')} frames: busy ${(busy / FRAMES).toFixed(2)} µs/frame`}`);
console.log('');
console.log(`| group | self${unit} |`);
console.log(`|---|---:${line}|`);
for (const [group, us] of [...groups].sort((a, b) => b[1] - a[1])) console.log(`| ${group} | ${pct(us)}${perFrame(us)} |`);
console.log('');
console.log(`| function | self${unit} |`);
console.log(`|---|---:${line}|`);
for (const [key, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`| \`${key.replace(/\|/g, '\\|')}\` | ${pct(us)}${perFrame(us)} |`);
