// Issue 21, item 4: one Host per request. RFC 9112 §3.2: "A server MUST respond with a 400 (Bad
// Request) status code to any HTTP/1.1 request message that lacks a Host header field and to any
// request message that contains more than one Host header field line or a Host header field with
// an invalid field value." node:http keeps the first of two Host lines, a proxy may use the last:
// with `allowedHosts`, `Host: 127.0.0.1` then `Host: evil.example` would pass the DNS-rebinding
// check here and reach the foreign name there. So two Host lines, in either order, and a Host
// value that is a list (how Fetch `Headers` join two lines) get HTTP 400 with JSON-RPC -32600,
// before anything else and whether `allowedHosts` is set or not. One Host is served as before.
import { strict as assert } from 'node:assert';
import type { AddressInfo } from 'node:net';
import { test } from 'uvu';
import { localhostHosts } from '../adapters/http/hostCheck.js';
import { McpEndpoint } from '../adapters/http/endpoint.js';
import type { McpEndpointOptions } from '../adapters/http/options.js';
import { webHandler } from '../adapters/http/web.js';
import { Hub } from '../lib/hub.js';
import { channels } from '../lib/telemetry.js';
import { startEndpoint } from './helpers/http.js';
import { serveHono, serveSdkRouter } from './helpers/fronts.js';
import { RawConnection } from './helpers/raw.js';

const DISCOVER = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'server/discover' });

const refusal = (hosts: string) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id: null,
    error: { code: -32600, message: `bad request: a request must carry exactly one Host header with one value (RFC 9112, section 3.2); got ${JSON.stringify(hosts)}` },
  });

/** The exact bytes node:http sends for a JSON answer on a kept connection (`Date` as `<date>`). */
const kept = (statusLine: string, body: string) =>
  `HTTP/1.1 ${statusLine}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nDate: <date>\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\n\r\n${body}`;

/** A POST of `server/discover` with these Host lines (each `Name: value`), sent whole on a raw socket; the response as it came. */
async function withHostLines(port: number, hostLines: readonly string[], method = 'POST'): Promise<string> {
  const connection = await RawConnection.connect(port);
  try {
    connection.write(
      `${method} /mcp HTTP/1.1\r\n${hostLines.map((line) => `${line}\r\n`).join('')}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: ${DISCOVER.length}\r\n\r\n${DISCOVER}`,
    );
    return await connection.response();
  } finally {
    connection.destroy();
  }
}

for (const [label, options] of [
  ['without allowedHosts', {}],
  ['with allowedHosts', { allowedHosts: [...localhostHosts] }],
] as const satisfies readonly (readonly [string, Partial<McpEndpointOptions>])[]) {
  test(`nodeHandler ${label}: two Host lines in either order, or a Host list, get 400 -32600 before anything else; one Host is served`, async () => {
    let called = 0;
    const server = await startEndpoint({ ...options, methods: { 'server/discover': () => ({ called: ++called }) } });
    const { port } = server.server.address() as AddressInfo;
    const local = `127.0.0.1:${port}`;
    try {
      const cases: [string[], string, string?][] = [
        [[`Host: ${local}`, 'Host: evil.example'], `${local}, evil.example`],
        [['Host: evil.example', `Host: ${local}`], `evil.example, ${local}`],
        [[`Host: ${local}`, `Host: ${local}`], `${local}, ${local}`],
        [[`HOST: ${local}`, 'host: evil.example'], `${local}, evil.example`],
        [[`Host: ${local}, evil.example`], `${local}, evil.example`],
        [[`Host: ${local}`, 'Host:'], `${local}, `],
        // Before the method is looked at (PUT would be 405).
        [[`Host: ${local}`, 'Host: evil.example'], `${local}, evil.example`, 'PUT'],
      ];
      for (const [lines, joined, method] of cases) {
        assert.equal(await withHostLines(port, lines, method), kept('400 Bad Request', refusal(joined)), `${method ?? 'POST'} with ${JSON.stringify(lines)}`);
      }
      assert.equal(called, 0, 'no refused request reached a method');
      assert.equal(await withHostLines(port, [`Host: ${local}`]), kept('200 OK', JSON.stringify({ jsonrpc: '2.0', id: 1, result: { called: 1 } })));
    } finally {
      await server.close();
    }
  });
}

test('webHandler: a Host that Headers joined from two lines gets 400 -32600; one Host is served', async () => {
  const hub = new Hub();
  const endpoint = new McpEndpoint({ hub, allowedHosts: [...localhostHosts] });
  const handle = webHandler(endpoint);
  const post = (hosts: readonly string[]) => {
    const headers = new Headers({ 'content-type': 'application/json', accept: 'application/json, text/event-stream' });
    for (const host of hosts) headers.append('host', host);
    return handle(new Request('http://127.0.0.1/mcp', { method: 'POST', headers, body: DISCOVER }), { remoteAddress: '127.0.0.1' });
  };
  try {
    for (const [hosts, joined] of [
      [['127.0.0.1', 'evil.example'], '127.0.0.1, evil.example'],
      [['evil.example', '127.0.0.1'], 'evil.example, 127.0.0.1'],
    ] as const) {
      const response = await post(hosts);
      assert.equal(response.status, 400);
      assert.equal(await response.text(), refusal(joined));
    }
    const one = await post(['127.0.0.1']);
    assert.equal(one.status, 200);
    await one.text();
  } finally {
    endpoint.close();
    hub.close();
  }
});

test('webHandler on @hono/node-server: two Host lines on a raw socket get 400 -32600', async () => {
  const hub = new Hub();
  const endpoint = new McpEndpoint({ hub, allowedHosts: [...localhostHosts] });
  const { port, close } = await serveHono(endpoint);
  const local = `127.0.0.1:${port}`;
  try {
    for (const lines of [[`Host: ${local}`, 'Host: evil.example'], ['Host: evil.example', `Host: ${local}`]]) {
      const answer = await withHostLines(port, lines);
      assert.match(answer, /^HTTP\/1\.1 400 Bad Request\r\n/, lines.join(' '));
      assert.equal(answer.slice(answer.indexOf('\r\n\r\n') + 4), refusal(`${lines[0]!.slice(6)}, ${lines[1]!.slice(6)}`));
    }
    assert.match(await withHostLines(port, [`Host: ${local}`]), /^HTTP\/1\.1 200 OK\r\n/);
  } finally {
    await close();
    endpoint.close();
    hub.close();
  }
});

test('sdkRouter: two Host lines get the endpoint\'s 400 on both faces, even for requests the SDK would answer; one Host reaches the SDK', async () => {
  const hub = new Hub();
  const endpoint = new McpEndpoint({ hub });
  const { port, router, close } = await serveSdkRouter(endpoint);
  const local = `127.0.0.1:${port}`;
  const errors: unknown[] = [];
  const onError = (event: unknown) => errors.push(event);
  channels.error.subscribe(onError);
  try {
    assert.equal(await withHostLines(port, [`Host: ${local}`, 'Host: evil.example']), kept('400 Bad Request', refusal(`${local}, evil.example`)));
    const headers = new Headers({ 'content-type': 'application/json', accept: 'application/json, text/event-stream' });
    headers.append('host', local);
    headers.append('host', 'evil.example');
    const fetched = await router.fetch(new Request(`http://${local}/mcp`, { method: 'POST', headers, body: DISCOVER }), { remoteAddress: '127.0.0.1' });
    assert.equal(fetched.status, 400);
    assert.equal(await fetched.text(), refusal(`${local}, evil.example`));
    // One Host: the SDK answers server/discover.
    assert.match(await withHostLines(port, [`Host: ${local}`]), /^HTTP\/1\.1 200 OK\r\n/);
    assert.deepEqual(errors, [], 'nothing reported on channels.error');
  } finally {
    channels.error.unsubscribe(onError);
    await close();
    endpoint.close();
    hub.close();
  }
});

test.run();
