import { strict as assert } from 'node:assert';
import type { AddressInfo } from 'node:net';
import express from 'express';
import Fastify from 'fastify';
import { test } from 'uvu';
import { nodeHandler } from '../../adapters/node.js';
import { McpEndpoint } from '../../adapters/endpoint/endpoint.js';
import { Hub } from '../../lib/hub.js';
import { eventually, listenBody, post, SseConnection } from '../helpers/http.js';

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

test.run();
