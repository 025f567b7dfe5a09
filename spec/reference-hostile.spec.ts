// The reference server against hostile file trees and clients (issue 11, sections 4 and 5),
// over real loopback sockets and real files: a public folder swapped for a link into private/
// while it is read, a file swapped for a FIFO, oversized reads, private changes heard by
// unscoped subscribers, and the served directory deleted or renamed away and back.
import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { appendFile, mkdir, mkdtemp, rename, rm, writeFile, open as openFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { SignJWT } from 'jose';
import type { Subscription } from 'rxjs';
import { test } from 'uvu';
import { listen } from '../adapters/client.js';
import { RESOURCE_TOO_LARGE, startReferenceServer, type ReferenceServer } from '../adapters/reference/server.js';
import type { JsonRpcMessage } from '../lib/jsonrpc.js';
import { eventually, post } from './helpers/http.js';
import { call, GetStream, initialize } from './helpers/legacy.js';

const SECRET = 'test-secret-of-enough-length-for-hs256';
const token = (sub: string, scope: string) =>
  new SignJWT({ scope })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(sub)
    .setExpirationTime(Math.floor(Date.now() / 1000) + 3600)
    .sign(new TextEncoder().encode(SECRET));

const uriOf = (file: string) => pathToFileURL(file).href;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** pub/file.txt ("public"), private/file.txt and private/only-private.txt, README.md. */
async function withTree(options: Parameters<typeof startReferenceServer>[0], body: (server: ReferenceServer, dir: string) => Promise<void>): Promise<void> {
  const base = await mkdtemp(path.join(tmpdir(), 'mcp-rx-ref-hostile-'));
  const dir = path.join(base, 'data');
  await mkdir(path.join(dir, 'pub'), { recursive: true });
  await mkdir(path.join(dir, 'private'));
  await writeFile(path.join(dir, 'README.md'), '# hello\n');
  await writeFile(path.join(dir, 'pub', 'file.txt'), 'public\n');
  await writeFile(path.join(dir, 'private', 'file.txt'), 'PRIVATE BYTES\n');
  await writeFile(path.join(dir, 'private', 'only-private.txt'), 'PRIVATE TOO\n');
  const server = await startReferenceServer({ dir, port: 0, debounceMs: 20, ...options });
  try {
    await body(server, dir);
  } finally {
    await server.close();
    await rm(base, { recursive: true, force: true });
  }
}

/** Polls `resources/list` until it lists `uri` (the watcher has seen the file), failing after 3 s. */
async function listedSoon(url: string, uri: string): Promise<void> {
  for (const deadline = Date.now() + 3000; Date.now() < deadline; await sleep(20)) {
    const list = await rpc(url, 0, 'resources/list');
    if ((list.result.resources as { uri: string }[]).some((r) => r.uri === uri)) return;
  }
  assert.fail(`resources/list never listed ${uri}`);
}

const rpc = async (url: string, id: number, method: string, params?: unknown, headers?: Record<string, string>) =>
  JSON.parse((await post(url, JSON.stringify({ jsonrpc: '2.0', id, method, params }), headers)).body);

/**
 * Runs `script` (a loop swapping things in `dir`) in another process until it is killed, so the
 * swaps are truly concurrent with the server's system calls; resolves with its stop function.
 */
async function swapper(script: string, dir: string): Promise<() => Promise<string>> {
  const { NO_COLOR: _, ...env } = process.env;
  const child = spawn(process.execPath, ['-e', script, dir], { stdio: ['ignore', 'pipe', 'inherit'], env });
  let out = '';
  child.stdout.on('data', (chunk) => (out += chunk));
  await eventually(() => out.includes('ready'), 5000, 'the swapper to start');
  return async () => {
    const exited = new Promise((resolve) => child.on('exit', resolve));
    child.kill('SIGTERM');
    await exited;
    return out;
  };
}

// pub <-> a link to private/, by renames (each step atomic), spending about as long in each state:
// bursts of 40 ms, then 40 ms left public, so that the watcher, which drops pub/ while it is a
// link, lists pub/file.txt again and reads keep reaching the race rather than "not found".
const SWAP_FOLDER = `
const fs = require('fs'), path = require('path');
const dir = process.argv[1];
const pub = path.join(dir, 'pub'), real = path.join(dir, 'pub.real'), link = path.join(dir, 'pub.link');
fs.symlinkSync(path.join(dir, 'private'), link);
process.on('SIGTERM', () => process.exit(0));
console.log('ready');
const spin = () => { const end = process.hrtime.bigint() + 200000n; while (process.hrtime.bigint() < end); };
(function loop() {
  const end = Date.now() + 40;
  while (Date.now() < end) {
    fs.renameSync(pub, real); fs.renameSync(link, pub); spin();
    fs.renameSync(pub, link); fs.renameSync(real, pub); spin();
  }
  setTimeout(loop, 40);
})();
`;

test('a public folder swapped for a link into private/ in a tight loop: hundreds of reads, no private byte or name', async () => {
  await withTree({}, async ({ url }, dir) => {
    const fileUri = uriOf(path.join(dir, 'pub', 'file.txt'));
    const folderUri = `${uriOf(path.join(dir, 'pub'))}/`;
    const stop = await swapper(SWAP_FOLDER, dir);
    const answers: string[] = [];
    let served = 0;
    try {
      let id = 0;
      const worker = async () => {
        for (let i = 0; i < 100; i++) {
          const read = await rpc(url, ++id, 'resources/read', { uri: fileUri });
          if (read.result?.contents?.[0]?.text === 'public\n') served++;
          answers.push(JSON.stringify(read));
          if (i % 10 === 0) {
            answers.push(JSON.stringify(await rpc(url, ++id, 'resources/read', { uri: folderUri })));
            answers.push(JSON.stringify(await rpc(url, ++id, 'resources/list')));
          }
        }
      };
      await Promise.all(Array.from({ length: 6 }, worker));
    } finally {
      await stop();
    }
    const leaks = answers.filter((a) => a.includes('PRIVATE') || a.includes('only-private'));
    assert.deepEqual(leaks, [], `${leaks.length} of ${answers.length} answers leaked private content`);
    assert.ok(answers.length >= 600, `${answers.length} answers`);
    // Reads that found pub/ as a link are "not found"; the others must have been served.
    assert.ok(served > 0, 'no read was served at all: the test proved nothing');
    for (const a of answers) assert.ok(!a.includes('"code":-32603'), a);
  });
});

// pub/file.txt <-> a FIFO, by renames.
const SWAP_FIFO = `
const fs = require('fs'), path = require('path'), { execFileSync } = require('child_process');
const dir = process.argv[1];
const file = path.join(dir, 'pub', 'file.txt'), real = file + '.real', fifo = file + '.fifo';
execFileSync('mkfifo', [fifo]);
process.on('SIGTERM', () => process.exit(0));
console.log('ready');
const spin = () => { const end = process.hrtime.bigint() + 200000n; while (process.hrtime.bigint() < end); };
(function loop() {
  for (let i = 0; i < 200; i++) {
    fs.renameSync(file, real); fs.renameSync(fifo, file); spin();
    fs.renameSync(file, fifo); fs.renameSync(real, file); spin();
  }
  setImmediate(loop);
})();
`;

test('a file swapped for a FIFO in a tight loop: every read answers at once, with the file or not found', async () => {
  await withTree({}, async ({ url }, dir) => {
    const fileUri = uriOf(path.join(dir, 'pub', 'file.txt'));
    const stop = await swapper(SWAP_FIFO, dir);
    let served = 0;
    try {
      let id = 0;
      const worker = async () => {
        for (let i = 0; i < 60; i++) {
          const read = await Promise.race([
            rpc(url, ++id, 'resources/read', { uri: fileUri }),
            sleep(2000).then(() => assert.fail('a read hung on the FIFO for 2 s')),
          ]);
          if (read.result) {
            assert.equal(read.result.contents[0].text, 'public\n');
            served++;
          } else assert.equal(read.error.code, -32602, JSON.stringify(read)); // not found on 2026-07-28
        }
      };
      await Promise.all(Array.from({ length: 4 }, worker));
    } finally {
      await stop();
    }
    assert.ok(served > 0, 'no read was served at all: the test proved nothing');
  });
});

test('resources/read over maxReadBytes: a JSON-RPC error naming the sizes; a file just under the cap is served', async () => {
  await withTree({ maxReadBytes: 1024 }, async ({ url }, dir) => {
    await writeFile(path.join(dir, 'under.txt'), 'u'.repeat(1023));
    await writeFile(path.join(dir, 'at.txt'), 'a'.repeat(1024));
    await writeFile(path.join(dir, 'over.txt'), 'o'.repeat(1025));
    await listedSoon(url, uriOf(path.join(dir, 'over.txt')));
    await listedSoon(url, uriOf(path.join(dir, 'at.txt')));
    await listedSoon(url, uriOf(path.join(dir, 'under.txt')));
    const under = await rpc(url, 1, 'resources/read', { uri: uriOf(path.join(dir, 'under.txt')) });
    assert.equal(under.result.contents[0].text, 'u'.repeat(1023));
    const at = await rpc(url, 2, 'resources/read', { uri: uriOf(path.join(dir, 'at.txt')) });
    assert.equal(at.result.contents[0].text, 'a'.repeat(1024));
    const overUri = uriOf(path.join(dir, 'over.txt'));
    const over = await rpc(url, 3, 'resources/read', { uri: overUri });
    assert.equal(RESOURCE_TOO_LARGE, -32013);
    assert.deepEqual(over, {
      jsonrpc: '2.0',
      id: 3,
      error: {
        code: -32013,
        message: `resource too large: ${overUri} is 1025 bytes and this server reads at most 1024 bytes per resource (maxReadBytes, --max-read-bytes)`,
        data: { uri: overUri, size: 1025, maxReadBytes: 1024 },
      },
    });
  });
});

test('maxReadBytes is validated by startReferenceServer with a message naming it', async () => {
  for (const bad of [0, -1, 2.5, '8' as unknown as number]) {
    await assert.rejects(startReferenceServer({ dir: path.join(tmpdir(), 'never-created'), port: 0, maxReadBytes: bad }), /maxReadBytes must be a positive integer of bytes/);
  }
});

test('ten concurrent reads of a 64 MiB file do not grow the RSS by the file size', async () => {
  await withTree({}, async ({ url }, dir) => {
    const size = 64 * 1024 * 1024;
    const handle = await openFile(path.join(dir, 'huge.bin'), 'w');
    await handle.truncate(size); // sparse: costs no disk
    await handle.close();
    const uri = uriOf(path.join(dir, 'huge.bin'));
    await listedSoon(url, uri);
    global.gc?.();
    const before = process.memoryUsage.rss();
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 2);
    try {
      const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => rpc(url, i, 'resources/read', { uri })));
      for (const answer of answers) assert.equal(answer.error?.code, -32013, JSON.stringify(answer).slice(0, 200));
    } finally {
      clearInterval(sampler);
    }
    peak = Math.max(peak, process.memoryUsage.rss());
    assert.ok(peak - before < size / 2, `RSS grew by ${((peak - before) / 1048576).toFixed(1)} MiB`);
  });
});

/** Collects a listen stream's messages. */
function collect(url: string, token: string | undefined, resourceSubscriptions: string[]): { messages: JsonRpcMessage[]; sub: Subscription } {
  const messages: JsonRpcMessage[] = [];
  const sub = listen({ url, ...(token === undefined ? {} : { token }), notifications: { resourceSubscriptions, resourcesListChanged: true } }).subscribe((m) => messages.push(m));
  return { messages, sub };
}

const methodAndUri = (m: JsonRpcMessage) => {
  const params = (m as { params?: { uri?: string } }).params;
  return 'method' in m ? `${m.method}${params?.uri ? ` ${params.uri}` : ''}` : 'result';
};

test('a change under private/ reaches only private-scoped listen streams, on every URI it is heard on', async () => {
  await withTree({ tokenSecret: SECRET }, async ({ url }, dir) => {
    const root = `${uriOf(dir)}/`;
    const subscriptions = [root, `${uriOf(path.join(dir, 'private'))}/`, uriOf(path.join(dir, 'private', 'file.txt'))];
    const unscoped = collect(url, await token('u', 'read'), subscriptions);
    const scoped = collect(url, await token('p', 'read private'), subscriptions);
    try {
      await eventually(() => unscoped.messages.length === 1 && scoped.messages.length === 1, 3000, 'both acks');
      await appendFile(path.join(dir, 'private', 'file.txt'), 'more\n');
      await eventually(() => scoped.messages.some((m) => methodAndUri(m) === `notifications/resources/updated ${root}`), 3000, 'the private update');
      await writeFile(path.join(dir, 'private', 'new.txt'), 'new');
      await eventually(() => scoped.messages.some((m) => methodAndUri(m) === 'notifications/resources/list_changed'), 3000, 'the private create');
      // A public change afterwards: the hub keeps order, so once it arrives anything earlier would have.
      await appendFile(path.join(dir, 'README.md'), 'more\n');
      await eventually(() => unscoped.messages.length > 1, 3000, 'the public update');
      await sleep(100);
      assert.deepEqual(unscoped.messages.map(methodAndUri), ['notifications/subscriptions/acknowledged', `notifications/resources/updated ${root}`]);
      const heard = new Set(scoped.messages.map(methodAndUri));
      for (const expected of [
        `notifications/resources/updated ${subscriptions[2]}`,
        `notifications/resources/updated ${subscriptions[1]}`,
        `notifications/resources/updated ${root}`,
        'notifications/resources/list_changed',
      ]) {
        assert.ok(heard.has(expected), `${expected} in ${[...heard].join(', ')}`);
      }
    } finally {
      unscoped.sub.unsubscribe();
      scoped.sub.unsubscribe();
    }
  });
});

test('a change under private/ reaches no unscoped legacy GET stream subscribed to the root collection', async () => {
  await withTree({ tokenSecret: SECRET }, async ({ url }, dir) => {
    const root = `${uriOf(dir)}/`;
    const sessions = await Promise.all(
      ['read', 'read private'].map(async (scope) => {
        const auth = { authorization: `Bearer ${await token(scope.replace(' ', '-'), scope)}` };
        const { sessionId } = await initialize(url, { headers: auth });
        const stream = GetStream.open(url, sessionId, { headers: auth });
        await stream.response;
        const subscribed = await call(url, sessionId, 2, 'resources/subscribe', { uri: root }, auth);
        assert.deepEqual(subscribed.json?.result, {}, subscribed.body);
        return stream;
      }),
    );
    const [unscoped, scoped] = sessions as [GetStream, GetStream];
    try {
      await appendFile(path.join(dir, 'private', 'file.txt'), 'more\n');
      await eventually(() => scoped.text.includes(`"uri":"${root}"`), 3000, 'the private update on the scoped stream');
      await writeFile(path.join(dir, 'private', 'new.txt'), 'new');
      await eventually(() => scoped.text.includes('notifications/resources/list_changed'), 3000, 'the private create on the scoped stream');
      await appendFile(path.join(dir, 'README.md'), 'more\n');
      await eventually(() => unscoped.text.includes(`"uri":"${root}"`), 3000, 'the public update on the unscoped stream');
      await sleep(100);
      const data = unscoped.text.split('\n').filter((line) => line.startsWith('data: {'));
      assert.deepEqual(data, [`data: {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"${root}"}}`]);
    } finally {
      unscoped.req.destroy();
      scoped.req.destroy();
    }
  });
});

for (const [name, away, back] of [
  ['deleted and created again', (dir: string) => rm(dir, { recursive: true }), (dir: string) => mkdir(dir)],
  ['renamed away and back', (dir: string) => rename(dir, `${dir}.away`), (dir: string) => rename(`${dir}.away`, dir)],
] as const) {
  test(`the served directory ${name}: notifications and resources/list resume within a few seconds`, async () => {
    await withTree({}, async ({ url }, dir) => {
      const root = `${uriOf(dir)}/`;
      const later = uriOf(path.join(dir, 'later.txt'));
      const listed = async () => ((await rpc(url, 1, 'resources/list')).result.resources as { uri: string }[]).map((r) => r.uri);
      const { messages, sub } = collect(url, undefined, [root]);
      try {
        await eventually(() => messages.length === 1, 3000, 'the ack');
        await away(dir);
        await eventually(() => messages.some((m) => methodAndUri(m) === 'notifications/resources/list_changed'), 3000, 'list_changed for the vanished tree');
        let empty = false;
        for (const deadline = Date.now() + 3000; !empty && Date.now() < deadline; await sleep(50)) empty = (await listed()).length === 1;
        assert.ok(empty, 'resources/list still lists the vanished tree');
        await back(dir);
        await writeFile(path.join(dir, 'later.txt'), 'one');
        let found = false;
        for (const deadline = Date.now() + 3000; !found && Date.now() < deadline; await sleep(50)) found = (await listed()).includes(later);
        assert.ok(found, 'resources/list did not show the file created after the directory came back');
        await sleep(200);
        messages.splice(1);
        await appendFile(path.join(dir, 'later.txt'), 'two');
        // later.txt did not exist when the stream was opened, so only the root collection hears it.
        await eventually(() => messages.some((m) => methodAndUri(m) === `notifications/resources/updated ${root}`), 3000, 'the update after coming back');
        assert.deepEqual(messages.slice(1).map(methodAndUri), [`notifications/resources/updated ${root}`]);
      } finally {
        sub.unsubscribe();
      }
    });
  });
}

test.run();
