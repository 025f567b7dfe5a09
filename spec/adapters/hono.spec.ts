// examples/hono.ts served by @hono/node-server on a loopback port, driven by raw node:http clients
// bound to different loopback addresses (127.0.0.1 and 127.0.0.2): getConnInfo gives webHandler
// each client's address, so two anonymous clients are two principals and never supersede each
// other; a Hono route that passes no address fails loudly instead of serving.
import { strict as assert } from 'node:assert';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { test } from 'uvu';
import { MissingClientAddressError, webHandler } from '../../adapters/http/web.js';
import { mcpApp } from '../../examples/hono.js';
import { McpEndpoint } from '../../adapters/http/endpoint.js';
import type { McpEndpointOptions } from '../../adapters/http/options.js';
import { Hub } from '../../lib/hub.js';
import { ArrivingText, eventually, LISTEN_HEADERS, listenBody } from '../helpers/http.js';

const SUB_ID = 'io.modelcontextprotocol/subscriptionId';
const frame = (message: unknown) => `event: message\ndata: ${JSON.stringify(message)}\n\n`;
const ack = (id: number) =>
  frame({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: { toolsListChanged: true }, _meta: { [SUB_ID]: id } } });
const toolsChanged = (id: number) => frame({ jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: { [SUB_ID]: id } } });
const superseded = (id: number) =>
  frame({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'superseded', _meta: { [SUB_ID]: id } } }) +
  frame({ jsonrpc: '2.0', id, result: { resultType: 'complete', _meta: { [SUB_ID]: id } } });

/** A listen sent from `localAddress`, its response read as text exactly as it arrives. */
class Listen extends ArrivingText {
  private constructor(
    readonly req: http.ClientRequest,
    readonly res: http.IncomingMessage,
  ) {
    super();
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      this.text += chunk;
      this.wake();
    });
    res.on('close', () => {
      this.ended = true;
      this.wake();
    });
  }

  static open(url: string, id: number, localAddress: string): Promise<Listen> {
    return new Promise((resolve, reject) => {
      const req = http.request(url, { method: 'POST', headers: LISTEN_HEADERS, agent: false, localAddress }, (res) => resolve(new Listen(req, res)));
      req.on('error', reject);
      req.end(listenBody(id, { toolsListChanged: true }));
    });
  }

  destroy(): void {
    this.req.destroy();
    this.res.destroy();
  }
}

async function withHono(
  options: Partial<McpEndpointOptions>,
  app: (endpoint: McpEndpoint) => Hono,
  body: (url: string, hub: Hub, endpoint: McpEndpoint) => Promise<void>,
): Promise<void> {
  const hub = new Hub();
  const endpoint = new McpEndpoint({ ...options, hub });
  let server!: ServerType;
  const port = await new Promise<number>((resolve) => {
    server = serve({ fetch: app(endpoint).fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) => resolve(info.port));
  });
  try {
    await body(`http://127.0.0.1:${port}/mcp`, hub, endpoint);
  } finally {
    endpoint.close();
    (server as http.Server).closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    hub.close();
  }
}

test('examples/hono.ts: clients from two addresses are two principals (cap 1 each: neither supersedes the other), a third from the first address supersedes only its own', async () => {
  await withHono({ maxListensPerPrincipal: 1 }, mcpApp, async (url, hub, endpoint) => {
    const a = await Listen.open(url, 1, '127.0.0.1');
    assert.equal(a.res.statusCode, 200);
    assert.equal(a.res.headers['content-type'], 'text/event-stream');
    await a.until((c) => c.text.length >= ack(1).length);
    const b = await Listen.open(url, 2, '127.0.0.2');
    await b.until((c) => c.text.length >= ack(2).length);
    assert.equal(endpoint.principals.count('addr:127.0.0.1'), 1);
    assert.equal(endpoint.principals.count('addr:127.0.0.2'), 1);
    assert.equal(endpoint.stats.streams, 2);

    hub.notifyToolsChanged();
    await a.until((c) => c.text.length >= ack(1).length + toolsChanged(1).length);
    await b.until((c) => c.text.length >= ack(2).length + toolsChanged(2).length);
    assert.equal(a.text, ack(1) + toolsChanged(1), 'the first client was not superseded by the second');
    assert.equal(b.text, ack(2) + toolsChanged(2));

    // The cap is per address: a second listen from 127.0.0.1 supersedes the first one, and only it.
    const c = await Listen.open(url, 3, '127.0.0.1');
    await c.until((x) => x.text.length >= ack(3).length);
    await a.until((x) => x.ended);
    assert.equal(a.text, ack(1) + toolsChanged(1) + superseded(1));
    assert.equal(b.text, ack(2) + toolsChanged(2));
    assert.equal(b.ended, false);

    // A client that goes away releases its stream through Hono's request signal.
    b.destroy();
    c.destroy();
    await eventually(() => endpoint.stats.streams === 0 && endpoint.stats.slots === 0, 3000, 'the streams to be released');
    assert.equal(endpoint.principals.size, 0);
  });
});

test('a Hono route that passes no address to webHandler fails loudly (MissingClientAddressError reaches onError), nothing is served', async () => {
  const errors: unknown[] = [];
  const careless = (endpoint: McpEndpoint) => {
    const handle = webHandler(endpoint);
    const app = new Hono();
    app.all('/mcp', (c) => handle(c.req.raw));
    app.onError((error, c) => {
      errors.push(error);
      return c.text('misconfigured', 500);
    });
    return app;
  };
  await withHono({}, careless, async (url, _hub, endpoint) => {
    const listen = await Listen.open(url, 1, '127.0.0.1');
    await listen.until((x) => x.ended);
    assert.equal(listen.res.statusCode, 500);
    assert.equal(errors.length, 1);
    const [error] = errors;
    assert.ok(error instanceof MissingClientAddressError, String(error));
    assert.equal(error.code, 'ERR_MCP_RX_NO_CLIENT_ADDRESS');
    assert.deepEqual(endpoint.stats, { streams: 0, slots: 0, principals: 0, sessions: 0, sessionSubscriptions: 0 });
  });
});

test('the same careless route is fine once the endpoint has an authenticate hook', async () => {
  const loose = (endpoint: McpEndpoint) => {
    const handle = webHandler(endpoint);
    return new Hono().all('/mcp', (c) => handle(c.req.raw));
  };
  await withHono({ authenticate: () => ({ principal: 'user:one', scopes: new Set() }) }, loose, async (url, _hub, endpoint) => {
    const listen = await Listen.open(url, 1, '127.0.0.1');
    await listen.until((x) => x.text.length >= ack(1).length);
    assert.equal(listen.text, ack(1));
    assert.equal(endpoint.principals.count('user:one'), 1);
    listen.destroy();
    await eventually(() => endpoint.stats.streams === 0, 3000, 'the stream to be released');
  });
});

test.run();
