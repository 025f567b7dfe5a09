// The reference file provider's debounce runs on the injected scheduler: its quiet window and its
// ten-period cap are checked here in virtual time (a VirtualTimeScheduler), while the file-system
// events themselves arrive from a real directory. Virtual time moves only when a test advances
// it, so "nothing yet" is checked after real waits far longer than the debounce.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fsp from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { VirtualTimeScheduler } from 'rxjs';
import { FileResources, type FileChange } from '../../adapters/reference/files.js';
import { InvalidOptionError } from '../../lib/errors.js';

const NONE: ReadonlySet<string> = new Set();
/** Real time for every event of one write to arrive (and be scheduled) before the test goes on. */
const EVENTS_MS = 150;

const cleanups: (() => unknown)[] = [];
test.after.each(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function until(what: string, ready: () => boolean, capMs = 3000): Promise<void> {
  const deadline = Date.now() + capMs;
  while (!ready()) {
    if (Date.now() > deadline) assert.unreachable(`timed out after ${capMs} ms waiting for ${what}`);
    await sleep(10);
  }
}

/** A served directory with one file, watched with a 50 ms debounce on a virtual clock. */
async function watched(): Promise<{ file: string; uri: string; root: string; clock: VirtualTimeScheduler; seen: FileChange[] }> {
  const dir = await fsp.realpath(await fsp.mkdtemp(path.join(os.tmpdir(), 'mcp-rx-debounce-')));
  cleanups.push(() => fsp.rm(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'a.txt');
  await fsp.writeFile(file, 'zero\n');
  const clock = new VirtualTimeScheduler();
  const files = await FileResources.open(dir, { debounceMs: 50, scheduler: clock });
  cleanups.push(() => files.close());
  const seen: FileChange[] = [];
  const sub = files.changes().subscribe((change) => seen.push(change));
  cleanups.push(() => sub.unsubscribe());
  await files.list(NONE); // the first reconcile is done
  return { file, uri: `${files.rootUri}a.txt`, root: files.rootUri, clock, seen };
}

/** Moves the virtual clock to `t` milliseconds, running every action due by then. */
function advanceTo(clock: VirtualTimeScheduler, t: number): void {
  clock.schedule(() => {}, t - clock.now());
  clock.maxFrames = t;
  clock.flush();
}

/** When (virtual ms) the pending debounce actions are due. */
function due(clock: VirtualTimeScheduler): number[] {
  return clock.actions.map((action) => action.delay);
}

/** Writes `text` and waits (real time) until its events are scheduled. */
async function write(file: string, text: string, clock: VirtualTimeScheduler): Promise<void> {
  await fsp.writeFile(file, text);
  await until('the write to be scheduled', () => clock.actions.length > 0);
  await sleep(EVENTS_MS);
}

test('a write settles debounceMs of scheduler time after its last event, whatever the wall clock says', async () => {
  const { file, uri, root, clock, seen } = await watched();
  await write(file, 'one\n', clock);
  assert.equal(due(clock), [50]);
  assert.equal(seen, [], 'settled by the wall clock: the debounce did not use the scheduler');

  advanceTo(clock, 49);
  await sleep(EVENTS_MS);
  assert.equal(seen, []);

  // Another write in the quiet window starts it again.
  await write(file, 'two\n', clock);
  assert.equal(due(clock), [99]);
  advanceTo(clock, 98);
  await sleep(EVENTS_MS);
  assert.equal(seen, []);

  advanceTo(clock, 99);
  await until('the updated', () => seen.length > 0);
  await sleep(EVENTS_MS);
  assert.equal(seen, [{ kind: 'updated', uris: [uri, root] }]);
  assert.equal(due(clock), []);
});

test('a path that never goes quiet is still settled ten debounce periods after its first event', async () => {
  const { file, uri, root, clock, seen } = await watched();
  await write(file, 'w0\n', clock);
  // A write every 40 ms (inside every 50 ms window): without the cap it would never settle.
  for (let t = 40; t <= 480; t += 40) {
    advanceTo(clock, t);
    await write(file, `w${t}\n`, clock);
    assert.equal(seen, [], `settled at ${t} ms, before the cap`);
  }
  // The write at 480 ms is due at min(480 + 50, 0 + 10 × 50) = 500 ms.
  assert.equal(due(clock), [500]);
  advanceTo(clock, 499);
  await sleep(EVENTS_MS);
  assert.equal(seen, []);
  advanceTo(clock, 500);
  await until('the updated', () => seen.length > 0);
  await sleep(EVENTS_MS);
  assert.equal(seen, [{ kind: 'updated', uris: [uri, root] }]);
});

test('open rejects a scheduler that is not a SchedulerLike, naming the option', async () => {
  const dir = await fsp.realpath(await fsp.mkdtemp(path.join(os.tmpdir(), 'mcp-rx-debounce-')));
  cleanups.push(() => fsp.rm(dir, { recursive: true, force: true }));
  for (const bad of [null, 5, {}, { now: () => 0 }]) {
    try {
      await FileResources.open(dir, { scheduler: bad as never });
      assert.unreachable(`scheduler ${JSON.stringify(bad)} accepted`);
    } catch (error) {
      assert.instance(error, InvalidOptionError);
      assert.match((error as Error).message, 'scheduler must be an RxJS SchedulerLike (now, schedule)');
    }
  }
});

test.run();
