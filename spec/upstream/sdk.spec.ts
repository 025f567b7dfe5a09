// The official SDK servers as upstreams (issue 34): a TypeScript SDK 2.x `createMcpHandler` server
// serving its own `subscriptions/listen`, and a TypeScript SDK 1.x server (a 2025 session, its
// standalone GET stream, resources/subscribe), each behind the gateway with `era: 'auto'`, and the
// official clients of both eras downstream.
import { randomUUID } from 'node:crypto';
import { deepStrictEqual, strictEqual } from 'node:assert';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { McpServer as LegacyServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { SubscribeRequestSchema, UnsubscribeRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { test } from 'uvu';
import { upstreamUri } from '../../adapters/upstream/index.js';
import { legacyClient, modernClient, startGateway, until, WAIT_MS } from '../helpers/gateway.js';
import { within } from '../helpers/wait.js';

const NOTE = 'memo://notes/today';
const FAST = { initialDelay: 20, maxDelay: 200, jitter: 0 };

interface SdkUpstream {
  readonly url: string;
  /** Publishes a change of {@link NOTE} the SDK's way. */
  touch(): void;
  /** Publishes a tools change the SDK's way. */
  toolsChanged(): void;
  close(): Promise<void>;
}

/** A TypeScript SDK 2.x server made with `createMcpHandler` (its own listen router), on @hono/node-server. */
async function sdk2Upstream(): Promise<SdkUpstream> {
  const handler = createMcpHandler(() => {
    const server = new McpServer({ name: 'sdk2-notes', version: '2.0.0' }, { capabilities: { tools: { listChanged: true }, resources: { subscribe: true, listChanged: true } } });
    server.registerResource('today', NOTE, { mimeType: 'text/plain' }, async () => ({ contents: [{ uri: NOTE, text: 'from sdk 2' }] }));
    server.registerTool('noop', { description: 'does nothing' }, async () => ({ content: [] }));
    return server;
  });
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve({ fetch: (request) => handler.fetch(request), port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    touch: () => handler.notify.resourceUpdated(NOTE),
    toolsChanged: () => handler.notify.toolsChanged(),
    close: async () => {
      await handler.close();
      (server as unknown as http.Server).closeAllConnections?.();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A TypeScript SDK 1.x server: one McpServer and StreamableHTTPServerTransport per session, subscriptions kept by its handlers. */
async function sdk1Upstream(): Promise<SdkUpstream> {
  const sessions = new Map<string, { transport: StreamableHTTPServerTransport; server: LegacyServer; subscribed: Set<string> }>();
  const open = async () => {
    const server = new LegacyServer({ name: 'sdk1-notes', version: '1.0.0' }, { capabilities: { resources: { subscribe: true, listChanged: true }, tools: { listChanged: true } } });
    server.registerResource('today', NOTE, { mimeType: 'text/plain' }, async () => ({ contents: [{ uri: NOTE, text: 'from sdk 1' }] }));
    server.registerTool('noop', { description: 'does nothing' }, async () => ({ content: [] }));
    const subscribed = new Set<string>();
    server.server.setRequestHandler(SubscribeRequestSchema, async (request) => {
      if (request.params.uri !== NOTE) throw Object.assign(new Error(`resource is not subscribable: ${request.params.uri}`), { code: -32602 });
      subscribed.add(request.params.uri);
      return {};
    });
    server.server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
      subscribed.delete(request.params.uri);
      return {};
    });
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => void sessions.set(id, { transport, server, subscribed }),
    });
    transport.onclose = () => void (transport.sessionId !== undefined && sessions.delete(transport.sessionId));
    await server.connect(transport);
    return transport;
  };
  const httpServer = http.createServer((req, res) => {
    void (async () => {
      const id = req.headers['mcp-session-id'];
      const transport = typeof id === 'string' ? sessions.get(id)?.transport : id === undefined && req.method === 'POST' ? await open() : undefined;
      if (transport === undefined) return void res.writeHead(404, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}');
      await transport.handleRequest(req, res);
    })().catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(httpServer.address() as AddressInfo).port}/mcp`,
    touch: () => {
      for (const { server, subscribed } of sessions.values()) if (subscribed.has(NOTE)) void server.server.sendResourceUpdated({ uri: NOTE });
    },
    toolsChanged: () => {
      for (const { server } of sessions.values()) server.sendToolListChanged();
    },
    close: async () => {
      for (const { transport } of sessions.values()) await transport.close();
      httpServer.closeAllConnections();
      await new Promise((resolve) => httpServer.close(resolve));
    },
  };
}

const UPSTREAMS = [
  ['TypeScript SDK 2.x createMcpHandler (2026-07-28 listen)', sdk2Upstream, 'modern'],
  ['TypeScript SDK 1.x (2025 session, GET stream, resources/subscribe)', sdk1Upstream, 'legacy'],
] as const;

for (const [what, start, era] of UPSTREAMS) {
  test(`${what} behind the gateway (era auto: ${era}), the official 2.x client listening in front: ack, an update, a tools change, the read`, async () => {
    const upstream = await start();
    const front = await startGateway({ upstreams: [{ name: 'sdk', url: upstream.url, reconnect: FAST }] });
    const note = upstreamUri('sdk', NOTE);
    const { client, updated, toolsChanged } = await modernClient(front.url);
    try {
      const subscription = await within(client.listen({ resourceSubscriptions: [note], toolsListChanged: true }), WAIT_MS, 'listen()');
      deepStrictEqual(subscription.honoredFilter, { resourceSubscriptions: [note], toolsListChanged: true });
      strictEqual(front.gateway.stats[0]!.era, era);
      upstream.touch();
      await until(() => updated.length === 1, 'the update');
      deepStrictEqual(updated, [note]);
      upstream.toolsChanged();
      await until(() => toolsChanged() === 1, 'the tools change');
      const read = await client.readResource({ uri: note });
      deepStrictEqual(read.contents.map((entry) => [entry.uri, 'text' in entry ? entry.text : undefined]), [[note, era === 'modern' ? 'from sdk 2' : 'from sdk 1']]);
    } finally {
      await client.close();
      await front.close();
      await upstream.close();
    }
  });

  test(`${what} behind the gateway, the official 1.x client (a 2025 session) in front: resources/subscribe, the update on its GET stream`, async () => {
    const upstream = await start();
    const front = await startGateway({ upstreams: [{ name: 'sdk', url: upstream.url, reconnect: FAST }] });
    const note = upstreamUri('sdk', NOTE);
    const { client, updated, toolsChanged } = await legacyClient(front.url);
    try {
      await until(() => front.endpoint.stats.streams === 1, 'the GET stream to open');
      deepStrictEqual(await within(client.subscribeResource({ uri: note }), WAIT_MS, 'resources/subscribe'), {});
      upstream.touch();
      await until(() => updated.length === 1, 'the update');
      deepStrictEqual(updated, [note]);
      upstream.toolsChanged();
      await until(() => toolsChanged() === 1, 'the tools change');
    } finally {
      await client.close();
      await front.close();
      await upstream.close();
    }
  });
}

test.run();
