import { strict as assert } from 'node:assert';
import type { AddressInfo } from 'node:net';
import express from 'express';
import Fastify from 'fastify';
import { test } from 'uvu';
import { nodeHandler } from '../../adapters/http/node.js';
import { McpEndpoint } from '../../adapters/http/endpoint.js';
import { Hub } from '../../lib/hub.js';
import { eventually, listenBody, post, SseConnection } from '../helpers/http.js';
import { GetStream, initialize, primingText, send } from '../helpers/legacy.js';
import { startRedis } from '../helpers/redis.js';
import { composedServer } from '../../examples/composition.js';
import { mcpApp } from '../../examples/express.js';
import { mcpPlugin } from '../../examples/fastify.js';
import { mcpServer } from '../../examples/node-http.js';
import { startFleetNode } from '../../examples/redis.js';

const ACK =
  'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":1}}}\n\n';

async function exercise(url: string, hub: Hub, endpoint: McpEndpoint): Promise<void> {
  const conn = await SseConnection.open(url, listenBody(1, { toolsListChanged: true }));
  assert.equal(conn.status, 200);
  assert.equal(conn.res.headers['content-type'], 'text/event-stream');
  await conn.until((c) => c.text.length >= ACK.length);
  assert.equal(conn.text, ACK);
  hub.notifyToolsChanged();
  await conn.until((c) => c.messages.length === 2);
  const bad = await post(url, listenBody(2, { toolsListChanged: 'yes' }));
  assert.equal(JSON.parse(bad.body).error.code, -32602);
  conn.destroy();
  await eventually(() => endpoint.stats.streams === 0, 3000, 'the stream to be released');
}

test('inside Express, with and without express.json() having parsed the body', async () => {
  for (const parse of [true, false]) {
    const hub = new Hub();
    const endpoint = new McpEndpoint({ hub });
    const app = express();
    if (parse) app.post('/mcp', express.json(), nodeHandler(endpoint));
    else app.post('/mcp', nodeHandler(endpoint));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      await exercise(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, hub, endpoint);
    } finally {
      endpoint.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  }
});

test('inside Fastify (raw request and reply, body parsed by Fastify)', async () => {
  const hub = new Hub();
  const endpoint = new McpEndpoint({ hub });
  const handle = nodeHandler(endpoint);
  const app = Fastify();
  app.post('/mcp', (request, reply) => {
    reply.hijack();
    handle(request.raw, reply.raw, request.body);
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    await exercise(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`, hub, endpoint);
  } finally {
    endpoint.close();
    app.server.closeAllConnections();
    await app.close();
  }
});

/* The recipes of examples/ (the README's), served on real sockets */

const PARSE_ERROR = '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: the body is not valid JSON"}}';

/** A listen, malformed JSON, and a legacy session (initialize, GET, DELETE) through a recipe. */
async function recipe(url: string, hub: Hub, endpoint: McpEndpoint): Promise<void> {
  await exercise(url, hub, endpoint);
  const malformed = await post(url, '{"jsonrpc":"2.0","id":1,');
  assert.equal(malformed.status, 400);
  assert.equal(malformed.headers['content-type'], 'application/json');
  assert.equal(malformed.body, PARSE_ERROR, "the JSON-RPC parse error, not the framework's own");
  const init = await initialize(url);
  assert.equal(init.status, 200);
  const get = GetStream.open(url, init.sessionId);
  await get.until((s) => s.text === primingText(0), 3000, 'the priming event');
  assert.equal((await send(url, 'DELETE', { 'mcp-session-id': init.sessionId })).status, 204);
  await get.untilEnded();
  assert.ok(get.endedCleanly, 'DELETE ended the GET stream cleanly');
  await eventually(() => endpoint.stats.sessions === 0 && endpoint.stats.streams === 0, 3000, 'the session to be released');
}

test('examples/node-http.ts: listen, malformed JSON → -32700, a legacy session; other paths 404', async () => {
  const hub = new Hub();
  const endpoint = new McpEndpoint({ hub });
  const server = mcpServer(endpoint).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    await recipe(`${base}/mcp`, hub, endpoint);
    assert.equal((await post(`${base}/other`, '{}')).status, 404);
  } finally {
    endpoint.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

test("examples/express.ts: listen, malformed JSON → -32700 (not Express's HTML 400), a legacy session; other routes still get parsed JSON", async () => {
  const hub = new Hub();
  const endpoint = new McpEndpoint({ hub });
  const server = mcpApp(endpoint).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    await recipe(`${base}/mcp`, hub, endpoint);
    const echo = await post(`${base}/echo`, '{"a":[1,2]}', { 'content-type': 'application/json' });
    assert.equal(echo.body, '{"a":[1,2]}');
  } finally {
    endpoint.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

test("examples/fastify.ts: listen, malformed JSON → -32700 (not FST_ERR_CTP_INVALID_JSON_BODY), any content type reaches the endpoint, a legacy session; other routes keep Fastify's parser", async () => {
  const hub = new Hub();
  const endpoint = new McpEndpoint({ hub });
  const app = Fastify();
  await app.register(mcpPlugin(endpoint));
  app.post('/echo', async (request) => request.body);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  try {
    await recipe(`${base}/mcp`, hub, endpoint);
    const ping = JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'no/such' });
    const expected = '{"jsonrpc":"2.0","id":5,"error":{"code":-32601,"message":"method not found: no/such"}}';
    for (const headers of [{ 'content-type': 'text/plain' }, {}] as Record<string, string>[]) {
      const reply = await post(`${base}/mcp`, ping, { ...headers, accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28' });
      assert.equal(reply.body, expected, `content type ${JSON.stringify(headers)}: answered by the endpoint, not Fastify's 415`);
    }
    const echo = await post(`${base}/echo`, '{"a":[1,2]}', { 'content-type': 'application/json' });
    assert.equal(echo.body, '{"a":[1,2]}');
    assert.equal(JSON.parse((await post(`${base}/echo`, '{"a":', { 'content-type': 'application/json' })).body).code, 'FST_ERR_CTP_INVALID_JSON_BODY');
  } finally {
    endpoint.close();
    app.server.closeAllConnections();
    await app.close();
  }
});

test('examples/composition.ts: the composed chain serves the ack and a notification byte for byte; a cut releases its hub topics', async () => {
  const hub = new Hub();
  const server = composedServer(hub, { resourceSubscriptions: ['file:///a'] }, 7).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const meta = '"_meta":{"io.modelcontextprotocol/subscriptionId":7}';
  const ack = `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"resourceSubscriptions":["file:///a"]},${meta}}}\n\n`;
  const updated = `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a",${meta}}}\n\n`;
  try {
    const conn = await SseConnection.open(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`, '');
    assert.equal(conn.res.headers['content-type'], 'text/event-stream');
    await conn.until((c) => c.text === ack, 3000, 'the ack');
    assert.equal(hub.size.subscriptions, 1, 'the topic is registered');
    hub.notifyResourceUpdated('file:///b');
    hub.notifyResourceUpdated('file:///a');
    await conn.until((c) => c.text === ack + updated, 3000, 'the notification');
    conn.destroy();
    await eventually(() => hub.size.subscriptions === 0, 3000, 'the cut to release the topic');
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    hub.close();
  }
});

test('examples/redis.ts: two nodes on one redis-server: a listen on one hears what the other publishes, byte for byte', async () => {
  const redis = await startRedis();
  const a = await startFleetNode(redis.url, 'a');
  const b = await startFleetNode(redis.url, 'b');
  try {
    const conn = await SseConnection.open(b.url, listenBody(1, { toolsListChanged: true }));
    await conn.until((c) => c.text === ACK, 3000, 'the ack on node b');
    a.hub.notifyToolsChanged();
    const changed = 'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1}}}\n\n';
    await conn.until((c) => c.text === ACK + changed, 5000, "node a's notification on node b");
    conn.destroy();
    await eventually(() => b.endpoint.stats.streams === 0, 3000, 'the stream to be released');
  } finally {
    await a.close();
    await b.close();
    await redis.close();
  }
});

test.run();
