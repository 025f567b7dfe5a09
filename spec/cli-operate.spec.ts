// The operator's controls of the CLI (issue 25, part 2), in child processes: the admin endpoints on
// the metrics port behind --admin-token (GET /streams, POST /revoke), and the `listen` command
// saying why it waits and why its stream ended (exit code 1 unless the server shut down).
import { strict as assert } from 'node:assert';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { test } from 'uvu';
import { cli, serving, type Run } from './helpers/cli.js';
import { eventually, LISTEN_HEADERS, listenBody, SseConnection } from './helpers/http.js';
import { GetStream, initialize, send } from './helpers/legacy.js';

const TOKEN = 'admin-token-0123456789';
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

const json = (method: string, url: string, headers: Record<string, string>, body?: unknown) =>
  send(url, method, { 'content-type': 'application/json', ...headers }, body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body));

test('admin: GET /streams is the snapshot (URIs with ?uris=1), POST /revoke ends a principal\'s streams and sessions; the token is required', async () => {
  await serving(['--metrics-port', '0', '--admin-token', TOKEN, '--log-format', 'json'], async ({ run, url, metrics, dir }) => {
    const uri = pathToFileURL(path.join(dir, 'notes', 'todo.txt')).href;
    const listen = await SseConnection.open(url, listenBody(5, { resourceSubscriptions: [uri] }), LISTEN_HEADERS);
    await listen.until((c) => c.messages.length === 1);
    const session = await initialize(url);
    const get = GetStream.open(url, session.sessionId);
    await get.response;
    await eventually(() => run.err().includes('"era":"legacy"'), 3000, 'the GET stream');

    for (const headers of [{}, bearer('wrong-token-0123456789'), { authorization: TOKEN }]) {
      const refused = await send(`${metrics}/streams`, 'GET', headers);
      assert.equal(refused.status, 401, JSON.stringify(headers));
      assert.equal(refused.headers['www-authenticate'], 'Bearer realm="mcp-rx-streams admin"');
      assert.doesNotMatch(refused.body, /listen-/);
    }
    const snapshot = await send(`${metrics}/streams`, 'GET', bearer(TOKEN));
    assert.equal(snapshot.status, 200);
    assert.equal(snapshot.headers['content-type'], 'application/json');
    const { takenAt, streams } = snapshot.json as { takenAt: number; streams: { era: string; id: string; principal: string; filter: { uris?: string[] } }[] };
    assert.ok(Math.abs(takenAt - Date.now()) < 5000);
    assert.deepEqual(streams.map((stream) => [stream.era, stream.principal]), [
      ['modern', 'addr:127.0.0.1'],
      ['legacy', 'addr:127.0.0.1'],
    ]);
    assert.equal(streams[0]!.filter.uris, undefined);
    assert.equal(streams[1]!.id, session.sessionId);
    const withUris = await send(`${metrics}/streams?uris=1`, 'GET', bearer(TOKEN));
    assert.deepEqual(withUris.json.streams[0].filter.uris, [uri]);
    assert.equal((await send(`${metrics}/streams`, 'POST', bearer(TOKEN))).status, 405);
    assert.equal((await send(`${metrics}/revoke`, 'GET', bearer(TOKEN))).headers.allow, 'POST');

    for (const [body, message] of [
      ['not json', /must be JSON/],
      [[1], /must be a JSON object/],
      [{}, /principal must be a non-empty string/],
      [{ principal: 'addr:127.0.0.1', reason: 'because' }, /reason must be a close reason/],
    ] as const) {
      const bad = await json('POST', `${metrics}/revoke`, bearer(TOKEN), body);
      assert.equal(bad.status, 400, JSON.stringify(body));
      assert.match(bad.json.error, message);
    }
    assert.equal(listen.ended, false, 'a refused revoke ends nothing');
    const revoked = await json('POST', `${metrics}/revoke`, bearer(TOKEN), { principal: 'addr:127.0.0.1' });
    assert.deepEqual([revoked.status, revoked.json], [200, { principal: 'addr:127.0.0.1', reason: 'revoked', streams: 1, sessions: 1 }]);
    await listen.until((c) => c.ended, 3000, 'the listen to end');
    assert.deepEqual(listen.messages.slice(1).map((m) => m.params?.reason ?? m.result?.resultType), ['revoked', 'complete']);
    await get.until((g) => g.ended, 3000, 'the GET stream to end');
    assert.equal((await send(url, 'POST', { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': session.sessionId, 'mcp-protocol-version': '2025-11-25' }, '{"jsonrpc":"2.0","id":9,"method":"ping"}')).status, 404);
    assert.deepEqual((await send(`${metrics}/streams`, 'GET', bearer(TOKEN))).json.streams, []);
    await eventually(() => run.err().includes('"event":"admin_revoke"'), 3000, 'the revoke in the log');
    const line = run.err().split('\n').find((text) => text.includes('"event":"admin_revoke"'))!;
    assert.ok(!line.includes('addr:'), `the info line names no principal: ${line}`);
  });
});

test('admin: without --admin-token there are no admin endpoints; the flags need --metrics-port and a token of 16 characters', async () => {
  await serving(['--metrics-port', '0'], async ({ metrics }) => {
    for (const pathname of ['/streams', '/revoke']) assert.equal((await send(`${metrics}${pathname}`, 'GET', bearer(TOKEN))).status, 404);
  });
  for (const [args, message] of [
    [['--admin-token', TOKEN], '--admin-token needs --metrics-port N'],
    [['--metrics-host', '127.0.0.1'], '--metrics-host needs --metrics-port N'],
    [['--metrics-port', '0', '--admin-token', 'short'], '--admin-token must be at least 16 characters'],
  ] as const) {
    const run = cli(['serve', '--port', '0', '--demo', ...args]);
    assert.equal(await run.exited, 2);
    assert.ok(run.err().startsWith(`mcp-rx-streams: ${message}`), run.err());
  }
});

test('listen: a relative URI and an empty acknowledgment are explained; revoked ends it with exit code 1, a shutdown with 0', async () => {
  let revokedRun: Run | undefined;
  await serving(['--metrics-port', '0', '--admin-token', TOKEN], async ({ url, metrics }) => {
    revokedRun = cli(['listen', url, '--resource', 'notes/todo.txt']);
    await revokedRun.waitForErr('the server honoured nothing you asked for');
    await revokedRun.waitFor('"notifications/subscriptions/acknowledged"');
    const revoked = await json('POST', `${metrics}/revoke`, bearer(TOKEN), { principal: 'addr:127.0.0.1' });
    assert.equal(revoked.json.streams, 1);
    assert.equal(await revokedRun.exited, 1);
  });
  const lines = revokedRun!.err().split('\n').filter(Boolean);
  assert.deepEqual(lines, [
    "mcp-rx-streams: --resource notes/todo.txt is a relative URI: servers match resource URIs exactly, so it will not match any; give the absolute URI (file:///… for the reference server's files)",
    'mcp-rx-streams: the server honoured nothing you asked for (an empty acknowledgment): this stream will carry no notification until it ends. ' +
      'It does not offer what you asked (its capabilities), or it refused every URI: unknown, not readable with your token, or relative.',
    "mcp-rx-streams: the server ended the stream: revoked (the server's operator or application ended your streams)",
  ]);
  assert.deepEqual(revokedRun!.out().split('\n').filter(Boolean).map((line) => JSON.parse(line).method), ['notifications/subscriptions/acknowledged', 'notifications/cancelled']);

  let shutdownRun: Run | undefined;
  let dirOf = '';
  await serving([], async ({ url, dir }) => {
    dirOf = dir;
    shutdownRun = cli(['listen', url, '--tools', '--resource', pathToFileURL(path.join(dir, 'no-such-file')).href]);
    await shutdownRun.waitFor('"notifications/subscriptions/acknowledged"');
  });
  assert.equal(await shutdownRun!.exited, 0);
  assert.deepEqual(shutdownRun!.err().split('\n').filter(Boolean), [
    `mcp-rx-streams: not honoured: --resource ${pathToFileURL(path.join(dirOf, 'no-such-file')).href} (unknown to the server, not readable with your token, or relative)`,
    'mcp-rx-streams: the server ended the stream: shutdown (it is stopping)',
  ]);
});

test.run();
