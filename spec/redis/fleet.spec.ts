// Two nodes in two processes serving one folder on one Redis (issue 5, "must show"): a file change
// reaches a listen stream on each node exactly once; after the node holding the watch lease is
// killed, a later change still arrives on the survivor.
import { strict as assert } from 'node:assert';
import { appendFile, mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { test } from 'uvu';
import { listenBody, SseConnection } from '../helpers/http.js';
import { startRedis, type RedisServer } from '../helpers/redis.js';
import { runFixture, type Child } from './fixtures/child.js';

let redis: RedisServer;
test.before(async () => {
  redis = await startRedis();
});
test.after(async () => {
  await redis?.close();
});

const TTL = 900;
const count = (text: string, part: string) => text.split(part).length - 1;
const urlOf = (node: Child) => /^url (\S+)$/m.exec(node.output())![1]!;

test('two nodes, one folder: each change reaches both nodes once; the lease moves when its holder dies', async () => {
  const tmp = await mkdtemp(path.join(tmpdir(), 'mcp-rx-fleet-'));
  const dir = path.join(tmp, 'data');
  await mkdir(dir);
  const file = path.join(await realpath(dir), 'todo.txt');
  await writeFile(file, '- one\n');
  const uri = pathToFileURL(file).href;
  const updated = `"method":"notifications/resources/updated","params":{"uri":"${uri}"`;
  // The first node holds the lease before the second starts, so which one dies is known.
  const first = runFixture('node', [redis.url, dir, 'first', String(TTL)]);
  let second: Child | undefined;
  const streams: SseConnection[] = [];
  try {
    await first.waitFor('held true\n', 8000);
    second = runFixture('node', [redis.url, dir, 'second', String(TTL)]);
    await second.waitFor('held false\n', 8000);
    for (const [i, node] of [first, second].entries()) {
      const conn = await SseConnection.open(urlOf(node), listenBody(i, { resourceSubscriptions: [uri] }));
      await conn.until((c) => c.text.includes(`"resourceSubscriptions":["${uri}"]`), 2000, `the ack on node ${i}`);
      streams.push(conn);
    }
    const [onFirst, onSecond] = streams as [SseConnection, SseConnection];

    await appendFile(file, '- two\n');
    await onFirst.until((c) => count(c.text, updated) === 1, 3000, 'the update on the first node');
    await onSecond.until((c) => count(c.text, updated) === 1, 3000, 'the update on the second node');
    // Longer than a debounce and a relay: a second publisher would have shown by now.
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(count(onFirst.text, updated), 1);
    assert.equal(count(onSecond.text, updated), 1);

    const killedAt = Date.now();
    await first.kill();
    await second.waitFor('held true\n', TTL * 3);
    const takeover = Date.now() - killedAt;
    assert.ok(takeover <= TTL + TTL / 3 + 300, `took over after ${takeover} ms`);
    await appendFile(file, '- three\n');
    await onSecond.until((c) => count(c.text, updated) === 2, 3000, 'the later update on the survivor');
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(count(onSecond.text, updated), 2);
  } finally {
    for (const conn of streams) conn.destroy();
    await first.kill();
    await second?.kill();
    await rm(tmp, { recursive: true, force: true });
  }
});

test.run();
