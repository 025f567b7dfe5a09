// `mcp-rx-streams serve --workers 2` as an operator runs it (issue 26): a real node:cluster primary
// and two workers of the built command (dist/, built by `npm test` before the specs) sharing one
// port, read byte for byte over loopback. node:cluster hands connections to the workers in turn;
// every answer says which worker gave it (X-Served-By). The tests share the machine and run in
// order: connections spread over both workers, one folder watcher and every change heard once on
// every worker, the machine's maxStreams, legacy reconnects forced onto the other worker (each
// replayed exactly what it missed), a worker killed (reported, restarted, its client resuming on
// the other), and SIGTERM (closing frames, exit 0).
import { strict as assert } from 'node:assert';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { appendFile, mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { test } from 'uvu';
import { listenBody, LISTEN_HEADERS, SseConnection } from '../helpers/http.js';
import { call, frameText, GetStream, initialize, listChangedMessage, rpcBody, send, sleep, updatedMessage } from '../helpers/legacy.js';

const CLI = fileURLToPath(new URL('../../dist/adapters/cli.js', import.meta.url));

let tmp: string;
let todo: string;
let child: ChildProcess;
let stdout = '';
let stderr = '';
let exited: Promise<number | null>;
let url: string;

/** Resolves once stderr matches `pattern` (counting from `from` characters in); the match. */
async function said(pattern: RegExp, from = 0, ms = 10_000): Promise<RegExpExecArray> {
  const deadline = Date.now() + ms;
  for (;;) {
    const match = pattern.exec(stderr.slice(from));
    if (match !== null) return match;
    if (Date.now() > deadline) throw new Error(`the primary did not say ${pattern} within ${ms} ms; stderr:\n${stderr}`);
    await sleep(20);
  }
}

/** The worker an answer came from (its node id's last part, `cluster.worker.id`). */
const servedBy = (headers: http.IncomingHttpHeaders) => Number(String(headers['x-served-by']).split('/').pop());

/** A plain request's worker. */
async function probe(): Promise<number> {
  return servedBy((await send(url, 'POST', { 'content-type': 'application/json', accept: 'application/json' }, rpcBody(1, 'server/discover'))).headers);
}

const uriOf = (file: string) => pathToFileURL(file).href;
const updatedText = (file: string) => `"method":"notifications/resources/updated","params":{"uri":"${uriOf(file)}"`;
const count = (text: string, part: string) => text.split(part).length - 1;

test.before(async () => {
  assert.ok(existsSync(CLI), `${CLI} is missing: run npm run build (npm test does)`);
  tmp = await mkdtemp(path.join(tmpdir(), 'mcp-rx-cluster-'));
  await mkdir(path.join(tmp, 'data'));
  todo = path.join(await realpath(path.join(tmp, 'data')), 'todo.txt');
  await writeFile(todo, '- one\n');
  child = spawn(process.execPath, [CLI, 'serve', '--workers', '2', '--port', '0', '--dir', path.join(tmp, 'data'), '--max-streams', '4', '--session-grace-period', '60000'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  exited = new Promise((resolve) => child.on('close', (code) => resolve(code)));
  for (let i = 0; !/^mcp-rx-streams listening on \S+$/m.test(stdout); i++) {
    if (i === 500) throw new Error(`no listening line; stdout:\n${stdout}\nstderr:\n${stderr}`);
    await sleep(20);
  }
  url = /^mcp-rx-streams listening on (\S+)$/m.exec(stdout)![1]!;
});

test.after(async () => {
  child?.kill('SIGKILL');
  await exited;
  if (tmp !== undefined) await rm(tmp, { recursive: true, force: true });
});

test('two workers share the port: node:cluster hands the connections to both; one of them watches the folder', async () => {
  const workers = new Set<number>();
  for (let i = 0; i < 6; i++) workers.add(await probe());
  assert.equal(workers.size, 2, `every answer came from ${[...workers].join(', ')}`);
  const lines = stderr.match(/INFO: cluster: worker \d+ watches the folder$/gm) ?? [];
  assert.equal(lines.length, 1, `one folder watcher for the machine:\n${stderr}`);
  assert.match(stderr, /INFO: cluster: worker 1 \(pid \d+\) listening$/m);
  assert.match(stderr, /INFO: cluster: worker 2 \(pid \d+\) listening$/m);
});

let listens: SseConnection[] = [];

test('a change of the folder reaches every listen on both workers exactly once, in order', async () => {
  for (let id = 1; id <= 4; id++) {
    const conn = await SseConnection.open(url, listenBody(id, { resourceSubscriptions: [uriOf(todo)] }));
    await conn.until((c) => c.text.includes('acknowledged'), 3000, `the ack of listen ${id}`);
    listens.push(conn);
  }
  assert.deepEqual(new Set(listens.map((conn) => servedBy(conn.res.headers))), new Set([1, 2]), 'listens on both workers');
  for (let i = 1; i <= 5; i++) {
    await appendFile(todo, `- change ${i}\n`);
    for (const conn of listens) await conn.until((c) => count(c.text, updatedText(todo)) >= i, 3000, `change ${i}`);
  }
  await sleep(300);
  for (const conn of listens) assert.equal(count(conn.text, updatedText(todo)), 5, conn.text);
});

test("maxStreams is the machine's: with 4 streams open, the fifth is refused with 503 on either worker", async () => {
  const refusedBy = new Set<number>();
  for (let i = 0; i < 4 && refusedBy.size < 2; i++) {
    const answer = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const req = http.request(url, { method: 'POST', headers: LISTEN_HEADERS, agent: false }, resolve);
      req.on('error', reject);
      req.end(listenBody(9, { toolsListChanged: true }));
    });
    answer.resume();
    assert.equal(answer.statusCode, 503);
    refusedBy.add(servedBy(answer.headers));
  }
  assert.deepEqual(refusedBy, new Set([1, 2]));
  for (const conn of listens) conn.destroy();
  listens = [];
  await sleep(200);
});

let sessionId: string;
let get: GetStream;
let seen = 0;

/** Changes todo.txt `n` times, each heard by a witness listen before the next (the watcher merges bursts). */
async function change(n: number): Promise<void> {
  const witness = await SseConnection.open(url, listenBody(99, { resourceSubscriptions: [uriOf(todo)] }));
  await witness.until((c) => c.text.includes('acknowledged'), 3000, 'the witness');
  for (let i = 1; i <= n; i++) {
    await appendFile(todo, `- more ${i}\n`);
    await witness.until((c) => count(c.text, updatedText(todo)) >= i, 3000, `change ${i} on the witness`);
  }
  witness.destroy();
  await sleep(100);
}

test('legacy reconnects forced onto the other worker: each replays exactly the frames it missed, with their ids, then live ones', async () => {
  ({ sessionId } = await initialize(url));
  get = GetStream.open(url, sessionId);
  await get.until((s) => s.primedWith !== undefined, 3000, 'the GET stream');
  await sleep(100);
  assert.deepEqual((await call(url, sessionId, 2, 'resources/subscribe', { uri: uriOf(todo) })).json, { jsonrpc: '2.0', id: 2, result: {} });
  await change(2);
  await get.untilId(2);
  seen = 2;
  let moves = 0;
  for (let round = 0; round < 4; round++) {
    const before = servedBy((await get.response).headers);
    get.destroy();
    await sleep(100);
    await change(2); // logged by the worker that held the stream, in its grace period
    // node:cluster hands connections out in turn: after one lands where the stream was, the next goes to the other.
    for (let i = 0; i < 4 && (await probe()) !== before; i++);
    get = GetStream.open(url, sessionId, { lastEventId: String(seen) });
    await get.untilId(seen + 2);
    const after = servedBy((await get.response).headers);
    if (after !== before) moves++;
    await sleep(150); // the old worker lets go (claimed), the new one restores the subscription
    await change(1);
    await get.untilId(seen + 3);
    await sleep(100);
    let expected = '';
    for (let id = seen + 1; id <= seen + 3; id++) expected += frameText(id, updatedMessage(uriOf(todo)));
    assert.equal(get.withoutKeepAlives, expected, `round ${round} (${before} → ${after})`);
    seen += 3;
  }
  assert.ok(moves >= 1, 'no reconnect landed on the other worker');
});

test('a killed worker: the primary reports it and starts another; the other worker takes its session up (the re-read signal first) and it resumes there, losing nothing the replay buffer holds', async () => {
  const holder = servedBy((await get.response).headers);
  const pid = Number(new RegExp(`INFO: cluster: worker ${holder} \\(pid (\\d+)\\) listening$`, 'm').exec(stderr)![1]);
  const from = stderr.length;
  process.kill(pid, 'SIGKILL');
  await said(new RegExp(`INFO: cluster: worker ${holder} \\(pid ${pid}\\) exited \\(signal SIGKILL\\); released 1 stream slots, 0 listen admissions, 1 sessions' GET streams; starting another`, 'm'), from);
  await said(/INFO: cluster: worker 3 \(pid \d+\) listening$/m, from);
  await get.untilEnded();
  // The client missed the last two frames (it resumes from an older id): the log has them. The
  // worker that took the session up when the primary saw the other exit (long before the client is
  // back) logged the re-read signal: what changed between the death and the take-up (issue 31).
  const resumed = GetStream.open(url, sessionId, { lastEventId: String(seen - 2) });
  await resumed.untilId(seen + 4);
  await sleep(150);
  await change(1);
  await resumed.untilId(seen + 5);
  await sleep(100);
  const expected =
    frameText(seen - 1, updatedMessage(uriOf(todo))) +
    frameText(seen, updatedMessage(uriOf(todo))) +
    frameText(seen + 1, updatedMessage(uriOf(todo))) +
    frameText(seen + 2, listChangedMessage('tools')) +
    frameText(seen + 3, listChangedMessage('prompts')) +
    frameText(seen + 4, listChangedMessage('resources')) +
    frameText(seen + 5, updatedMessage(uriOf(todo)));
  assert.equal(resumed.withoutKeepAlives, expected);
  assert.equal((stderr.match(/INFO: cluster: worker \d+ watches the folder$/gm) ?? []).length >= 1, true);
  get = resumed;
});

/** `serve` with `args`, which it must refuse: exit code 2 and one line starting with `start`. */
async function refused(args: string[], start: string): Promise<void> {
  const run = spawn(process.execPath, [CLI, 'serve', '--dir', path.join(tmp, 'data'), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  run.stderr!.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const code = await new Promise<number | null>((resolve) => run.on('close', resolve));
  assert.equal(code, 2, err);
  assert.equal(err.split('\n').filter(Boolean).length, 1, err);
  assert.ok(err.startsWith(`mcp-rx-streams: ${start}`), err);
}

test('serve --workers: auto or a count; not with --stdio; one line naming the flag, exit code 2 (with --metrics-port: spec/cluster/serve-operate)', async () => {
  await Promise.all([
    refused(['--workers', '0'], '--workers must be auto or an integer from 1 to 1024 (worker processes), got "0"'),
    refused(['--workers', 'all'], '--workers must be auto or an integer'),
    refused(['--workers', '2', '--stdio'], '--workers applies to the HTTP server only; it cannot go with --stdio'),
  ]);
});

test('SIGTERM: every worker closes its streams with their closing frames, the primary exits 0', async () => {
  const conn = await SseConnection.open(url, listenBody(7, { toolsListChanged: true }));
  await conn.until((c) => c.text.includes('acknowledged'), 3000, 'the ack');
  child.kill('SIGTERM');
  await conn.until((c) => c.ended, 5000, 'the end of the listen');
  assert.match(conn.text, /"method":"notifications\/cancelled","params":\{"requestId":7,"reason":"shutdown"/);
  assert.equal(await exited, 0, stderr);
  // While the machine stops, the lease passing between exiting workers is not news.
  const stopping = stderr.slice(stderr.indexOf('stopping (SIGTERM)'));
  assert.doesNotMatch(stopping, /watches the folder/, stopping);
  assert.match(stopping, /INFO: stopped$/m);
  get.destroy();
});

test.run();
