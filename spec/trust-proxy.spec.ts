// Behind a reverse proxy (issue 24, item 1): a real proxy process on loopback
// (spec/fixtures/servers/forwarding-proxy.mjs, nginx's $proxy_add_x_forwarded_for) in front of a
// real node:http server. The clients connect to it from different loopback addresses (127.0.0.2,
// .3, .4: different machines as far as the proxy can tell), so what the server sees is one peer,
// the proxy, and the clients only in X-Forwarded-For. With `trustProxy` the caps count each real
// client; without it, or for what a client writes in the header itself, nothing changes.
import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';
import type { EndpointRequest, RequestContext } from '../lib/context.js';
import { InvalidOptionError } from '../lib/errors.js';
import { Hub } from '../lib/hub.js';
import { McpEndpoint } from '../adapters/http/endpoint.js';
import type { McpEndpointOptions } from '../adapters/http/options.js';
import { webHandler } from '../adapters/http/web.js';
import { eventually, LISTEN_HEADERS, listenBody, SseConnection, startEndpoint, type TestServer, withEndpoint } from './helpers/http.js';
import { INIT_HEADERS, rpcBody, send, sessionHeaders } from './helpers/legacy.js';

const PROXY = fileURLToPath(new URL('./fixtures/servers/forwarding-proxy.mjs', import.meta.url));

/** A method that says who the endpoint thinks is calling. */
const methods = {
  whoami: (_params: unknown, { auth, request }: RequestContext) => ({ principal: auth.principal, address: request.remoteAddress }),
};

interface Setup {
  readonly server: TestServer;
  /** The endpoint's URL through the proxy. */
  readonly proxied: string;
}

/** Serves an endpoint with `options` behind a forwarding proxy process; always stops both. */
async function behindProxy(options: Partial<McpEndpointOptions>, body: (setup: Setup) => Promise<void>): Promise<void> {
  const server = await startEndpoint({ methods, ...options });
  const proxy = spawn(process.execPath, [PROXY, new URL(server.url).origin], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const origin = await new Promise<string>((resolve, reject) => {
      let out = '';
      proxy.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
        out += chunk;
        const match = /proxy listening on (\S+)/.exec(out);
        if (match !== null) resolve(match[1]!);
      });
      proxy.once('exit', (code) => reject(new Error(`the proxy exited (${code}) before listening`)));
    });
    await body({ server, proxied: `${origin}/mcp` });
  } finally {
    proxy.kill('SIGTERM');
    await server.close();
  }
}

/** Asks `whoami` from the loopback address `from`; resolves with the principal the endpoint named. */
async function whoami(url: string, from: string, headers: Record<string, string> = {}): Promise<string> {
  const reply = await send(url, 'POST', { ...LISTEN_HEADERS, ...headers }, rpcBody(1, 'whoami'), { localAddress: from });
  assert.equal(reply.status, 200, reply.body);
  return reply.json.result.principal;
}

/** Opens a listen for tool changes from `from` and waits for its acknowledgment. */
async function listenFrom(url: string, from: string, headers: Record<string, string> = {}): Promise<SseConnection> {
  const conn = await SseConnection.open(url, listenBody(1, { toolsListChanged: true }), { ...LISTEN_HEADERS, ...headers }, { localAddress: from });
  assert.equal(conn.status, 200);
  await conn.until((c) => c.messages.length >= 1, 3000, 'the acknowledgment');
  return conn;
}

const superseded = (conn: SseConnection) => conn.text.includes('"reason":"superseded"');

/** Opens a legacy session from `from`; resolves with its id. */
async function initializeFrom(url: string, from: string): Promise<string> {
  const params = { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'trust-proxy-spec', version: '1.0.0' } };
  const reply = await send(url, 'POST', { ...INIT_HEADERS }, rpcBody(1, 'initialize', params), { localAddress: from });
  assert.equal(reply.status, 200, reply.body);
  return reply.headers['mcp-session-id'] as string;
}

/** The HTTP status of `whoami` inside session `sessionId`, asked from `from` (404: the session is gone). */
async function sessionStatus(url: string, from: string, sessionId: string): Promise<number> {
  return (await send(url, 'POST', sessionHeaders(sessionId), rpcBody(2, 'whoami'), { localAddress: from })).status;
}

test('through the proxy without trustProxy (the default): every client is the proxy, so one client supersedes another', async () => {
  await behindProxy({ maxListensPerPrincipal: 1 }, async ({ proxied, server }) => {
    assert.equal(await whoami(proxied, '127.0.0.2'), 'addr:127.0.0.1');
    assert.equal(await whoami(proxied, '127.0.0.3'), 'addr:127.0.0.1');
    const a = await listenFrom(proxied, '127.0.0.2');
    const b = await listenFrom(proxied, '127.0.0.3');
    await a.until(superseded, 3000, "A's listen superseded by B's");
    assert.equal(superseded(b), false);
    assert.equal(server.endpoint.stats.principals, 1);
    a.destroy();
    b.destroy();
  });
});

test('trustProxy: 1 behind one proxy: each client is its own principal, maxListensPerPrincipal counts per real client', async () => {
  await behindProxy({ trustProxy: 1, maxListensPerPrincipal: 1 }, async ({ proxied, server }) => {
    assert.deepEqual(
      await Promise.all(['127.0.0.2', '127.0.0.3', '127.0.0.4'].map((from) => whoami(proxied, from))),
      ['addr:127.0.0.2', 'addr:127.0.0.3', 'addr:127.0.0.4'],
    );
    const a = await listenFrom(proxied, '127.0.0.2');
    const b = await listenFrom(proxied, '127.0.0.3');
    const c = await listenFrom(proxied, '127.0.0.4');
    assert.equal(server.endpoint.stats.principals, 3);
    assert.equal(server.endpoint.stats.streams, 3);
    // A's second listen supersedes A's first, nobody else's.
    const a2 = await listenFrom(proxied, '127.0.0.2');
    await a.until(superseded, 3000, "A's first listen superseded");
    assert.equal(superseded(b) || superseded(c) || superseded(a2), false);
    await eventually(() => server.endpoint.stats.streams === 3, 3000, 'three streams: a2, b, c');
    for (const conn of [a, a2, b, c]) conn.destroy();
  });
});

test('trustProxy: 1 behind one proxy: maxSessionsPerPrincipal counts per real client; a new session evicts only its own client\'s oldest', async () => {
  await behindProxy({ trustProxy: 1, maxSessionsPerPrincipal: 1 }, async ({ proxied }) => {
    const a1 = await initializeFrom(proxied, '127.0.0.2');
    const b1 = await initializeFrom(proxied, '127.0.0.3');
    assert.equal(await sessionStatus(proxied, '127.0.0.2', a1), 200);
    assert.equal(await sessionStatus(proxied, '127.0.0.3', b1), 200);
    // Another client's session is not its own: 403, as between any two principals.
    assert.equal(await sessionStatus(proxied, '127.0.0.3', a1), 403);
    const a2 = await initializeFrom(proxied, '127.0.0.2');
    assert.equal(await sessionStatus(proxied, '127.0.0.2', a1), 404, "A's first session ended by A's second");
    assert.equal(await sessionStatus(proxied, '127.0.0.2', a2), 200);
    assert.equal(await sessionStatus(proxied, '127.0.0.3', b1), 200, "B's session untouched");
  });
});

test('X-Forwarded-For sent straight to a server without trustProxy changes nothing', async () => {
  await withEndpoint({ methods, maxListensPerPrincipal: 1 }, async ({ url }) => {
    assert.equal(await whoami(url, '127.0.0.2', { 'x-forwarded-for': '203.0.113.7' }), 'addr:127.0.0.2');
    const a = await listenFrom(url, '127.0.0.2', { 'x-forwarded-for': '203.0.113.1' });
    const b = await listenFrom(url, '127.0.0.2', { 'x-forwarded-for': '203.0.113.2' });
    await a.until(superseded, 3000, 'the first listen superseded: both are 127.0.0.2');
    a.destroy();
    b.destroy();
  });
});

test('behind a trusted proxy, what a client writes in X-Forwarded-For itself is ignored beyond the trusted hops', async () => {
  for (const trustProxy of [1, '127.0.0.1', ['127.0.0.1/32']] as const) {
    await behindProxy({ trustProxy, maxListensPerPrincipal: 1 }, async ({ proxied, server }) => {
      const what = `trustProxy ${JSON.stringify(trustProxy)}`;
      assert.equal(await whoami(proxied, '127.0.0.2', { 'x-forwarded-for': '127.0.0.3' }), 'addr:127.0.0.2', what);
      assert.equal(await whoami(proxied, '127.0.0.2', { 'x-forwarded-for': '198.51.100.9, 127.0.0.3' }), 'addr:127.0.0.2', what);
      // Posing as C does not touch C's stream: the spoofer supersedes its own.
      const c = await listenFrom(proxied, '127.0.0.3');
      const spoofer = await listenFrom(proxied, '127.0.0.2', { 'x-forwarded-for': '127.0.0.3' });
      const again = await listenFrom(proxied, '127.0.0.2', { 'x-forwarded-for': '127.0.0.3' });
      await spoofer.until(superseded, 3000, `the spoofer's first listen superseded by its second (${what})`);
      assert.equal(superseded(c), false, what);
      assert.equal(server.endpoint.stats.principals, 2, what);
      for (const conn of [c, spoofer, again]) conn.destroy();
    });
  }
});

test('trustProxy as the proxies\' addresses: a client that reaches the server directly cannot forward for anyone', async () => {
  await behindProxy({ trustProxy: ['127.0.0.1'] }, async ({ proxied, server }) => {
    assert.equal(await whoami(proxied, '127.0.0.2'), 'addr:127.0.0.2');
    assert.equal(await whoami(server.url, '127.0.0.2', { 'x-forwarded-for': '127.0.0.3' }), 'addr:127.0.0.2');
  });
});

test("trustProxy: 'loopback' behind two hops on loopback: the addresses the outer one forwarded are the clients, IPv6 by /64", async () => {
  // The test plays an outer proxy on 127.0.0.2 that forwards for several clients; the proxy process appends 127.0.0.2.
  await behindProxy({ trustProxy: 'loopback', maxListensPerPrincipal: 1 }, async ({ proxied, server }) => {
    const from = (client: string) => ({ 'x-forwarded-for': client });
    assert.equal(await whoami(proxied, '127.0.0.2', from('203.0.113.1')), 'addr:203.0.113.1');
    assert.equal(await whoami(proxied, '127.0.0.2', from('2001:db8::1')), 'addr:2001:db8:0:0::/64');
    const clients = ['203.0.113.1', '203.0.113.2', '2001:db8::1', '2001:db8:0:1::1'];
    const conns = [];
    for (const client of clients) conns.push(await listenFrom(proxied, '127.0.0.2', from(client)));
    assert.equal(server.endpoint.stats.principals, 4);
    // Same /64: one principal, so this one supersedes the 2001:db8::1 listen.
    const sameNet = await listenFrom(proxied, '127.0.0.2', from('2001:db8::2'));
    await conns[2]!.until(superseded, 3000, 'the 2001:db8::1 listen superseded by 2001:db8::2');
    assert.deepEqual(conns.map(superseded), [false, false, true, false]);
    for (const conn of [...conns, sameNet]) conn.destroy();
  });
});

/** `whoami` through `webHandler`, in process, as a connection from `peer` with `forwardedFor`. */
async function webWhoami(endpoint: McpEndpoint, peer: string, forwardedFor?: string): Promise<{ principal: string; address: string }> {
  const headers: Record<string, string> = { ...LISTEN_HEADERS, ...(forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor }) };
  const response = await webHandler(endpoint)(new Request('http://127.0.0.1/mcp', { method: 'POST', headers, body: rpcBody(1, 'whoami') }), { remoteAddress: peer });
  return ((await response.json()) as { result: { principal: string; address: string } }).result;
}

test('webHandler: the same trust (the endpoint resolves the address for both adapters), and hooks see the client address', async () => {
  const hub = new Hub();
  const trusting = new McpEndpoint({ hub, methods, trustProxy: 'loopback' });
  const plain = new McpEndpoint({ hub, methods });
  try {
    assert.deepEqual(await webWhoami(trusting, '127.0.0.1', '198.51.100.7, 203.0.113.9'), { principal: 'addr:203.0.113.9', address: '203.0.113.9' });
    assert.deepEqual(await webWhoami(trusting, '::ffff:127.0.0.1', '203.0.113.9'), { principal: 'addr:203.0.113.9', address: '203.0.113.9' });
    // A peer that is not a trusted proxy is the client, whatever it forwards.
    assert.deepEqual(await webWhoami(trusting, '198.51.100.1', '203.0.113.9'), { principal: 'addr:198.51.100.1', address: '198.51.100.1' });
    assert.deepEqual(await webWhoami(trusting, '127.0.0.1'), { principal: 'addr:127.0.0.1', address: '127.0.0.1' });
    // A load balancer that appends address:port: the port is no part of the client.
    assert.equal((await webWhoami(trusting, '127.0.0.1', '203.0.113.9:4711')).principal, 'addr:203.0.113.9');
    assert.equal((await webWhoami(trusting, '127.0.0.1', '[2001:db8::5]:4711')).principal, 'addr:2001:db8:0:0::/64');
    assert.deepEqual(await webWhoami(plain, '127.0.0.1', '203.0.113.9'), { principal: 'addr:127.0.0.1', address: '127.0.0.1' });
  } finally {
    trusting.close();
    plain.close();
  }
});

test('authenticate sees the client address too', async () => {
  const seen: (string | undefined)[] = [];
  const authenticate = (request: EndpointRequest) => {
    seen.push(request.remoteAddress);
    return { principal: 'sub:someone', scopes: new Set<string>() };
  };
  const endpoint = new McpEndpoint({ hub: new Hub(), methods, authenticate, trustProxy: 1 });
  try {
    await webWhoami(endpoint, '10.0.0.2', '203.0.113.9');
    assert.deepEqual(seen, ['203.0.113.9']);
  } finally {
    endpoint.close();
  }
});

test('trustProxy values the library cannot use throw InvalidOptionError naming trustProxy; true is refused with the reason', () => {
  const hub = new Hub();
  for (const value of [true, -1, 1.5, Number.NaN, '', 'loopback,', ['bogus'], ['10.0.0.0/33'], [''], [1], {}]) {
    assert.throws(
      () => new McpEndpoint({ hub, trustProxy: value as never }),
      (error: unknown) => error instanceof InvalidOptionError && error.info.option === 'trustProxy',
      JSON.stringify(value),
    );
  }
  assert.throws(() => new McpEndpoint({ hub, trustProxy: true as never }), /lets every client choose its own address/);
  for (const value of [0, 2, 'loopback', 'loopback, 10.0.0.0/8', ['uniquelocal', 'fd00::/8'], [], () => false]) {
    new McpEndpoint({ hub, trustProxy: value }).close();
  }
});

test.run();
