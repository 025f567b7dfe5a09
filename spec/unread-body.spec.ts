// Issue 21, item 2: a request answered before its body has arrived does not keep its connection.
//
// Each early answer (401, 403, 404, 405, 406, 413, 400, 503, 204) is provoked on a raw loopback
// socket by a request that declares a 100 000-byte body and then sends one byte every 25 ms (the
// whole body would take 40 minutes). The answer must be exactly the documented one plus
// `Connection: close`, and the server must close the connection as soon as it is out: within
// 300 ms of the answer, which is well before the trickle ends and before the 500 ms that
// @hono/node-server's own cleanup would take. Without this, node:http keeps reading and discarding
// the body after the answer, for as long as it trickles, and one client holds any number of sockets.
//
// A body that has arrived in full, read or not, keeps its keep-alive connection: the same socket
// serves the next request (so "always close" cannot pass).
import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';
import { localhostHosts } from '../adapters/http/hostCheck.js';
import { McpEndpoint } from '../adapters/http/endpoint.js';
import type { McpEndpointOptions } from '../adapters/http/options.js';
import { nodeHandler } from '../adapters/http/node.js';
import { startReferenceServer } from '../adapters/reference/server.js';
import { webHandler } from '../adapters/http/web.js';
import { AuthError } from '../lib/auth.js';
import type { EndpointRequest } from '../lib/context.js';
import { Hub } from '../lib/hub.js';
import { LISTEN_HEADERS, listenBody, SseConnection, startEndpoint } from './helpers/http.js';
import { INIT_HEADERS, initialize } from './helpers/legacy.js';
import { serveHono, serveSdkRouter } from './helpers/fronts.js';
import { RawConnection, withoutDate } from './helpers/raw.js';

/** The body every early-answer request declares, in bytes. */
const DECLARED = 100_000;
/** Milliseconds between two trickled body bytes. */
const TRICKLE_MS = 25;
/** Milliseconds after the answer within which the server must have closed the connection. */
const PROMPT_MS = 300;

const TOKEN = 'Bearer good';
const authenticate = (request: EndpointRequest) => {
  if (request.header('authorization') !== TOKEN) throw new AuthError('send Authorization: Bearer <token>');
  return { principal: 'sub:a', scopes: new Set<string>() };
};

/** The exact bytes of a JSON answer that closes its connection, as node:http writes it (`Date` as `<date>`). */
function closingJson(statusLine: string, body: unknown, extra: readonly (readonly [string, string])[] = []): string {
  const text = JSON.stringify(body);
  const headers = [['Content-Type', 'application/json'], ...extra, ['Content-Length', String(Buffer.byteLength(text))], ['Connection', 'close'], ['Date', '<date>']];
  return `HTTP/1.1 ${statusLine}\r\n${headers.map(([name, value]) => `${name}: ${value}\r\n`).join('')}\r\n${text}`;
}

/** `text` as the one chunk of a chunked body, then the last chunk. */
const chunked = (text: string) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n0\r\n\r\n`;

const rpcError = (code: number, message: string, id: number | null = null) => ({ jsonrpc: '2.0', id, error: { code, message } });

/**
 * Sends `head` (a request head, ending in its blank line) on a raw socket to `port`, trickles the
 * body one byte at a time, and returns what came back (`Date` as `<date>`) and whether the server
 * closed the connection within {@link PROMPT_MS} of the first byte of its answer.
 */
async function answeredEarly(port: number, head: string, byte = 'x'): Promise<{ text: string; closed: boolean }> {
  const connection = await RawConnection.connect(port);
  try {
    connection.write(head);
    connection.trickle(TRICKLE_MS, byte);
    await connection.received(2000);
    const closed = await connection.closesWithin(PROMPT_MS);
    return { text: withoutDate(connection.text), closed };
  } finally {
    connection.destroy();
  }
}

/** A request head declaring a {@link DECLARED}-byte body. */
const declaring = (method: string, target: string, headers: Readonly<Record<string, string>>, host = '127.0.0.1') =>
  `${method} ${target} HTTP/1.1\r\nHost: ${host}\r\n${Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('')}Content-Length: ${DECLARED}\r\n\r\n`;

/** Asserts that a whole response is a 200 that keeps its connection. */
function assertServedAndKept(response: string): void {
  assert.match(response, /^HTTP\/1\.1 200 OK\r\n/);
  assert.match(response, /\r\nConnection: keep-alive\r\n/);
}

async function assertClosesEarly(port: number, label: string, head: string, expected: string): Promise<void> {
  const { text, closed } = await answeredEarly(port, head);
  assert.equal(text, expected, label);
  assert.ok(closed, `${label}: the connection is still open ${PROMPT_MS} ms after the answer`);
}

test('nodeHandler: every answer given before the body arrived says Connection: close and ends the connection', async () => {
  const options: Partial<McpEndpointOptions> = { authenticate, allowedHosts: [...localhostHosts], maxBodyBytes: 1000, bodyTimeout: 60_000, maxStreams: 1 };
  const server = await startEndpoint(options);
  // node's own limit on receiving a request is not what closes these connections.
  server.server.requestTimeout = 0;
  const { port } = server.server.address() as AddressInfo;
  const auth = { Authorization: TOKEN };
  const json = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...auth };
  let holder: SseConnection | undefined;
  try {
    const { sessionId } = await initialize(server.url, { headers: { authorization: TOKEN } });
    assert.ok(sessionId, 'a legacy session to address');
    const session = { 'Mcp-Session-Id': sessionId, 'MCP-Protocol-Version': '2025-11-25' };
    const cases: [string, string, string][] = [
      ['401 without a token', declaring('POST', '/mcp', { 'Content-Type': 'application/json' }), closingJson('401 Unauthorized', rpcError(-32600, 'unauthorized: send Authorization: Bearer <token>'), [['WWW-Authenticate', 'Bearer']])],
      ['403 for a foreign Host', declaring('POST', '/mcp', json, 'evil.example'), closingJson('403 Forbidden', rpcError(-32600, 'forbidden: Host "evil.example" is not allowed'))],
      ['404 for an unknown session', declaring('POST', '/mcp', { ...json, 'Mcp-Session-Id': 'nope', 'MCP-Protocol-Version': '2025-11-25' }), closingJson('404 Not Found', rpcError(-32001, 'session not found: initialize a new session'))],
      ['405 for PUT', declaring('PUT', '/mcp', json), closingJson('405 Method Not Allowed', rpcError(-32600, 'method PUT is not allowed; use POST, GET, DELETE'), [['Allow', 'POST, GET, DELETE']])],
      ['406 for a session GET without SSE in Accept', declaring('GET', '/mcp', { ...auth, ...session, Accept: 'application/json' }), closingJson('406 Not Acceptable', rpcError(-32600, 'the GET stream requires Accept: text/event-stream'))],
      ['413 for a declared size over maxBodyBytes', declaring('POST', '/mcp', json), closingJson('413 Payload Too Large', rpcError(-32600, 'request body exceeds 1000 bytes'))],
      [
        '400 for an unsupported MCP-Protocol-Version',
        declaring('POST', '/mcp', { ...json, 'MCP-Protocol-Version': '1999-01-01' }),
        closingJson('400 Bad Request', {
          jsonrpc: '2.0',
          id: null,
          error: { code: -32022, message: 'unsupported MCP-Protocol-Version "1999-01-01"; this server supports 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26', data: { supported: ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26'], requested: '1999-01-01' } },
        }),
      ],
      ['400 for a GET without a session', declaring('GET', '/mcp', { ...auth, Accept: 'text/event-stream' }), closingJson('400 Bad Request', rpcError(-32600, 'Mcp-Session-Id header is required (send initialize first)'))],
      ['204 for a DELETE of the session', declaring('DELETE', '/mcp', { ...auth, ...session }), 'HTTP/1.1 204 No Content\r\nConnection: close\r\nDate: <date>\r\n\r\n'],
    ];
    for (const [label, head, expected] of cases) await assertClosesEarly(port, label, head, expected);

    // 503: the one stream slot is held by a listen; a new session's GET stream is refused unread.
    holder = await SseConnection.open(server.url, listenBody(1, { toolsListChanged: true }), { ...LISTEN_HEADERS, authorization: TOKEN });
    assert.equal(holder.status, 200);
    const second = await initialize(server.url, { headers: { authorization: TOKEN } });
    await assertClosesEarly(
      port,
      '503 at stream capacity',
      declaring('GET', '/mcp', { ...auth, 'Mcp-Session-Id': second.sessionId, 'MCP-Protocol-Version': '2025-11-25', Accept: 'text/event-stream' }),
      closingJson(
        '503 Service Unavailable',
        { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'server is at its stream capacity (maxStreams); retry later', data: { retryAfterMs: 5000 } } },
        [['Retry-After', '5']],
      ),
    );
  } finally {
    holder?.destroy();
    await server.close();
  }
});

test('nodeHandler: 413 counted while a chunked body is read also ends the connection', async () => {
  const server = await startEndpoint({ maxBodyBytes: 1000, bodyTimeout: 60_000 });
  server.server.requestTimeout = 0;
  const { port } = server.server.address() as AddressInfo;
  try {
    // No Content-Length: 1001 bytes in a first chunk, then a chunk of 100 000 announced and trickled.
    const head =
      'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n' +
      `3e9\r\n${' '.repeat(1001)}\r\n186a0\r\n`;
    await assertClosesEarly(port, '413 counted', head, closingJson('413 Payload Too Large', rpcError(-32600, 'request body exceeds 1000 bytes')));
  } finally {
    await server.close();
  }
});

test('nodeHandler: a body that arrived in full keeps its keep-alive connection, read or not, whole or in pieces', async () => {
  const server = await startEndpoint({ authenticate, bodyTimeout: 60_000 });
  const { port } = server.server.address() as AddressInfo;
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'server/discover' });
  const head = (headers: string) =>
    `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n${headers}Content-Length: ${body.length}\r\n\r\n`;
  const connection = await RawConnection.connect(port);
  try {
    // Read in full: 200, kept.
    connection.write(head(`Authorization: ${TOKEN}\r\n`) + body);
    assertServedAndKept(await connection.response());
    // Refused unread (401), but the whole body came with the head: kept.
    connection.write(head('') + body);
    const refused = await connection.response();
    assert.match(refused, /^HTTP\/1\.1 401 Unauthorized\r\n/);
    assert.match(refused, /\r\nConnection: keep-alive\r\n/);
    // Read in full as it arrives in three pieces: 200, kept.
    const whole = head(`Authorization: ${TOKEN}\r\n`) + body;
    for (const piece of [whole.slice(0, whole.length - 30), whole.slice(-30, -10), whole.slice(-10)]) {
      connection.write(piece);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assertServedAndKept(await connection.response());
    assert.equal(await connection.closesWithin(100), false, 'the connection stays open');
  } finally {
    connection.destroy();
    await server.close();
  }
});

test('nodeHandler on HTTP/2 (compat API): an early answer needs no Connection header (the stream is reset) and sends none', async () => {
  const hub = new Hub();
  const endpoint = new McpEndpoint({ hub, allowedHosts: [...localhostHosts] });
  const server = http2.createServer(nodeHandler(endpoint) as unknown as Parameters<typeof http2.createServer>[0]);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  // node's compat API drops a Connection header with a process warning (once per process).
  const warnings: Error[] = [];
  const onWarning = (warning: Error) => warnings.push(warning);
  process.on('warning', onWarning);
  const client = http2.connect(`http://127.0.0.1:${port}`);
  try {
    const stream = client.request({ ':method': 'PUT', ':path': '/mcp', host: 'localhost', 'content-length': String(DECLARED) });
    const trickle = setInterval(() => stream.writable && stream.write('x'), TRICKLE_MS);
    const status = await new Promise<unknown>((resolve) => stream.once('response', (headers) => resolve(headers[':status'])));
    stream.resume();
    const closed = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), PROMPT_MS);
      stream.once('close', () => {
        clearTimeout(timer);
        resolve(true);
      });
    });
    clearInterval(trickle);
    assert.equal(status, 405);
    assert.ok(closed, 'the stream is closed once the answer is out');
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(warnings.map((warning) => warning.message), []);
  } finally {
    process.off('warning', onWarning);
    client.close();
    endpoint.close();
    await new Promise((resolve) => server.close(resolve));
    hub.close();
  }
});

// The Fetch adapter: the endpoint's answer tells whether the body was read to its end.

test('webHandler: an answer given before the body was read cancels the body and says Connection: close; a body read in full does not', async () => {
  const hub = new Hub();
  const endpoint = new McpEndpoint({ hub, authenticate, allowedHosts: [...localhostHosts], maxBodyBytes: 1000 });
  const handle = webHandler(endpoint);
  /** A POST whose body never ends, with the headers given; `cancelled` once the body is cancelled. */
  const endless = (method: string, headers: Record<string, string>) => {
    const state = { cancelled: false };
    const upload = new ReadableStream<Uint8Array>({
      pull: (controller) => controller.enqueue(new Uint8Array(100).fill(0x20)),
      cancel: () => void (state.cancelled = true),
    });
    const init: RequestInit & { duplex: 'half' } = { method, headers, body: upload, duplex: 'half' };
    return { request: new Request('http://127.0.0.1/mcp', init), state };
  };
  const json = { host: '127.0.0.1', 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  try {
    for (const [label, method, headers, status] of [
      ['401', 'POST', json, 401],
      ['403', 'POST', { ...json, authorization: TOKEN, host: 'evil.example' }, 403],
      ['405', 'PUT', { ...json, authorization: TOKEN }, 405],
      ['413 declared', 'POST', { ...json, authorization: TOKEN, 'content-length': String(DECLARED) }, 413],
      ['413 counted', 'POST', { ...json, authorization: TOKEN }, 413],
    ] as const) {
      const { request, state } = endless(method, headers);
      const response = await handle(request);
      assert.equal(response.status, status, label);
      assert.equal(response.headers.get('connection'), 'close', label);
      await response.text();
      await new Promise((resolve) => setImmediate(resolve));
      assert.ok(state.cancelled, `${label}: the unread body is cancelled`);
    }
    const read = await handle(new Request('http://127.0.0.1/mcp', { method: 'POST', headers: { ...json, authorization: TOKEN }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'server/discover' }) }));
    assert.equal(read.status, 200);
    assert.equal(read.headers.get('connection'), null, 'a body read to its end keeps the connection');
    await read.text();
  } finally {
    endpoint.close();
    hub.close();
  }
});

test('webHandler on @hono/node-server: an early answer closes the connection at once; a full body keeps it', async () => {
  const hub = new Hub();
  const endpoint = new McpEndpoint({ hub, allowedHosts: [...localhostHosts], bodyTimeout: 60_000 });
  const { port, close } = await serveHono(endpoint);
  try {
    const foreign = await answeredEarly(port, declaring('POST', '/mcp', { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' }, 'evil.example'));
    const body = JSON.stringify(rpcError(-32600, 'forbidden: Host "evil.example" is not allowed'));
    assert.equal(foreign.text, `HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nConnection: close\r\nDate: <date>\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    assert.ok(foreign.closed, `the connection is still open ${PROMPT_MS} ms after the answer`);

    const discover = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'server/discover' });
    const connection = await RawConnection.connect(port);
    try {
      for (let i = 0; i < 2; i++) {
        connection.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: ${discover.length}\r\n\r\n${discover}`);
        assertServedAndKept(await connection.response());
      }
      assert.equal(await connection.closesWithin(100), false, 'the connection stays open');
    } finally {
      connection.destroy();
    }
  } finally {
    await close();
    endpoint.close();
    hub.close();
  }
});

test('sdkRouter (node face): answers the router or the SDK gives before the body arrived close the connection', async () => {
  const hub = new Hub();
  const endpoint = new McpEndpoint({ hub, bodyTimeout: 60_000 });
  const { port, close } = await serveSdkRouter(endpoint, 1000);
  try {
    // The router's own refusal of a declared size over its maxBodyBytes.
    await assertClosesEarly(
      port,
      'sdkRouter 413',
      declaring('POST', '/mcp', { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' }),
      'HTTP/1.1 413 Payload Too Large\r\ncontent-type: application/json\r\nConnection: close\r\nDate: <date>\r\nTransfer-Encoding: chunked\r\n\r\n' +
        chunked(JSON.stringify(rpcError(-32600, 'request body exceeds 1000 bytes'))),
    );
    // Requests the router hands to the SDK unread (not JSON, not POST): whatever the SDK answers.
    for (const [label, method, headers] of [
      ['a POST that is not JSON', 'POST', { 'Content-Type': 'text/plain', Accept: 'application/json, text/event-stream' }],
      ['a PUT', 'PUT', { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' }],
    ] as const) {
      const { text, closed } = await answeredEarly(port, declaring(method, '/mcp', headers));
      assert.match(text, /^HTTP\/1\.1 4\d\d /, label);
      assert.match(text, /\r\nConnection: close\r\n/, label);
      assert.ok(closed, `${label}: the connection is still open ${PROMPT_MS} ms after the answer`);
    }
  } finally {
    await close();
    endpoint.close();
    hub.close();
  }
});

// The reference server and the CLI answer some requests themselves.

test('reference server: its own 404 and the endpoint early answers close the connection (requestTimeout 0)', async () => {
  const base = await mkdtemp(path.join(tmpdir(), 'mcp-rx-unread-'));
  const server = await startReferenceServer({ dir: path.join(base, 'data'), port: 0, tokenSecret: 'test-secret-of-enough-length-for-hs256' });
  const { port } = server.server.address() as AddressInfo;
  try {
    const notFound = 'not found: the MCP endpoint is /mcp\n';
    await assertClosesEarly(
      port,
      'reference 404',
      declaring('POST', '/other', { 'Content-Type': 'application/json' }),
      `HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nConnection: close\r\nDate: <date>\r\nTransfer-Encoding: chunked\r\n\r\n${chunked(notFound)}`,
    );
    // A 404 whose body came with its head keeps the connection.
    const connection = await RawConnection.connect(port);
    try {
      connection.write('POST /other HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}');
      await connection.received();
      assert.equal(await connection.closesWithin(100), false, 'a 404 to a body that arrived keeps its connection');
      assert.match(connection.text, /^HTTP\/1\.1 404 Not Found\r\nContent-Type: text\/plain\r\nDate: [^\r]*\r\nConnection: keep-alive\r\n/);
    } finally {
      connection.destroy();
    }
    await assertClosesEarly(
      port,
      'reference 401',
      declaring('POST', '/mcp', { ...INIT_HEADERS }),
      closingJson('401 Unauthorized', rpcError(-32600, 'unauthorized: send Authorization: Bearer <token>'), [['WWW-Authenticate', 'Bearer']]),
    );
  } finally {
    await server.close();
    await rm(base, { recursive: true, force: true });
  }
});

test('CLI serve --metrics-port: the metrics server closes connections it answers before their body', async () => {
  const cli = fileURLToPath(new URL('../dist/adapters/cli.js', import.meta.url));
  const base = await mkdtemp(path.join(tmpdir(), 'mcp-rx-unread-cli-'));
  const child = spawn(process.execPath, [cli, 'serve', '--dir', path.join(base, 'data'), '--demo', '--port', '0', '--metrics-port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`no metrics URL within 10 s; stdout: ${out}`)), 10_000);
      child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
        out += chunk;
        const match = /metrics on http:\/\/127\.0\.0\.1:(\d+)\/metrics/.exec(out);
        if (match !== null) {
          clearTimeout(timer);
          resolve(Number(match[1]));
        }
      });
    });
    const notFound = 'not found: metrics are at GET /metrics\n';
    await assertClosesEarly(
      port,
      'metrics 404',
      declaring('POST', '/other', {}),
      `HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nConnection: close\r\nDate: <date>\r\nTransfer-Encoding: chunked\r\n\r\n${chunked(notFound)}`,
    );
    const metrics = await answeredEarly(port, declaring('GET', '/metrics', {}));
    assert.match(metrics.text, /^HTTP\/1\.1 200 OK\r\nContent-Type: text\/plain; version=0\.0\.4; charset=utf-8\r\nConnection: close\r\n/);
    assert.ok(metrics.closed, `the metrics connection is still open ${PROMPT_MS} ms after the answer`);
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('close', resolve));
    await rm(base, { recursive: true, force: true });
  }
});

test.run();
