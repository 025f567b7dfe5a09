// The reference server behind a real authorization server (`issuer`, `serve --issuer`): its own URL
// is the resource by default, it serves the metadata, refuses tokens for another audience, and
// files under private/ need the `private` scope: without it they are absent for a read and a
// listen and a legacy subscribe is refused, over HTTP and over WebSocket; over stdio the host is
// the caller (no token, no scope). Opaque tokens through `introspectionUrl`. The `serve` flags.
import { strict as assert } from 'node:assert';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { test } from 'uvu';
import { WebSocket } from 'ws';
import { readServe } from '../../adapters/cli/serveFlags.js';
import { webSocketChannel, webSocketServer } from '../../adapters/channel/ws.js';
import { startReferenceServer, type ReferenceServer, type ReferenceServerOptions } from '../../adapters/reference/server.js';
import { startReferenceStdio } from '../../adapters/reference/stdio.js';
import { InvalidOptionError } from '../../lib/errors.js';
import { Peer } from '../helpers/channel.js';
import { LISTEN_HEADERS, listenBody, post, SseConnection } from '../helpers/http.js';
import { GetStream, initialize, send } from '../helpers/legacy.js';
import { RS_CLIENT, type AuthServer, startAuthServer } from '../helpers/authServer.js';

let as: AuthServer;
let dir: string;
let publicUri: string;
let privateUri: string;

test.before(async () => {
  as = await startAuthServer();
  dir = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'mcp-rx-auth-')));
  await fs.mkdir(path.join(dir, 'private'));
  await fs.writeFile(path.join(dir, 'notes.txt'), 'public\n');
  await fs.writeFile(path.join(dir, 'private', 'secret.txt'), 'secret\n');
  publicUri = pathToFileURL(path.join(dir, 'notes.txt')).href;
  privateUri = pathToFileURL(path.join(dir, 'private', 'secret.txt')).href;
});

test.after(async () => {
  await as.close();
  await fs.rm(dir, { recursive: true, force: true });
});

async function withReference(options: Partial<ReferenceServerOptions>, body: (server: ReferenceServer) => Promise<void>): Promise<void> {
  const server = await startReferenceServer({ dir, port: 0, host: '127.0.0.1', ...options });
  try {
    await body(server);
  } finally {
    await server.close();
  }
}

const rpc = (id: number, method: string, params?: object) => JSON.stringify({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) });
const bearer = (token: string) => ({ ...LISTEN_HEADERS, authorization: `Bearer ${token}` });

/** What a caller with `token` is told of the public and the private file: read, listen, legacy subscribe. */
async function whatIsSeen(url: string, token: string) {
  const read = async (uri: string) => JSON.parse((await post(url, rpc(1, 'resources/read', { uri }), bearer(token))).body);
  const listen = await SseConnection.open(url, listenBody(2, { resourceSubscriptions: [publicUri, privateUri] }), bearer(token));
  await listen.until((c) => c.text.includes('acknowledged'), 3_000, 'the ack');
  const ack = listen.messages[0]!.params.notifications;
  listen.destroy();
  const { sessionId } = await initialize(url, { headers: { authorization: `Bearer ${token}` } });
  // DESIGN L2: the GET stream first.
  const get = GetStream.open(url, sessionId, { headers: { authorization: `Bearer ${token}` } });
  await get.until((g) => g.text.includes('retry:'), 3_000, 'the priming event');
  const subscribe = async (uri: string) =>
    JSON.parse((await send(url, 'POST', { ...LISTEN_HEADERS, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25', authorization: `Bearer ${token}` }, rpc(3, 'resources/subscribe', { uri }))).body);
  return {
    publicRead: (await read(publicUri)).result?.contents?.[0]?.text,
    privateRead: (await read(privateUri)).error?.code ?? (await read(privateUri)).result?.contents?.[0]?.text,
    absentRead: (await read(pathToFileURL(path.join(dir, 'absent.txt')).href)).error?.code,
    listened: ack.resourceSubscriptions,
    privateSubscribe: (await subscribe(privateUri)).error?.message ?? 'subscribed',
    done: get.destroy(),
  };
}

test('issuer: the server is the resource at its own URL, serves the metadata, refuses other audiences; private/ needs the private scope (HTTP)', async () => {
  await withReference({ issuer: as.issuer, requiredScopes: ['mcp'] }, async (server) => {
    const origin = new URL(server.url).origin;
    const metadata = await fetch(`${origin}/.well-known/oauth-protected-resource/mcp`);
    assert.deepEqual(await metadata.json(), { resource: server.url, authorization_servers: [as.issuer], scopes_supported: ['mcp'], bearer_methods_supported: ['header'] });
    const none = await post(server.url, rpc(1, 'server/discover'));
    assert.equal(none.status, 401);
    assert.equal(none.headers['www-authenticate'], `Bearer resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp", scope="mcp"`);
    const other = await post(server.url, rpc(1, 'server/discover'), bearer(await as.token({ resource: `${origin}/elsewhere`, scope: 'mcp private' })));
    assert.equal(other.status, 401);
    assert.match(other.headers['www-authenticate']!, /error="invalid_token"/);
    const plain = await whatIsSeen(server.url, await as.token({ resource: server.url, scope: 'mcp' }));
    assert.deepEqual(plain, { publicRead: 'public\n', privateRead: plain.absentRead, absentRead: -32602, listened: [publicUri], privateSubscribe: `permission denied: ${privateUri}`, done: undefined });
    const scoped = await whatIsSeen(server.url, await as.token({ resource: server.url, scope: 'mcp private' }));
    assert.deepEqual(scoped, { publicRead: 'public\n', privateRead: 'secret\n', absentRead: -32602, listened: [publicUri, privateUri], privateSubscribe: 'subscribed', done: undefined });
  });
});

test('over WebSocket on the same endpoint: the upgrade needs a token for this resource; private/ needs the scope', async () => {
  await withReference({ issuer: as.issuer }, async (server) => {
    const wss = webSocketServer(server.endpoint, { server: server.server, path: '/mcp' });
    const wsUrl = server.url.replace('http:', 'ws:');
    try {
      const refused = await new Promise<number>((resolve) => {
        const socket = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${'x'}` } });
        socket.on('unexpected-response', (_req, res) => resolve(res.statusCode!));
        socket.on('error', () => undefined);
      });
      assert.equal(refused, 401);
      const wrongAudience = await as.token({ resource: 'http://127.0.0.1:1/mcp', scope: 'mcp private' });
      const audience = await new Promise<string>((resolve) => {
        const socket = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${wrongAudience}` } });
        socket.on('unexpected-response', (_req, res) => resolve(String(res.headers['www-authenticate'])));
        socket.on('error', () => undefined);
      });
      assert.match(audience, /resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource\/mcp", error="invalid_token", error_description="the token was issued for another resource/);
      for (const [scope, expected] of [['mcp', [publicUri]], ['mcp private', [publicUri, privateUri]]] as const) {
        const socket = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${await as.token({ resource: server.url, scope })}` } });
        const peer = new Peer(webSocketChannel(socket));
        peer.send({ jsonrpc: '2.0', id: 1, method: 'subscriptions/listen', params: { notifications: { resourceSubscriptions: [publicUri, privateUri] } } });
        const ack = await peer.next((message) => message.method === 'notifications/subscriptions/acknowledged', 'the ack');
        assert.deepEqual(ack.params.notifications.resourceSubscriptions, expected, scope);
        const read = await peer.request(2, 'resources/read', { uri: privateUri });
        assert.equal(scope === 'mcp' ? read.error?.code : read.result?.contents?.[0]?.text, scope === 'mcp' ? -32602 : 'secret\n');
        socket.close();
      }
    } finally {
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    }
  });
});

test('over stdio the host is the caller: no token is read, no scope, private/ is absent', async () => {
  const input = new PassThrough();
  const output = new PassThrough();
  const server = await startReferenceStdio({ dir, input, output });
  const lines: Record<string, any>[] = [];
  let buffered = '';
  output.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('utf8');
    for (let end = buffered.indexOf('\n'); end >= 0; end = buffered.indexOf('\n')) {
      lines.push(JSON.parse(buffered.slice(0, end)));
      buffered = buffered.slice(end + 1);
    }
  });
  const answer = async (id: number) => {
    const deadline = Date.now() + 3_000;
    for (;;) {
      const found = lines.find((line) => line.id === id && line.method === undefined);
      if (found !== undefined) return found;
      if (Date.now() > deadline) throw new Error(`no answer ${id}: ${JSON.stringify(lines)}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  };
  try {
    input.write(`${rpc(1, 'resources/read', { uri: privateUri })}\n`);
    assert.equal((await answer(1)).error.code, -32602);
    input.write(`${rpc(2, 'resources/read', { uri: publicUri })}\n`);
    assert.equal((await answer(2)).result.contents[0].text, 'public\n');
    // The type refuses it; given anyway, it has no URL to be the resource of.
    await assert.rejects(startReferenceStdio({ dir, issuer: as.issuer } as never), /resource/);
  } finally {
    input.end();
    await server.close();
  }
});

test('introspectionUrl: opaque tokens are introspected by the server as a client of the issuer', async () => {
  await withReference(
    { issuer: as.issuer, introspectionUrl: `${as.issuer}/token/introspection`, introspectionClientId: RS_CLIENT.id, introspectionClientSecret: RS_CLIENT.secret },
    async (server) => {
      const token = await as.token({ resource: server.url, format: 'opaque', scope: 'mcp private' });
      assert.equal((await whatIsSeen(server.url, token)).privateRead, 'secret\n');
      assert.equal(server.endpoint.streams().length >= 0, true);
    },
  );
});

test('settings that do not go together are refused before the port is taken; serve flags', async () => {
  const refused: [Partial<ReferenceServerOptions>, string][] = [
    [{ resource: 'https://mcp.example.com/mcp' }, 'resource'],
    [{ requiredScopes: ['mcp'] }, 'requiredScopes'],
    [{ issuer: as.issuer, tokenSecret: 'secret' }, 'tokenSecret'],
    [{ issuer: as.issuer, introspectionUrl: `${as.issuer}/token/introspection` }, 'introspectionClientId'],
    [{ issuer: as.issuer, introspectionClientId: 'rs' }, 'introspectionClientId'],
    [{ issuer: 'http://auth.example.com' }, 'issuer'],
  ];
  for (const [options, option] of refused) {
    const error = await startReferenceServer({ dir, port: 0, ...options }).then(
      (server) => server.close().then(() => assert.fail(`started with ${JSON.stringify(options)}`)),
      (thrown: unknown) => thrown,
    );
    assert.ok(error instanceof InvalidOptionError, String(error));
    assert.equal(error.info.option, option, error.message);
  }
  const read = readServe(['--issuer', 'https://auth.example.com', '--resource', 'https://mcp.example.com/mcp', '--required-scopes', 'mcp,private', '--jwks-url', 'https://auth.example.com/jwks']);
  assert.deepEqual(read.server, { issuer: 'https://auth.example.com', resource: 'https://mcp.example.com/mcp', requiredScopes: ['mcp', 'private'], jwksUrl: 'https://auth.example.com/jwks' });
  assert.throws(() => readServe(['--stdio', '--issuer', 'https://auth.example.com']), /--issuer applies to the HTTP server only/);
  assert.throws(() => readServe(['--cors-origins', '*', '--issuer', 'https://auth.example.com']), /--cors-origins \* cannot go with --issuer/);
  assert.throws(() => readServe(['--required-scopes', 'a"b']), /--required-scopes/);
});

test.run();
