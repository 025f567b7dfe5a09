// FileResources against a hostile tree (issue 11, sections 4 and 5): folders swapped for links,
// files swapped for FIFOs and devices, oversized files, private changes, and the served
// directory itself deleted, recreated, renamed away and back, or replaced by a link.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import * as fsp from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { DEFAULT_MAX_READ_BYTES, FileResources, ResourceTooLargeError } from '../../adapters/reference/files.js';
import type { FileChange } from '../../adapters/reference/files.js';
import { InvalidOptionError } from '../../lib/errors.js';

const NONE: ReadonlySet<string> = new Set();
const PRIVATE: ReadonlySet<string> = new Set(['private']);
const QUIET_MS = 200;

const cleanups: (() => unknown)[] = [];
test.after.each(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function tempDir(): Promise<string> {
  const dir = await fsp.realpath(await fsp.mkdtemp(path.join(os.tmpdir(), 'mcp-rx-hostile-')));
  cleanups.push(() => fsp.rm(dir, { recursive: true, force: true }));
  return dir;
}

/** README.md, pub/file.txt ("public"), private/file.txt and private/only-private.txt. */
async function fixture(): Promise<string> {
  const dir = path.join(await tempDir(), 'data');
  await fsp.mkdir(path.join(dir, 'pub'), { recursive: true });
  await fsp.mkdir(path.join(dir, 'private'));
  await fsp.writeFile(path.join(dir, 'README.md'), '# hello\n');
  await fsp.writeFile(path.join(dir, 'pub', 'file.txt'), 'public\n');
  await fsp.writeFile(path.join(dir, 'private', 'file.txt'), 'PRIVATE BYTES\n');
  await fsp.writeFile(path.join(dir, 'private', 'only-private.txt'), 'PRIVATE TOO\n');
  return dir;
}

async function open(dir: string, options?: Parameters<typeof FileResources.open>[1]): Promise<FileResources> {
  const files = await FileResources.open(dir, options);
  cleanups.push(() => files.close());
  return files;
}

function record(files: FileResources): FileChange[] {
  const seen: FileChange[] = [];
  const sub = files.changes().subscribe((change) => seen.push(change));
  cleanups.push(() => sub.unsubscribe());
  return seen;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function until(what: string, ready: () => boolean | Promise<boolean>, capMs = 3000): Promise<void> {
  const deadline = Date.now() + capMs;
  while (!(await ready())) {
    if (Date.now() > deadline) assert.unreachable(`timed out after ${capMs} ms waiting for ${what}`);
    await sleep(10);
  }
}

async function settle(seen: FileChange[], what: string): Promise<FileChange[]> {
  await until(what, () => seen.length > 0);
  await sleep(QUIET_MS);
  return seen.splice(0);
}

const fsEventHandles = () => process.getActiveResourcesInfo().filter((name) => name === 'FSEventWrap').length;

const uris = async (files: FileResources, scopes = PRIVATE) => (await files.list(scopes)).map((r) => r.uri);

test('maxReadBytes: a positive integer of bytes, else an InvalidOptionError naming it', async () => {
  const dir = await fixture();
  for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '10' as unknown as number]) {
    try {
      await FileResources.open(dir, { maxReadBytes: bad });
      assert.unreachable(`maxReadBytes ${String(bad)} accepted`);
    } catch (error) {
      assert.instance(error, InvalidOptionError);
      assert.match((error as Error).message, 'maxReadBytes must be a positive integer of bytes');
    }
  }
  assert.is(DEFAULT_MAX_READ_BYTES, 8_388_608);
});

test('a file over maxReadBytes is refused with ResourceTooLargeError; one of exactly the cap is served', async () => {
  const dir = await fixture();
  await fsp.writeFile(path.join(dir, 'at-cap.txt'), 'x'.repeat(100));
  await fsp.writeFile(path.join(dir, 'over-cap.txt'), 'x'.repeat(101));
  const files = await open(dir, { maxReadBytes: 100 });
  const u = files.rootUri;
  assert.is((await files.read(`${u}at-cap.txt`, NONE))?.contents[0]?.text, 'x'.repeat(100));
  try {
    await files.read(`${u}over-cap.txt`, NONE);
    assert.unreachable('an oversized file was read');
  } catch (error) {
    assert.instance(error, ResourceTooLargeError);
    const tooLarge = error as ResourceTooLargeError;
    assert.is(tooLarge.code, 'ERR_MCP_RX_RESOURCE_TOO_LARGE');
    assert.equal(tooLarge.info, { uri: `${u}over-cap.txt`, size: 101, maxReadBytes: 100 });
    assert.match(tooLarge.message, `${u}over-cap.txt is 101 bytes`);
  }
  // Unreadable stays "not found" (undefined), never the size error: it reveals nothing.
  await fsp.writeFile(path.join(dir, 'private', 'big.txt'), 'y'.repeat(500));
  assert.is(await files.read(`${u}private/big.txt`, NONE), undefined);
});

test('the default cap is 8 MiB: 8 MiB is served, one byte more is refused', async () => {
  const dir = await fixture();
  // Sparse files: nothing is written to disk.
  for (const [name, size] of [['eight.bin', DEFAULT_MAX_READ_BYTES], ['over.bin', DEFAULT_MAX_READ_BYTES + 1]] as const) {
    const handle = await fsp.open(path.join(dir, name), 'w');
    await handle.truncate(size);
    await handle.close();
  }
  const files = await open(dir);
  const read = await files.read(`${files.rootUri}eight.bin`, NONE);
  assert.is(Buffer.from(read?.contents[0]?.blob ?? '', 'base64').length, DEFAULT_MAX_READ_BYTES);
  const error = await files.read(`${files.rootUri}over.bin`, NONE).catch((e: unknown) => e);
  assert.instance(error, ResourceTooLargeError);
  assert.is((error as ResourceTooLargeError).info.size, DEFAULT_MAX_READ_BYTES + 1);
});

test('tools.json over the cap is served as [] with one warning', async () => {
  const dir = await fixture();
  await fsp.writeFile(path.join(dir, 'tools.json'), JSON.stringify([{ name: 'a'.repeat(200) }]));
  const warnings: string[] = [];
  const files = await open(dir, { maxReadBytes: 64, onWarning: (m) => warnings.push(m) });
  assert.equal(await files.tools(), []);
  assert.equal(await files.tools(), []);
  assert.is(warnings.length, 1);
  assert.match(warnings[0]!, 'more than maxReadBytes (64)');
});

test('a file replaced by a FIFO, or a link re-pointed at a device, is not read and does not hang', async () => {
  const dir = await fixture();
  const files = await open(dir);
  const u = files.rootUri;
  // Nobody watches: the known set still has pub/file.txt as a file.
  await fsp.rm(path.join(dir, 'pub', 'file.txt'));
  execFileSync('mkfifo', [path.join(dir, 'pub', 'file.txt')]);
  const started = Date.now();
  assert.is(await files.read(`${u}pub/file.txt`, NONE), undefined);
  assert.ok(Date.now() - started < 1000, 'the FIFO read returned at once');
  await fsp.symlink(path.join(dir, 'README.md'), path.join(dir, 'link.md'));
  assert.ok((await uris(files, NONE)).includes(`${u}link.md`));
  await fsp.rm(path.join(dir, 'link.md'));
  await fsp.symlink('/dev/zero', path.join(dir, 'link.md'));
  assert.is(await files.read(`${u}link.md`, NONE), undefined);
});

test('a public folder swapped for a link into private/ after the scan: no private byte, name or listing', async () => {
  const dir = await fixture();
  const files = await open(dir);
  const u = files.rootUri;
  assert.is((await files.read(`${u}pub/file.txt`, NONE))?.contents[0]?.text, 'public\n');
  await fsp.rename(path.join(dir, 'pub'), path.join(dir, 'pub.away'));
  await fsp.symlink(path.join(dir, 'private'), path.join(dir, 'pub'));
  // The stale known set still names pub/file.txt: the read opens it and sees where it really is.
  assert.is(await files.read(`${u}pub/file.txt`, NONE), undefined);
  const listed = await uris(files, NONE);
  assert.not.ok(listed.some((uri) => uri.startsWith(`${u}pub/`)), listed.join(' '));
  assert.is(await files.read(`${u}pub/`, NONE), undefined);
});

test('the served directory replaced by a link elsewhere: nothing outside is listed, read or watched', async () => {
  const dir = await fixture();
  const outside = await tempDir();
  await fsp.writeFile(path.join(outside, 'stolen.txt'), 'OUTSIDE');
  const files = await open(dir);
  const u = files.rootUri;
  await fsp.rename(dir, `${dir}.away`);
  await fsp.symlink(outside, dir);
  assert.equal(await uris(files), [u]);
  assert.is(await files.read(`${u}stolen.txt`, PRIVATE), undefined);
  assert.is((await files.read(u, PRIVATE))?.contents[0]?.text, '');

  const seen = record(files);
  assert.equal(await uris(files), [u]);
  await fsp.writeFile(path.join(outside, 'stolen.txt'), 'OUTSIDE, changed');
  await fsp.writeFile(path.join(outside, 'new.txt'), 'new');
  await sleep(QUIET_MS + 600);
  assert.equal(seen, []);
  assert.equal(await uris(files), [u]);
});

test('a change under private/ is marked scope private, its public collections included; a mixed batch splits', async () => {
  const dir = await fixture();
  const files = await open(dir);
  const seen = record(files);
  const u = files.rootUri;
  await files.list(NONE);
  await fsp.appendFile(path.join(dir, 'private', 'file.txt'), 'more\n');
  assert.equal(await settle(seen, 'the private update'), [
    { kind: 'updated', uris: [`${u}private/file.txt`, `${u}private/`, u], scope: 'private' },
  ]);
  await fsp.writeFile(path.join(dir, 'private', 'new.txt'), 'n');
  assert.equal(await settle(seen, 'the private create'), [{ kind: 'listChanged', uris: [`${u}private/`, u], scope: 'private' }]);
  // One rename, two halves in one batch: the public half is public, the private half is not.
  await fsp.rename(path.join(dir, 'pub', 'file.txt'), path.join(dir, 'private', 'moved.txt'));
  const changes = await settle(seen, 'the rename into private/');
  const publicUris = changes.filter((c) => c.kind === 'listChanged' && !('scope' in c)).flatMap((c) => (c.kind === 'listChanged' ? c.uris : []));
  const privateUris = changes.filter((c) => c.kind === 'listChanged' && c.scope === 'private').flatMap((c) => (c.kind === 'listChanged' ? c.uris : []));
  assert.ok(publicUris.includes(`${u}pub/`), JSON.stringify(changes));
  assert.not.ok(publicUris.includes(`${u}private/`), JSON.stringify(changes));
  assert.ok(privateUris.includes(`${u}private/`), JSON.stringify(changes));
});

for (const [name, away, back] of [
  ['deleted and created again', (dir: string) => fsp.rm(dir, { recursive: true }), (dir: string) => fsp.mkdir(dir)],
  ['renamed away and back', (dir: string) => fsp.rename(dir, `${dir}.away`), (dir: string) => fsp.rename(`${dir}.away`, dir)],
  [
    'replaced by another directory',
    (dir: string) => fsp.rename(dir, `${dir}.old`),
    async (dir: string) => {
      await fsp.mkdir(`${dir}.new`);
      await fsp.mkdir(path.join(`${dir}.new`, 'pub'));
      await fsp.rename(`${dir}.new`, dir);
    },
  ],
] as const) {
  test(`the served directory ${name}: listing and changes resume within a few seconds`, async () => {
    const baseline = fsEventHandles();
    const dir = await fixture();
    const files = await open(dir);
    const seen = record(files);
    const u = files.rootUri;
    assert.ok((await uris(files)).includes(`${u}pub/file.txt`));
    await away(dir);
    await until('the listing to empty', async () => (await uris(files)).length === 1);
    assert.ok(seen.some((c) => c.kind === 'listChanged' && c.uris.includes(u)), JSON.stringify(seen));
    await back(dir);
    await fsp.mkdir(path.join(dir, 'later'), { recursive: true });
    await fsp.writeFile(path.join(dir, 'later', 'x.txt'), 'one');
    await until('the listing to show later/x.txt', async () => (await uris(files)).includes(`${u}later/x.txt`));
    await sleep(QUIET_MS);
    seen.splice(0);
    // Watching again, the new directories included.
    await fsp.writeFile(path.join(dir, 'later', 'x.txt'), 'two');
    const changes = await settle(seen, 'the write after coming back');
    assert.ok(
      changes.some((c) => c.kind === 'updated' && c.uris[0] === `${u}later/x.txt`),
      JSON.stringify(changes),
    );
    await fsp.writeFile(path.join(dir, 'top.txt'), 'top');
    const created = await settle(seen, 'a create at the top after coming back');
    assert.equal(created, [{ kind: 'listChanged', uris: [u] }]);
    // One watch per directory there now, none left on what went away.
    const collections = (await uris(files)).filter((uri) => uri.endsWith('/')).length;
    assert.is(fsEventHandles() - baseline, collections);
  });
}

test('onRootChange: told false when the served directory goes away, true when one is there again, once each', async () => {
  const dir = await fixture();
  const told: boolean[] = [];
  const files = await open(dir, { onRootChange: (present) => told.push(present) });
  record(files);
  await sleep(700);
  assert.equal(told, [], 'nothing while it is there');
  await fsp.rename(dir, `${dir}.away`);
  await until('the directory to be missed', () => told.length === 1);
  await sleep(700);
  await fsp.rename(`${dir}.away`, dir);
  await until('the directory to be found', () => told.length === 2);
  await sleep(700);
  assert.equal(told, [false, true]);
});

test('the served directory swapped for another holding the same names: each file whose content differs is updated', async () => {
  const dir = await fixture();
  const files = await open(dir);
  const seen = record(files);
  const u = files.rootUri;
  await files.list(NONE);
  const next = `${dir}.next`;
  await fsp.mkdir(path.join(next, 'pub'), { recursive: true });
  await fsp.mkdir(path.join(next, 'private'));
  await fsp.writeFile(path.join(next, 'README.md'), '# hello, again\n');
  await fsp.writeFile(path.join(next, 'pub', 'file.txt'), 'public, deployed\n');
  await fsp.writeFile(path.join(next, 'private', 'file.txt'), 'PRIVATE, deployed\n');
  await fsp.writeFile(path.join(next, 'private', 'only-private.txt'), 'PRIVATE TOO\n');
  // A deploy: the new tree renamed over the old one, in two renames back to back.
  await fsp.rename(dir, `${dir}.old`);
  await fsp.rename(next, dir);
  await until('the updates', () => seen.filter((c) => c.kind === 'updated').length >= 4);
  await sleep(QUIET_MS);
  const updated = seen.flatMap((c) => (c.kind === 'updated' ? [`${c.uris[0]}${c.scope ? ` (${c.scope})` : ''}`] : [])).sort();
  assert.equal(updated, [
    `${u}README.md`,
    `${u}private/file.txt (private)`,
    `${u}private/only-private.txt (private)`,
    `${u}pub/file.txt`,
  ]);
  assert.not.ok(seen.some((c) => c.kind === 'listChanged'), JSON.stringify(seen));
  assert.is((await files.read(`${u}pub/file.txt`, NONE))?.contents[0]?.text, 'public, deployed\n');
});

test.run();
