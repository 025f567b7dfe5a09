// This library in front of the official SDK 2.x server (issue 16, item 2): `sdkRouter` sends
// `subscriptions/listen` to an McpEndpoint and everything else to `createMcpHandler`, on one path,
// and `HubEventBus` turns the SDK's `handler.notify.*` into hub publishes. Real loopback sockets, the
// official 2.x client (`@modelcontextprotocol/client`) and the official 1.x client for the legacy era.
import { deepStrictEqual, ok, rejects, strictEqual, throws } from 'node:assert';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createMcpHandler, McpServer, type McpHttpHandler, type ServerEventBus } from '@modelcontextprotocol/server';
import { serve, type HttpBindings } from '@hono/node-server';
import { test } from 'uvu';
import { HubEventBus, sdkRouter, type SdkRouter } from '../../adapters/sdk/index.js';
import { notesServer } from '../../examples/sdk-server2.js';
import { McpEndpoint } from '../../adapters/http/endpoint.js';
import type { McpEndpointOptions } from '../../adapters/http/options.js';
import { MissingClientAddressError } from '../../adapters/http/web.js';
import { InvalidOptionError } from '../../lib/errors.js';
import { Hub } from '../../lib/hub.js';
import type { JsonRpcMessage, JsonRpcNotification } from '../../lib/jsonrpc.js';
import { eventually } from '../helpers/http.js';
import { within } from '../helpers/wait.js';

const WAIT_MS = 4_000;
const MODERN = '2026-07-28';
const URI = 'file:///srv/notes/today.md';
const SUBSCRIPTION_ID_KEY = 'io.modelcontextprotocol/subscriptionId';

// Compile-time: the bus is the SDK's ServerEventBus, the router takes the SDK's handler.
const _busType: (hub: Hub) => ServerEventBus = (hub) => new HubEventBus(hub);
void _busType;

/** An SDK 2.x server whose tool `add-tool` adds a tool and says so with `handler.notify.toolsChanged()`. */
function sdkApp(hub: Hub): { handler: McpHttpHandler; tools: () => string[] } {
  const added: string[] = [];
  const handler: McpHttpHandler = createMcpHandler(
    () => {
      const server = new McpServer({ name: 'notes', version: '3.1.0' }, { capabilities: { resources: { subscribe: true } } });
      server.registerTool('add-tool', { description: 'adds a tool named extra-<n>' }, async () => {
        added.push(`extra-${added.length + 1}`);
        handler.notify.toolsChanged();
        return { content: [{ type: 'text', text: `added ${added.at(-1)}` }] };
      });
      for (const name of added) server.registerTool(name, { description: name }, async () => ({ content: [] }));
      server.registerResource('today', URI, { mimeType: 'text/markdown' }, async () => ({ contents: [{ uri: URI, text: '# today' }] }));
      return server;
    },
    { bus: new HubEventBus(hub) },
  );
  return { handler, tools: () => [...added] };
}

/** What a response wrote, captured below the router (every chunk, as sent). */
interface Seen {
  readonly method: string | undefined;
  written: string;
  closed: boolean;
}

interface Front {
  readonly hub: Hub;
  readonly endpoint: McpEndpoint;
  readonly handler: McpHttpHandler;
  readonly router: SdkRouter;
  readonly url: URL;
  readonly seen: Seen[];
}

/** The router's node face on a real http.Server (port 0), around an endpoint and an SDK handler on one hub. */
async function withFront(options: Partial<McpEndpointOptions>, fn: (front: Front) => Promise<void>): Promise<void> {
  const hub = new Hub();
  const endpoint = new McpEndpoint({ capabilities: { tools: true, resources: true }, ...options, hub });
  const { handler } = sdkApp(hub);
  const router = sdkRouter({ endpoint, sdk: handler });
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    const entry: Seen = { method: req.headers['mcp-method'] as string | undefined, written: '', closed: false };
    seen.push(entry);
    const write = res.write.bind(res) as (chunk: unknown, ...rest: unknown[]) => boolean;
    res.write = ((chunk: unknown, ...rest: unknown[]) => {
      entry.written += typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8');
      return write(chunk, ...rest);
    }) as typeof res.write;
    res.once('close', () => (entry.closed = true));
    router.node(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    await fn({ hub, endpoint, handler, router, url: new URL(`http://127.0.0.1:${port}/mcp`), seen });
  } finally {
    endpoint.close();
    await handler.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    hub.close();
  }
}

async function modernClient(url: URL) {
  const client = new ModernClient({ name: 'sdk-front-spec', version: '0.0.0' }, { versionNegotiation: { mode: { pin: MODERN } } });
  const errors: unknown[] = [];
  const updated: string[] = [];
  let toolsChanged = 0;
  client.onerror = (error) => errors.push(error);
  client.setNotificationHandler('notifications/tools/list_changed', () => void toolsChanged++);
  client.setNotificationHandler('notifications/resources/updated', (notification) => void updated.push(notification.params.uri));
  await within(client.connect(new ModernTransport(url), { timeout: WAIT_MS }), WAIT_MS + 500, 'connect()');
  return { client, errors, updated, toolsChanged: () => toolsChanged };
}

test('official 2.x client through sdkRouter (node:http): the SDK answers discover and tools, the endpoint serves the listen, a tool that changes the tool list reaches it', async () => {
  await withFront({}, async ({ hub, endpoint, url, seen }) => {
    const { client, errors, updated, toolsChanged } = await modernClient(url);
    try {
      // server/discover came from the SDK's McpServer, not from the endpoint's defaults.
      deepStrictEqual(client.getServerVersion(), { name: 'notes', version: '3.1.0' });
      deepStrictEqual(client.getServerCapabilities(), { resources: { subscribe: true, listChanged: true }, tools: { listChanged: true } });

      const subscription = await within(client.listen({ toolsListChanged: true, resourceSubscriptions: [URI] }, { timeout: WAIT_MS }), WAIT_MS + 500, 'the ack');
      deepStrictEqual(subscription.honoredFilter, { toolsListChanged: true, resourceSubscriptions: [URI] });
      strictEqual(endpoint.stats.streams, 1, 'the endpoint holds the listen stream');

      const result = await within(client.callTool({ name: 'add-tool', arguments: {} }), WAIT_MS, 'tools/call');
      deepStrictEqual(result.content, [{ type: 'text', text: 'added extra-1' }]);
      await eventually(() => toolsChanged() === 1, WAIT_MS, 'tools/list_changed on the listen stream');
      deepStrictEqual((await client.listTools()).tools.map((tool) => tool.name).sort(), ['add-tool', 'extra-1']);

      hub.notifyResourceUpdated('file:///srv/notes/other.md');
      hub.notifyResourceUpdated(URI);
      await eventually(() => updated.length === 1, WAIT_MS, 'resources/updated');
      deepStrictEqual(updated, [URI]);

      // The listen's bytes, as the endpoint wrote them: ack, then the two notifications, each tagged.
      const listen = seen.find((entry) => entry.method === 'subscriptions/listen');
      ok(listen !== undefined, `a listen went through: ${JSON.stringify(seen.map((entry) => entry.method))}`);
      // The client names its listen ids itself (the handle does not expose it): read it off the ack.
      const listenId = /"io\.modelcontextprotocol\/subscriptionId":("[^"]+"|\d+)/.exec(listen.written)?.[1];
      ok(listenId !== undefined, listen.written);
      const frame = (message: object) => `event: message\ndata: ${JSON.stringify(message)}\n\n`;
      strictEqual(
        listen.written.replaceAll(':\r\n', ''),
        frame({
          jsonrpc: '2.0',
          method: 'notifications/subscriptions/acknowledged',
          params: { notifications: { toolsListChanged: true, resourceSubscriptions: [URI] }, _meta: { [SUBSCRIPTION_ID_KEY]: JSON.parse(listenId) } },
        }) +
          frame({ jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: { [SUBSCRIPTION_ID_KEY]: JSON.parse(listenId) } } }) +
          frame({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: URI, _meta: { [SUBSCRIPTION_ID_KEY]: JSON.parse(listenId) } } }),
      );
      // Every other request went to the SDK (its answers carry its server info).
      deepStrictEqual(
        seen.map((entry) => entry.method),
        ['server/discover', 'subscriptions/listen', 'tools/call', 'tools/list'],
      );

      await within(subscription.close(), WAIT_MS, 'subscription.close()');
      await eventually(() => endpoint.stats.streams === 0 && endpoint.stats.slots === 0, WAIT_MS, 'the listen stream to be released');
      deepStrictEqual(errors.map(String), []);
    } finally {
      await client.close().catch(() => {});
    }
  });
});

test('the Fetch API face (Hono node-server): the same split, with the client address given per request', async () => {
  const hub = new Hub();
  const endpoint = new McpEndpoint({ hub, capabilities: { tools: true, resources: true } });
  const { handler } = sdkApp(hub);
  const router = sdkRouter({ endpoint, sdk: handler });
  const addresses: (string | undefined)[] = [];
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve(
      {
        fetch: (request, env) => {
          const remoteAddress = (env as HttpBindings).incoming.socket.remoteAddress;
          addresses.push(remoteAddress);
          return router.fetch(request, { remoteAddress });
        },
        port: 0,
        hostname: '127.0.0.1',
      },
      () => resolve(s),
    );
  });
  const { port } = server.address() as AddressInfo;
  const { client, toolsChanged } = await modernClient(new URL(`http://127.0.0.1:${port}/mcp`));
  try {
    const subscription = await within(client.listen({ toolsListChanged: true }, { timeout: WAIT_MS }), WAIT_MS + 500, 'the ack');
    deepStrictEqual(subscription.honoredFilter, { toolsListChanged: true });
    strictEqual(endpoint.stats.streams, 1);
    await within(client.callTool({ name: 'add-tool', arguments: {} }), WAIT_MS, 'tools/call');
    await eventually(() => toolsChanged() === 1, WAIT_MS, 'tools/list_changed');
    await within(subscription.close(), WAIT_MS, 'subscription.close()');
    await eventually(() => endpoint.stats.streams === 0, WAIT_MS, 'the stream to be released');
    ok(addresses.every((address) => address === '127.0.0.1'), JSON.stringify(addresses));
  } finally {
    await client.close().catch(() => {});
    endpoint.close();
    await handler.close();
    server.close();
    hub.close();
  }
});

test('the Fetch API face refuses to serve without a client address (any request, not only listens), unless the endpoint authenticates', async () => {
  const hub = new Hub();
  const { handler } = sdkApp(hub);
  const anonymous = sdkRouter({ endpoint: new McpEndpoint({ hub }), sdk: handler });
  await rejects(anonymous.fetch(new Request('http://127.0.0.1/mcp', { method: 'GET' })), MissingClientAddressError);
  const authenticating = sdkRouter({ endpoint: new McpEndpoint({ hub, authenticate: () => ({ principal: 'p', scopes: new Set() }) }), sdk: handler });
  const response = await authenticating.fetch(new Request('http://127.0.0.1/mcp', { method: 'GET' }));
  strictEqual(response.status, 405, 'the SDK answered the GET (stateless legacy serving)');
  await handler.close();
});

test('sdkRouter refuses an SDK handler whose bus is not a HubEventBus of the endpoint hub (handler.notify would reach no listen)', () => {
  const hub = new Hub();
  const endpoint = new McpEndpoint({ hub });
  const plain = createMcpHandler(() => new McpServer({ name: 'x', version: '0' }));
  throws(() => sdkRouter({ endpoint, sdk: plain }), (error: unknown) => error instanceof InvalidOptionError && /HubEventBus\(endpoint\.hub\)/.test(error.message) && error.info.option === 'sdk');
  const elsewhere = createMcpHandler(() => new McpServer({ name: 'x', version: '0' }), { bus: new HubEventBus(new Hub()) });
  throws(() => sdkRouter({ endpoint, sdk: elsewhere }), InvalidOptionError);
  throws(() => sdkRouter({ endpoint, sdk: sdkApp(hub).handler, maxBodyBytes: 0 }), /maxBodyBytes must be a positive integer of bytes, got 0/);
  throws(() => sdkRouter({ endpoint: {} as McpEndpoint, sdk: plain }), /endpoint must be an McpEndpoint/);
});

test('bodies: over maxBodyBytes is 413 unread, not JSON is 400 -32700, a non-JSON content type and GET go to the SDK (415, 405)', async () => {
  const hub = new Hub();
  const endpoint = new McpEndpoint({ hub });
  const { handler } = sdkApp(hub);
  const router = sdkRouter({ endpoint, sdk: handler, maxBodyBytes: 64 });
  const server = http.createServer(router.node);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': MODERN };
  try {
    const big = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'subscriptions/listen', params: { pad: 'x'.repeat(100) } }) });
    strictEqual(big.status, 413);
    deepStrictEqual(await big.json(), { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'request body exceeds 64 bytes' } });
    const broken = await fetch(url, { method: 'POST', headers, body: '{"jsonrpc":' });
    strictEqual(broken.status, 400);
    strictEqual((await broken.json()).error.code, -32700);
    const text = await fetch(url, { method: 'POST', headers: { ...headers, 'content-type': 'text/plain' }, body: 'hello' });
    strictEqual(text.status, 415);
    const get = await fetch(url, { headers: { accept: 'text/event-stream' } });
    strictEqual(get.status, 405);
    strictEqual(endpoint.stats.streams, 0);
  } finally {
    endpoint.close();
    await handler.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

test('official 1.x client through sdkRouter: the legacy era is the SDK stateless serving (initialize, tools/call)', async () => {
  await withFront({}, async ({ url, endpoint }) => {
    const client = new LegacyClient({ name: 'sdk-front-spec', version: '0.0.0' });
    client.onerror = () => {}; // the stateless SDK answers the client's GET stream with 405
    try {
      await within(client.connect(new LegacyTransport(url)), WAIT_MS, 'connect()');
      deepStrictEqual(client.getServerVersion(), { name: 'notes', version: '3.1.0' });
      const result = await within(client.callTool({ name: 'add-tool', arguments: {} }), WAIT_MS, 'tools/call');
      deepStrictEqual(result.content, [{ type: 'text', text: 'added extra-1' }]);
      strictEqual(endpoint.stats.sessions, 0, 'the endpoint opened no legacy session');
    } finally {
      await client.close().catch(() => {});
    }
  });
});

test("HubEventBus: handler.notify.* publishes on the hub; the SDK's own listen router (no sdkRouter) hears the hub's list changes", async () => {
  const hub = new Hub();
  const bus = new HubEventBus(hub);
  const handler = createMcpHandler(
    () => {
      const server = new McpServer({ name: 'plain', version: '1.0.0' }, { capabilities: { resources: { subscribe: true } } });
      server.registerTool('noop', { description: 'noop' }, async () => ({ content: [] }));
      return server;
    },
    { bus },
  );
  const heard: string[] = [];
  const described = (message: JsonRpcMessage) => {
    const { method, params } = message as JsonRpcNotification;
    return params === undefined ? method : `${method} ${params.uri}`;
  };
  const tools = hub.topic({ topic: 'tools' }).subscribe((frame) => heard.push(described(frame.message)));
  const resource = hub.topic({ topic: 'resource', uri: URI }).subscribe((frame) => heard.push(described(frame.message)));
  handler.notify.toolsChanged();
  handler.notify.resourceUpdated(URI);
  handler.notify.promptsChanged(); // nobody listens: nothing
  deepStrictEqual(heard, ['notifications/tools/list_changed', `notifications/resources/updated ${URI}`]);
  tools.unsubscribe();
  resource.unsubscribe();

  // The SDK serving a listen itself, on this bus.
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const aborted = new AbortController();
    res.once('close', () => aborted.abort());
    const body = req.method === 'POST' ? Buffer.concat(chunks) : undefined;
    const response = await handler.fetch(new Request(`http://127.0.0.1${req.url}`, { method: req.method, headers: req.headers as Record<string, string>, body, signal: aborted.signal }));
    const headers: Record<string, string> = {};
    response.headers.forEach((value, name) => (headers[name] = value));
    res.writeHead(response.status, headers);
    if (response.body === null) return void res.end();
    res.flushHeaders();
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) res.write(chunk);
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { client, toolsChanged, updated } = await modernClient(new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`));
  try {
    const subscription = await within(client.listen({ toolsListChanged: true, resourceSubscriptions: [URI] }, { timeout: WAIT_MS }), WAIT_MS + 500, 'the ack');
    strictEqual(hub.size.subscriptions, 3, "the SDK's listener is on the hub's three list topics");
    hub.notifyToolsChanged({ scope: 'admin' }); // scoped: not for the SDK's streams
    hub.notifyToolsChanged();
    handler.notify.resourceUpdated(URI);
    await eventually(() => toolsChanged() === 1 && updated.length === 1, WAIT_MS, 'the list change and the update');
    await within(subscription.close(), WAIT_MS, 'subscription.close()');
    await eventually(() => hub.size.subscriptions === 0, WAIT_MS, "the SDK's listener to leave the hub");
    strictEqual(toolsChanged(), 1, 'the scoped publish was not delivered');
  } finally {
    await client.close().catch(() => {});
    await handler.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  throws(() => bus.publish({ kind: 'nope' } as never), /unknown ServerEventBus event kind: "nope"/);
  throws(() => new HubEventBus({} as Hub), InvalidOptionError);
});

test('examples/sdk-server2.ts (the README snippet): the official 2.x client calls add-tool twice and its listen hears both list changes', async () => {
  const hub = new Hub();
  const { router, close } = notesServer(hub);
  const server = http.createServer(router.node);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { client, toolsChanged, errors } = await modernClient(new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`));
  try {
    deepStrictEqual(client.getServerCapabilities(), { tools: { listChanged: true } });
    const subscription = await within(client.listen({ toolsListChanged: true }, { timeout: WAIT_MS }), WAIT_MS + 500, 'the ack');
    deepStrictEqual(subscription.honoredFilter, { toolsListChanged: true });
    strictEqual(hub.size.subscriptions, 1, "the endpoint's stream is on the hub's tools topic");
    await within(client.callTool({ name: 'add-tool', arguments: {} }), WAIT_MS, 'tools/call');
    await within(client.callTool({ name: 'add-tool', arguments: {} }), WAIT_MS, 'tools/call');
    await eventually(() => toolsChanged() === 2, WAIT_MS, 'two tools/list_changed');
    deepStrictEqual((await client.listTools()).tools.map((tool) => tool.name).sort(), ['add-tool', 'tool-1', 'tool-2']);
    await within(subscription.close(), WAIT_MS, 'subscription.close()');
    await eventually(() => hub.size.subscriptions === 0, WAIT_MS, 'the stream to leave the hub');
    deepStrictEqual(errors.map(String), []);
  } finally {
    await client.close().catch(() => {});
    await close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

test.run();
