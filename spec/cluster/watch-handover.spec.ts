// The folder watch changing hands between the workers of one machine (issue 31, item 1):
// `mcp-rx-streams serve --workers 2` (dist/, built by `npm test` before the specs), its watching
// worker killed while a file changes. The other worker takes the machine's watch lease at once and
// catches up from the state the watcher recorded with the primary (with --redis: in Redis, beside
// the fleet's lease): the change is heard once.
import { strict as assert } from 'node:assert';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { appendFile, mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { test } from 'uvu';
import { listenBody, SseConnection } from '../helpers/http.js';
import { sleep } from '../helpers/legacy.js';
import { startRedis, type RedisServer } from '../helpers/redis.js';

const CLI = fileURLToPath(new URL('../../dist/adapters/cli.js', import.meta.url));

let tmp: string;
let todo: string;
let child: ChildProcess | undefined;
let stdout = '';
let stderr = '';
let exited: Promise<number | null> | undefined;
let url: string;
let redis: RedisServer | undefined;

const uriOf = (file: string) => pathToFileURL(file).href;
const updatedText = (file: string) => `"method":"notifications/resources/updated","params":{"uri":"${uriOf(file)}"`;
const count = (text: string, part: string) => text.split(part).length - 1;
const servedBy = (conn: SseConnection) => Number(String(conn.res.headers['x-served-by']).split('/').pop());
const watchers = () => [...stderr.matchAll(/INFO: cluster: worker (\d+) watches the folder$/gm)].map((match) => Number(match[1]));

/** Resolves once `predicate` holds, polling every 20 ms; fails after `ms`. */
async function until(predicate: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; stderr:\n${stderr}`);
    await sleep(20);
  }
}

/** Starts `serve --workers 2 ...args` on a fresh folder holding todo.txt. */
async function startMachine(args: readonly string[]): Promise<void> {
  assert.ok(existsSync(CLI), `${CLI} is missing: run npm run build (npm test does)`);
  tmp = await mkdtemp(path.join(tmpdir(), 'mcp-rx-watch-handover-'));
  await mkdir(path.join(tmp, 'data'));
  todo = path.join(await realpath(path.join(tmp, 'data')), 'todo.txt');
  await writeFile(todo, '- one\n');
  stdout = stderr = '';
  const started = spawn(process.execPath, [CLI, 'serve', '--workers', '2', '--port', '0', '--dir', path.join(tmp, 'data'), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  child = started;
  started.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  started.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  exited = new Promise((resolve) => started.on('close', (code) => resolve(code)));
  await until(() => /^mcp-rx-streams listening on \S+$/m.test(stdout), 20_000, 'the listening line');
  url = /^mcp-rx-streams listening on (\S+)$/m.exec(stdout)![1]!;
}

test.after.each(async () => {
  child?.kill('SIGKILL');
  await exited;
  child = exited = undefined;
  await redis?.close();
  redis = undefined;
  if (tmp !== undefined) await rm(tmp, { recursive: true, force: true });
});

test('the watching worker killed while a file changes: the other worker takes the watch and announces the change, once', async () => {
  await startMachine([]);
  await killWatcherWhileAFileChanges();
});

test('the same with --redis: the watcher recorded what it published in Redis, through its primary', async () => {
  redis = await startRedis();
  await startMachine(['--redis', redis.url]);
  await killWatcherWhileAFileChanges();
});

/** Kills the machine's watcher as todo.txt changes; a listen on the other worker hears the change once. */
async function killWatcherWhileAFileChanges(): Promise<void> {
  await until(() => watchers().length === 1, 5000, 'a watcher');
  const watcher = watchers()[0]!;
  const pid = Number(new RegExp(`INFO: cluster: worker ${watcher} \\(pid (\\d+)\\) listening$`, 'm').exec(stderr)![1]);
  // A listen on the other worker (node:cluster hands connections out in turn).
  let conn: SseConnection | undefined;
  const opened: SseConnection[] = [];
  for (let id = 1; conn === undefined && id <= 6; id++) {
    const candidate = await SseConnection.open(url, listenBody(id, { resourceSubscriptions: [uriOf(todo)] }));
    await candidate.until((c) => c.text.includes('acknowledged'), 3000, `the ack of listen ${id}`);
    opened.push(candidate);
    if (servedBy(candidate) !== watcher) conn = candidate;
  }
  assert.ok(conn !== undefined, 'a listen on the worker that does not watch');
  try {
    await appendFile(todo, '- before\n');
    await conn.until((c) => count(c.text, updatedText(todo)) === 1, 3000, 'the change before the kill');
    await sleep(200); // recorded with the primary
    // The watcher sees the change but is stopped before it can publish it (the debounce is 50 ms), then killed.
    process.kill(pid, 'SIGSTOP');
    await appendFile(todo, '- while the watcher dies\n');
    await sleep(200);
    assert.equal(count(conn.text, updatedText(todo)), 1, 'not published by the stopped watcher');
    process.kill(pid, 'SIGKILL');
    await until(() => watchers().length === 2, 5000, 'the other worker to take the watch');
    assert.notEqual(watchers()[1], watcher);
    await conn.until((c) => count(c.text, updatedText(todo)) === 2, 3000, 'the change made as the watcher died');
    await sleep(500); // a second announcement would show by now
    assert.equal(count(conn.text, updatedText(todo)), 2, 'each change once');
    // Later changes are published by the new watcher as usual.
    await appendFile(todo, '- after\n');
    await conn.until((c) => count(c.text, updatedText(todo)) === 3, 3000, 'a later change');
  } finally {
    for (const each of opened) each.destroy();
  }
}

test.run();
