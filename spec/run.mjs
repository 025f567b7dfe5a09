// Runs every spec/**/*.spec.ts file with uvu (TypeScript loaded by tsx) and closes with the
// plain summary line `N passed, N failed` that CI reads. Exit code: 0 only when nothing failed.
//   node spec/run.mjs            all specs
//   node spec/run.mjs hub        only files whose path matches /hub/
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const uvuBin = fileURLToPath(new URL('../node_modules/uvu/bin.js', import.meta.url));
const pattern = process.argv[2] ?? '\\.spec\\.ts$';

const child = spawn(process.execPath, ['--import', 'tsx', uvuBin, 'spec', pattern], {
  stdio: ['ignore', 'pipe', 'inherit'],
  env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
});
let out = '';
// uvu prints its summary when the last test is done; a process still alive well after that is
// held by something a spec left open (a timer, a socket, a server). That is a failure to report,
// not a reason for CI to wait until its own time limit.
const EXIT_GRACE_MS = 15_000;
let hung = false;
let watchdog;
child.stdout.on('data', (chunk) => {
  out += chunk;
  process.stdout.write(chunk);
  if (watchdog === undefined && /Duration:/.test(out)) {
    watchdog = setTimeout(() => {
      hung = true;
      console.log(`\nthe test process did not exit within ${EXIT_GRACE_MS / 1000} s of its last test: a spec left a timer, socket or server open`);
      child.kill('SIGKILL');
    }, EXIT_GRACE_MS);
    watchdog.unref();
  }
});
child.on('close', (code, signal) => {
  if (watchdog !== undefined) clearTimeout(watchdog);
  const plain = out.replace(/\x1b\[[0-9;]*m/g, '');
  const num = (label) => Number((plain.match(new RegExp(`${label}:\\s+(\\d+)`)) ?? [])[1] ?? NaN);
  const total = num('Total');
  const passed = num('Passed');
  const skipped = num('Skipped') || 0;
  if (Number.isNaN(total) || Number.isNaN(passed)) {
    console.log(`\nuvu ended without a summary (exit ${code ?? signal})`);
    console.log(`0 passed, 1 failed`);
    process.exit(1);
  }
  const failed = total - passed + ((code !== 0 || hung) && total === passed + skipped ? 1 : 0);
  console.log(`\n${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
  process.exit(failed === 0 && code === 0 && !hung ? 0 : 1);
});
