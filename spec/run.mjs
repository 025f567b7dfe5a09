// Runs every spec/**/*.spec.ts file with uvu (TypeScript loaded by tsx) and closes with the
// plain summary line `N passed, N failed` that CI reads. Exit code: 0 only when nothing failed.
//   node spec/run.mjs            all specs (spec/**/*.spec.ts)
//   node spec/run.mjs hub        only the specs whose path matches /hub/
//   node spec/run.mjs 'fixtures/runner/.*\.ts$'
//                                a pattern that names its own suffix picks other files too (the
//                                runner's own spec runs its fixtures so)
//
// The files run in SPEC_LANES uvu processes at once (default 2, the 2 cores the run is planned
// for), each over its share (the long files of HEAVY dealt out evenly); each file's output is
// printed whole once it has ended, and the run closes with its time and its slowest files.
// SPEC_LANES=1 runs them all in one process, in uvu's order.
//
// A test that never settles (a promise waiting for a server a failed test left down, say) must
// be a failure in the report, not a run that CI stops at its own time limit: when the specs print
// nothing for SPEC_STALL_MS (default 180 000 ms; uvu prints a mark as each test ends), the
// process and everything it started are killed, the file that was running counts one failure
// more, and the files after it run in a new process. A process that crashes (an uncaught error,
// an unhandled rejection) is counted so too, and the files after it run on.
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const specDir = fileURLToPath(new URL('.', import.meta.url));
const uvuBin = fileURLToPath(new URL('../node_modules/uvu/bin.js', import.meta.url));
const given = process.argv[2];
const pattern = new RegExp(given ?? '\\.spec\\.ts$', 'i');
// Spec files only, unless the pattern says which files it means (it ends with a suffix).
const specsOnly = given === undefined || !/\\\.[a-z]+\$$/.test(given);
const STALL_MS = Number(process.env.SPEC_STALL_MS ?? 180_000);
// uvu prints its summary when the last test is done; a process still alive well after that is
// held by something a spec left open (a timer, a socket, a server).
const EXIT_GRACE_MS = 15_000;

/** The spec files uvu would pick, in its order (paths relative to spec/, sorted). */
function specFiles(dir, prefix = '') {
  const files = [];
  for (const entry of readdirSync(dir)) {
    if (entry === 'node_modules' || entry.startsWith('.')) continue;
    const name = prefix === '' ? entry : `${prefix}/${entry}`;
    const full = path.join(dir, entry);
    if (statSync(full).isDirectory()) files.push(...specFiles(full, name));
    else if ((!specsOnly || /\.spec\.ts$/.test(name)) && /\.ts$/.test(name) && pattern.test(name)) files.push(name);
  }
  return files.sort((a, b) => a.localeCompare(b));
}

const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const plain = (text) => text.replace(/\x1b\[[0-9;]*m/g, '');
const count = (text, mark) => text.split(mark).length - 1;


function killGroup(child) {
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    child.kill('SIGKILL');
  }
}

/**
 * Runs `files` in one uvu process, printing each file's output whole once it has ended (lanes run
 * side by side). Resolves with what it counted, the files it did not reach when a test stalled, and
 * how long each file took.
 */
function runFiles(files) {
  return new Promise((resolve) => {
    // Its own process group, so that a stall kills what the specs started too (redis-server, Bun).
    const child = spawn(process.execPath, ['--import', 'tsx', uvuBin, 'spec', `^(?:${files.map(escape).join('|')})$`], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
      detached: true,
    });
    running.add(child);
    let out = '';
    let printed = 0;
    let stalled = false;
    let hung = false;
    let exitWatch;
    /** The file uvu is in, and when it began. */
    let inFile;
    const took = [];
    const fileAt = (text, from) => {
      // A line that is one of this lane's file names: uvu's header as it begins that file.
      const pattern = /(^|\n)([^\n]+)\n/g;
      pattern.lastIndex = from;
      let found;
      for (let match; (match = pattern.exec(text)) !== null; pattern.lastIndex = match.index + match[0].length - 1) {
        if (files.includes(match[2].trim())) found = { at: match.index + match[1].length, file: match[2].trim() };
      }
      return found;
    };
    const stallWatch = setTimeout(function stall() {
      stalled = true;
      killGroup(child);
    }, STALL_MS);
    child.stdout.on('data', (chunk) => {
      out += chunk;
      stallWatch.refresh();
      // Print up to the header of the file now running: the files before it have ended.
      const header = fileAt(out, printed);
      if (header !== undefined && header.file !== inFile?.file) {
        if (inFile !== undefined) took.push({ file: inFile.file, ms: performance.now() - inFile.since });
        inFile = { file: header.file, since: performance.now() };
        if (header.at > printed) {
          process.stdout.write(out.slice(printed, header.at));
          printed = header.at;
        }
      }
      if (exitWatch === undefined && /Duration:/.test(out)) {
        clearTimeout(stallWatch);
        exitWatch = setTimeout(() => {
          hung = true;
          out += `\nthe test process did not exit within ${EXIT_GRACE_MS / 1000} s of its last test: a spec left a timer, socket or server open\n`;
          killGroup(child);
        }, EXIT_GRACE_MS);
      }
    });
    child.on('close', (code, signal) => {
      running.delete(child);
      clearTimeout(stallWatch);
      if (exitWatch !== undefined) clearTimeout(exitWatch);
      if (inFile !== undefined) took.push({ file: inFile.file, ms: performance.now() - inFile.since });
      // uvu's own summary of this process is not printed: the run prints one for every lane.
      const rest = out.slice(printed).replace(/\n  Total:[\s\S]*$/, '\n');
      process.stdout.write(rest);
      const text = plain(out);
      // The last file header uvu printed: the file that was running when the process stopped.
      const current = () => text.split('\n').filter((line) => files.includes(line.trim())).at(-1)?.trim() ?? files[0];
      if (stalled) {
        const file = current();
        console.log(`\n${file}: a test printed nothing for ${STALL_MS / 1000} s and was stopped (one failure); the files after it run on`);
        resolve({ passed: count(text, '• '), failed: count(text, '✘ ') + 1, skipped: 0, rest: files.slice(files.indexOf(file) + 1), took });
        return;
      }
      const num = (label) => Number((text.match(new RegExp(`${label}:\\s+(\\d+)`)) ?? [])[1] ?? NaN);
      const total = num('Total');
      const passed = num('Passed');
      const skipped = num('Skipped') || 0;
      if (Number.isNaN(total) || Number.isNaN(passed)) {
        // A crash (an uncaught error, an unhandled rejection) ended the process: one failure for
        // the file it was in, and the files after it run in a new process.
        const file = current();
        console.log(`\n${file}: uvu ended without a summary (exit ${code ?? signal}; one failure); the files after it run on`);
        resolve({ passed: count(text, '• '), failed: count(text, '✘ ') + 1, skipped: 0, rest: files.slice(files.indexOf(file) + 1), took });
        return;
      }
      // A file that fails outside any test (an import error), or a process that would not exit.
      // (uvu's Total counts the tests that ran; Skipped is apart.)
      const extra = (code !== 0 || hung) && total === passed ? 1 : 0;
      resolve({ passed, failed: total - passed + extra, skipped, rest: [], took });
    });
  });
}

// Files that take longest (tens of seconds: real servers, clusters, browsers, the conformance
// runner): started first, so that two lanes end together instead of one waiting on the last of them.
const HEAVY = [
  'conformance.spec.ts', 'redis/production-day.spec.ts', 'package.spec.ts', 'browser.spec.ts', 'reference-clients.spec.ts',
  'redis/sentinel.spec.ts', 'redis/redis-cluster.spec.ts', 'redis/cluster.spec.ts', 'serve-flags.spec.ts', 'redis/fleet.spec.ts',
  'cluster/serve.spec.ts', 'upstream/sdk.spec.ts', 'upstream/python.spec.ts', 'interop-stdio.spec.ts', 'snippets.spec.ts',
];
const LANES = Math.max(1, Number(process.env.SPEC_LANES ?? 2));

const running = new Set();
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    for (const child of running) killGroup(child);
    process.exit(130);
  });
}

const totals = { passed: 0, failed: 0, skipped: 0 };
const took = [];
const all = specFiles(specDir);
if (all.length === 0) {
  console.log(`no spec file matches ${pattern}\n0 passed, 1 failed`);
  process.exit(1);
}
const started = performance.now();
/** Runs `files` one uvu process after another (a stalled one leaves the rest to the next). */
async function lane(files) {
  while (files.length > 0) {
    const result = await runFiles(files);
    totals.passed += result.passed;
    totals.failed += result.failed;
    totals.skipped += result.skipped;
    took.push(...result.took);
    files = result.rest;
  }
}
// Each lane is one uvu process over its share of the files: the heavy files dealt out first, one
// to each lane in turn, then the rest to whichever lane has the least weight (a heavy file weighs 10).
const lanes = Array.from({ length: Math.min(LANES, all.length) }, () => ({ files: [], weight: 0 }));
const rank = (file) => (HEAVY.includes(file) ? HEAVY.indexOf(file) : HEAVY.length);
for (const file of [...all].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b))) {
  const lightest = lanes.reduce((best, candidate) => (candidate.weight < best.weight ? candidate : best));
  lightest.files.push(file);
  lightest.weight += HEAVY.includes(file) ? 10 : 1;
}
await Promise.all(lanes.map(({ files }) => lane(files.sort((a, b) => a.localeCompare(b)))));
const slowest = took.sort((a, b) => b.ms - a.ms).slice(0, 10);
console.log(`\n${all.length} files in ${((performance.now() - started) / 1000).toFixed(1)} s on ${Math.min(LANES, all.length)} lane(s); slowest: ${slowest.map(({ file, ms }) => `${file} ${(ms / 1000).toFixed(1)} s`).join(', ')}`);
console.log(`\n${totals.passed} passed, ${totals.failed} failed${totals.skipped ? `, ${totals.skipped} skipped` : ''}`);
process.exit(totals.failed === 0 ? 0 : 1);
