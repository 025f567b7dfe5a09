// A fleet as an operator runs it (issue 5, "must show"): two `mcp-rx-streams serve --redis URL`
// processes serving one folder on one real redis-server, read byte for byte over loopback.
// The tests share the two nodes and run in order: the cluster-wide cap, a legacy session moving
// from node to node with Last-Event-ID, a Redis outage, and last the death of the lease holder.
import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import http from 'node:http';
import { appendFile, mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { test } from 'uvu';
import { sessionKeys } from '../../adapters/redis/sessionStore.js';
import { LISTEN_HEADERS, listenBody, SseConnection } from '../helpers/http.js';
import { call, frameText, GetStream, initialize, sleep, updatedMessage } from '../helpers/legacy.js';
import { startRedis, type RedisServer } from '../helpers/redis.js';
import { runFixture, type Child } from './fixtures/child.js';

const TTL = 900;
let redis: RedisServer;
let raw: Redis;
let tmp: string;
let todo: string;
let notes: string;
let first: Child;
let second: Child;

const urlOf = (node: Child) => /^mcp-rx-streams listening on (\S+)$/m.exec(node.output())![1]!;
const lines = (node: Child, pattern: RegExp) => [...node.output().matchAll(pattern)];
const leaseLine = (node: Child) => lines(node, /^fleet: watch lease (held|not held)$/gm).pop()?.[1];
const count = (text: string, part: string) => text.split(part).length - 1;
const uriOf = (file: string) => pathToFileURL(file).href;
const updatedText = (file: string) => `"method":"notifications/resources/updated","params":{"uri":"${uriOf(file)}"`;

function serve(nodeId: string): Child {
  return runFixture('cli', ['serve', '--redis', redis.url, '--port', '0', '--dir', path.join(tmp, 'data'), '--node-id', nodeId,
    '--watch-lease-ttl', String(TTL), '--max-listens-per-principal', '2']);
}

test.before(async () => {
  redis = await startRedis();
  raw = new Redis(redis.url, { maxRetriesPerRequest: null });
  raw.on('error', () => undefined);
  tmp = await mkdtemp(path.join(tmpdir(), 'mcp-rx-fleet-'));
  await mkdir(path.join(tmp, 'data'));
  const dir = await realpath(path.join(tmp, 'data'));
  todo = path.join(dir, 'todo.txt');
  notes = path.join(dir, 'notes.txt');
  await writeFile(todo, '- one\n');
  await writeFile(notes, 'notes\n');
  // The first node holds the lease before the second starts.
  first = serve('first');
  await first.waitFor('fleet: watch lease held\n', 10_000);
  second = serve('second');
  await second.waitFor('fleet: redis up', 10_000);
});

test.after(async () => {
  raw?.disconnect();
  await first?.kill();
  await second?.kill();
  await redis?.close();
  if (tmp !== undefined) await rm(tmp, { recursive: true, force: true });
});

async function listen(node: Child, id: number, file: string): Promise<SseConnection> {
  const conn = await SseConnection.open(urlOf(node), listenBody(id, { resourceSubscriptions: [uriOf(file)] }));
  await conn.until((c) => c.text.includes('acknowledged'), 3000, `the ack of listen ${id}`);
  return conn;
}

/** A listen from another loopback address (127.0.0.N): a principal of its own (address bucket). */
function listenFrom(localAddress: string, node: Child, id: number): Promise<{ text: () => string; ended: Promise<void>; destroy: () => void }> {
  return new Promise((resolve, reject) => {
    const req = http.request(urlOf(node), { method: 'POST', headers: LISTEN_HEADERS, agent: false, localAddress }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      const ended = new Promise<void>((done) => res.on('close', done));
      res.on('data', (chunk: string) => {
        text += chunk;
        if (text.includes('acknowledged')) resolve({ text: () => text, ended, destroy: () => req.destroy() });
      });
    });
    req.on('error', reject);
    req.end(listenBody(id, { toolsListChanged: true }));
  });
}

test('cluster-wide cap 2: a principal\'s third listen, on the second node, supersedes its oldest stream, on the first', async () => {
  const meta = (id: number) => `"_meta":{"io.modelcontextprotocol/subscriptionId":${id}}`;
  const frame = (json: string) => `event: message\ndata: ${json}\n\n`;
  const ack = (id: number) => frame(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true},${meta(id)}}}`);
  const oldest = await listenFrom('127.0.0.5', first, 1);
  const newer = await listenFrom('127.0.0.5', first, 2);
  await sleep(100); // the first node's admissions are recorded in Redis before the next one
  const third = await listenFrom('127.0.0.5', second, 3);
  try {
    await Promise.race([oldest.ended, sleep(3000).then(() => assert.fail(`the oldest stream was not superseded:\n${oldest.text()}`))]);
    assert.equal(
      oldest.text(),
      ack(1) +
        frame(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"superseded",${meta(1)}}}`) +
        frame(`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete",${meta(1)}}}`),
    );
    await sleep(100);
    assert.equal(newer.text(), ack(2));
    assert.equal(third.text(), ack(3));
  } finally {
    for (const conn of [oldest, newer, third]) conn.destroy();
  }
});

test('legacy: a subscribe POSTed on the second node reaches the GET on the first; cut, 10 changes, Last-Event-ID on the second → exactly the 10 missed frames, then live', async () => {
  const a = urlOf(first);
  const b = urlOf(second);
  const { sessionId } = await initialize(a);
  const keys = sessionKeys('mcp-rx-streams:session', sessionId);
  let get = GetStream.open(a, sessionId);
  // The subscribe waits for the GET stream to attach (subscribeStreamWait).
  assert.deepEqual((await call(a, sessionId, 2, 'resources/subscribe', { uri: uriOf(todo) })).json, { jsonrpc: '2.0', id: 2, result: {} });
  assert.deepEqual((await call(b, sessionId, 3, 'resources/subscribe', { uri: uriOf(notes) })).json, { jsonrpc: '2.0', id: 3, result: {} });
  // Established on the first node once the command arrives: change the file until it is heard.
  for (let i = 0; get.lastId === undefined; i++) {
    if (i === 10) throw new Error(`the remote subscribe never reached the GET stream:\n${get.text}`);
    await appendFile(notes, `${i}\n`);
    await get.until((s) => s.lastId !== undefined, 300).catch(() => undefined);
  }
  await sleep(150);
  const seen = get.lastId!;
  assert.equal(get.withoutKeepAlives, frameText(1, updatedMessage(uriOf(notes))), 'notes.txt only, once');

  get.destroy();
  await waitFor(async () => (await raw.hget(keys.record, 'streamNode')) === null, 3000, 'the first node to notice the cut');
  // 10 changes, each seen by a witness before the next (the watcher merges bursts).
  const witness = await listen(second, 7, todo);
  try {
    for (let i = 1; i <= 10; i++) {
      await appendFile(todo, `- change ${i}\n`);
      await witness.until((c) => count(c.text, updatedText(todo)) === i, 3000, `change ${i} on the witness`);
    }
    await waitFor(async () => Number(await raw.hget(keys.record, 'lastEventId')) === seen + 10, 3000, 'the 10 frames to be logged');

    get = GetStream.open(b, sessionId, { lastEventId: String(seen) });
    await get.untilId(seen + 10);
    await sleep(200); // the first node lets go, the second restores the subscriptions
    await appendFile(todo, '- live\n');
    await get.untilId(seen + 11);
    await sleep(150);
    let expected = '';
    for (let id = seen + 1; id <= seen + 11; id++) expected += frameText(id, updatedMessage(uriOf(todo)));
    assert.equal(get.withoutKeepAlives, expected);
    assert.equal(await raw.hget(keys.record, 'lastEventId'), String(seen + 11), 'one id per change: the first node logs no more');
    assert.equal(await raw.hget(keys.record, 'streamNode'), 'second');
  } finally {
    get.destroy();
    witness.destroy();
  }
});

test('Redis down: local streams keep receiving, the unrelayed count is reported; after the restart cross-node delivery resumes within 2 s', async () => {
  const onFirst = await listen(first, 11, todo);
  const onSecond = await listen(second, 12, todo);
  const streams = [onFirst, onSecond];
  const updates = () => streams.map((conn) => count(conn.text, updatedText(todo)));
  try {
    const upsBefore = [first, second].map((node) => lines(node, /^fleet: redis up/gm).length);
    await redis.stop();
    await first.waitFor('fleet: redis down\n', 3000);
    await second.waitFor('fleet: redis down\n', 3000);
    await appendFile(todo, '- during the outage\n');
    for (const conn of streams) await conn.until((c) => count(c.text, updatedText(todo)) === 1, 3000, 'the change during the outage');

    const restarted = Date.now();
    await redis.restart();
    for (const [i, node] of [first, second].entries()) {
      await waitFor(async () => lines(node, /^fleet: redis up/gm).length > upsBefore[i]!, 3000, 'the node to reconnect');
    }
    // Each node counted the change's hub events (the file and its folder: 2) as unrelayed (it
    // still held the lease) or as served locally only (it did not).
    for (const node of [first, second]) {
      const [, unrelayed, localOnly] = lines(node, /^fleet: redis up \(unrelayed (\d+), local-only (\d+)\)$/gm).pop()!;
      assert.equal(Number(unrelayed) + Number(localOnly), 2, node.output());
    }
    // From now on neither node serves changes itself unless it holds the lease: a change heard
    // on both nodes went through Redis to one of them.
    for (let round = 1; ; round++) {
      const before = updates();
      await appendFile(todo, `- probe ${round}\n`);
      const heard = await waitFor(async () => updates().every((n, i) => n > before[i]!), 300, 'a probe').then(() => true, () => false);
      if (heard) break;
      if (Date.now() - restarted > 2000) throw new Error(`no cross-node delivery within 2 s of the restart: ${updates()}`);
    }
    const resumedAfter = Date.now() - restarted;
    assert.ok(resumedAfter < 2000, `resumed after ${resumedAfter} ms`);
    await sleep(200);
    const settled = updates();
    await appendFile(todo, '- after\n');
    await waitFor(async () => updates().every((n, i) => n === settled[i]! + 1), 2000, 'one more change on both nodes');
    await sleep(200);
    assert.deepEqual(updates(), settled.map((n) => n + 1), 'exactly once on each node');
    assert.equal([leaseLine(first), leaseLine(second)].filter((line) => line === 'held').length, 1, 'one lease holder');
  } finally {
    for (const conn of streams) conn.destroy();
  }
});

test('one folder, two nodes: a change reaches a stream on each node exactly once; kill the lease holder and a later change still arrives on the survivor', async () => {
  const [holder, survivor] = leaseLine(first) === 'held' ? [first, second] : [second, first];
  assert.equal(leaseLine(holder), 'held');
  const onHolder = await listen(holder, 21, todo);
  const onSurvivor = await listen(survivor, 22, todo);
  try {
    await appendFile(todo, '- two\n');
    await onHolder.until((c) => count(c.text, updatedText(todo)) === 1, 3000, 'the update on the holder');
    await onSurvivor.until((c) => count(c.text, updatedText(todo)) === 1, 3000, 'the update on the survivor');
    // Longer than a debounce and a relay: a second publisher would have shown by now.
    await sleep(300);
    assert.equal(count(onHolder.text, updatedText(todo)), 1);
    assert.equal(count(onSurvivor.text, updatedText(todo)), 1);

    const heldLines = lines(survivor, /^fleet: watch lease held$/gm).length;
    const killedAt = Date.now();
    await holder.kill();
    await waitFor(async () => lines(survivor, /^fleet: watch lease held$/gm).length > heldLines, TTL * 3, 'the survivor to take the lease');
    const takeover = Date.now() - killedAt;
    assert.ok(takeover <= TTL + TTL / 3 + 300, `took over after ${takeover} ms`);
    await appendFile(todo, '- three\n');
    await onSurvivor.until((c) => count(c.text, updatedText(todo)) === 2, 3000, 'the later update on the survivor');
    await sleep(200);
    assert.equal(count(onSurvivor.text, updatedText(todo)), 2);
  } finally {
    onHolder.destroy();
    onSurvivor.destroy();
  }
});

test('fleet flags: --node-id needs --redis, which must be a redis:// URL; one line naming the flag, exit code 2', async () => {
  const cases = [
    [['--node-id', 'a'], 'mcp-rx-streams: --node-id needs --redis URL'],
    [['--redis', 'http://10.0.0.5:6379'], 'mcp-rx-streams: --redis must be a redis:// or rediss:// URL, got "http://10.0.0.5:6379/"'],
  ] as const;
  await Promise.all(
    cases.map(async ([args, line]) => {
      const child = spawn(process.execPath, ['--import', 'tsx', path.resolve('adapters/cli.ts'), 'serve', '--port', '0', '--dir', path.join(tmp, 'data'), ...args], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      assert.equal(code, 2, args.join(' '));
      assert.equal(stderr, `${line}\n`);
    }),
  );
});

/** Polls `predicate` every 10 ms until it holds, failing after `ms`. */
async function waitFor(predicate: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

test.run();
