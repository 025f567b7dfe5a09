// What the in-process benches (bench/pipeline.mjs, bench/snapshot.mjs) share: reading their flags,
// the builds they compare (this checkout's, and a --baseline), running every (build, cell) in a
// fresh child process per round with the order rotated, and the medians of the rounds.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { describeBuild, OWN_DIST, resolveBuild, snapshotBuild } from './build.mjs';

/**
 * The flags of a bench script (`options` as `parseArgs` takes them, plus its own `child`); the ones
 * named in `counts` must be positive integers. A mistake prints `usage` and exits with code 2.
 * @returns `{ values, fail }`: the values, and the function that reports a mistake.
 */
export function readFlags(script, usage, options, counts) {
  const fail = (message) => {
    console.error(`${script}: ${message}\n${usage}`);
    process.exit(2);
  };
  let values;
  try {
    ({ values } = parseArgs({ options: { ...options, child: { type: 'string' } } }));
  } catch (error) {
    fail(error.message);
  }
  for (const name of counts) {
    const value = Number(values[name]);
    if (!(Number.isInteger(value) && value > 0)) fail(`--${name}: a positive integer, got ${values[name]}`);
  }
  return { values, fail };
}

/**
 * The builds to measure: `--baseline DIR` first when given, then this checkout's dist/, each copied
 * under node_modules/.cache/ (bench/build.mjs) so that a rebuild meanwhile changes nothing.
 * @returns `[{ label, build, copy }]`, `copy` the directory of the copied build.
 */
export function buildsToCompare(baseline, tag, fail) {
  const builds = [];
  try {
    if (baseline !== undefined) builds.push(['baseline', describeBuild(resolveBuild(baseline))]);
  } catch (error) {
    fail(`--baseline: ${error.message}`);
  }
  try {
    builds.push(['this build', describeBuild(resolveBuild(OWN_DIST))]);
  } catch (error) {
    fail(`no build in this checkout's dist/ (npm run build): ${error.message}`);
  }
  return builds.map(([label, build]) => ({ label, build, copy: path.dirname(fileURLToPath(snapshotBuild(build.dir, `${tag}-${label === 'baseline' ? 'baseline' : 'this'}`))) }));
}

let running; // the child measuring now
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    running?.kill('SIGKILL');
    process.exit(130);
  });
}

/** Runs `script` with `args` under `--expose-gc` and resolves with the JSON it writes on stdout. */
export function childJson(script, args) {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ['--expose-gc', script, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
    running = proc;
    let out = '';
    proc.stdout.on('data', (chunk) => (out += chunk));
    proc.on('close', (code) => {
      running = undefined;
      if (code === 0) resolve(JSON.parse(out));
      else reject(new Error(`${args.join(' ')} exited with ${code}`));
    });
  });
}

/**
 * Runs every cell once per round (`measure(cell)`, which resolves with one run), the order rotated
 * from one round to the next so that a slower stretch of a shared machine falls on all of them
 * rather than on one build's rounds; each cell keeps its runs in `cell.runs`.
 */
export async function rounds(cells, count, measure) {
  for (let round = 0; round < count; round++) {
    for (let i = 0; i < cells.length; i++) {
      const cell = cells[(i + round) % cells.length];
      cell.runs.push(await measure(cell));
    }
  }
}

/** The median of each key over the runs (keys with no value in any run stay `undefined`). */
export function medians(runs) {
  const median = (key) => {
    const sorted = runs.map((run) => run[key]).filter((value) => value !== undefined).sort((a, b) => a - b);
    return sorted.length === 0 ? undefined : sorted[Math.floor(sorted.length / 2)];
  };
  return Object.fromEntries(Object.keys(runs[0]).map((key) => [key, median(key)]));
}
