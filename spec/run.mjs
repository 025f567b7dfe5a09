// Runs every spec/**/*.spec.ts file with uvu (TypeScript loaded by tsx) and closes with the
// plain summary line `N passed, N failed` that CI reads. Exit code: 0 only when nothing failed.
//   node spec/run.mjs            all specs (spec/**/*.spec.ts)
//   node spec/run.mjs hub        only the specs whose path matches /hub/
//   node spec/run.mjs 'fixtures/runner/.*\.ts$'
//                                a pattern that names its own suffix picks other files too (the
//                                runner's own spec runs its fixtures so)
//
// A test that never settles (a promise waiting for a server a failed test left down, say) must
// be a failure in the report, not a run that CI stops at its own time limit: when the specs print
// nothing for SPEC_STALL_MS (default 180 000 ms; uvu prints a mark as each test ends), the
// process and everything it started are killed, the file that was running counts one failure
// more, and the files after it run in a new process.
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
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

let current;
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    if (current !== undefined) killGroup(current);
    process.exit(130);
  });
}

function killGroup(child) {
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    child.kill('SIGKILL');
  }
}

/**
 * Runs `files` in one uvu process. Resolves with what it counted, and the files it did not reach
 * when a test stalled.
 */
function runFiles(files) {
  return new Promise((resolve) => {
    // Its own process group, so that a stall kills what the specs started too (redis-server, Bun).
    const child = spawn(process.execPath, ['--import', 'tsx', uvuBin, 'spec', `^(?:${files.map(escape).join('|')})$`], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
      detached: true,
    });
    current = child;
    let out = '';
    let stalled = false;
    let hung = false;
    let exitWatch;
    const stallWatch = setTimeout(function stall() {
      stalled = true;
      killGroup(child);
    }, STALL_MS);
    child.stdout.on('data', (chunk) => {
      out += chunk;
      process.stdout.write(chunk);
      stallWatch.refresh();
      if (exitWatch === undefined && /Duration:/.test(out)) {
        clearTimeout(stallWatch);
        exitWatch = setTimeout(() => {
          hung = true;
          console.log(`\nthe test process did not exit within ${EXIT_GRACE_MS / 1000} s of its last test: a spec left a timer, socket or server open`);
          killGroup(child);
        }, EXIT_GRACE_MS);
      }
    });
    child.on('close', (code, signal) => {
      current = undefined;
      clearTimeout(stallWatch);
      if (exitWatch !== undefined) clearTimeout(exitWatch);
      const text = plain(out);
      if (stalled) {
        // The last file header uvu printed is the file whose test never ended.
        const headers = text.split('\n').filter((line) => files.includes(line.trim()));
        const file = headers.at(-1)?.trim() ?? files[0];
        console.log(`\n${file}: a test printed nothing for ${STALL_MS / 1000} s and was stopped (one failure); the files after it run on`);
        resolve({ passed: count(text, '• '), failed: count(text, '✘ ') + 1, skipped: 0, rest: files.slice(files.indexOf(file) + 1) });
        return;
      }
      const num = (label) => Number((text.match(new RegExp(`${label}:\\s+(\\d+)`)) ?? [])[1] ?? NaN);
      const total = num('Total');
      const passed = num('Passed');
      const skipped = num('Skipped') || 0;
      if (Number.isNaN(total) || Number.isNaN(passed)) {
        console.log(`\nuvu ended without a summary (exit ${code ?? signal})`);
        resolve({ passed: count(text, '• '), failed: count(text, '✘ ') + 1, skipped: 0, rest: [] });
        return;
      }
      // A file that fails outside any test (an import error), or a process that would not exit.
      // (uvu's Total counts the tests that ran; Skipped is apart.)
      const extra = (code !== 0 || hung) && total === passed ? 1 : 0;
      resolve({ passed, failed: total - passed + extra, skipped, rest: [] });
    });
  });
}

const totals = { passed: 0, failed: 0, skipped: 0 };
let files = specFiles(specDir);
if (files.length === 0) {
  console.log(`no spec file matches ${pattern}\n0 passed, 1 failed`);
  process.exit(1);
}
while (files.length > 0) {
  const { passed, failed, skipped, rest } = await runFiles(files);
  totals.passed += passed;
  totals.failed += failed;
  totals.skipped += skipped;
  files = rest;
}
console.log(`\n${totals.passed} passed, ${totals.failed} failed${totals.skipped ? `, ${totals.skipped} skipped` : ''}`);
process.exit(totals.failed === 0 ? 0 : 1);
