// The `mcp-rx-streams` command as an operator runs it (`dist/adapters/cli.js`, built by `npm test`
// before the specs), in child processes: --help generated from the flag table (every flag with a
// description, unit and default, and every flag it lists accepted), --dir that does not exist
// refused unless --demo, and --redis waiting for Redis while local streams are served.
import { strict as assert } from 'node:assert';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import { readServe } from '../adapters/cli/serveFlags.js';
import { UsageError } from '../adapters/cli/errors.js';
import { REFERENCE_TABLES } from '../adapters/reference/options.js';
import { cli, serving } from './helpers/cli.js';
import { LISTEN_HEADERS, listenBody, SseConnection } from './helpers/http.js';
import { send } from './helpers/legacy.js';
import { startRedis } from './helpers/redis.js';

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

/** The `--flag` names of a help text's flag lines. */
const flagsOf = (help: string) => [...help.matchAll(/^ {2}(?:-\w, )?--([a-z-]+)/gm)].map((match) => match[1]!);

test('serve --help: every flag on one line with a description; value flags with a default, timed ones with their unit', async () => {
  const run = cli(['serve', '--help']);
  assert.equal(await run.exited, 0);
  const help = run.out();
  const flags = flagsOf(help);
  for (const expected of ['dir', 'demo', 'port', 'host', 'token-secret', 'keep-alive-interval', 'listen-idle-timeout', 'max-stream-lifetime', 'max-stream-queue', 'max-stream-queue-bytes', 'close-notice', 'max-listens-per-principal', 'max-streams', 'session-idle-timeout', 'session-grace-period', 'replay-buffer-size', 'redis', 'node-id', 'watch-lease-ttl', 'redis-timeout', 'metrics-port', 'max-read-bytes', 'trust-proxy', 'cors-origins']) {
    assert.ok(flags.includes(expected), `--${expected} missing from serve --help:\n${help}`);
  }
  for (const line of help.split('\n').filter((text) => /^ {2}(-\w, )?--/.test(text))) {
    const [, flag, value, description] = /^ {2}(?:-\w, )?--([a-z-]+)(?: ([A-Z]+))?\s+(.*)$/.exec(line)!;
    assert.ok(description!.length > 10, `--${flag} has no description: ${line}`);
    if (value !== undefined) assert.match(line, /default: /, `--${flag} shows no default: ${line}`);
    if (value === 'MS') assert.match(line, /\[milliseconds; default: /, `--${flag} shows no unit: ${line}`);
    if (value === 'BYTES') assert.match(line, /\[bytes; default: /, `--${flag} shows no unit: ${line}`);
  }
  assert.match(help, /--keep-alive-interval MS +.*\[milliseconds; default: 15000\]/);
  assert.match(help, /--dir DIR +.*must exist unless --demo \[default: \.\/demo-data\]/);
});

test('serve has a flag for every option of startReferenceServer that declares one, named after it', async () => {
  const run = cli(['serve', '--help']);
  assert.equal(await run.exited, 0);
  const flags = flagsOf(run.out());
  for (const table of REFERENCE_TABLES) {
    for (const [name, spec] of Object.entries(table)) {
      const flag = name.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`);
      assert.equal(flags.includes(flag), spec.flag !== false, `${name}: --${flag} ${spec.flag === false ? 'is declared without a flag' : 'is missing from serve --help'}`);
    }
  }
});

test("README's options tables name every serve flag, and no flag serve does not have", async () => {
  const run = cli(['serve', '--help']);
  assert.equal(await run.exited, 0);
  const flags = flagsOf(run.out());
  const section = README.slice(README.indexOf('\n## Options\n'), README.indexOf('\n## Layout\n'));
  const rows = section.split('\n').filter((line) => line.startsWith('| '));
  const named = new Set(rows.flatMap((row) => [...row.matchAll(/`--([a-z-]+)/g)].map((match) => match[1]!)));
  for (const flag of flags) if (flag !== 'help') assert.ok(named.has(flag), `README's options tables do not name --${flag}`);
  for (const flag of named) assert.ok(flags.includes(flag), `README names --${flag}, which serve does not have`);
});

test('a renamed option\'s former flag still runs, hidden from --help: --listen-max-queue is --max-stream-queue; both with different values exit 2 (issue 30)', () => {
  const options = (argv: string[]) => readServe(argv).server as Record<string, unknown>;
  assert.equal(options(['--listen-max-queue', '50']).maxStreamQueue, 50);
  assert.equal(options(['--listen-max-queue-bytes', '4096', '--max-stream-queue-bytes', '4096']).maxStreamQueueBytes, 4096);
  assert.throws(() => readServe(['--max-stream-queue', '60', '--listen-max-queue', '50']), (error: unknown) => error instanceof UsageError && /--listen-max-queue is the former name of --max-stream-queue/.test(error.message));
});

test('listen --help lists its flags the same way', async () => {
  const run = cli(['listen', '--help']);
  assert.equal(await run.exited, 0);
  assert.deepEqual(flagsOf(run.out()), ['tools', 'prompts', 'resources', 'resource', 'token', 'id', 'help']);
  assert.match(run.out(), /--id ID +.*\[default: 1\]/);
});

test('every value flag serve --help lists is read by the parser: a bad value is refused naming that flag, never as unknown', async () => {
  const help = cli(['serve', '--help']);
  await help.exited;
  const valueFlags = [...help.out().matchAll(/^ {2}--([a-z-]+) [A-Z]+/gm)].map((match) => match[1]!);
  assert.ok(valueFlags.length >= 20, help.out());
  // The empty string is no valid value for any of them.
  const runs = valueFlags.map((flag) => [flag, cli(['serve', `--${flag}`, ''])] as const);
  for (const [flag, run] of runs) {
    assert.equal(await run.exited, 2, `--${flag}: ${run.err()}`);
    const lines = run.err().split('\n').filter(Boolean);
    assert.equal(lines.length, 1, run.err());
    assert.ok(lines[0]!.startsWith(`mcp-rx-streams: --${flag} `), lines[0]);
  }
});

test('an unknown flag: one line saying so and where the flags are, exit code 2', async () => {
  const run = cli(['serve', '--keep-alive', '5']);
  assert.equal(await run.exited, 2);
  assert.equal(run.err(), 'mcp-rx-streams: unknown flag --keep-alive for serve; see mcp-rx-streams serve --help\n');
});

test('serve --dir that does not exist: exit code 2 naming it, nothing created; with --demo it is created with sample files', async () => {
  const root = await mkdtemp(path.join(tmpdir(), 'mcp-rx-cli-dir-'));
  const dir = path.join(root, 'nested', 'x');
  try {
    const refused = cli(['serve', '--port', '0', '--dir', dir]);
    assert.equal(await refused.exited, 2);
    assert.equal(refused.err(), `mcp-rx-streams: --dir ${dir} does not exist; create it, or add --demo to create it with sample files\n`);
    assert.equal(refused.out(), '');
    assert.equal(existsSync(path.join(root, 'nested')), false);

    const demo = cli(['serve', '--port', '0', '--dir', dir, '--demo']);
    try {
      await demo.waitFor(/^mcp-rx-streams listening on http:\/\/127\.0\.0\.1:\d+\/mcp$/m);
      assert.deepEqual((await readdir(dir)).sort(), ['README.md', 'config.json', 'notes', 'private', 'prompts.json', 'tools.json']);
    } finally {
      demo.child.kill('SIGTERM');
      assert.equal(await demo.exited, 0);
    }
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

/** Runs `serve` with `args`, which it must refuse: exit code 2 and one line starting with `start`. */
async function refused(args: string[], start: string): Promise<void> {
  const run = cli(['serve', '--port', '0', '--demo', ...args]);
  assert.equal(await run.exited, 2, `${args.join(' ')}: ${run.err()}`);
  assert.equal(run.err().split('\n').filter(Boolean).length, 1, run.err());
  assert.ok(run.err().startsWith(`mcp-rx-streams: ${start}`), run.err());
}

test('serve --trust-proxy: a hop count or proxy addresses; anything else (true too) is one line naming the flag, exit code 2', async () => {
  const values = ['true', 'bogus', '10.0.0.0/33', '-1', '1.5', 'loopback,', ','];
  await Promise.all(values.map((value) => refused([`--trust-proxy=${value}`], '--trust-proxy must be a number of proxy hops')));
});

test('serve --trust-proxy 1 reaches the endpoint: clients forwarded by the proxy are principals of their own', async () => {
  await serving(['--trust-proxy', '1', '--max-listens-per-principal', '1'], async ({ url }) => {
    const open = async (client: string) => {
      const conn = await SseConnection.open(url, listenBody(1, { toolsListChanged: true }), { ...LISTEN_HEADERS, 'x-forwarded-for': client });
      await conn.until((c) => c.messages.length >= 1, 3000, 'the acknowledgment');
      return conn;
    };
    const a = await open('203.0.113.1');
    const b = await open('203.0.113.2');
    const again = await open('203.0.113.1');
    await a.until((c) => c.text.includes('"reason":"superseded"'), 3000, "203.0.113.1's first listen superseded by its second");
    assert.doesNotMatch(b.text, /superseded/);
    for (const conn of [a, b, again]) conn.destroy();
  });
});

test('serve --cors-origins: * or origins; anything else, or * with --token-secret, is one line naming the flag, exit code 2', async () => {
  const values = ['https://app.example/', 'https://app.example/path', 'app example', '*,https://app.example', '*.example', ','];
  await Promise.all([
    ...values.map((value) => refused([`--cors-origins=${value}`], '--cors-origins must be * or a comma-separated list of origins')),
    refused(['--cors-origins', '*', '--token-secret', 'secret'], '--cors-origins * cannot go with --token-secret'),
  ]);
});

test('serve --cors-origins reaches the endpoint: a listed page is answered with CORS and passes the loopback Origin check', async () => {
  const preflight = async (url: string) =>
    send(url, 'OPTIONS', { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' });
  await serving([], async ({ url }) => {
    assert.equal((await preflight(url)).status, 403, 'without the flag a foreign Origin is refused on loopback');
  });
  await serving(['--cors-origins', 'https://app.example, http://localhost:5173'], async ({ url }) => {
    const answer = await preflight(url);
    assert.equal(answer.status, 204);
    assert.equal(answer.headers['access-control-allow-origin'], 'https://app.example');
    assert.equal(answer.headers['access-control-allow-methods'], 'POST, GET, DELETE');
    const refused = await send(url, 'OPTIONS', { origin: 'https://evil.example', 'access-control-request-method': 'POST' });
    assert.equal(refused.status, 403);
    assert.equal(refused.headers['access-control-allow-origin'], undefined);
  });
});

/** Opens a listen stream for tools changes and resolves with the status and first frame's text. */
function listenOnce(url: string): Promise<{ status: number; first: string }> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true } } });
    const req = http.request(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'mcp-protocol-version': '2026-07-28' } }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk: string) => {
        text += chunk;
        if (text.includes('\n\n')) {
          resolve({ status: res.statusCode!, first: text.slice(0, text.indexOf('\n\n')) });
          req.destroy();
        }
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A loopback port nobody listens on (bound, read, released). */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

test('serve --redis with no Redis there: says it waits at once, serves local listen streams meanwhile, --redis-timeout exits 1', async () => {
  const root = await mkdtemp(path.join(tmpdir(), 'mcp-rx-cli-redis-'));
  const redis = `redis://127.0.0.1:${await closedPort()}`;
  const run = cli(['serve', '--port', '0', '--dir', path.join(root, 'data'), '--demo', '--redis', redis, '--redis-timeout', '3000']);
  try {
    const listening = await run.waitFor(/^mcp-rx-streams listening on \S+$/m);
    const waiting = await run.waitForErr(`waiting for Redis at ${redis}; local streams are served meanwhile`);
    assert.ok(waiting - listening < 1000, `"waiting" came ${waiting - listening} ms after the listening line`);
    const url = /^mcp-rx-streams listening on (\S+)$/m.exec(run.out())![1]!;
    const { status, first } = await listenOnce(url);
    assert.equal(status, 200);
    assert.match(first, /notifications\/subscriptions\/acknowledged/);
    assert.equal(await run.exited, 1);
    assert.match(run.err(), new RegExp(`\\] ERROR: Redis at ${redis} did not answer within 3000 ms \\(--redis-timeout\\); is it running\\?`));
    assert.doesNotMatch(run.err(), /connected to Redis/);
  } finally {
    run.child.kill('SIGKILL');
    await rm(root, { recursive: true, force: true });
  }
});

test('serve --redis: Redis started after the node says the fleet is up, and the node keeps running', async () => {
  const root = await mkdtemp(path.join(tmpdir(), 'mcp-rx-cli-redis-'));
  const redis = await startRedis();
  await redis.stop();
  const run = cli(['serve', '--port', '0', '--dir', path.join(root, 'data'), '--demo', '--redis', redis.url, '--redis-timeout', '60000']);
  try {
    await run.waitForErr(`waiting for Redis at ${redis.url}`);
    await redis.restart();
    await run.waitForErr(new RegExp(`INFO: connected to Redis at ${redis.url} after \\d+ ms`), 15_000);
    run.child.kill('SIGTERM');
    assert.equal(await run.exited, 0, run.err());
  } finally {
    run.child.kill('SIGKILL');
    await redis.close();
    await rm(root, { recursive: true, force: true });
  }
});

test.run();
