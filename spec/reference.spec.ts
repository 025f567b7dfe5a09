import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { appendFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { SignJWT } from 'jose';
import { firstValueFrom, take, toArray, filter } from 'rxjs';
import { test } from 'uvu';
import { listen, ListenClientError } from '../adapters/client.js';
import { startReferenceServer, type ReferenceServer } from '../adapters/reference/server.js';
import type { JsonRpcMessage } from '../lib/jsonrpc.js';
import { LISTEN_HEADERS, post, SseConnection } from './helpers/http.js';

const SECRET = 'test-secret-of-enough-length-for-hs256';
const token = (sub: string, scope: string, expiresInSeconds = 3600) =>
  new SignJWT({ scope })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(sub)
    .setExpirationTime(Math.floor(Date.now() / 1000) + expiresInSeconds)
    .sign(new TextEncoder().encode(SECRET));

async function withReference(options: Parameters<typeof startReferenceServer>[0], body: (s: ReferenceServer, dir: string) => Promise<void>) {
  const dir = await mkdtemp(path.join(tmpdir(), 'mcp-rx-ref-'));
  const server = await startReferenceServer({ dir: path.join(dir, 'data'), port: 0, debounceMs: 20, ...options });
  try {
    await body(server, path.join(dir, 'data'));
  } finally {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
}

const uriOf = (file: string) => pathToFileURL(file).href;
const paramsOf = (m: JsonRpcMessage | undefined): any => (m as { params?: unknown } | undefined)?.params;
const methodsOf = (messages: JsonRpcMessage[]) => messages.map((m) => ('method' in m ? m.method : 'result'));

test('a file change reaches a listen for the file and one for its collection', async () => {
  await withReference({}, async ({ url }, dir) => {
    const file = path.join(dir, 'notes', 'todo.txt');
    const got = firstValueFrom(
      listen({ url, id: 'w', notifications: { resourceSubscriptions: [uriOf(file), `${uriOf(dir)}/`] } }).pipe(
        filter((m) => 'method' in m && m.method === 'notifications/resources/updated'),
        take(2),
        toArray(),
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    await appendFile(file, '- another\n');
    const updates = await got;
    assert.deepEqual(
      updates.map((m) => paramsOf(m).uri),
      [uriOf(file), `${uriOf(dir)}/`],
    );
  });
});

test('creating a file publishes resources/list_changed; editing tools.json publishes tools/list_changed', async () => {
  await withReference({}, async ({ url }, dir) => {
    const messages: JsonRpcMessage[] = [];
    const subscription = listen({ url, notifications: { resourcesListChanged: true, toolsListChanged: true } }).subscribe((m) => messages.push(m));
    await new Promise((resolve) => setTimeout(resolve, 100));
    await writeFile(path.join(dir, 'new.txt'), 'hello');
    await waitFor(() => methodsOf(messages).includes('notifications/resources/list_changed'));
    await writeFile(path.join(dir, 'tools.json'), JSON.stringify([{ name: 'only', inputSchema: { type: 'object' } }]));
    await waitFor(() => methodsOf(messages).includes('notifications/tools/list_changed'));
    subscription.unsubscribe();
    const tools = JSON.parse((await post(url, '{"jsonrpc":"2.0","id":1,"method":"tools/list"}')).body);
    assert.deepEqual(tools.result.tools.map((t: { name: string }) => t.name), ['only']);
  });
});

test('server/discover, resources/list and resources/read answer as the 2026-07-28 client expects', async () => {
  await withReference({}, async ({ url }, dir) => {
    // The endpoint's built-in answer, from the reference server's capabilities and server info.
    const discover = JSON.parse((await post(url, '{"jsonrpc":"2.0","id":1,"method":"server/discover"}')).body);
    assert.deepEqual(discover.result, {
      resultType: 'complete',
      ttlMs: 0,
      cacheScope: 'private',
      supportedVersions: ['2026-07-28'],
      capabilities: { tools: { listChanged: true }, prompts: { listChanged: true }, resources: { subscribe: true, listChanged: true } },
      _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'mcp-rx-streams-reference', version: '0.1.0' } },
    });
    const list = JSON.parse((await post(url, '{"jsonrpc":"2.0","id":2,"method":"resources/list"}')).body);
    const uris: string[] = list.result.resources.map((r: { uri: string }) => r.uri);
    assert.ok(uris.includes(uriOf(path.join(dir, 'README.md'))));
    assert.ok(!uris.some((u) => u.includes('/private/')), 'private files are not listed without the scope');
    const read = JSON.parse((await post(url, JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'resources/read', params: { uri: uriOf(path.join(dir, 'config.json')) } }))).body);
    assert.equal(read.result.contents[0].uri, uriOf(path.join(dir, 'config.json')));
    const secret = JSON.parse((await post(url, JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'resources/read', params: { uri: uriOf(path.join(dir, 'private', 'secret.txt')) } }))).body);
    const absent = JSON.parse((await post(url, JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'resources/read', params: { uri: uriOf(path.join(dir, 'private', 'nothing.txt')) } }))).body);
    // 2026-07-28: a missing resource is -32602 (Invalid params) with data.uri.
    assert.equal(secret.error.code, -32602);
    assert.deepEqual(absent.error.data, { uri: uriOf(path.join(dir, 'private', 'nothing.txt')) });
    assert.deepEqual({ ...secret.error, message: '', data: null }, { ...absent.error, message: '', data: null }, 'forbidden looks like absent');
  });
});

test('resources/read of a missing resource: -32602 on 2026-07-28 requests, -32002 in a legacy session, data.uri in both', async () => {
  await withReference({}, async ({ url }, dir) => {
    const uri = uriOf(path.join(dir, 'nothing.txt'));
    const read = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'resources/read', params: { uri } });
    const modern = JSON.parse((await post(url, read, { ...LISTEN_HEADERS, 'mcp-protocol-version': '2026-07-28' })).body);
    assert.deepEqual(modern, { jsonrpc: '2.0', id: 7, error: { code: -32602, message: `resource not found: ${uri}`, data: { uri } } });
    const init = await post(
      url,
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '0' } } }),
      { ...LISTEN_HEADERS, 'mcp-protocol-version': '2025-11-25' },
    );
    const session = init.headers['mcp-session-id'];
    assert.equal(typeof session, 'string');
    const legacy = await post(url, read, { ...LISTEN_HEADERS, 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': session as string });
    assert.equal(legacy.status, 200);
    assert.deepEqual(JSON.parse(legacy.body), { jsonrpc: '2.0', id: 7, error: { code: -32002, message: `resource not found: ${uri}`, data: { uri } } });
  });
});

test('bearer tokens: 401 without or with a bad or expired one; private URIs need scope private; exp closes the stream', async () => {
  await withReference({ tokenSecret: SECRET }, async ({ url }, dir) => {
    const secretUri = uriOf(path.join(dir, 'private', 'secret.txt'));
    const readme = uriOf(path.join(dir, 'README.md'));
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'subscriptions/listen', params: { notifications: { resourceSubscriptions: [secretUri, readme] } } });
    assert.equal((await post(url, body)).status, 401);
    assert.equal((await post(url, body, { ...LISTEN_HEADERS, authorization: 'Bearer not-a-jwt' })).status, 401);
    assert.equal((await post(url, body, { ...LISTEN_HEADERS, authorization: `Bearer ${await token('a', '', -10)}` })).status, 401);
    const ack = async (scope: string) => {
      const messages = await firstValueFrom(listen({ url, notifications: { resourceSubscriptions: [secretUri, readme] }, token: await token('a', scope) }).pipe(take(1), toArray()));
      return paramsOf(messages[0]).notifications;
    };
    assert.deepEqual(await ack('read'), { resourceSubscriptions: [readme] });
    assert.deepEqual(await ack('read private'), { resourceSubscriptions: [secretUri, readme] });
    // exp is in whole seconds: `+ 2` leaves 1–2 s of life (with `+ 1` a token minted late in a
    // second had expired before a loaded box admitted its listen).
    const ending = await firstValueFrom(listen({ url, notifications: { toolsListChanged: true }, token: await token('b', '', 2) }).pipe(toArray()));
    assert.deepEqual(methodsOf(ending), ['notifications/subscriptions/acknowledged', 'notifications/cancelled', 'result']);
    assert.equal(paramsOf(ending[1]).reason, 'token_expired');
  });
});

test('GET and DELETE without a session answer 400, other methods 405; a listen client sees 406 as an error', async () => {
  await withReference({}, async ({ url }) => {
    for (const [method, expected] of [['GET', 400], ['DELETE', 400], ['PUT', 405]] as const) {
      const status = await new Promise<number>((resolve, reject) => {
        http.request(url, { method, agent: false }, (res) => { res.resume(); resolve(res.statusCode!); }).on('error', reject).end();
      });
      assert.equal(status, expected, method);
    }
    const conn = await SseConnection.open(url, '{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{}}}', { 'content-type': 'application/json', accept: 'application/json' });
    assert.equal(conn.status, 406);
    conn.destroy();
    const failure = await firstValueFrom(listen({ url, notifications: { bogus: 1, toolsListChanged: 'x' } })).catch((e: unknown) => e);
    assert.ok(failure instanceof ListenClientError);
  });
});

function cli(args: string[]) {
  const child = spawn(process.execPath, ['--import', 'tsx', path.resolve('adapters/cli.ts'), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => (stdout += c));
  child.stderr.on('data', (c) => (stderr += c));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, exited, out: () => stdout, err: () => stderr };
}

test('the CLI prints exactly one ready line, and SIGTERM closes streams with closing frames and exits 0', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'mcp-rx-cli-'));
  const run = cli(['serve', '--port', '0', '--dir', path.join(dir, 'data'), '--demo', '--keep-alive-interval', '60000']);
  try {
    await waitFor(() => run.out().includes('\n'), 8000);
    const lines = run.out().split('\n').filter(Boolean);
    assert.equal(lines.length, 1);
    const match = /^mcp-rx-streams listening on (http:\/\/127\.0\.0\.1:\d+\/mcp)$/.exec(lines[0]!);
    assert.ok(match, lines[0]);
    const messages: JsonRpcMessage[] = [];
    const done = new Promise<void>((resolve, reject) =>
      listen({ url: match[1]!, id: 5, notifications: { toolsListChanged: true } }).subscribe({ next: (m) => messages.push(m), complete: resolve, error: reject }),
    );
    await waitFor(() => messages.length === 1);
    run.child.kill('SIGTERM');
    await done;
    assert.equal(await run.exited, 0);
    assert.deepEqual(methodsOf(messages), ['notifications/subscriptions/acknowledged', 'notifications/cancelled', 'result']);
    assert.equal(paramsOf(messages[1]).reason, 'shutdown');
  } finally {
    run.child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  }
});

test('invalid CLI values: one line naming the flag, exit code 2', async () => {
  for (const [args, flag] of [
    [['serve', '--max-streams', '0'], '--max-streams'],
    [['serve', '--listen-idle-timeout', '1.5'], '--listen-idle-timeout'],
    [['serve', '--close-notice', 'loud'], '--close-notice'],
    [['serve', '--port', '70000'], '--port'],
    [['serve', '--nope'], '--nope'],
  ] as const) {
    const run = cli([...args]);
    assert.equal(await run.exited, 2, args.join(' '));
    const lines = run.err().split('\n').filter(Boolean);
    assert.equal(lines.length, 1, run.err());
    assert.ok(lines[0]!.includes(flag), lines[0]);
  }
});

async function waitFor(predicate: () => boolean, ms = 4000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

test.run();
