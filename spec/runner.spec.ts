// spec/run.mjs itself: a test that never settles must end up in the report as a failure, not
// hold the run until CI's own time limit (it once did: a Redis spec waiting for a server a failed
// test had left down).
import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'uvu';

function run(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['spec/run.mjs', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.resume();
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout }));
  });
}

/** Whether `pid` is a live process (a zombie left to a parent that does not reap it is not). */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

for (const lanes of ['1', '2']) test(`a test that prints nothing for SPEC_STALL_MS is stopped with what it started, counted as failed, and the files after it run (SPEC_LANES=${lanes})`, async () => {
  const { code, stdout } = await run(['fixtures/runner/.*\\.ts$'], { SPEC_STALL_MS: '4000', SPEC_LANES: lanes });
  assert.match(stdout, new RegExp(`\\n\\d+ files in [\\d.]+ s on ${lanes} lane\\(s\\); slowest: `));
  assert.equal(code, 1);
  assert.match(stdout, /fixtures\/runner\/a-hangs\.ts: a test printed nothing for 4 s and was stopped \(one failure\)/);
  assert.match(stdout, /fixtures\/runner\/b-fine\.ts\n• • {3}\(2 \/ 2\)/);
  // The passing test before the stall counts, the stalled one fails, the one after it never ran.
  assert.equal(stdout.trim().split('\n').at(-1), '3 passed, 1 failed');
  const pid = Number(/child pid (\d+)/.exec(stdout)?.[1]);
  assert.ok(pid > 0, 'the fixture printed its child pid');
  assert.equal(alive(pid), false, 'the child process of the stalled test was killed with it');
});

for (const lanes of ['1', '2']) test(`a process that crashes (an unhandled rejection) counts one failure for its file, and the files after it run (SPEC_LANES=${lanes})`, async () => {
  const { code, stdout } = await run(['fixtures/crash/.*\\.ts$'], { SPEC_LANES: lanes });
  assert.equal(code, 1);
  assert.match(stdout, /fixtures\/crash\/a-crashes\.ts: uvu ended without a summary \(exit 1; one failure\); the files after it run on/);
  assert.match(stdout, /fixtures\/crash\/b-fine\.ts\n• • {3}\(2 \/ 2\)/);
  assert.equal(stdout.trim().split('\n').at(-1), '3 passed, 1 failed');
});

test('a pattern without a suffix picks spec files only (not the fixtures above), and none matching is a failure, not a pass', async () => {
  const { code, stdout } = await run(['fixtures/runner'], {});
  assert.equal(code, 1);
  assert.match(stdout, /no spec file matches/);
  assert.equal(stdout.trim().split('\n').at(-1), '0 passed, 1 failed');
});

test.run();
