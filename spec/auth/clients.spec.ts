// The official TypeScript clients' OAuth support against the endpoint as a protected resource and
// a real authorization server (oidc-provider on 127.0.0.1): each client is refused with 401, reads
// the challenge's resource_metadata, discovers the authorization server from the metadata, gets a
// token for this resource (client credentials, RFC 8707 `resource`) and connects; then it listens
// (2.x) or subscribes (1.x). And a listen admitted with a token that expires in 3 s closes at its
// expiry with its closing frames.
import { strict as assert } from 'node:assert';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, ClientCredentialsProvider, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { ClientCredentialsProvider as ClientCredentialsProvider1 } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { Client as Client1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as StreamableHTTPClientTransport1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { test } from 'uvu';
import { jwtAuthenticator } from '../../adapters/auth/index.js';
import { McpEndpoint } from '../../adapters/http/endpoint.js';
import { nodeHandler } from '../../adapters/http/node.js';
import { Hub } from '../../lib/hub.js';
import { APP_CLIENT, type AuthServer, startAuthServer } from '../helpers/authServer.js';
import { LISTEN_HEADERS, listenBody, SseConnection } from '../helpers/http.js';
import { within } from '../helpers/wait.js';

const WAIT_MS = 5_000;

let as: AuthServer;
test.before(async () => {
  as = await startAuthServer();
});
test.after(() => as.close());

/** An endpoint on 127.0.0.1 whose resource is its own URL, accepting this server's JWTs with scope `mcp`. */
async function protectedEndpoint(): Promise<{ url: string; hub: Hub; endpoint: McpEndpoint; close(): Promise<void> }> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  const hub = new Hub();
  const endpoint = new McpEndpoint({
    hub,
    authenticate: jwtAuthenticator({ issuer: as.issuer, resource: url, requiredScopes: ['mcp'] }),
    capabilities: { tools: true, resources: true },
    canRead: () => true,
  });
  server.on('request', nodeHandler(endpoint));
  return {
    url,
    hub,
    endpoint,
    close: async () => {
      endpoint.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

test('@modelcontextprotocol/client 2.x: 401, resource metadata, authorization server metadata, a token for this resource, connected; it listens', async () => {
  const server = await protectedEndpoint();
  const before = { tokens: as.requests('/token'), metadata: as.requests('/.well-known/oauth-authorization-server') };
  const client = new Client({ name: 'oauth-spec', version: '0.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  try {
    const authProvider = new ClientCredentialsProvider({ clientId: APP_CLIENT.id, clientSecret: APP_CLIENT.secret, expectedIssuer: as.issuer, scope: 'mcp' });
    await within(client.connect(new StreamableHTTPClientTransport(new URL(server.url), { authProvider }), { timeout: WAIT_MS }), WAIT_MS + 500, 'connect()');
    assert.equal(as.requests('/token') - before.tokens, 1);
    assert.ok(as.requests('/.well-known/oauth-authorization-server') > before.metadata);
    const token = authProvider.tokens()!.access_token;
    assert.equal(JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).aud, server.url);
    const subscription = await within(client.listen({ toolsListChanged: true }, { timeout: WAIT_MS }), WAIT_MS + 500, 'the listen ack');
    assert.deepEqual(subscription.honoredFilter, { toolsListChanged: true });
    assert.equal(server.endpoint.streams()[0]?.principal, 'sub:app');
  } finally {
    await client.close();
    await server.close();
  }
});

test('@modelcontextprotocol/sdk 1.x: the same discovery and token, then a legacy session: initialize, GET stream, resources/subscribe', async () => {
  const server = await protectedEndpoint();
  const client = new Client1({ name: 'oauth-spec-1', version: '0.0.0' });
  try {
    const authProvider = new ClientCredentialsProvider1({ clientId: APP_CLIENT.id, clientSecret: APP_CLIENT.secret, expectedIssuer: as.issuer, scope: 'mcp' });
    await within(client.connect(new StreamableHTTPClientTransport1(new URL(server.url), { authProvider })), WAIT_MS, 'connect()');
    assert.deepEqual(await within(client.subscribeResource({ uri: 'file:///a.txt' }), WAIT_MS, 'resources/subscribe'), {});
    assert.equal(server.endpoint.stats.sessions, 1);
    assert.equal(server.endpoint.streams()[0]?.principal, 'sub:app');
  } finally {
    await client.close();
    await server.close();
  }
});

test('a listen admitted with a token that expires in 3 s closes at its expiry with its closing frames (token_expired)', async () => {
  const server = await protectedEndpoint();
  try {
    const token = await as.token({ resource: server.url, ttl: 3 });
    const exp = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).exp as number;
    const listen = await SseConnection.open(server.url, listenBody(4, { toolsListChanged: true }), { ...LISTEN_HEADERS, authorization: `Bearer ${token}` });
    assert.equal(listen.status, 200);
    await listen.until((c) => c.text.includes('acknowledged'), WAIT_MS, 'the ack');
    server.hub.notifyToolsChanged();
    await listen.until((c) => c.text.includes('tools/list_changed'), WAIT_MS, 'a notification');
    await listen.until((c) => c.ended, WAIT_MS, 'the end of the stream');
    const endedAt = Date.now();
    // At exp (seconds: up to 1 s after the token was issued), never before it.
    assert.ok(endedAt >= exp * 1000 && endedAt < exp * 1000 + 500, `ended ${endedAt - exp * 1000} ms after exp`);
    assert.deepEqual(listen.messages.slice(-2), [
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 4, reason: 'token_expired', _meta: { 'io.modelcontextprotocol/subscriptionId': 4 } } },
      { jsonrpc: '2.0', id: 4, result: { resultType: 'complete', _meta: { 'io.modelcontextprotocol/subscriptionId': 4 } } },
    ]);
    assert.equal(server.endpoint.stats.streams, 0);
  } finally {
    await server.close();
  }
});

test.run();
