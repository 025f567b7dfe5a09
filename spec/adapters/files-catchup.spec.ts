// FileResources.publishable: what a publisher that takes over the folder watch announces first (the
// difference between the state its predecessor recorded and the folder), and the state each batch
// carries for it to record (issue 31, item 1). Real files in a temp dir, real fs.watch.
import { strict as assert } from 'node:assert';
import * as fsp from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { test } from 'uvu';
import { FileResources, type FolderState, type SettledBatch } from '../../adapters/reference/files.js';

const cleanups: (() => unknown)[] = [];
test.after.each(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** README.md, tools.json, notes/todo.txt, old/gone.txt, private/secret.txt. */
async function fixture(): Promise<string> {
  const dir = path.join(await fsp.realpath(await fsp.mkdtemp(path.join(os.tmpdir(), 'mcp-rx-catchup-'))), 'data');
  cleanups.push(() => fsp.rm(path.dirname(dir), { recursive: true, force: true }));
  for (const sub of ['notes', 'old', 'private']) await fsp.mkdir(path.join(dir, sub), { recursive: true });
  await fsp.writeFile(path.join(dir, 'README.md'), '# hello\n');
  await fsp.writeFile(path.join(dir, 'tools.json'), '[]');
  await fsp.writeFile(path.join(dir, 'notes', 'todo.txt'), 'buy milk\n');
  await fsp.writeFile(path.join(dir, 'old', 'gone.txt'), 'bye\n');
  await fsp.writeFile(path.join(dir, 'private', 'secret.txt'), 's3cret\n');
  return dir;
}

async function open(dir: string): Promise<FileResources> {
  const files = await FileResources.open(dir);
  cleanups.push(() => files.close());
  return files;
}

/** The batches of `files.publishable(since)`, as they come. */
function publish(files: FileResources, since: () => Promise<FolderState | undefined>): SettledBatch[] {
  const batches: SettledBatch[] = [];
  const subscription = files.publishable(since).subscribe((batch) => batches.push(batch));
  cleanups.push(() => subscription.unsubscribe());
  return batches;
}

async function until(what: string, ready: () => boolean, ms = 3000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** `state` with `entries` applied, as a record is updated. */
function applied(state: FolderState, entries: ReadonlyMap<string, string | null>): Map<string, string> {
  const out = new Map(state);
  for (const [name, entry] of entries) {
    if (entry === null) out.delete(name);
    else out.set(name, entry);
  }
  return out;
}

const uri = (dir: string, name: string) => pathToFileURL(path.join(dir, name)).href;
const folder = (dir: string, name = '') => `${pathToFileURL(path.join(dir, name)).href.replace(/\/$/, '')}/`;

test('nothing recorded: the first batch announces nothing and carries the whole tree; later batches carry what they settled', async () => {
  const dir = await fixture();
  const files = await open(dir);
  const batches = publish(files, async () => undefined);
  await until('the first batch', () => batches.length === 1);
  const [first] = batches;
  assert.deepEqual(first!.changes, []);
  assert.equal(first!.catchUp, true);
  assert.deepEqual([...first!.state.keys()].sort(), ['README.md', 'notes', 'notes/todo.txt', 'old', 'old/gone.txt', 'private', 'private/secret.txt', 'tools.json']);
  assert.equal(first!.state.get('notes'), '/', 'a folder');
  assert.match(first!.state.get('README.md')!, /^\d+:[\d.]+:8$/, 'a file: inode, mtime, size');
  await fsp.appendFile(path.join(dir, 'notes', 'todo.txt'), 'and eggs\n');
  await fsp.rm(path.join(dir, 'README.md'));
  await until('a live batch', () => batches.length >= 2);
  await sleep(200);
  const live = batches.slice(1);
  assert.ok(live.every((batch) => !batch.catchUp));
  const entries = new Map(live.flatMap((batch) => [...batch.state]));
  assert.equal(entries.get('README.md'), null, 'gone');
  assert.notEqual(entries.get('notes/todo.txt'), first!.state.get('notes/todo.txt'), 'a new version');
  assert.deepEqual([...entries.keys()].sort(), ['README.md', 'notes/todo.txt']);
});

test('a record left by a predecessor: what changed since is one first batch (edited, created, deleted, a folder removed, private apart), and its state brings the record up to date', async () => {
  const dir = await fixture();
  const before = await open(dir);
  const recorded = publish(before, async () => undefined);
  await until('the record', () => recorded.length === 1);
  const record = recorded[0]!.state as FolderState;
  before.close();
  // Changed while nobody watched.
  await fsp.appendFile(path.join(dir, 'notes', 'todo.txt'), 'and eggs\n');
  await fsp.writeFile(path.join(dir, 'notes', 'new.txt'), 'new\n');
  await fsp.rm(path.join(dir, 'old'), { recursive: true });
  await fsp.appendFile(path.join(dir, 'private', 'secret.txt'), 'more\n');
  await fsp.writeFile(path.join(dir, 'tools.json'), '[{"name":"t"}]');
  const files = await open(dir);
  const batches = publish(files, async () => record);
  await until('the catch-up', () => batches.length === 1);
  await sleep(200);
  assert.equal(batches.length, 1, 'nothing else changed');
  const [catchUp] = batches;
  assert.equal(catchUp!.catchUp, true);
  assert.deepEqual(catchUp!.changes, [
    { kind: 'listChanged', uris: [folder(dir, 'notes'), folder(dir, 'old'), folder(dir)] },
    { kind: 'updated', uris: [uri(dir, 'notes/todo.txt'), folder(dir, 'notes'), folder(dir)] },
    { kind: 'updated', uris: [uri(dir, 'private/secret.txt'), folder(dir, 'private'), folder(dir)], scope: 'private' },
    { kind: 'updated', uris: [uri(dir, 'tools.json'), folder(dir)] },
    { kind: 'tools' },
  ]);
  assert.deepEqual([...catchUp!.state.keys()].sort(), ['notes/new.txt', 'notes/todo.txt', 'old', 'old/gone.txt', 'private/secret.txt', 'tools.json']);
  assert.equal(catchUp!.state.get('old'), null);
  // The record brought up to date: the next publisher has nothing to announce.
  const updated = applied(record, catchUp!.state);
  files.close();
  const next = await open(dir);
  const again = publish(next, async () => updated);
  await until('the next catch-up', () => again.length === 1);
  assert.deepEqual(again[0]!.changes, []);
  assert.equal(again[0]!.state.size, 0);
});

test('batches settled before the catch-up are summed up in it, not sent apart', async () => {
  const dir = await fixture();
  const files = await open(dir);
  const recorded = publish(files, async () => undefined);
  await until('the record', () => recorded.length === 1);
  const record = recorded[0]!.state as FolderState;
  // The record is read slowly: a change settles (and is emitted to the other subscriber) meanwhile.
  let read: (state: FolderState) => void = () => undefined;
  const batches = publish(files, () => new Promise<FolderState>((resolve) => (read = resolve)));
  await fsp.appendFile(path.join(dir, 'README.md'), 'more\n');
  await until('the live batch', () => recorded.length === 2);
  assert.equal(batches.length, 0);
  read(record);
  await until('the catch-up', () => batches.length === 1);
  assert.deepEqual(batches[0]!.changes, [{ kind: 'updated', uris: [uri(dir, 'README.md'), folder(dir)] }]);
  await fsp.appendFile(path.join(dir, 'README.md'), 'again\n');
  await until('the next live batch', () => batches.length === 2);
  assert.equal(batches[1]!.catchUp, false);
});

test.run();
