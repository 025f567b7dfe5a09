// CORS (issue 24, item 2) at the HTTP level, on a real loopback server: what a preflight gets, and
// that every answer (JSON, SSE, each error status) to an allowed origin carries the headers a
// browser needs to read it, and none to another origin. spec/browser.spec.ts runs a real page.
import { strict as assert } from 'node:assert';
import type http from 'node:http';
import { test } from 'uvu';
import { AuthError } from '../lib/auth.js';
import type { EndpointRequest } from '../lib/context.js';
import { InvalidOptionError } from '../lib/errors.js';
import { Hub } from '../lib/hub.js';
import { McpEndpoint } from '../adapters/http/endpoint.js';
import { webHandler } from '../adapters/http/web.js';
import { eventually, LISTEN_HEADERS, listenBody, SseConnection, withEndpoint } from './helpers/http.js';
import { GetStream, initialize, rpcBody, send, sessionHeaders } from './helpers/legacy.js';

const PAGE = 'http://127.0.0.1:5173';
const OTHER = 'http://evil.example';
const ALLOW_HEADERS = 'content-type, authorization, mcp-protocol-version, mcp-session-id, mcp-method, mcp-name, last-event-id';
const EXPOSE_HEADERS = 'mcp-session-id, www-authenticate';

/** The CORS headers of a response, by lower-case name (absent ones left out). */
function corsOf(headers: http.IncomingHttpHeaders): Record<string, unknown> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => name.startsWith('access-control-') || name === 'vary'));
}

const ALLOWED = (origin: string) => ({ 'access-control-allow-origin': origin, 'access-control-expose-headers': EXPOSE_HEADERS, vary: 'Origin' });
const NOT_ALLOWED = { vary: 'Origin' };

const preflight = (url: string, origin: string, extra: Record<string, string> = {}) =>
  send(url, 'OPTIONS', { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,mcp-protocol-version', ...extra });

test('without corsOrigins (the default): OPTIONS is 405 and no answer carries a CORS header', async () => {
  await withEndpoint({}, async ({ url }) => {
    const options = await preflight(url, PAGE);
    assert.equal(options.status, 405);
    assert.deepEqual(corsOf(options.headers), {});
    const discover = await send(url, 'POST', { ...LISTEN_HEADERS, origin: PAGE }, rpcBody(1, 'server/discover'));
    assert.equal(discover.status, 200);
    assert.deepEqual(corsOf(discover.headers), {});
  });
});

test('a preflight from an allowed origin: 204 with the methods, every MCP request header, Max-Age 7200; another origin gets none of them', async () => {
  await withEndpoint({ corsOrigins: [PAGE] }, async ({ url }) => {
    const allowed = await preflight(url, PAGE);
    assert.equal(allowed.status, 204);
    assert.equal(allowed.body, '');
    assert.equal(allowed.headers.allow, 'POST, GET, DELETE');
    assert.deepEqual(corsOf(allowed.headers), {
      ...ALLOWED(PAGE),
      'access-control-allow-methods': 'POST, GET, DELETE',
      'access-control-allow-headers': ALLOW_HEADERS,
      'access-control-max-age': '7200',
    });
    assert.equal(allowed.headers['access-control-allow-credentials'], undefined);
    const other = await preflight(url, OTHER);
    assert.equal(other.status, 204);
    assert.deepEqual(corsOf(other.headers), NOT_ALLOWED);
    // Not a preflight (no Access-Control-Request-Method): just what the path allows.
    const plain = await send(url, 'OPTIONS', { origin: PAGE });
    assert.equal(plain.status, 204);
    assert.deepEqual(corsOf(plain.headers), ALLOWED(PAGE));
    // A session id on an OPTIONS request changes nothing.
    assert.equal((await preflight(url, PAGE, { 'mcp-session-id': 'x' })).status, 204);
  });
  await withEndpoint({ corsOrigins: [PAGE], legacy: false }, async ({ url }) => {
    assert.equal((await preflight(url, PAGE)).headers['access-control-allow-methods'], 'POST');
  });
  await withEndpoint({ corsOrigins: [PAGE], allowClientSessionDelete: false }, async ({ url }) => {
    assert.equal((await preflight(url, PAGE)).headers['access-control-allow-methods'], 'POST, GET');
  });
});

const byHeader = (request: EndpointRequest) => {
  const principal = request.header('x-principal');
  if (principal === undefined || principal === 'nobody') throw new AuthError('a principal is required');
  return { principal: `sub:${principal}`, scopes: new Set<string>() };
};

test('every answer to an allowed origin carries Allow-Origin (the origin), Expose-Headers and Vary: JSON, SSE of both eras, 400/401/404/405/406/413/503', async () => {
  await withEndpoint({ corsOrigins: [PAGE], authenticate: byHeader, maxStreams: 1, maxBodyBytes: 4096 }, async ({ url, endpoint }) => {
    const as = (origin: string) => ({ ...LISTEN_HEADERS, origin, 'x-principal': 'alice' });
    for (const [origin, expected] of [[PAGE, ALLOWED(PAGE)], [OTHER, NOT_ALLOWED]] as const) {
      const answers: [string, number, http.IncomingHttpHeaders][] = [];
      const record = (what: string, reply: { status: number; headers: http.IncomingHttpHeaders }) => answers.push([what, reply.status, reply.headers]);
      record('discover', await send(url, 'POST', as(origin), rpcBody(1, 'server/discover')));
      record('unauthorized', await send(url, 'POST', { ...as(origin), 'x-principal': 'nobody' }, rpcBody(1, 'server/discover')));
      record('unknown method', await send(url, 'POST', as(origin), rpcBody(1, 'nope')));
      record('PUT', await send(url, 'PUT', as(origin), rpcBody(1, 'server/discover')));
      record('listen without SSE', await send(url, 'POST', { ...as(origin), accept: 'application/json' }, listenBody(1, { toolsListChanged: true })));
      record('too large', await send(url, 'POST', as(origin), rpcBody(1, 'server/discover', { pad: 'x'.repeat(5000) })));
      record('GET without a session', await send(url, 'GET', { origin, accept: 'text/event-stream', 'x-principal': 'alice' }));
      const listen = await SseConnection.open(url, listenBody(1, { toolsListChanged: true }), as(origin));
      record('listen', { status: listen.status, headers: listen.res.headers });
      record('full', await send(url, 'POST', { ...as(origin), 'x-principal': 'bob' }, listenBody(2, { toolsListChanged: true })));
      listen.destroy();
      const init = await initialize(url, { headers: { origin, 'x-principal': 'alice' } });
      record('initialize', init);
      // The listen's slot comes back once its connection is seen closed.
      await eventually(() => endpoint.stats.slots === 0, 3000, 'the listen slot released');
      const get = GetStream.open(url, init.sessionId, { headers: { origin, 'x-principal': 'alice' } });
      const head = await get.response;
      record('GET stream', { status: head.statusCode!, headers: head.headers });
      get.destroy();
      assert.deepEqual(
        answers.map(([what, status]) => `${what} ${status}`),
        ['discover 200', 'unauthorized 401', 'unknown method 404', 'PUT 405', 'listen without SSE 406', 'too large 413', 'GET without a session 400', 'listen 200', 'full 503', 'initialize 200', 'GET stream 200'],
      );
      for (const [what, , headers] of answers) assert.deepEqual(corsOf(headers), expected, `${what} from ${origin}`);
      assert.equal(answers[1]![2]['www-authenticate'], 'Bearer');
      assert.equal(typeof init.headers['mcp-session-id'], 'string');
    }
    // A request without Origin (not a browser) gets only Vary.
    assert.deepEqual(corsOf((await send(url, 'POST', { ...LISTEN_HEADERS, 'x-principal': 'alice' }, rpcBody(1, 'server/discover'))).headers), NOT_ALLOWED);
  });
});

test("host-name entries match as allowedOrigins' do, and the origin is echoed as the page sent it", async () => {
  await withEndpoint({ corsOrigins: ['localhost', 'https://app.example'] }, async ({ url }) => {
    const origin = async (value: string) => (await send(url, 'POST', { ...LISTEN_HEADERS, origin: value }, rpcBody(1, 'server/discover'))).headers['access-control-allow-origin'];
    assert.equal(await origin('http://localhost:5173'), 'http://localhost:5173');
    assert.equal(await origin('https://localhost'), 'https://localhost');
    assert.equal(await origin('https://app.example'), 'https://app.example');
    assert.equal(await origin('http://app.example'), undefined);
    assert.equal(await origin('https://app.example:8443'), undefined);
    assert.equal(await origin('https://localhost.evil.example'), undefined);
    assert.equal(await origin('null'), undefined);
  });
});

test("corsOrigins '*': Allow-Origin * for every page; refused with authenticate", async () => {
  await withEndpoint({ corsOrigins: '*' }, async ({ url }) => {
    for (const origin of [PAGE, OTHER, 'null']) {
      const reply = await send(url, 'POST', { ...LISTEN_HEADERS, origin }, rpcBody(1, 'server/discover'));
      assert.deepEqual(corsOf(reply.headers), ALLOWED('*'), origin);
    }
    assert.equal((await preflight(url, OTHER)).headers['access-control-allow-headers'], ALLOW_HEADERS);
  });
  assert.throws(
    () => new McpEndpoint({ hub: new Hub(), corsOrigins: '*', authenticate: byHeader }),
    (error: unknown) => error instanceof InvalidOptionError && error.info.option === 'corsOrigins' && /a list of origins when authenticate is set/.test(error.message),
  );
});

test('with allowedOrigins: a corsOrigins entry passes the rebinding check; other origins keep their 403 and get no CORS headers, under * too', async () => {
  await withEndpoint({ allowedOrigins: ['localhost'], corsOrigins: ['https://app.example'] }, async ({ url }) => {
    const page = await send(url, 'POST', { ...LISTEN_HEADERS, origin: 'https://app.example' }, rpcBody(1, 'server/discover'));
    assert.equal(page.status, 200);
    assert.deepEqual(corsOf(page.headers), ALLOWED('https://app.example'));
    const local = await send(url, 'POST', { ...LISTEN_HEADERS, origin: 'http://localhost:5173' }, rpcBody(1, 'server/discover'));
    assert.equal(local.status, 200);
    assert.deepEqual(corsOf(local.headers), NOT_ALLOWED, 'allowedOrigins alone grants no CORS');
    const foreign = await preflight(url, OTHER);
    assert.equal(foreign.status, 403);
    assert.deepEqual(corsOf(foreign.headers), NOT_ALLOWED);
  });
  await withEndpoint({ allowedOrigins: ['localhost'], corsOrigins: '*' }, async ({ url }) => {
    const local = await preflight(url, 'http://localhost:5173');
    assert.equal(local.status, 204);
    assert.equal(local.headers['access-control-allow-origin'], '*');
    const foreign = await send(url, 'POST', { ...LISTEN_HEADERS, origin: OTHER }, rpcBody(1, 'server/discover'));
    assert.equal(foreign.status, 403);
    assert.deepEqual(corsOf(foreign.headers), NOT_ALLOWED);
  });
});

test('webHandler: the same preflight and headers on a Response, an SSE body included', async () => {
  const endpoint = new McpEndpoint({ hub: new Hub(), corsOrigins: [PAGE] });
  const handle = webHandler(endpoint);
  const headersOf = (response: Response) => Object.fromEntries([...(response.headers as unknown as Iterable<[string, string]>)].filter(([name]) => name.startsWith('access-control-') || name === 'vary'));
  try {
    const options = await handle(new Request('http://127.0.0.1/mcp', { method: 'OPTIONS', headers: { origin: PAGE, 'access-control-request-method': 'POST' } }), { remoteAddress: '127.0.0.1' });
    assert.equal(options.status, 204);
    assert.equal(options.headers.get('access-control-allow-headers'), ALLOW_HEADERS);
    const listen = await handle(
      new Request('http://127.0.0.1/mcp', { method: 'POST', headers: { ...LISTEN_HEADERS, origin: PAGE }, body: listenBody(1, { toolsListChanged: true }) }),
      { remoteAddress: '127.0.0.1' },
    );
    assert.equal(listen.headers.get('content-type'), 'text/event-stream');
    assert.deepEqual(headersOf(listen), ALLOWED(PAGE));
    await listen.body!.cancel();
  } finally {
    endpoint.close();
  }
});

test('sessionHeaders with an allowed origin: a session request is answered with CORS headers too', async () => {
  await withEndpoint({ corsOrigins: [PAGE] }, async ({ url }) => {
    const init = await initialize(url, { headers: { origin: PAGE } });
    const reply = await send(url, 'POST', sessionHeaders(init.sessionId, { origin: PAGE }), rpcBody(2, 'resources/subscribe', { uri: 'file:///a' }));
    assert.deepEqual(corsOf(reply.headers), ALLOWED(PAGE));
    const gone = await send(url, 'DELETE', { ...sessionHeaders(init.sessionId), origin: PAGE });
    assert.equal(gone.status, 204);
    assert.deepEqual(corsOf(gone.headers), ALLOWED(PAGE));
    const unknown = await send(url, 'POST', sessionHeaders(init.sessionId, { origin: PAGE }), rpcBody(3, 'ping'));
    assert.equal(unknown.status, 404);
    assert.deepEqual(corsOf(unknown.headers), ALLOWED(PAGE));
  });
});

test('corsOrigins values the library cannot use throw InvalidOptionError naming corsOrigins', () => {
  const hub = new Hub();
  for (const value of [[], [''], ['*'], ['https://app.example/'], ['https://app.example/path'], ['app example'], ['*.example'], 'https://app.example', [1], true, {}]) {
    assert.throws(
      () => new McpEndpoint({ hub, corsOrigins: value as never }),
      (error: unknown) => error instanceof InvalidOptionError && error.info.option === 'corsOrigins',
      JSON.stringify(value),
    );
  }
  assert.throws(() => new McpEndpoint({ hub, corsOrigins: ['*'] }), /pass '\*' itself, not inside an array/);
  for (const value of [['https://app.example', 'http://localhost:5173', 'localhost', '[::1]', 'app.example:8443', 'chrome-extension://abcdef'], '*'] as const) {
    new McpEndpoint({ hub, corsOrigins: value }).close();
  }
});

test.run();
