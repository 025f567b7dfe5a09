import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fsp from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Subscription } from 'rxjs';
import { FileResources, ensureDemoData } from '../../adapters/reference/files.js';
import type { FileChange } from '../../adapters/reference/files.js';
import { InvalidOptionError } from '../../lib/errors.js';

const NONE: ReadonlySet<string> = new Set();
const PRIVATE: ReadonlySet<string> = new Set(['private']);
/** Long enough for any straggling event of one action to arrive (debounce is 50 ms). */
const QUIET_MS = 200;

// Everything a test opens is released after it, pass or fail, so the process exits by itself.
const cleanups: (() => unknown)[] = [];
test.after.each(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function tempDir(): Promise<string> {
  const dir = await fsp.realpath(await fsp.mkdtemp(path.join(os.tmpdir(), 'mcp-rx-files-')));
  cleanups.push(() => fsp.rm(dir, { recursive: true, force: true }));
  return dir;
}

/** A served tree: README.md, config.json, tools.json, prompts.json, notes/todo.txt, archive/, private/secret.txt. */
async function fixture(): Promise<string> {
  const dir = path.join(await tempDir(), 'data');
  await fsp.mkdir(path.join(dir, 'notes'), { recursive: true });
  await fsp.mkdir(path.join(dir, 'archive'));
  await fsp.mkdir(path.join(dir, 'private'));
  await fsp.writeFile(path.join(dir, 'README.md'), '# hello\n');
  await fsp.writeFile(path.join(dir, 'config.json'), '{"a":1}\n');
  await fsp.writeFile(path.join(dir, 'tools.json'), JSON.stringify([{ name: 'one' }]));
  await fsp.writeFile(path.join(dir, 'prompts.json'), JSON.stringify([{ name: 'p' }]));
  await fsp.writeFile(path.join(dir, 'notes', 'todo.txt'), 'buy milk\n');
  await fsp.writeFile(path.join(dir, 'private', 'secret.txt'), 's3cret\n');
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

/** Polls until `ready()` holds, failing after `capMs`. */
async function until(what: string, ready: () => boolean, capMs = 3000): Promise<void> {
  const deadline = Date.now() + capMs;
  while (!ready()) {
    if (Date.now() > deadline) assert.unreachable(`timed out after ${capMs} ms waiting for ${what}`);
    await sleep(10);
  }
}

/** Waits for the first change, then a quiet period, and returns everything seen. */
async function settle(seen: FileChange[], what: string): Promise<FileChange[]> {
  await until(what, () => seen.length > 0);
  await sleep(QUIET_MS);
  return seen.splice(0);
}

/** The collection URIs of every listChanged seen, deduplicated, sorted innermost first. */
function listedUris(seen: readonly FileChange[]): string[] {
  const uris = new Set(seen.flatMap((c) => (c.kind === 'listChanged' ? c.uris : [])));
  return [...uris].sort((a, b) => b.split('/').length - a.split('/').length || (a < b ? -1 : 1));
}

const fsEventHandles = () => process.getActiveResourcesInfo().filter((name) => name === 'FSEventWrap').length;

test('open resolves the real path and lists files and collections, private ones only with the scope', async () => {
  const dir = await fixture();
  const link = path.join(path.dirname(dir), 'link');
  await fsp.symlink(dir, link);
  const files = await open(link);
  assert.is(files.root, dir);
  assert.is(files.rootUri, `${pathToFileURL(dir).href}/`);
  const u = files.rootUri;

  const pub = await files.list(NONE);
  assert.equal(
    pub.map((r) => r.uri),
    [u, `${u}README.md`, `${u}archive/`, `${u}config.json`, `${u}notes/`, `${u}notes/todo.txt`, `${u}prompts.json`, `${u}tools.json`],
  );
  const byUri = new Map(pub.map((r) => [r.uri, r]));
  assert.is(byUri.get(`${u}README.md`)?.mimeType, 'text/markdown');
  assert.is(byUri.get(`${u}notes/todo.txt`)?.name, 'notes/todo.txt');
  assert.is(byUri.get(`${u}notes/`)?.mimeType, 'text/uri-list');
  assert.is(byUri.get(`${u}notes/`)?.name, 'notes/');

  const all = (await files.list(PRIVATE)).map((r) => r.uri);
  assert.ok(all.includes(`${u}private/`));
  assert.ok(all.includes(`${u}private/secret.txt`));
  assert.is(all.length, pub.length + 2);
});

test('URIs are percent-encoded as pathToFileURL encodes them', async () => {
  const dir = await fixture();
  await fsp.writeFile(path.join(dir, 'a b#?%é.txt'), 'x');
  const files = await open(dir);
  const uri = `${files.rootUri}a%20b%23%3F%25%C3%A9.txt`;
  assert.ok((await files.list(NONE)).some((r) => r.uri === uri));
  assert.ok(files.canRead(uri, NONE));
  assert.is(files.canRead(`${files.rootUri}a b#?%é.txt`, NONE), false);
});

test('canRead is not fooled by dot segments, encodings, trailing slashes or foreign URIs', async () => {
  const dir = await fixture();
  const files = await open(dir);
  const u = files.rootUri;
  assert.ok(files.canRead(`${u}README.md`, NONE));
  assert.ok(files.canRead(u, NONE));
  for (const uri of [
    `${u}../../../etc/passwd`,
    `${u}notes/../README.md`,
    `${u}%2e%2e/%2e%2e/etc/passwd`,
    `${u}notes/%2E%2E/README.md`,
    `${u}notes%2Ftodo.txt`,
    `${u}%52EADME.md`,
    `${u}README.md/`,
    `${u}README.md#x`,
    u.slice(0, -1),
    'file:///etc/passwd',
    `file://localhost${dir}/README.md`,
    `http://example.com${dir}/README.md`,
    'not a uri',
  ]) {
    assert.is(files.canRead(uri, PRIVATE), false, uri);
    assert.is(files.isSubscribable(uri), false, uri);
    assert.is(await files.read(uri, PRIVATE), undefined, uri);
  }
  assert.is(files.canRead(`${u}private/secret.txt`, NONE), false);
  assert.is(files.canRead(`${u}private/`, NONE), false);
  assert.ok(files.canRead(`${u}private/secret.txt`, PRIVATE));
  assert.ok(files.isSubscribable(`${u}private/secret.txt`));
});

test('symbolic links: outside the root or into private/ are ignored, inside are served', async () => {
  const dir = await fixture();
  const outside = await tempDir();
  await fsp.writeFile(path.join(outside, 'stolen.txt'), 'outside');
  await fsp.symlink(path.join(outside, 'stolen.txt'), path.join(dir, 'out.txt'));
  await fsp.symlink(outside, path.join(dir, 'outdir'));
  await fsp.symlink(path.join(dir, 'private', 'secret.txt'), path.join(dir, 'leak.txt'));
  await fsp.symlink(path.join(dir, 'README.md'), path.join(dir, 'readme-link.md'));
  const files = await open(dir);
  const u = files.rootUri;
  const uris = (await files.list(PRIVATE)).map((r) => r.uri);
  for (const name of ['out.txt', 'outdir/', 'outdir/stolen.txt', 'leak.txt']) {
    assert.not.ok(uris.includes(`${u}${name}`), name);
    assert.is(files.canRead(`${u}${name}`, PRIVATE), false, name);
  }
  assert.ok(uris.includes(`${u}readme-link.md`));
  assert.is((await files.read(`${u}readme-link.md`, NONE))?.contents[0]?.text, '# hello\n');

  // Re-pointed outside after the scan: the read re-checks the target.
  await fsp.rm(path.join(dir, 'readme-link.md'));
  await fsp.symlink(path.join(outside, 'stolen.txt'), path.join(dir, 'readme-link.md'));
  assert.is(await files.read(`${u}readme-link.md`, NONE), undefined);
});

test('read answers text, blobs and collection listings', async () => {
  const dir = await fixture();
  await fsp.writeFile(path.join(dir, 'bytes.bin'), Buffer.from([0, 255, 1]));
  await fsp.writeFile(path.join(dir, 'LICENSE'), 'plain words');
  const files = await open(dir);
  const u = files.rootUri;

  assert.equal(await files.read(`${u}notes/todo.txt`, NONE), {
    contents: [{ uri: `${u}notes/todo.txt`, mimeType: 'text/plain', text: 'buy milk\n' }],
  });
  assert.equal(await files.read(`${u}config.json`, NONE), {
    contents: [{ uri: `${u}config.json`, mimeType: 'application/json', text: '{"a":1}\n' }],
  });
  assert.equal(await files.read(`${u}bytes.bin`, NONE), {
    contents: [{ uri: `${u}bytes.bin`, mimeType: 'application/octet-stream', blob: 'AP8B' }],
  });
  assert.equal((await files.read(`${u}LICENSE`, NONE))?.contents[0], { uri: `${u}LICENSE`, mimeType: 'text/plain', text: 'plain words' });

  const listing = (scopes: ReadonlySet<string>) =>
    [`${u}LICENSE`, `${u}README.md`, `${u}archive/`, `${u}bytes.bin`, `${u}config.json`, `${u}notes/`]
      .concat(scopes.has('private') ? [`${u}private/`] : [])
      .concat([`${u}prompts.json`, `${u}tools.json`])
      .map((c) => `${c}\r\n`)
      .join('');
  assert.equal(await files.read(u, NONE), { contents: [{ uri: u, mimeType: 'text/uri-list', text: listing(NONE) }] });
  assert.is((await files.read(u, PRIVATE))?.contents[0]?.text, listing(PRIVATE));
  assert.is((await files.read(`${u}notes/`, NONE))?.contents[0]?.text, `${u}notes/todo.txt\r\n`);
  assert.is((await files.read(`${u}archive/`, NONE))?.contents[0]?.text, '');

  assert.is(await files.read(`${u}private/secret.txt`, NONE), undefined);
  assert.is((await files.read(`${u}private/secret.txt`, PRIVATE))?.contents[0]?.text, 's3cret\n');
  // Known at scan time, gone since: not found rather than an error.
  await fsp.rm(path.join(dir, 'README.md'));
  assert.is(await files.read(`${u}README.md`, NONE), undefined);
});

test('a burst of writes to a file is one updated: the file, then its collections up to the root', async () => {
  const dir = await fixture();
  const files = await open(dir);
  const seen = record(files);
  const u = files.rootUri;
  for (let i = 0; i < 5; i++) await fsp.writeFile(path.join(dir, 'notes', 'todo.txt'), `edit ${i}\n`);
  assert.equal(await settle(seen, 'the updated'), [{ kind: 'updated', uris: [`${u}notes/todo.txt`, `${u}notes/`, u] }]);

  await fsp.appendFile(path.join(dir, 'README.md'), 'more\n');
  assert.equal(await settle(seen, 'the second updated'), [{ kind: 'updated', uris: [`${u}README.md`, u] }]);
});

test('an atomic save (temp file renamed over the original) is an updated, and later writes are still seen', async () => {
  const dir = await fixture();
  const files = await open(dir);
  const seen = record(files);
  const u = files.rootUri;
  const todo = path.join(dir, 'notes', 'todo.txt');
  await fsp.writeFile(`${todo}.tmp`, 'atomic\n');
  await fsp.rename(`${todo}.tmp`, todo);
  assert.equal(await settle(seen, 'the atomic save'), [{ kind: 'updated', uris: [`${u}notes/todo.txt`, `${u}notes/`, u] }]);
  await fsp.writeFile(todo, 'plain write after\n');
  assert.equal(await settle(seen, 'the write after'), [{ kind: 'updated', uris: [`${u}notes/todo.txt`, `${u}notes/`, u] }]);
});

test('creating and deleting a file is listChanged for its collections', async () => {
  const dir = await fixture();
  const files = await open(dir);
  const seen = record(files);
  const u = files.rootUri;
  await fsp.writeFile(path.join(dir, 'notes', 'new.txt'), 'fresh');
  assert.equal(await settle(seen, 'the create'), [{ kind: 'listChanged', uris: [`${u}notes/`, u] }]);
  assert.ok(files.isSubscribable(`${u}notes/new.txt`));
  assert.is((await files.read(`${u}notes/new.txt`, NONE))?.contents[0]?.text, 'fresh');

  await fsp.rm(path.join(dir, 'notes', 'new.txt'));
  assert.equal(await settle(seen, 'the delete'), [{ kind: 'listChanged', uris: [`${u}notes/`, u] }]);
  assert.is(files.isSubscribable(`${u}notes/new.txt`), false);
  assert.not.ok((await files.list(NONE)).some((r) => r.uri === `${u}notes/new.txt`));
});

test('a rename is listChanged for the collections of both locations', async () => {
  const dir = await fixture();
  const files = await open(dir);
  const seen = record(files);
  const u = files.rootUri;
  await fsp.rename(path.join(dir, 'notes', 'todo.txt'), path.join(dir, 'archive', 'todo.txt'));
  await until('both locations', () => listedUris(seen).includes(`${u}notes/`) && listedUris(seen).includes(`${u}archive/`));
  await sleep(QUIET_MS);
  // Both halves normally arrive in one inotify read and settle as one batch:
  // [{ kind: 'listChanged', uris: [archive/, notes/, root] }]; a split batch is still correct.
  assert.ok(seen.every((c) => c.kind === 'listChanged' && c.uris.at(-1) === u), JSON.stringify(seen));
  assert.equal(listedUris(seen), [`${u}archive/`, `${u}notes/`, u]);
  assert.is(files.isSubscribable(`${u}notes/todo.txt`), false);
  assert.ok(files.isSubscribable(`${u}archive/todo.txt`));
});

test('tools.json and prompts.json changes are tools / prompts events besides the resource change', async () => {
  const dir = await fixture();
  const warnings: string[] = [];
  const files = await open(dir, { onWarning: (message) => warnings.push(message) });
  const seen = record(files);
  const u = files.rootUri;
  assert.equal(await files.tools(), [{ name: 'one' }]);
  assert.equal(await files.prompts(), [{ name: 'p' }]);

  await fsp.writeFile(path.join(dir, 'tools.json'), JSON.stringify([{ name: 'one' }, { name: 'two' }]));
  assert.equal(await settle(seen, 'the tools change'), [{ kind: 'updated', uris: [`${u}tools.json`, u] }, { kind: 'tools' }]);
  assert.equal(await files.tools(), [{ name: 'one' }, { name: 'two' }]);

  await fsp.rm(path.join(dir, 'prompts.json'));
  assert.equal(await settle(seen, 'the prompts delete'), [{ kind: 'listChanged', uris: [u] }, { kind: 'prompts' }]);
  assert.equal(await files.prompts(), []);

  await fsp.writeFile(path.join(dir, 'tools.json'), '{not json');
  await settle(seen, 'the broken tools');
  assert.equal(await files.tools(), []);
  assert.equal(await files.tools(), []);
  assert.is(warnings.length, 1);
  assert.match(warnings[0] ?? '', 'tools.json');
  await fsp.writeFile(path.join(dir, 'tools.json'), '{"not":"an array"}');
  await settle(seen, 'the non-array tools');
  assert.equal(await files.tools(), []);
  assert.is(warnings.length, 2);
});

test('a new subdirectory with a file inside is picked up and watched', async () => {
  const dir = await fixture();
  const files = await open(dir);
  const seen = record(files);
  const u = files.rootUri;
  await fsp.mkdir(path.join(dir, 'sub', 'deep'), { recursive: true });
  await fsp.writeFile(path.join(dir, 'sub', 'deep', 'f.txt'), 'one');
  const created = await settle(seen, 'the new directory');
  assert.equal(created[0], { kind: 'listChanged', uris: [`${u}sub/deep/`, `${u}sub/`, u] });
  // The write right after mkdir can also arrive as a content change of the new file, depending on
  // whether the new directory's watcher was already up when it landed: allowed, nothing else is.
  for (const extra of created.slice(1)) {
    assert.equal(extra, { kind: 'updated', uris: [`${u}sub/deep/f.txt`, `${u}sub/deep/`, `${u}sub/`, u] });
  }
  assert.ok(files.isSubscribable(`${u}sub/deep/f.txt`));

  await fsp.writeFile(path.join(dir, 'sub', 'deep', 'f.txt'), 'two');
  const written = await settle(seen, 'the write in the new directory');
  assert.ok(written.length >= 1);
  for (const change of written) {
    assert.equal(change, { kind: 'updated', uris: [`${u}sub/deep/f.txt`, `${u}sub/deep/`, `${u}sub/`, u] });
  }

  // rm -rf reports the file, then each directory: their events may settle in one batch or several.
  await fsp.rm(path.join(dir, 'sub'), { recursive: true });
  await until('the removed directories', () => listedUris(seen).includes(`${u}sub/`) && listedUris(seen).includes(`${u}sub/deep/`));
  await sleep(QUIET_MS);
  assert.ok(seen.every((c) => c.kind === 'listChanged' && c.uris.at(-1) === u), JSON.stringify(seen));
  assert.equal(listedUris(seen), [`${u}sub/deep/`, `${u}sub/`, u]);
  assert.is(files.isSubscribable(`${u}sub/`), false);
  assert.is(files.isSubscribable(`${u}sub/deep/f.txt`), false);
});

test('changes() is shared and stops watching after the last unsubscribe', async () => {
  const baseline = fsEventHandles();
  const dir = await fixture();
  const files = await open(dir);
  const subs: Subscription[] = [];
  const seen: FileChange[] = [];
  subs.push(files.changes().subscribe((c) => seen.push(c)));
  cleanups.push(() => subs.forEach((s) => s.unsubscribe()));
  const watching = fsEventHandles() - baseline;
  assert.is(watching, 4, 'one watcher per directory (root, notes, archive, private), none per file');
  subs.push(files.changes().subscribe());
  assert.is(fsEventHandles() - baseline, watching, 'a second subscriber shares the watchers');
  subs[0]!.unsubscribe();
  await sleep(20);
  assert.is(fsEventHandles() - baseline, watching, 'still watching for the remaining subscriber');
  subs[1]!.unsubscribe();
  await until('the watchers to close', () => fsEventHandles() === baseline);

  await fsp.writeFile(path.join(dir, 'README.md'), 'unwatched');
  await sleep(QUIET_MS);
  assert.equal(seen, []);
  // A new subscriber catches up silently with what changed meanwhile, then watches again.
  await fsp.writeFile(path.join(dir, 'later.txt'), 'x');
  const again = record(files);
  assert.ok((await files.list(NONE)).some((r) => r.uri === `${files.rootUri}later.txt`));
  await fsp.writeFile(path.join(dir, 'later.txt'), 'y');
  assert.equal(await settle(again, 'the change after resubscribing'), [
    { kind: 'updated', uris: [`${files.rootUri}later.txt`, files.rootUri] },
  ]);
});

test('close() completes the subscribers and releases the watchers', async () => {
  const baseline = fsEventHandles();
  const files = await open(await fixture());
  let completed = 0;
  const sub = files.changes().subscribe({ complete: () => completed++ });
  cleanups.push(() => sub.unsubscribe());
  assert.ok(fsEventHandles() > baseline);
  files.close();
  assert.is(completed, 1);
  await until('the watchers to close', () => fsEventHandles() === baseline);
  files.changes().subscribe({ complete: () => completed++ });
  assert.is(completed, 2);
  assert.is(fsEventHandles(), baseline);
});

test('list() rescans when nobody watches', async () => {
  const dir = await fixture();
  const files = await open(dir);
  await fsp.writeFile(path.join(dir, 'notes', 'added.txt'), 'a');
  assert.is(files.isSubscribable(`${files.rootUri}notes/added.txt`), false);
  assert.ok((await files.list(NONE)).some((r) => r.uri === `${files.rootUri}notes/added.txt`));
  assert.ok(files.isSubscribable(`${files.rootUri}notes/added.txt`));
});

test('open rejects a bad debounceMs and a path that is not a directory', async () => {
  const dir = await fixture();
  for (const bad of [0, -5, 1.5, Number.NaN]) {
    try {
      await FileResources.open(dir, { debounceMs: bad });
      assert.unreachable(`debounceMs ${bad} accepted`);
    } catch (error) {
      assert.instance(error, InvalidOptionError);
      assert.match((error as Error).message, 'debounceMs must be a positive integer of milliseconds');
    }
  }
  try {
    await FileResources.open(path.join(dir, 'README.md'));
    assert.unreachable('a file accepted as root');
  } catch (error) {
    assert.match((error as Error).message, 'is not a directory');
  }
});

test('ensureDemoData creates the sample tree once and never touches an existing directory', async () => {
  const dir = path.join(await tempDir(), 'nested', 'demo');
  assert.is(await ensureDemoData(dir), true);
  for (const name of ['README.md', 'notes/todo.txt', 'config.json', 'tools.json', 'prompts.json', 'private/secret.txt']) {
    assert.ok((await fsp.stat(path.join(dir, name))).isFile(), name);
  }
  const files = await open(dir);
  const tools = (await files.tools()) as { name: string; description: string; inputSchema: { type: string } }[];
  assert.is(tools.length, 2);
  for (const tool of tools) {
    assert.type(tool.name, 'string');
    assert.type(tool.description, 'string');
    assert.is(tool.inputSchema.type, 'object');
  }
  assert.is((await files.prompts()).length, 1);
  JSON.parse(await fsp.readFile(path.join(dir, 'config.json'), 'utf8'));

  await fsp.writeFile(path.join(dir, 'README.md'), 'mine');
  await fsp.rm(path.join(dir, 'notes'), { recursive: true });
  assert.is(await ensureDemoData(dir), false);
  assert.is(await fsp.readFile(path.join(dir, 'README.md'), 'utf8'), 'mine');
  assert.not.ok(await fsp.stat(path.join(dir, 'notes')).catch(() => undefined));
});

test.run();
