// Readiness and log lines that say what is true (issue 31, item 7), from `serve` in child processes:
// - the ready line (`mcp-rx-streams listening on …`) only once every listener the flags asked for is
//   up: without prom-client, or with the metrics port taken, `serve --metrics-port` exits 1 saying
//   why and never printed it (on one process and on --workers 2);
// - Redis unreachable: a lone node says its local streams are served without the folder's changes,
//   and nothing about the watch lease (before: "watch lease not held: another node publishes the
//   folder's changes", with no other node); a listen indeed hears no change; a clean SIGTERM says
//   stopping and stopped, no ERROR;
// - the lease holder cut off from Redis: its lease lapses and it says that it goes on publishing
//   (before: "another node publishes"), and a listen on it indeed hears the next change.
// On the code before, each test failed: the ready line came before exit 1; the lease lines above.
import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { appendFile, mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { test } from 'uvu';
import { CLI, cli, type Run } from './helpers/cli.js';
import { listenBody, SseConnection } from './helpers/http.js';
import { sleep } from './helpers/legacy.js';
import { startRedis } from './helpers/redis.js';

const NO_PROM_CLIENT = fileURLToPath(new URL('./fixtures/no-prom-client.cjs', import.meta.url));
const READY = /^mcp-rx-streams listening on (\S+)$/m;
/** Generous, for a machine other work keeps busy. */
const START_MS = 60_000;

/** `serve …args` with `node …nodeArgs`, its output read as it comes; resolves once it exited. */
function serve(args: readonly string[], nodeArgs: readonly string[] = []): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(process.execPath, [...nodeArgs, CLI, 'serve', '--port', '0', '--demo', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), START_MS);
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    }),
  );
}

/** A port on 127.0.0.1 held by a server of this process while `body` runs. */
async function withTakenPort(body: (port: number) => Promise<void>): Promise<void> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    await body((server.address() as net.AddressInfo).port);
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

let root: string;

test.before(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'mcp-rx-ready-'));
});

test.after(async () => {
  if (root !== undefined) await rm(root, { recursive: true, force: true });
});

test('--metrics-port without prom-client: exit 1 saying how to install it, and no ready line (one process, --workers 2)', async () => {
  for (const workers of [[], ['--workers', '2']]) {
    const { code, out, err } = await serve(['--dir', path.join(root, 'a'), '--metrics-port', '0', ...workers], ['--require', NO_PROM_CLIENT]);
    const shown = `serve ${workers.join(' ')}: stdout:\n${out}\nstderr:\n${err}`;
    assert.equal(code, 1, shown);
    assert.doesNotMatch(out, READY, shown);
    assert.match(err, /^mcp-rx-streams: serve --metrics-port needs the prom-client package, an optional peer dependency that is not installed: run npm install prom-client$/m, shown);
  }
});

test('--metrics-port on a port that is taken: exit 1 naming it, and no ready line (one process, --workers 2)', async () => {
  await withTakenPort(async (port) => {
    for (const workers of [[], ['--workers', '2']]) {
      const { code, out, err } = await serve(['--dir', path.join(root, 'b'), '--metrics-port', String(port), ...workers]);
      const shown = `serve ${workers.join(' ')}: stdout:\n${out}\nstderr:\n${err}`;
      assert.equal(code, 1, shown);
      assert.equal(out, '', shown);
      assert.match(err, new RegExp(`^mcp-rx-streams: --metrics-port ${port}: cannot listen on 127\\.0\\.0\\.1:${port} \\(EADDRINUSE\\)$`, 'm'), shown);
    }
  });
});

/** A loopback port nobody listens on. */
async function closedPort(): Promise<number> {
  let port = 0;
  await withTakenPort(async (taken) => void (port = taken));
  return port;
}

/** Waits for `run`'s ready line; its URL. */
async function ready(run: Run): Promise<string> {
  await run.waitFor(READY, START_MS);
  return READY.exec(run.out())![1]!;
}

test('Redis unreachable, a lone node: it says its streams get no folder changes (and indeed a listen hears none), nothing about the watch lease; SIGTERM: stopping, stopped, exit 0', async () => {
  const dir = path.join(root, 'c');
  const redis = `redis://127.0.0.1:${await closedPort()}`;
  const run = cli(['serve', '--port', '0', '--dir', dir, '--demo', '--redis', redis, '--watch-lease-ttl', '600']);
  try {
    const url = await ready(run);
    await run.waitForErr(`WARN: waiting for Redis at ${redis}; local streams are served meanwhile, without the folder's changes until this node holds the watch lease`);
    const todo = path.join(dir, 'notes', 'todo.txt');
    const listen = await SseConnection.open(url, listenBody(1, { resourceSubscriptions: [pathToFileURL(todo).href] }));
    await listen.until((c) => c.text.includes('acknowledged'), 5000, 'the ack');
    await appendFile(todo, '- while Redis is away\n');
    await sleep(1500);
    assert.doesNotMatch(listen.text, /resources\/updated/, 'the waiting line said so: no change is published');
    listen.destroy();
    await run.waitForErr('INFO: stream closed: client_closed');
    assert.doesNotMatch(run.err(), /INFO: watch lease (held|not held)/, 'nobody holds the lease for this node, and it does not know who does');
    const before = run.err().length;
    run.child.kill('SIGTERM');
    assert.equal(await run.exited, 0, run.err());
    const after = run.err().slice(before);
    assert.deepEqual([...after.matchAll(/\] (\w+): (\w+)/g)].map((match) => `${match[1]} ${match[2]}`), ['INFO stopping', 'INFO stopped'], after);
    assert.doesNotMatch(run.err(), /ERROR/);
  } finally {
    run.child.kill('SIGKILL');
  }
});

test('the lease holder cut off from Redis: its lease lapses and it says it goes on publishing; a listen on it hears the next change', async () => {
  const dir = path.join(root, 'd');
  const redis = await startRedis();
  const run = cli(['serve', '--port', '0', '--dir', dir, '--demo', '--redis', redis.url, '--watch-lease-ttl', '600']);
  try {
    const url = await ready(run);
    await run.waitForErr("INFO: watch lease held: this node publishes the folder's changes to the fleet", 15_000);
    const todo = path.join(dir, 'notes', 'todo.txt');
    const listen = await SseConnection.open(url, listenBody(1, { resourceSubscriptions: [pathToFileURL(todo).href] }));
    await listen.until((c) => c.text.includes('acknowledged'), 5000, 'the ack');
    await redis.stop();
    await run.waitForErr(`WARN: Redis at ${redis.url} is unreachable: local streams go on (this node goes on publishing the folder's changes)`, 10_000);
    await run.waitForErr("INFO: watch lease not held: it lapsed while Redis is unreachable; this node goes on publishing the folder's changes, the other nodes hear them once Redis is back", 10_000);
    assert.doesNotMatch(run.err(), /another node publishes/);
    await appendFile(todo, '- while Redis is away\n');
    await listen.until((c) => c.text.includes('resources/updated'), 5000, 'the change, published by this node as it said');
    listen.destroy();
    run.child.kill('SIGTERM');
    assert.equal(await run.exited, 0, run.err());
    assert.doesNotMatch(run.err(), /ERROR/);
  } finally {
    run.child.kill('SIGKILL');
    await redis.close();
  }
});

test.run();
