// introspectionAuthenticator against a real authorization server (oidc-provider, RFC 7662): opaque
// tokens for this resource are accepted and their answers kept (never past the token's exp),
// tokens for another resource or unknown ones refused; a revoked token is refused once asked
// again, and the streams it opened end with their closing frames at the next check: a listen over
// HTTP, a legacy GET stream and a listen over WebSocket; with the server hanging, kept answers go on
// serving and a new token gets 503 within about a second.
import { strict as assert } from 'node:assert';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { asyncScheduler, type SchedulerLike } from 'rxjs';
import { test } from 'uvu';
import { WebSocket } from 'ws';
import { introspectionAuthenticator, type IntrospectionAuthenticatorOptions } from '../../adapters/auth/index.js';
import { webSocketChannel, webSocketServer } from '../../adapters/channel/ws.js';
import { McpEndpoint } from '../../adapters/http/endpoint.js';
import { nodeHandler } from '../../adapters/http/node.js';
import { AuthError, type AuthInfo, AuthUnavailableError } from '../../lib/auth.js';
import type { EndpointRequest } from '../../lib/context.js';
import { Hub } from '../../lib/hub.js';
import { Peer, until } from '../helpers/channel.js';
import { LISTEN_HEADERS, listenBody, SseConnection } from '../helpers/http.js';
import { GetStream, initialize, send } from '../helpers/legacy.js';
import { RS_CLIENT, type AuthServer, startAuthServer } from '../helpers/authServer.js';

const RESOURCE = 'http://127.0.0.1:8932/mcp';

function manualClock(): SchedulerLike & { advance(ms: number): void } {
  let offset = 0;
  return {
    now: () => Date.now() + offset,
    schedule: asyncScheduler.schedule.bind(asyncScheduler) as SchedulerLike['schedule'],
    advance: (ms: number) => void (offset += ms),
  };
}

const request = (token: string): EndpointRequest => ({ method: 'POST', header: (name) => (name === 'authorization' ? `Bearer ${token}` : undefined), remoteAddress: '127.0.0.1', body: undefined });

let as: AuthServer;
test.before(async () => {
  as = await startAuthServer();
});
test.after(() => as.close());

function authenticator(options: Partial<IntrospectionAuthenticatorOptions> = {}, resource = RESOURCE) {
  const clock = manualClock();
  const authenticate = introspectionAuthenticator({
    issuer: as.issuer,
    introspectionUrl: `${as.issuer}/token/introspection`,
    clientId: RS_CLIENT.id,
    clientSecret: RS_CLIENT.secret,
    resource,
    scheduler: clock,
    ...options,
  });
  return { clock, authenticate };
}

const introspections = () => as.requests('/token/introspection');

async function refused(call: Promise<AuthInfo>, message: RegExp): Promise<void> {
  const error = await call.then(
    (info) => assert.fail(`accepted as ${info.principal}`),
    (thrown: unknown) => thrown,
  );
  assert.ok(error instanceof AuthError, String(error));
  assert.equal(error.bearer?.error, 'invalid_token');
  assert.match(error.message, message);
}

test('an opaque token for this resource: client:<client_id> with its scopes and exp, asked about once, one recheck object per token', async () => {
  for (const clientAuthentication of ['client_secret_basic', 'client_secret_post'] as const) {
    const { authenticate } = authenticator({ clientAuthentication });
    const token = await as.token({ resource: RESOURCE, format: 'opaque', scope: 'mcp private' });
    const before = introspections();
    const info = await authenticate(request(token));
    assert.equal(info.principal, 'client:app');
    assert.deepEqual([...info.scopes].sort(), ['mcp', 'private']);
    assert.ok(info.expiresAt! > Date.now() + 200_000 && info.expiresAt! <= Date.now() + 300_000);
    assert.equal(info.recheck?.interval, 60_000);
    const again = await Promise.all(Array.from({ length: 10 }, () => authenticate(request(token))));
    assert.equal(introspections() - before, 1, clientAuthentication);
    for (const other of again) assert.equal(other.recheck, info.recheck);
  }
});

test('refused: a token for another resource, an unknown token, a token past its exp on this clock (the kept answer does not outlive it)', async () => {
  const { authenticate, clock } = authenticator({ cacheMaxAge: 600_000 });
  await refused(authenticate(request(await as.token({ resource: 'http://127.0.0.1:8932/other', format: 'opaque' }))), /issued for another resource/);
  await refused(authenticate(request('made-up-token')), /not active/);
  const token = await as.token({ resource: RESOURCE, format: 'opaque', ttl: 60 });
  await authenticate(request(token));
  const before = introspections();
  clock.advance(30_000);
  await authenticate(request(token));
  assert.equal(introspections(), before);
  clock.advance(40_000);
  await refused(authenticate(request(token)), /has expired/);
  assert.equal(introspections(), before + 1);
});

test('revoked: kept answers serve until cacheMaxAge; the recheck asks at once and the answer replaces the kept one', async () => {
  const { authenticate, clock } = authenticator({ cacheMaxAge: 60_000 });
  const token = await as.token({ resource: RESOURCE, format: 'opaque' });
  const info = await authenticate(request(token));
  await as.revoke(token);
  assert.equal((await authenticate(request(token))).principal, 'client:app');
  assert.equal(await info.recheck!.active(), false);
  await refused(authenticate(request(token)), /not active/);
  clock.advance(61_000);
  await refused(authenticate(request(token)), /not active/);
});

test('the server hangs: a kept answer goes on serving, a new token gets 503 within 2 s, a recheck rejects (the streams stay)', async () => {
  const { authenticate } = authenticator();
  const kept = await as.token({ resource: RESOURCE, format: 'opaque' });
  const info = await authenticate(request(kept));
  const fresh = await as.token({ resource: RESOURCE, format: 'opaque' });
  as.mode = 'hang';
  try {
    assert.equal((await authenticate(request(kept))).principal, 'client:app');
    const start = performance.now();
    const error = await authenticate(request(fresh)).catch((thrown: unknown) => thrown);
    const ms = performance.now() - start;
    assert.ok(error instanceof AuthUnavailableError, String(error));
    assert.ok(ms < 2_000, `${ms} ms`);
    await assert.rejects(info.recheck!.active(), AuthUnavailableError);
  } finally {
    as.mode = 'up';
  }
});

/** An endpoint on a real port whose resource is its own URL, with introspected tokens rechecked every 200 ms, and a WebSocket server on it. */
async function protectedServer(): Promise<{ url: string; wsUrl: string; endpoint: McpEndpoint; close(): Promise<void> }> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  const authenticate = introspectionAuthenticator({
    issuer: as.issuer,
    introspectionUrl: `${as.issuer}/token/introspection`,
    clientId: RS_CLIENT.id,
    clientSecret: RS_CLIENT.secret,
    resource: url,
    recheckInterval: 200,
  });
  const endpoint = new McpEndpoint({ hub: new Hub(), authenticate, capabilities: { tools: true, resources: true } });
  server.on('request', nodeHandler(endpoint));
  const wss = webSocketServer(endpoint, { server, path: '/mcp' });
  return {
    url,
    wsUrl: url.replace('http:', 'ws:'),
    endpoint,
    close: async () => {
      endpoint.close();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

test('revoked while streaming: a listen over HTTP, a legacy GET stream, a listen and a legacy session over WebSocket end at the next check, the listens with their closing frames, the WebSockets closed', async () => {
  const server = await protectedServer();
  try {
    const token = await as.token({ resource: server.url, format: 'opaque' });
    const bearer = { authorization: `Bearer ${token}` };
    const listen = await SseConnection.open(server.url, listenBody(7, { toolsListChanged: true }), { ...LISTEN_HEADERS, ...bearer });
    assert.equal(listen.status, 200);
    await listen.until((c) => c.text.includes('acknowledged'), 3_000, 'the ack');
    const { sessionId } = await initialize(server.url, { headers: bearer });
    const get = GetStream.open(server.url, sessionId, { headers: bearer });
    await get.until((g) => g.text.includes('retry:'), 3_000, 'the priming event');
    const socket = new WebSocket(server.wsUrl, { headers: bearer });
    const peer = new Peer(webSocketChannel(socket));
    peer.send({ jsonrpc: '2.0', id: 9, method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true } } });
    await peer.next((message) => message.method === 'notifications/subscriptions/acknowledged', 'the WebSocket ack');
    // A legacy session over WebSocket: the channel is the session, authenticated once at the upgrade.
    const legacySocket = new WebSocket(server.wsUrl, { headers: bearer });
    const legacyPeer = new Peer(webSocketChannel(legacySocket));
    const init = await legacyPeer.request(1, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'spec', version: '1' } });
    assert.equal(init.result.protocolVersion, '2025-11-25');
    assert.deepEqual((await legacyPeer.request(2, 'resources/subscribe', { uri: 'file:///notes/today.md' })).result, {});
    // Checked and still active: nothing ends.
    await new Promise((resolve) => setTimeout(resolve, 450));
    assert.equal(listen.ended, false);
    const revokedAt = performance.now();
    await as.revoke(token);
    await listen.until((c) => c.ended, 3_000, 'the listen to end');
    const ms = performance.now() - revokedAt;
    assert.ok(ms < 1_500, `${ms} ms after the revocation`);
    const closing = listen.messages.slice(-2);
    assert.deepEqual(closing, [
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7, reason: 'revoked', _meta: { 'io.modelcontextprotocol/subscriptionId': 7 } } },
      { jsonrpc: '2.0', id: 7, result: { resultType: 'complete', _meta: { 'io.modelcontextprotocol/subscriptionId': 7 } } },
    ]);
    await get.until((g) => g.ended, 3_000, 'the GET stream to end');
    const result = await peer.next((message) => message.id === 9 && message.result !== undefined, 'the WebSocket listen result');
    assert.deepEqual(result.result, { resultType: 'complete', _meta: { 'io.modelcontextprotocol/subscriptionId': 9 } });
    assert.ok(peer.received.some((message) => message.method === 'notifications/cancelled' && message.params.reason === 'revoked'));
    // Nothing would refuse a WebSocket's credential again: both sockets close (the legacy one with its subscription).
    await until(() => peer.ended && legacyPeer.ended, 'both WebSockets closed by the server', 3_000);
    // The token is refused from now on, the session is gone.
    const after = await send(server.url, 'POST', { ...LISTEN_HEADERS, ...bearer }, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'server/discover' }));
    assert.equal(after.status, 401);
    assert.match(String(after.headers['www-authenticate']), /error="invalid_token"/);
    socket.close();
  } finally {
    await server.close();
  }
});

test.run();
