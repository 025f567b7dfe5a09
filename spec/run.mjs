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
child.stdout.on('data', (chunk) => {
  out += chunk;
  process.stdout.write(chunk);
});
child.on('close', (code, signal) => {
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
  const failed = total - passed + (code !== 0 && total === passed + skipped ? 1 : 0);
  console.log(`\n${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
  process.exit(failed === 0 && code === 0 ? 0 : 1);
});
