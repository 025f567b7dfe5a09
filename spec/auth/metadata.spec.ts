// The endpoint as an OAuth 2.1 protected resource (issue 32; MCP authorization 2025-06-18 on):
// RFC 9728 metadata served by the HTTP front at the well-known paths, the challenges of 401 and
// 403 (`resource_metadata`, `error`, `error_description`, `scope`), 503 for a credential that
// cannot be checked now, and what a hook without a protected resource keeps (its own challenge).
// Real sockets on 127.0.0.1; no authorization server needed here.
import { strict as assert } from 'node:assert';
import http from 'node:http';
import { test } from 'uvu';
import { bearerToken } from '../../adapters/auth/bearerToken.js';
import { McpEndpoint } from '../../adapters/http/endpoint.js';
import { webHandler } from '../../adapters/http/web.js';
import { AuthError, AuthUnavailableError } from '../../lib/auth.js';
import type { EndpointRequest } from '../../lib/context.js';
import { InvalidOptionError } from '../../lib/errors.js';
import { Hub } from '../../lib/hub.js';
import { protectResource, type ProtectedResource } from '../../lib/protectedResource.js';
import { LISTEN_HEADERS, listenBody, post, withEndpoint } from '../helpers/http.js';

const RESOURCE: ProtectedResource = {
  resource: 'https://mcp.example.com/mcp',
  authorizationServers: ['https://auth.example.com'],
  requiredScopes: ['mcp'],
  scopesSupported: ['mcp', 'private'],
  resourceName: 'Files',
};

/** A hook that refuses by the `x-refuse` header: none, `invalid`, `scope`, `unavailable`, `string`; else lets `sub:alice` in. */
const hook = (request: EndpointRequest) => {
  switch (request.header('x-refuse')) {
    case undefined:
      return { principal: 'sub:alice', scopes: new Set(['mcp']) };
    case 'none':
      throw new AuthError('send Authorization: Bearer <access token>');
    case 'invalid':
      throw new AuthError('the token has expired', { error: 'invalid_token' });
    case 'scope':
      throw new AuthError('the token lacks the scope admin', { error: 'insufficient_scope', scope: ['mcp', 'admin'] });
    case 'unavailable':
      throw new AuthUnavailableError('the authorization server did not answer within 1000 ms', 2_500);
    default:
      throw new AuthError('go away', 'Basic realm="x"');
  }
};

function get(url: string, method = 'GET', headers: Record<string, string> = {}): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

const DOCUMENT = {
  resource: 'https://mcp.example.com/mcp',
  authorization_servers: ['https://auth.example.com'],
  scopes_supported: ['mcp', 'private'],
  bearer_methods_supported: ['header'],
  resource_name: 'Files',
};
const METADATA_URL = 'https://mcp.example.com/.well-known/oauth-protected-resource/mcp';

test('RFC 9728: the metadata document at the path-suffixed well-known URL and at the root one, exact JSON, GET and HEAD only', async () => {
  await withEndpoint({ authenticate: protectResource(hook, RESOURCE) }, async ({ url }) => {
    const origin = new URL(url).origin;
    for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp?x=1']) {
      const answer = await get(origin + path);
      assert.equal(answer.status, 200, path);
      assert.equal(answer.headers['content-type'], 'application/json');
      assert.equal(answer.body, JSON.stringify(DOCUMENT), path);
    }
    assert.equal((await get(`${origin}/.well-known/oauth-protected-resource/mcp`, 'HEAD')).status, 200);
    const refused = await post(`${origin}/.well-known/oauth-protected-resource/mcp`, '{}');
    assert.equal(refused.status, 405);
    assert.equal(refused.headers.allow, 'GET, HEAD');
    // Another path is not the document: the endpoint answers it as MCP (a GET outside a session).
    assert.equal((await get(`${origin}/.well-known/oauth-protected-resource/other`)).status, 400);
  });
});

test('a resource without a path: the root well-known URL only; scopes_supported defaults to requiredScopes; no document without a protected resource', async () => {
  const bare = { resource: 'https://mcp.example.com', authorizationServers: ['https://auth.example.com'], requiredScopes: ['mcp'] };
  await withEndpoint({ authenticate: protectResource(hook, bare) }, async ({ url }) => {
    const answer = await get(`${new URL(url).origin}/.well-known/oauth-protected-resource`);
    assert.equal(answer.body, JSON.stringify({ resource: 'https://mcp.example.com', authorization_servers: ['https://auth.example.com'], scopes_supported: ['mcp'], bearer_methods_supported: ['header'] }));
    const challenge = (await post(url, listenBody(1, {}), { ...LISTEN_HEADERS, 'x-refuse': 'none' })).headers['www-authenticate'];
    assert.equal(challenge, 'Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", scope="mcp"');
  });
  await withEndpoint({ authenticate: hook }, async ({ url }) => {
    assert.equal((await get(`${new URL(url).origin}/.well-known/oauth-protected-resource`)).status, 400);
  });
});

test('webHandler serves the document too (the path of the Request URL)', async () => {
  const handle = webHandler(new McpEndpoint({ hub: new Hub(), authenticate: protectResource(hook, RESOURCE) }));
  const response = await handle(new Request('http://127.0.0.1:3000/.well-known/oauth-protected-resource/mcp'));
  assert.equal(response.status, 200);
  assert.deepEqual(await response.json(), DOCUMENT);
});

test('challenges: 401 names the metadata and the scope the request needs; error and error_description when a token was sent; 403 insufficient_scope; 503 when it cannot be checked', async () => {
  await withEndpoint({ authenticate: protectResource(hook, RESOURCE) }, async ({ url }) => {
    const ask = (refuse: string) => post(url, listenBody(1, {}), { ...LISTEN_HEADERS, 'x-refuse': refuse });
    const none = await ask('none');
    assert.equal(none.status, 401);
    assert.equal(none.headers['www-authenticate'], `Bearer resource_metadata="${METADATA_URL}", scope="mcp"`);
    assert.deepEqual(JSON.parse(none.body).error, { code: -32600, message: 'unauthorized: send Authorization: Bearer <access token>' });
    const invalid = await ask('invalid');
    assert.equal(invalid.status, 401);
    assert.equal(invalid.headers['www-authenticate'], `Bearer resource_metadata="${METADATA_URL}", error="invalid_token", error_description="the token has expired", scope="mcp"`);
    const scope = await ask('scope');
    assert.equal(scope.status, 403);
    assert.equal(scope.headers['www-authenticate'], `Bearer resource_metadata="${METADATA_URL}", error="insufficient_scope", error_description="the token lacks the scope admin", scope="mcp admin"`);
    assert.deepEqual(JSON.parse(scope.body).error, { code: -32600, message: 'insufficient scope: the token lacks the scope admin' });
    const unavailable = await ask('unavailable');
    assert.equal(unavailable.status, 503);
    assert.equal(unavailable.headers['retry-after'], '3');
    assert.equal(unavailable.headers['www-authenticate'], undefined);
    assert.deepEqual(JSON.parse(unavailable.body).error, {
      code: -32000,
      message: 'the credential could not be checked: the authorization server did not answer within 1000 ms',
      data: { retryAfterMs: 2_500 },
    });
    // A challenge given as a string is sent as it is.
    assert.equal((await ask('string')).headers['www-authenticate'], 'Basic realm="x"');
    // In a legacy session, the same.
    assert.equal((await post(url, listenBody(1, {}), { ...LISTEN_HEADERS, 'mcp-session-id': 'x', 'x-refuse': 'invalid' })).status, 401);
  });
});

test('without a protected resource, challenges stay what they were: Bearer, or Bearer error="invalid_token" with its description', async () => {
  await withEndpoint({ authenticate: hook }, async ({ url }) => {
    const ask = (refuse: string) => post(url, listenBody(1, {}), { ...LISTEN_HEADERS, 'x-refuse': refuse });
    assert.equal((await ask('none')).headers['www-authenticate'], 'Bearer');
    assert.equal((await ask('invalid')).headers['www-authenticate'], 'Bearer error="invalid_token", error_description="the token has expired"');
    assert.equal((await ask('scope')).headers['www-authenticate'], 'Bearer error="insufficient_scope", error_description="the token lacks the scope admin", scope="mcp admin"');
  });
  // AuthError's own challenge (what a hook's caller reads): the error code alone.
  assert.equal(new AuthError('x', { error: 'invalid_token' }).challenge, 'Bearer error="invalid_token"');
  assert.equal(new AuthError('x').challenge, 'Bearer');
  assert.equal(new AuthError('x', 'Basic').challenge, 'Basic');
});

test('an error_description carries only the characters RFC 6750 allows', async () => {
  const quoting = protectResource(() => {
    throw new AuthError('the "token" is \\ bad é', { error: 'invalid_token' });
  }, RESOURCE);
  await withEndpoint({ authenticate: quoting }, async ({ url }) => {
    const challenge = (await post(url, listenBody(1, {}))).headers['www-authenticate'];
    assert.equal(challenge, `Bearer resource_metadata="${METADATA_URL}", error="invalid_token", error_description="the 'token' is ' bad '", scope="mcp"`);
  });
});

test('a protected resource that cannot be used is refused at construction, naming the field', () => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ ...RESOURCE, resource: 'http://mcp.example.com/mcp' }, /authenticate\.protectedResource\.resource must be an https:\/\/ URL \(http:\/\/ only on localhost/],
    [{ ...RESOURCE, resource: 'https://mcp.example.com/mcp?x=1' }, /resource must be an absolute URL without query or fragment/],
    [{ ...RESOURCE, authorizationServers: [] }, /authorizationServers must be a non-empty array of issuer URLs/],
    [{ ...RESOURCE, authorizationServers: ['ftp://x'] }, /authorizationServers\[0\] must be an https/],
    [{ ...RESOURCE, requiredScopes: ['a b'] }, /requiredScopes\[0\] must be a scope token/],
    [{ ...RESOURCE, audience: 'x' }, /audience must be one of the known options/],
  ];
  for (const [resource, message] of cases) {
    const authenticate = Object.assign(() => ({ principal: 'p', scopes: new Set<string>() }), { protectedResource: resource });
    assert.throws(() => new McpEndpoint({ hub: new Hub(), authenticate }), (error: unknown) => error instanceof InvalidOptionError && message.test(error.message), JSON.stringify(resource));
  }
  // Loopback hosts may use http (development).
  for (const resource of ['http://127.0.0.1:3000/mcp', 'http://localhost:3000/mcp', 'http://[::1]:3000/mcp']) {
    new McpEndpoint({ hub: new Hub(), authenticate: protectResource(hook, { resource, authorizationServers: ['http://127.0.0.1:9000'] }) }).close();
  }
  assert.throws(() => protectResource('no' as never, RESOURCE), /protectResource authenticate must be a function/);
});

test('bearerToken: RFC 6750 §2.1, the header only; no error code without a bearer token, invalid_request for a malformed one', () => {
  const request = (authorization?: string): EndpointRequest => ({ method: 'POST', header: (name) => (name === 'authorization' ? authorization : undefined), remoteAddress: undefined, body: undefined });
  assert.equal(bearerToken(request('Bearer abc.DEF-_~+/='), []), 'abc.DEF-_~+/=');
  assert.equal(bearerToken(request('bearer  abc '), []), 'abc');
  for (const [header, error] of [[undefined, undefined], ['Basic YTpi', undefined], ['Bearerabc', undefined], ['Bearer', 'invalid_request'], ['Bearer a b', 'invalid_request'], ['Bearer a,b', 'invalid_request']] as const) {
    assert.throws(
      () => bearerToken(request(header), ['mcp']),
      (thrown: unknown) => thrown instanceof AuthError && thrown.bearer?.error === error && thrown.bearer?.scope?.join(' ') === 'mcp',
      String(header),
    );
  }
});

test.run();
