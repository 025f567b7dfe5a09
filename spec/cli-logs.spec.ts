// What `mcp-rx-streams serve` logs on stderr (issue 25, part 1), each class of line read from a
// child process: the start (URL, directory, authentication, eras, what --demo created), streams
// opened and closed and sessions created and ended (never a URI, id or principal), the served
// directory lost and found, Redis connected / unreachable / back / resynced and nothing about Redis
// on a clean shutdown, a failed append during an outage, --log-level and --log-format. The admin
// endpoints and the `listen` command's explanations are in spec/cli-operate.spec.ts.
import { strict as assert } from 'node:assert';
import { appendFile, mkdtemp, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { test } from 'uvu';
import { cli, serving, type Run } from './helpers/cli.js';
import { eventually, LISTEN_HEADERS, listenBody, SseConnection } from './helpers/http.js';
import { call, GetStream, initialize, send, sessionHeaders } from './helpers/legacy.js';
import { startRedis } from './helpers/redis.js';

/** A pino JSON line: `level` (30 info, 40 warn, 50 error, 20 debug), `msg` and the fields. */
interface Record {
  readonly level: number;
  readonly msg: string;
  readonly event?: string;
  readonly [field: string]: unknown;
}

const INFO = 30;
const WARN = 40;
const DEBUG = 20;

const records = (run: Run): Record[] =>
  run
    .err()
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record);
const named = (run: Run, event: string) => records(run).filter((record) => record.event === event);

test('the start, as JSON: URL, directory, what --demo created, authentication, eras; stdout keeps its one line', async () => {
  const run = await serving(['--log-format', 'json'], async ({ run, url, dir }) => {
    await eventually(() => named(run, 'eras').length === 1, 3000, 'the start lines');
    const [listening, directory, demo, auth, eras] = records(run);
    assert.deepEqual([listening!.level, listening!.event, listening!.url, listening!.msg], [INFO, 'listening', url, `listening on ${url}`]);
    assert.deepEqual([directory!.event, directory!.dir], ['serving', dir]);
    assert.deepEqual([demo!.event, demo!.files], ['demo_created', ['README.md', 'notes/todo.txt', 'config.json', 'tools.json', 'prompts.json', 'private/secret.txt']]);
    assert.deepEqual([auth!.event, auth!.tokens], ['auth', false]);
    assert.match(auth!.msg, /^authentication: none, callers are anonymous/);
    assert.deepEqual([eras!.event, eras!.modern, eras!.legacy], ['eras', ['2026-07-28'], ['2025-03-26', '2025-06-18', '2025-11-25']]);
    assert.ok(typeof listening!.time === 'number' && typeof listening!.pid === 'number');
    assert.equal(run.out(), `mcp-rx-streams listening on ${url}\n`);
  });
  assert.deepEqual(records(run).slice(-2).map((record) => record.event), ['stopping', 'stopped']);
});

test('the start, pretty: one readable line each; an existing directory is not "created"; --token-secret says tokens are required', async () => {
  const root = await mkdtemp(path.join(tmpdir(), 'mcp-rx-cli-pretty-'));
  try {
    const dir = path.join(root, 'data');
    await serving([], async () => undefined, dir);
    const run = await serving(['--token-secret', 'secret'], async ({ run }) => {
      await run.waitForErr('protocol revisions: ');
    }, dir);
    const lines = run.err().split('\n').filter(Boolean);
    for (const line of lines) assert.match(line, /^\[\d\d:\d\d:\d\d\.\d{3}\] (INFO|WARN|ERROR|DEBUG): /, line);
    assert.match(lines[0]!, /INFO: listening on http:\/\/127\.0\.0\.1:\d+\/mcp \{"url":/);
    assert.match(lines[1]!, new RegExp(`INFO: serving ${dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} as MCP resources`));
    assert.match(lines[2]!, /INFO: authentication: every request needs Authorization: Bearer <HS256 JWT>/);
    assert.match(lines[3]!, /INFO: protocol revisions: 2026-07-28 \(subscriptions\/listen\) and 2025-03-26, 2025-06-18, 2025-11-25/);
    assert.doesNotMatch(run.err(), /--demo created/);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

test('streams of both eras opened and closed, sessions created and ended: info lines with era, reason, duration, counts; no URI, id or principal', async () => {
  const requestId = 7_654_321;
  await serving(['--log-format', 'json'], async ({ run, url, dir }) => {
    const uri = pathToFileURL(path.join(dir, 'notes', 'todo.txt')).href;
    const listen = await SseConnection.open(url, listenBody(requestId, { toolsListChanged: true, resourceSubscriptions: [uri] }), LISTEN_HEADERS);
    await listen.until((c) => c.messages.length === 1);
    listen.destroy();
    const session = await initialize(url);
    const get = GetStream.open(url, session.sessionId);
    await get.response;
    await call(url, session.sessionId, 2, 'resources/subscribe', { uri });
    await send(url, 'DELETE', sessionHeaders(session.sessionId));
    await get.until((g) => g.ended);
    await eventually(() => named(run, 'session_ended').length === 1, 3000, 'the session to end');
    const lines = records(run).filter((record) => ['stream_opened', 'stream_closed', 'session_created', 'session_ended'].includes(record.event!));
    assert.deepEqual(
      lines.map((record) => [record.level, record.event, record.era ?? record.protocolVersion, record.reason ?? null]),
      [
        [INFO, 'stream_opened', 'modern', null],
        [INFO, 'stream_closed', 'modern', 'client_closed'],
        [INFO, 'session_created', '2025-11-25', null],
        [INFO, 'stream_opened', 'legacy', null],
        [INFO, 'stream_closed', 'legacy', 'session_ended'],
        [INFO, 'session_ended', '2025-11-25', 'deleted'],
      ],
    );
    assert.deepEqual([lines[0]!.filters, lines[0]!.resourceSubscriptions], [['tools_list_changed', 'resource_subscriptions'], 1]);
    assert.ok(typeof lines[1]!.durationMs === 'number');
    for (const secret of [uri, session.sessionId, String(requestId), 'addr:', '127.0.0.1"']) assert.ok(!run.err().includes(secret), `${secret} in the log`);
  });
});

test('--log-level warn: no info line; the served directory deleted and recreated: warn, then info', async () => {
  await serving(['--log-level', 'warn'], async ({ run, url, dir }) => {
    const listen = await SseConnection.open(url, listenBody(1, { toolsListChanged: true }), LISTEN_HEADERS);
    await listen.until((c) => c.messages.length === 1);
    listen.destroy();
    await rename(dir, `${dir}.away`);
    await run.waitForErr(`WARN: the served directory is gone: ${dir} `, 5000);
    await rename(`${dir}.away`, dir);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    assert.doesNotMatch(run.err(), /INFO/, 'info lines are below --log-level warn');
  });
  await serving(['--log-format', 'json'], async ({ run, dir }) => {
    await eventually(() => named(run, 'eras').length === 1, 3000, 'the start lines');
    await rename(dir, `${dir}.away`);
    await eventually(() => named(run, 'directory_lost').length === 1, 5000, 'the directory to be missed');
    await rename(`${dir}.away`, dir);
    await eventually(() => named(run, 'directory_found').length === 1, 5000, 'the directory to be found again');
    assert.deepEqual([named(run, 'directory_lost')[0]!.level, named(run, 'directory_found')[0]!.level], [WARN, INFO]);
    assert.match(named(run, 'directory_found')[0]!.msg, /^the served directory is back: /);
  });
});

test('a fleet node: waiting, connected, Redis unreachable, a failed append, back, resynced; debug Redis connections; nothing about Redis on a clean shutdown', async () => {
  const redis = await startRedis();
  const root = await mkdtemp(path.join(tmpdir(), 'mcp-rx-cli-fleet-log-'));
  const dir = path.join(root, 'data');
  const run = cli(['serve', '--port', '0', '--dir', dir, '--demo', '--redis', redis.url, '--log-format', 'json', '--log-level', 'debug']);
  try {
    await eventually(() => named(run, 'redis_connected').length === 1, 15_000, 'the fleet to connect');
    await eventually(() => named(run, 'watch_lease').some((record) => record.held === true), 10_000, 'the watch lease');
    const url = /^mcp-rx-streams listening on (\S+)$/m.exec(run.out())![1]!;
    // A legacy session subscribed to a file: its frames need Redis (ids, replay).
    const session = await initialize(url);
    const get = GetStream.open(url, session.sessionId);
    await get.response;
    const todo = path.join(dir, 'notes', 'todo.txt');
    await call(url, session.sessionId, 2, 'resources/subscribe', { uri: pathToFileURL(todo).href });
    assert.ok(named(run, 'redis_connection').every((record) => record.level === DEBUG && record.status === 'ready'));

    await redis.stop();
    await eventually(() => named(run, 'redis_down').length === 1, 5000, 'Redis to be missed');
    assert.equal(named(run, 'redis_down')[0]!.level, WARN);
    await appendFile(todo, '- during the outage\n');
    await eventually(() => records(run).some((record) => record.event === 'error' && record.where === 'source'), 5000, 'the failed append');
    // Restarted empty (no persistence): the node resyncs its streams.
    await redis.restart();
    await eventually(() => named(run, 'redis_back').length === 1, 10_000, 'Redis to be back');
    await eventually(() => named(run, 'redis_resync').length >= 1, 10_000, 'the resync');
    assert.deepEqual([named(run, 'redis_back')[0]!.level, named(run, 'redis_resync')[0]!.level, named(run, 'redis_resync')[0]!.reason], [INFO, WARN, 'epoch']);
    assert.ok(named(run, 'redis_connection').some((record) => record.status === 'lost'));
    get.destroy();
    await eventually(() => named(run, 'stream_closed').some((record) => record.era === 'legacy'), 3000, 'the GET stream to close');

    const before = records(run).length;
    run.child.kill('SIGTERM');
    assert.equal(await run.exited, 0, run.err());
    const after = records(run).slice(before);
    assert.deepEqual(after.filter((record) => record.level >= INFO).map((record) => record.event), ['stopping', 'stopped']);
    assert.ok(after.every((record) => record.event !== 'redis_connection' || record.status === 'closed'), `a shutdown closes, it loses nothing: ${JSON.stringify(after.filter((record) => record.event === 'redis_connection'))}`);
  } finally {
    run.child.kill('SIGKILL');
    await redis.close();
    await rm(root, { recursive: true, force: true });
  }
});

test('--log-level and --log-format take their listed values only', async () => {
  for (const [flag, value] of [['--log-level', 'trace'], ['--log-format', 'xml']] as const) {
    const run = cli(['serve', '--port', '0', '--demo', flag, value]);
    assert.equal(await run.exited, 2);
    assert.match(run.err(), new RegExp(`^mcp-rx-streams: ${flag} must be `));
  }
});

test.run();
