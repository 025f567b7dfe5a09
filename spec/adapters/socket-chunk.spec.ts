// adapters/http/socketChunk.ts on its own: writeChunk puts on the wire exactly the bytes res.write
// would (chunked or not, multi-byte UTF-8 counted in bytes), and ownsSocket says no in each case
// where writing on the socket would be wrong: before the head is out, with a write wrapped by
// middleware, for a response queued behind another on a pipelined connection, on a destroyed
// socket. Over a real loopback socket, read byte for byte.
import { strict as assert } from 'node:assert';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { test } from 'uvu';
import { chunkSizeLine, ownsSocket, writeChunk } from '../../adapters/http/socketChunk.js';
import { eventually } from '../helpers/http.js';

/** A server whose every request is handed to `handle`; the raw bytes a client reads back. */
async function exchange(handle: (req: IncomingMessage, res: ServerResponse) => void, requests: string): Promise<string> {
  const server = http.createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const socket = net.connect((server.address() as AddressInfo).port, '127.0.0.1');
  let text = '';
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => (text += chunk));
  socket.write(requests);
  try {
    await eventually(() => /0\r\n\r\n$/.test(text) || /\r\n\r\nEND$/.test(text), 3000, 'the whole response');
    return text;
  } finally {
    socket.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

const GET = 'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';
const body = (raw: string) => raw.slice(raw.indexOf('\r\n\r\n') + 4);

test('writeChunk sends the bytes res.write would, as one chunk of the chunked body (UTF-8 counted in bytes)', async () => {
  const texts = ['event: message\ndata: {}\n\n', 'h\u00e9llo \u2603\n', ':\r\n'];
  const viaRes = await exchange((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/event-stream' });
    res.flushHeaders();
    for (const text of texts) res.write(text);
    res.end();
  }, GET);
  const viaSocket = await exchange((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/event-stream' });
    res.flushHeaders();
    const socket = res.socket!;
    for (const text of texts) {
      assert.ok(ownsSocket(res, socket), 'the response owns its connection once its head is out');
      writeChunk(res, socket, text);
    }
    res.end();
  }, GET);
  const expected = texts.map((text) => `${Buffer.byteLength(text).toString(16)}\r\n${Buffer.from(text).toString('latin1')}\r\n`).join('') + '0\r\n\r\n';
  assert.equal(body(viaSocket), expected);
  assert.equal(body(viaSocket), body(viaRes));
});

test('chunkSizeLine is the size in lower-case hex and CRLF, the same string for a size met again, above the kept sizes too', () => {
  for (const bytes of [0, 1, 9, 10, 15, 16, 255, 4096, 65_535, 65_536, 1_000_000]) {
    assert.equal(chunkSizeLine(bytes), `${bytes.toString(16)}\r\n`);
    assert.equal(chunkSizeLine(bytes), chunkSizeLine(bytes));
  }
});

test('writeChunk on a response that is not chunked (Content-Length) writes the text as it is', async () => {
  const raw = await exchange((_req, res) => {
    res.writeHead(200, { 'Content-Length': '3' });
    res.flushHeaders();
    assert.ok(ownsSocket(res, res.socket!));
    writeChunk(res, res.socket!, 'END');
    res.end();
  }, GET);
  assert.equal(body(raw), 'END');
});

test('ownsSocket is false before the head is out, for a wrapped write, for a queued response and on a destroyed socket', async () => {
  const seen: Record<string, boolean> = {};
  let first: ServerResponse | undefined;
  await exchange((req, res) => {
    const socket = req.socket;
    if (req.url === '/first') {
      first = res;
      seen['before the head'] = ownsSocket(res, socket);
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.flushHeaders();
      seen['after the head'] = ownsSocket(res, socket);
      const write = res.write.bind(res);
      res.write = ((chunk: unknown, ...rest: never[]) => write(chunk as string, ...rest)) as typeof res.write;
      seen['wrapped write'] = ownsSocket(res, socket);
      return;
    }
    // The second request of the pipelined connection: its response waits behind the first one.
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    seen['queued behind another'] = ownsSocket(res, socket);
    res.end('second');
    first!.end();
  }, 'GET /first HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /second HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
  assert.deepEqual(seen, { 'before the head': false, 'after the head': true, 'wrapped write': false, 'queued behind another': false });

  const destroyed = await new Promise<boolean>((resolve) => {
    const server = http.createServer((req, res) => {
      res.writeHead(200);
      res.flushHeaders();
      req.socket.destroy();
      resolve(ownsSocket(res, req.socket));
      server.close();
    });
    server.listen(0, '127.0.0.1', () => {
      const socket = net.connect((server.address() as AddressInfo).port, '127.0.0.1');
      socket.on('error', () => {});
      socket.write(GET);
    });
  });
  assert.equal(destroyed, false, 'a destroyed socket');
});

test.run();
