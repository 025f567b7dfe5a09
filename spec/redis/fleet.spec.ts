// A fleet as an operator runs it (issue 5, "must show"): two `mcp-rx-streams serve --redis URL`
// processes serving one folder on one real redis-server, read byte for byte over loopback.
// The tests share the two nodes and run in order: the cluster-wide cap, a legacy session moving
// from node to node with Last-Event-ID, a Redis outage, a paused node, Redis losing its data, and
// last the death of the lease holder.
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
let many: string[];

const urlOf = (node: Child) => /^mcp-rx-streams listening on (\S+)$/m.exec(node.output())![1]!;
const lines = (node: Child, pattern: RegExp) => [...node.output().matchAll(pattern)];
const leaseLine = (node: Child) => lines(node, /INFO: watch lease (held|not held): /gm).pop()?.[1];
const count = (text: string, part: string) => text.split(part).length - 1;
const uriOf = (file: string) => pathToFileURL(file).href;
const updatedText = (file: string) => `"method":"notifications/resources/updated","params":{"uri":"${uriOf(file)}"`;

function serve(nodeId: string): Child {
  return runFixture('cli', ['serve', '--redis', redis.url, '--port', '0', '--dir', path.join(tmp, 'data'), '--node-id', nodeId,
    '--watch-lease-ttl', String(TTL), '--max-listens-per-principal', '2']);
}

test.before(async () => {
  // Persistent (an AOF fsynced on every write): a kill and restart is an outage, not a data loss.
  redis = await startRedis({ persistent: true });
  raw = new Redis(redis.url, { maxRetriesPerRequest: null });
  raw.on('error', () => undefined);
  tmp = await mkdtemp(path.join(tmpdir(), 'mcp-rx-fleet-'));
  await mkdir(path.join(tmp, 'data'));
  const dir = await realpath(path.join(tmp, 'data'));
  todo = path.join(dir, 'todo.txt');
  notes = path.join(dir, 'notes.txt');
  await writeFile(todo, '- one\n');
  await writeFile(notes, 'notes\n');
  await mkdir(path.join(dir, 'many'));
  many = Array.from({ length: 200 }, (_, i) => path.join(dir, 'many', `f${String(i).padStart(3, '0')}.txt`));
  for (const file of many) await writeFile(file, 'start\n');
  // The first node holds the lease before the second starts.
  first = serve('first');
  await first.waitFor('INFO: watch lease held: ', 10_000);
  second = serve('second');
  await second.waitFor('INFO: connected to Redis at ', 10_000);
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

/** The URIs of the `resources/updated` frames on a stream, in order. */
const updatedUris = (text: string) => [...text.matchAll(/"method":"notifications\/resources\/updated","params":\{"uri":"([^"]+)"/g)].map((m) => m[1]!);

/** What `heard` lacks of `published` and what it has twice, as counts (multisets). */
function lostAndDuplicated(published: readonly string[], heard: readonly string[]): { lost: number; duplicated: number } {
  const left = new Map<string, number>();
  for (const uri of published) left.set(uri, (left.get(uri) ?? 0) + 1);
  let duplicated = 0;
  for (const uri of heard) {
    const n = left.get(uri) ?? 0;
    if (n === 0) duplicated++;
    else left.set(uri, n - 1);
  }
  let lost = 0;
  for (const n of left.values()) lost += n;
  return { lost, duplicated };
}

/** The node holding the watch lease and the other one, once exactly one holds it. */
async function holderAndOther(): Promise<[Child, Child]> {
  await waitFor(async () => [leaseLine(first), leaseLine(second)].filter((line) => line === 'held').length === 1, 3000, 'one lease holder');
  return leaseLine(first) === 'held' ? [first, second] : [second, first];
}

/** Appends a line to each of the 200 files, one after the other; returns the URIs in that order. */
async function change200(tag: string): Promise<void> {
  for (const file of many) await appendFile(file, `${tag}\n`);
}

/** Streams on both nodes listening to the 200 files. */
async function listen200(holder: Child, other: Child, id: number): Promise<[SseConnection, SseConnection]> {
  const body = listenBody(id, { resourceSubscriptions: many.map(uriOf) });
  const conns = await Promise.all([holder, other].map((node) => SseConnection.open(urlOf(node), body)));
  for (const conn of conns) await conn.until((c) => c.text.includes('acknowledged'), 3000, `the ack of listen ${id}`);
  return conns as [SseConnection, SseConnection];
}

function report(fault: string, figures: { lost: number; duplicated: number }, resyncs: number): void {
  if (process.env.FLEET_FIGURES !== undefined) process.stdout.write(`\n${fault}: lost ${figures.lost}, duplicated ${figures.duplicated}, resyncs ${resyncs}\n`);
}

const resyncLines = (node: Child) => lines(node, /WARN: resynced \((\w+)\)/gm).length;

// Issue 14 asks for a 5 s outage and a 5 s pause; 2.5 s shows the same (every change published
// meanwhile is caught up) and keeps the default test run short.
const FAULT_MS = 2500;

test('Redis killed for 2.5 s while the lease holder publishes 200 changes: after it returns (with its data) the other node\'s stream gets each change exactly once, in the same order', async () => {
  const [holder, other] = await holderAndOther();
  const [onHolder, onOther] = await listen200(holder, other, 11);
  const resyncsBefore = resyncLines(first) + resyncLines(second);
  const reachable = /is reachable again: .*\(queued \d+, unrelayed \d+, resyncs \d+\)/gm;
  const reachableBefore = lines(holder, reachable).length;
  try {
    const killed = Date.now();
    await redis.stop();
    await holder.waitFor(' is unreachable: ', 3000);
    await other.waitFor(' is unreachable: ', 3000);
    // Past 2/3 of the lease's ttl without Redis the holder's lease lapses; it still publishes the
    // folder's changes (nobody else can take the lease while Redis is down).
    const notHeld = lines(holder, /INFO: watch lease not held: /gm).length;
    await waitFor(async () => lines(holder, /INFO: watch lease not held: /gm).length > notHeld, 2000, 'the holder\'s lease to lapse');
    await change200('- during the outage');
    // The holder's own stream first, without waiting for Redis.
    await onHolder.until((c) => updatedUris(c.text).length >= 200, 3000, 'the 200 changes on the holder');
    assert.equal(updatedUris(onOther.text).length, 0, 'nothing reaches the other node while Redis is down');
    await sleep(Math.max(0, FAULT_MS - (Date.now() - killed)));
    await redis.restart();
    await onOther.until((c) => updatedUris(c.text).length >= 200, 5000, 'the 200 changes on the other node');
    await sleep(500);
    const published = updatedUris(onHolder.text);
    const heard = updatedUris(onOther.text);
    const figures = lostAndDuplicated(published, heard);
    report('redis killed 2.5 s', figures, resyncLines(first) + resyncLines(second) - resyncsBefore);
    assert.deepEqual(figures, { lost: 0, duplicated: 0 });
    assert.deepEqual(heard, published, 'in publishing order');
    assert.equal(new Set(published).size, 200, 'every file changed');
    assert.equal(resyncLines(first) + resyncLines(second), resyncsBefore, 'no resync: nothing was lost');
    // Logged once both of the holder's connections are back (its reader's backoff can be the later).
    await waitFor(async () => lines(holder, reachable).length > reachableBefore, 5000, "the holder's 'reachable again' line");
    assert.match(lines(holder, reachable).pop()![0], /unrelayed 0, resyncs 0\)$/);
  } finally {
    onHolder.destroy();
    onOther.destroy();
  }
});

test('the other node paused (SIGSTOP) for 2.5 s while the holder publishes 200 changes: resumed, it catches up, in order, exactly once', async () => {
  const [holder, other] = await holderAndOther();
  const [onHolder, onOther] = await listen200(holder, other, 12);
  try {
    other.process.kill('SIGSTOP');
    const paused = Date.now();
    try {
      await change200('- while paused');
      await onHolder.until((c) => updatedUris(c.text).length >= 200, 3000, 'the 200 changes on the holder');
      await sleep(Math.max(0, FAULT_MS - (Date.now() - paused)));
    } finally {
      other.process.kill('SIGCONT');
    }
    await onOther.until((c) => updatedUris(c.text).length >= 200, 5000, 'the 200 changes on the resumed node');
    await sleep(500);
    const published = updatedUris(onHolder.text);
    const heard = updatedUris(onOther.text);
    const figures = lostAndDuplicated(published, heard);
    report('node paused 2.5 s', figures, resyncLines(other));
    assert.deepEqual(figures, { lost: 0, duplicated: 0 });
    assert.deepEqual(heard, published, 'in publishing order');
  } finally {
    onHolder.destroy();
    onOther.destroy();
  }
});

test('Redis loses its data (FLUSHALL): every node resyncs its streams once (one re-read per topic), and changes flow again', async () => {
  const onFirst = await listen(first, 13, todo);
  const onSecond = await listen(second, 14, todo);
  const streams = [onFirst, onSecond];
  const before = [first, second].map(resyncLines);
  try {
    await raw.flushall();
    await first.waitFor('WARN: resynced (epoch)', 3000);
    await second.waitFor('WARN: resynced (epoch)', 3000);
    await sleep(1500); // more than the check interval: a second resync would show
    assert.deepEqual([first, second].map(resyncLines), before.map((n) => n + 1), 'one resync per node');
    for (const conn of streams) assert.deepEqual(updatedUris(conn.text), [uriOf(todo)], 'one re-read per stream');
    report('redis flushed', { lost: 0, duplicated: 0 }, [first, second].map(resyncLines).reduce((a, b) => a + b) - before.reduce((a, b) => a + b));
    // The lease is claimed again and changes reach both nodes.
    for (let round = 1; ; round++) {
      await appendFile(todo, `- after the flush ${round}\n`);
      const heard = await waitFor(async () => streams.every((conn) => updatedUris(conn.text).length > round), 500, 'a change after the flush').then(() => true, () => false);
      if (heard) break;
      if (round === 6) throw new Error(`no change reached both nodes after the flush: ${streams.map((conn) => updatedUris(conn.text).length)}`);
    }
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

    const heldLines = lines(survivor, /INFO: watch lease held: /gm).length;
    const killedAt = Date.now();
    await holder.kill();
    await waitFor(async () => lines(survivor, /INFO: watch lease held: /gm).length > heldLines, TTL * 3, 'the survivor to take the lease');
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

test('fleet flags: --node-id needs --redis, which must be a Redis URL (redis://, redis+sentinel://, redis+cluster://); one line naming the flag, exit code 2', async () => {
  const cases = [
    [['--node-id', 'a'], 'mcp-rx-streams: --node-id needs --redis URL'],
    [['--redis', 'http://10.0.0.5:6379'], 'mcp-rx-streams: --redis must be a redis://, rediss://, redis+sentinel:// or redis+cluster:// URL, got "http://10.0.0.5:6379"'],
    [['--redis', 'redis+sentinel://:pw@10.0.0.5:26379'], "mcp-rx-streams: --redis must be a redis+sentinel:// URL whose path is /<primary name>[/<db>], got \"redis+sentinel://:***@10.0.0.5:26379\": write redis+sentinel://10.0.0.5:26379,10.0.0.6:26379,10.0.0.7:26379/mymaster (mymaster: the name in the Sentinels' `sentinel monitor` line)"],
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
