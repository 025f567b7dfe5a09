// Issue 21, item 3: bytes that are not UTF-8 are a parse error (HTTP 400, JSON-RPC -32700), not a
// size error; `maxBodyBytes` counts the bytes received, never the text they decode to (where every
// invalid byte would have become a 3-byte U+FFFD).
//
// Every body shape the endpoint reads: a node `IncomingMessage` (over a raw loopback socket, with
// Content-Length and chunked), a Fetch `ReadableStream` (webHandler), a `Uint8Array` and a string
// (`EndpointRequest.body` in process). Response bodies are compared byte for byte.
import { strict as assert } from 'node:assert';
import type { AddressInfo } from 'node:net';
import { test } from 'uvu';
import { McpEndpoint } from '../adapters/http/endpoint.js';
import type { McpEndpointOptions } from '../adapters/http/options.js';
import { webHandler } from '../adapters/http/web.js';
import type { EndpointRequest } from '../lib/context.js';
import { Hub } from '../lib/hub.js';
import { startEndpoint } from './helpers/http.js';
import { RawConnection } from './helpers/raw.js';

const LIMIT = 1000;
const options: Partial<McpEndpointOptions> = { maxBodyBytes: LIMIT, methods: { echo: (params) => ({ text: params?.text }) } };

const NOT_UTF8 = '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: the body is not valid UTF-8"}}';
const NOT_JSON = '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: the body is not valid JSON"}}';
const tooLarge = (limit: number) => `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"request body exceeds ${limit} bytes"}}`;

const bytes = (...parts: (string | number[])[]) => Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(part, 'utf8') : Buffer.from(part))));

/** An `echo` request of exactly `size` bytes of UTF-8, its text made of 3-, 2- and 1-byte characters. */
function echoOf(size: number): { body: Buffer; text: string } {
  const frame = (text: string) => `{"jsonrpc":"2.0","id":1,"method":"echo","params":{"text":"${text}"}}`;
  const room = size - Buffer.byteLength(frame(''));
  const text = '€'.repeat(Math.floor(room / 3)) + 'é'.repeat(room % 3 === 2 ? 1 : 0) + 'a'.repeat(room % 3 === 1 ? 1 : 0);
  const body = Buffer.from(frame(text), 'utf8');
  assert.equal(body.length, size);
  return { body, text };
}

const echoed = (text: string) => JSON.stringify({ jsonrpc: '2.0', id: 1, result: { text } });

/** Bodies that are not UTF-8, each with a valid JSON-RPC shape around the bad bytes. */
const invalid: [string, Buffer][] = [
  ['400 000 bytes of 0xFF', Buffer.alloc(400_000, 0xff)],
  ['a 500 KB ping padded with lone 0xC3', bytes('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"', Array(500_000).fill(0xc3), '"}}')],
  ['an overlong "/" (C0 AF)', bytes('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"p":"', [0xc0, 0xaf], '"}}')],
  ['an encoded surrogate (ED A0 80)', bytes('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"p":"', [0xed, 0xa0, 0x80], '"}}')],
  ['a code point past U+10FFFF (F4 90 80 80)', bytes('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"p":"', [0xf4, 0x90, 0x80, 0x80], '"}}')],
  ['a truncated euro sign at the end (E2 82)', bytes('{"jsonrpc":"2.0","id":1,"method":"ping"}', [0xe2, 0x82])],
];

/** The status line and body of a whole response (head and body split at the blank line). */
function statusAndBody(response: string): { status: string; contentType: string | undefined; body: string } {
  const end = response.indexOf('\r\n\r\n');
  const head = response.slice(0, end);
  return {
    status: head.slice(0, head.indexOf('\r\n')),
    contentType: /\r\ncontent-type: ([^\r]*)/i.exec(head)?.[1],
    body: Buffer.from(response.slice(end + 4), 'latin1').toString('utf8'),
  };
}

/** POSTs `body` on a raw socket, with `Content-Length` or chunked in `chunks` pieces of these sizes. */
async function overSocket(port: number, body: Buffer, chunks?: readonly number[]): Promise<{ status: string; contentType: string | undefined; body: string }> {
  const connection = await RawConnection.connect(port);
  try {
    const head = 'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n';
    if (chunks === undefined) {
      connection.write(Buffer.concat([Buffer.from(`${head}Content-Length: ${body.length}\r\n\r\n`, 'latin1'), body]));
    } else {
      const pieces: Buffer[] = [Buffer.from(`${head}Transfer-Encoding: chunked\r\n\r\n`, 'latin1')];
      let at = 0;
      for (const size of chunks) {
        pieces.push(Buffer.from(`${size.toString(16)}\r\n`, 'latin1'), body.subarray(at, at + size), Buffer.from('\r\n', 'latin1'));
        at += size;
      }
      assert.equal(at, body.length, 'the chunks cover the body');
      pieces.push(Buffer.from('0\r\n\r\n', 'latin1'));
      connection.write(Buffer.concat(pieces));
    }
    return statusAndBody(await connection.response(5000));
  } finally {
    connection.destroy();
  }
}

test('nodeHandler: bytes that are not UTF-8 get 400 -32700, however many (never 413 under the limit), with Content-Length or chunked', async () => {
  const server = await startEndpoint({ methods: options.methods });
  const { port } = server.server.address() as AddressInfo;
  try {
    for (const [label, body] of invalid) {
      for (const chunks of [undefined, [Math.ceil(body.length / 2), Math.floor(body.length / 2)]]) {
        const answer = await overSocket(port, body, chunks);
        assert.deepEqual(answer, { status: 'HTTP/1.1 400 Bad Request', contentType: 'application/json', body: NOT_UTF8 }, `${label}${chunks === undefined ? '' : ', chunked'}`);
      }
    }
    // A BOM is valid UTF-8 but not JSON (RFC 8259 §8.1: senders must not add one): -32700 as before.
    const bom = await overSocket(port, bytes([0xef, 0xbb, 0xbf], '{"jsonrpc":"2.0","id":1,"method":"ping"}'));
    assert.deepEqual(bom, { status: 'HTTP/1.1 400 Bad Request', contentType: 'application/json', body: NOT_JSON });
  } finally {
    await server.close();
  }
});

test('nodeHandler: maxBodyBytes counts bytes received: exactly the limit in multibyte UTF-8 is served (split mid-character), one more byte is 413', async () => {
  const server = await startEndpoint(options);
  const { port } = server.server.address() as AddressInfo;
  try {
    const atLimit = echoOf(LIMIT);
    // 101 bytes into the body is the middle of a euro sign: the chunks split characters.
    for (const chunks of [undefined, [101, 400, LIMIT - 501]]) {
      assert.deepEqual(await overSocket(port, atLimit.body, chunks), { status: 'HTTP/1.1 200 OK', contentType: 'application/json', body: echoed(atLimit.text) });
    }
    const over = echoOf(LIMIT + 1);
    for (const chunks of [undefined, [101, 400, LIMIT - 500]]) {
      assert.deepEqual(await overSocket(port, over.body, chunks), { status: 'HTTP/1.1 413 Payload Too Large', contentType: 'application/json', body: tooLarge(LIMIT) });
    }
  } finally {
    await server.close();
  }
});

test('webHandler: a ReadableStream body that is not UTF-8 gets 400 -32700; exactly the limit is served, one more byte is 413', async () => {
  const hub = new Hub();
  const endpoint = new McpEndpoint({ hub, ...options, maxBodyBytes: 1_048_576 });
  const small = new McpEndpoint({ hub, ...options });
  const handle = webHandler(endpoint);
  const handleSmall = webHandler(small);
  /** A POST whose body arrives as a stream in these pieces (no Content-Length). */
  const request = (body: Buffer, sizes: readonly number[] = [body.length]) => {
    const pieces = [...sizes];
    let at = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull: (controller) => {
        const size = pieces.shift();
        if (size === undefined) return controller.close();
        controller.enqueue(new Uint8Array(body.subarray(at, (at += size))));
      },
    });
    const init: RequestInit & { duplex: 'half' } = { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: stream, duplex: 'half' };
    return new Request('http://127.0.0.1/mcp', init);
  };
  const answer = async (response: Response) => ({ status: response.status, contentType: response.headers.get('content-type'), body: await response.text() });
  const info = { remoteAddress: '127.0.0.1' };
  try {
    for (const [label, body] of invalid) {
      assert.deepEqual(await answer(await handle(request(body), info)), { status: 400, contentType: 'application/json', body: NOT_UTF8 }, label);
      assert.deepEqual(await answer(await handle(request(body, [1, body.length - 1]), info)), { status: 400, contentType: 'application/json', body: NOT_UTF8 }, `${label}, in two pieces`);
    }
    const atLimit = echoOf(LIMIT);
    assert.deepEqual(await answer(await handleSmall(request(atLimit.body, [101, LIMIT - 101]), info)), { status: 200, contentType: 'application/json', body: echoed(atLimit.text) });
    const over = echoOf(LIMIT + 1);
    assert.deepEqual(await answer(await handleSmall(request(over.body, [101, LIMIT - 100]), info)), { status: 413, contentType: 'application/json', body: tooLarge(LIMIT) });
  } finally {
    endpoint.close();
    small.close();
    hub.close();
  }
});

test('EndpointRequest.body as a Uint8Array or a string: bad bytes 400 -32700, the limit in bytes of UTF-8', async () => {
  const hub = new Hub();
  const endpoint = new McpEndpoint({ hub, ...options });
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const handle = async (body: EndpointRequest['body']) => {
    const response = await endpoint.handle({ method: 'POST', header: (name) => headers[name], remoteAddress: '127.0.0.1', body });
    assert.equal(response.kind, 'json');
    return response.kind === 'json' ? { status: response.status, body: response.body } : undefined;
  };
  try {
    // Under the limit in bytes, over it once each bad byte is 3 bytes of U+FFFD.
    assert.deepEqual(await handle(new Uint8Array(LIMIT).fill(0xff)), { status: 400, body: NOT_UTF8 });
    assert.deepEqual(await handle(new Uint8Array(bytes('{"jsonrpc":"2.0","id":1,"method":"ping"}', [0xe2, 0x82]))), { status: 400, body: NOT_UTF8 });
    // A view into a larger buffer counts its own bytes only.
    const atLimit = echoOf(LIMIT);
    const padded = Buffer.concat([Buffer.alloc(7, 0xff), atLimit.body, Buffer.alloc(9, 0xff)]);
    assert.deepEqual(await handle(new Uint8Array(padded.buffer, padded.byteOffset + 7, LIMIT)), { status: 200, body: echoed(atLimit.text) });
    assert.deepEqual(await handle(new Uint8Array(echoOf(LIMIT + 1).body)), { status: 413, body: tooLarge(LIMIT) });
    // A string is measured in bytes of UTF-8 (here 3 per euro sign), not in characters.
    assert.deepEqual(await handle(atLimit.body.toString('utf8')), { status: 200, body: echoed(atLimit.text) });
    assert.deepEqual(await handle(echoOf(LIMIT + 1).body.toString('utf8')), { status: 413, body: tooLarge(LIMIT) });
  } finally {
    endpoint.close();
    hub.close();
  }
});

test.run();
