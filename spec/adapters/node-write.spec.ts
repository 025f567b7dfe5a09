// The node adapter's write path, byte for byte on the socket: a stream that owns its connection
// writes each HTTP chunk itself (one write per flush, framed as node would frame it); a response
// wrapped by middleware, an HTTP/1.0 response and a response queued behind another on a
// keep-alive connection go through `res.write`; a client that stops reading and reads again
// gets the rest (its socket's 'drain' gives the stream its demand back).
import { strict as assert } from 'node:assert';
import http, { type ServerResponse } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { test } from 'uvu';
import { McpEndpoint } from '../../adapters/http/endpoint.js';
import type { McpEndpointOptions } from '../../adapters/http/options.js';
import { nodeHandler } from '../../adapters/http/node.js';
import { Hub } from '../../lib/hub.js';
import { queueTotals } from '../../lib/telemetry.js';
import { eventually, listenBody } from '../helpers/http.js';

const ACK =
  'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":7}}}\n\n';
const TOOLS = 'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7}}}\n\n';
const CANCELLED = 'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"shutdown","_meta":{"io.modelcontextprotocol/subscriptionId":7}}}\n\n';
const RESULT = 'event: message\ndata: {"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":7}}}\n\n';
const chunk = (text: string) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;

interface Served {
  readonly server: http.Server;
  readonly hub: Hub;
  readonly endpoint: McpEndpoint;
  readonly port: number;
  close(): Promise<void>;
}

async function serve(wrap?: (res: ServerResponse) => void, options: Partial<McpEndpointOptions> = {}): Promise<Served> {
  const hub = new Hub();
  const endpoint = new McpEndpoint({ hub, capabilities: { tools: true, resources: true }, ...options });
  const handle = nodeHandler(endpoint);
  const server = http.createServer((req, res) => {
    wrap?.(res);
    handle(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    server,
    hub,
    endpoint,
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        endpoint.close();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A raw client: writes `requests` as given and keeps every byte the server sends. */
class RawClient {
  text = '';
  ended = false;
  readonly socket: net.Socket;

  constructor(port: number, requests: string) {
    this.socket = net.connect(port, '127.0.0.1', () => this.socket.write(requests));
    this.socket.setEncoding('latin1');
    this.socket.on('data', (data: string) => (this.text += data));
    this.socket.on('close', () => (this.ended = true));
  }

  /** The bytes after the response head that ends first. */
  get body(): string {
    return this.text.slice(this.text.indexOf('\r\n\r\n') + 4);
  }
}

function listenRequest(version = '1.1', id = 7, filter: object = { toolsListChanged: true }): string {
  const body = listenBody(id, filter);
  return (
    `POST /mcp HTTP/${version}\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n` +
    `MCP-Protocol-Version: 2026-07-28\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}

test('HTTP/1.1: each flush is one chunk on the socket, framed as node frames it, and the response ends with the last chunk', async () => {
  const served = await serve();
  try {
    const client = new RawClient(served.port, listenRequest());
    await eventually(() => client.body.includes('acknowledged'), 3000, 'the ack');
    served.hub.notifyToolsChanged();
    await eventually(() => client.body.includes('list_changed'), 3000, 'the notification');
    served.endpoint.close();
    await eventually(() => client.body.endsWith('0\r\n\r\n'), 3000, 'the last chunk');
    assert.match(client.text, /^HTTP\/1\.1 200 OK\r\n[^]*Transfer-Encoding: chunked\r\n/);
    assert.equal(client.body, chunk(ACK) + chunk(TOOLS) + chunk(CANCELLED + RESULT) + '0\r\n\r\n');
    client.socket.destroy();
  } finally {
    await served.close();
  }
});

test('HTTP/1.0: no chunk framing, the frames as they are, and the connection closes at the end', async () => {
  const served = await serve();
  try {
    const client = new RawClient(served.port, listenRequest('1.0'));
    await eventually(() => client.body.includes('acknowledged'), 3000, 'the ack');
    served.hub.notifyToolsChanged();
    await eventually(() => client.body.includes('list_changed'), 3000, 'the notification');
    served.endpoint.close();
    await eventually(() => client.ended, 3000, 'the close');
    assert.match(client.text, /^HTTP\/1\.1 200 OK\r\n/);
    assert.doesNotMatch(client.text, /Transfer-Encoding/i);
    assert.equal(client.body, ACK + TOOLS + CANCELLED + RESULT);
  } finally {
    await served.close();
  }
});

test('a response whose write a middleware wraps (say compression) gets every frame through its write', async () => {
  const seen: string[] = [];
  const served = await serve((res) => {
    const write = res.write.bind(res) as (chunk: string) => boolean;
    res.write = ((text: string) => {
      seen.push(String(text));
      return write(text);
    }) as ServerResponse['write'];
  });
  try {
    const client = new RawClient(served.port, listenRequest());
    await eventually(() => client.body.includes('acknowledged'), 3000, 'the ack');
    served.hub.notifyToolsChanged();
    await eventually(() => client.body.includes('list_changed'), 3000, 'the notification');
    assert.deepEqual(seen, [ACK, TOOLS]);
    assert.equal(client.body, chunk(ACK) + chunk(TOOLS));
    client.socket.destroy();
  } finally {
    await served.close();
  }
});

test('a listen pipelined behind another on one connection: its frames wait in node until the first ends, then it writes its own chunks', async () => {
  // At most 2 listens per principal: a third one supersedes the first, which ends the first response.
  const served = await serve(undefined, { maxListensPerPrincipal: 2 });
  try {
    const client = new RawClient(served.port, listenRequest('1.1', 7) + listenRequest('1.1', 8));
    await eventually(() => served.endpoint.stats.streams === 2 && client.body.includes('acknowledged'), 3000, 'both listens');
    served.hub.notifyToolsChanged();
    await eventually(() => client.body.includes('list_changed'), 3000, 'the notification');
    const third = new RawClient(served.port, listenRequest('1.1', 9));
    await eventually(() => client.text.includes('"id":8') || client.text.split('HTTP/1.1 200').length === 3, 3000, 'the second response');
    await new Promise((resolve) => setTimeout(resolve, 20));
    served.hub.notifyToolsChanged();
    const id8 = (text: string) => text.replaceAll('subscriptionId":7', 'subscriptionId":8');
    const end = client.text.indexOf('0\r\n\r\n') + 5;
    const second = client.text.slice(end);
    await eventually(() => client.text.slice(end).endsWith(chunk(id8(TOOLS)) + chunk(id8(TOOLS))), 3000, 'the second stream live on the connection');
    assert.ok(client.text.slice(0, end).includes('"reason":"superseded"'), 'the first was superseded');
    const body = client.text.slice(end);
    assert.equal(body.slice(body.indexOf('\r\n\r\n') + 4), chunk(id8(ACK)) + chunk(id8(TOOLS)) + chunk(id8(TOOLS)), second);
    client.socket.destroy();
    third.socket.destroy();
  } finally {
    await served.close();
  }
});

test('a client that stops reading, then reads again, gets the rest: the socket\'s drain gives the stream its demand back', async () => {
  const served = await serve();
  try {
    const uri = `file:///${'x'.repeat(8000)}`;
    const client = new RawClient(served.port, listenRequest('1.1', 7, { toolsListChanged: true, resourceSubscriptions: [uri] }));
    await eventually(() => client.body.includes('acknowledged'), 3000, 'the ack');
    client.socket.pause();
    // 8 KB frames, one per turn, fill the kernel's buffers and then node's, until the stream is told to wait.
    let held = 0;
    for (let round = 0; round < 2000 && held === 0; round++) {
      served.hub.notifyResourceUpdated(uri);
      await new Promise((resolve) => setImmediate(resolve));
      held = queueTotals().bytes;
    }
    assert.ok(held > 0, 'the stream was told the client is busy and queued');
    client.socket.resume();
    await eventually(() => queueTotals().bytes === 0, 5000, 'the queue written out after the drain');
    served.hub.notifyToolsChanged();
    await eventually(() => client.body.endsWith(chunk(TOOLS)), 5000, 'a notification after the client read again');
    client.socket.destroy();
  } finally {
    await served.close();
  }
});

test('the request body is read without leaving listeners on the request an SSE stream keeps for its whole life', async () => {
  let request: http.IncomingMessage | undefined;
  const served = await serve();
  served.server.prependListener('request', (req: http.IncomingMessage) => (request = req));
  try {
    const client = new RawClient(served.port, listenRequest());
    await eventually(() => client.body.includes('acknowledged'), 3000, 'the ack');
    const listeners = Object.fromEntries(['data', 'end', 'error', 'close', 'readable', 'aborted'].map((event) => [event, request!.listenerCount(event)]));
    assert.deepEqual(listeners, { data: 0, end: 0, error: 0, close: 0, readable: 0, aborted: 0 });
    client.socket.destroy();
  } finally {
    await served.close();
  }
});

test.run();
