// The folder-watch lease changing hands in a fleet (issue 31, item 1): `mcp-rx-streams serve
// --redis` nodes over one folder and one real redis-server, read over loopback. A change made while
// no node holds the lease (its holder killed, or paused) is announced once by the next holder,
// which catches up from the state the fleet last published (kept in Redis beside the lease); a
// change published before the handover is not announced again.
import { strict as assert } from 'node:assert';
import { appendFile, mkdir, mkdtemp, realpath, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { test } from 'uvu';
import { listenBody, SseConnection } from '../helpers/http.js';
import { sleep } from '../helpers/legacy.js';
import { startRedis, type RedisServer } from '../helpers/redis.js';
import { runFixture, type Child } from './fixtures/child.js';

const TTL = 900;
let redis: RedisServer;
let tmp: string;
let dir: string;
let todo: string;
const nodes: Child[] = [];

const urlOf = (node: Child) => /^mcp-rx-streams listening on (\S+)$/m.exec(node.output())![1]!;
const leaseLines = (node: Child) => [...node.output().matchAll(/INFO: watch lease (held|not held): /gm)].map((match) => match[1]);
const holds = (node: Child) => leaseLines(node).at(-1) === 'held';
const heldCount = (node: Child) => leaseLines(node).filter((line) => line === 'held').length;
const count = (text: string, part: string) => text.split(part).length - 1;
const uriOf = (file: string) => pathToFileURL(file).href;
const updated = (uri: string) => `"method":"notifications/resources/updated","params":{"uri":"${uri}"`;
const LIST_CHANGED = '"method":"notifications/resources/list_changed"';

function serve(nodeId: string): Child {
  const node = runFixture('cli', ['serve', '--redis', redis.url, '--port', '0', '--dir', dir, '--node-id', nodeId, '--watch-lease-ttl', String(TTL)]);
  nodes.push(node);
  return node;
}

test.before(async () => {
  redis = await startRedis();
  tmp = await mkdtemp(path.join(tmpdir(), 'mcp-rx-handover-'));
  await mkdir(path.join(tmp, 'data'));
  dir = await realpath(path.join(tmp, 'data'));
  todo = path.join(dir, 'todo.txt');
  await writeFile(todo, '- one\n');
  await writeFile(path.join(dir, 'old.txt'), 'old\n');
  const first = serve('first');
  await first.waitFor('INFO: watch lease held: ', 10_000);
  await serve('second').waitFor('INFO: connected to Redis at ', 10_000);
});

test.after(async () => {
  for (const node of nodes) await node.kill();
  await redis?.close();
  if (tmp !== undefined) await rm(tmp, { recursive: true, force: true });
});

/** A listen on `node` to todo.txt, the folder, and the list of files. */
async function listen(node: Child, id: number): Promise<SseConnection> {
  const conn = await SseConnection.open(urlOf(node), listenBody(id, { resourceSubscriptions: [uriOf(todo), pathToFileURL(dir).href + '/'], resourcesListChanged: true }));
  await conn.until((c) => c.text.includes('acknowledged'), 3000, `the ack of listen ${id}`);
  return conn;
}

/** The live node holding the lease, and the others. */
function holderOf(live: readonly Child[]): [Child, Child[]] {
  const holder = live.find(holds);
  assert.ok(holder !== undefined, `a holder among ${live.length} nodes`);
  return [holder, live.filter((node) => node !== holder)];
}

test('the holder killed (SIGKILL): a file changed, one created and one deleted before another node holds the lease are each announced once by the new holder; what was published before is not announced again', async () => {
  const [holder, [survivor]] = holderOf(nodes);
  const conn = await listen(survivor!, 1);
  try {
    await appendFile(todo, '- before\n');
    await conn.until((c) => count(c.text, updated(uriOf(todo))) === 1, 3000, 'the change before the kill');
    await sleep(300); // recorded as published
    const held = heldCount(survivor!);
    await holder.kill();
    // Nobody holds the lease for about a ttl: these are made now.
    await appendFile(todo, '- while nobody holds the lease\n');
    await writeFile(path.join(dir, 'new.txt'), 'new\n');
    await unlink(path.join(dir, 'old.txt'));
    await sleep(200);
    assert.equal(heldCount(survivor!), held, 'made before the takeover');
    assert.equal(count(conn.text, updated(uriOf(todo))), 1, 'nobody published it yet');
    await survivor!.waitFor('INFO: watch lease held: ', 3 * TTL);
    await conn.until((c) => count(c.text, updated(uriOf(todo))) === 2 && count(c.text, LIST_CHANGED) === 1, 3000, 'the catch-up');
    await sleep(500); // a second announcement would show by now
    assert.equal(count(conn.text, updated(uriOf(todo))), 2, 'the change before the kill once, the one after it once');
    assert.equal(count(conn.text, LIST_CHANGED), 1, 'one list change for the created and the deleted file');
  } finally {
    conn.destroy();
  }
});

test('the holder paused (SIGSTOP) past its ttl: a change made meanwhile is announced once by the node that takes over, and not again when the paused one resumes', async () => {
  const live = nodes.filter((node) => node.process.exitCode === null && node.process.signalCode === null);
  const third = serve('third');
  await third.waitFor('INFO: connected to Redis at ', 10_000);
  const [holder] = holderOf(live);
  const onThird = await listen(third, 2);
  const onHolder = await listen(holder, 3);
  const held = heldCount(third);
  holder.process.kill('SIGSTOP');
  try {
    await appendFile(todo, '- while the holder is paused\n');
    await third.waitFor('INFO: watch lease held: ', 3 * TTL);
    await onThird.until((c) => count(c.text, updated(uriOf(todo))) === 1, 3 * TTL, 'the catch-up on the new holder');
    assert.ok(heldCount(third) > held, 'the third node took the lease');
  } finally {
    holder.process.kill('SIGCONT');
  }
  try {
    await onHolder.until((c) => count(c.text, updated(uriOf(todo))) === 1, 3000, 'the change relayed to the resumed node');
    await sleep(600);
    assert.equal(count(onThird.text, updated(uriOf(todo))), 1, 'once on the new holder');
    assert.equal(count(onHolder.text, updated(uriOf(todo))), 1, 'once on the resumed node: it does not publish it again');
    assert.equal(leaseLines(holder).at(-1), 'not held', 'the resumed node let the lease go');
  } finally {
    onThird.destroy();
    onHolder.destroy();
  }
});

test.run();
