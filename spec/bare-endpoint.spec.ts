// A bare endpoint and the official clients (issue 16, item 1): `new McpEndpoint({ hub })` served
// by `nodeHandler` on a real loopback socket, with no `methods` at all, against the official 2.x
// client (`@modelcontextprotocol/client`, protocol 2026-07-28: `server/discover`, then a listen) and
// the official 1.x client (`@modelcontextprotocol/sdk`, legacy: `initialize`, the GET stream,
// `resources/subscribe`, a server-side cut and the Last-Event-ID resume). Nothing here goes through
// the reference server.
import { deepStrictEqual, ok, strictEqual } from 'node:assert';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport, type ClientOptions } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { test } from 'uvu';
import { nodeHandler } from '../adapters/http/node.js';
import { McpEndpoint } from '../adapters/http/endpoint.js';
import type { McpEndpointOptions } from '../adapters/http/options.js';
import { Hub } from '../lib/hub.js';
import { eventually } from './helpers/http.js';
import { within } from './helpers/wait.js';

/** Bound of every wait in this file: fail instead of hanging. */
const WAIT_MS = 4_000;
const MODERN = '2026-07-28';
const URI = 'file:///srv/data/config.json';
const OTHER_URI = 'file:///srv/data/other.json';


/** A GET the server received: its headers, its socket and every byte written on its response. */
interface SeenGet {
  readonly headers: http.IncomingHttpHeaders;
  readonly socket: Socket;
  written: string;
  closed: boolean;
}

interface Bare {
  readonly hub: Hub;
  readonly endpoint: McpEndpoint;
  readonly url: URL;
  /** Every GET the server received, in order. */
  readonly gets: SeenGet[];
}

/** Serves `new McpEndpoint({ hub, ...options })` with `nodeHandler` on port 0, runs `fn`, closes all. */
async function withBareEndpoint(options: Partial<McpEndpointOptions>, fn: (bare: Bare) => Promise<void>): Promise<void> {
  const hub = new Hub();
  const endpoint = new McpEndpoint({ ...options, hub });
  const handle = nodeHandler(endpoint);
  const gets: SeenGet[] = [];
  const server = http.createServer((req, res) => {
    if (req.method === 'GET') {
      const seen: SeenGet = { headers: req.headers, socket: req.socket, written: '', closed: false };
      gets.push(seen);
      const write = res.write.bind(res) as (chunk: unknown, ...rest: unknown[]) => boolean;
      res.write = ((chunk: unknown, ...rest: unknown[]) => {
        seen.written += typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8');
        return write(chunk, ...rest);
      }) as typeof res.write;
      res.once('close', () => (seen.closed = true));
    }
    handle(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    await fn({ hub, endpoint, url: new URL(`http://127.0.0.1:${port}/mcp`), gets });
  } finally {
    endpoint.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    hub.close();
  }
}

/** The official 2.x client, connected to `url` in the modern era (pinned unless `options` says otherwise). */
async function modernClient(url: URL, options: ClientOptions = {}) {
  const client = new ModernClient({ name: 'bare-endpoint-spec', version: '0.0.0' }, { versionNegotiation: { mode: { pin: MODERN } }, ...options });
  const errors: unknown[] = [];
  const updated: string[] = [];
  let toolsChanged = 0;
  client.onerror = (error) => errors.push(error);
  client.setNotificationHandler('notifications/resources/updated', (notification) => void updated.push(notification.params.uri));
  client.setNotificationHandler('notifications/tools/list_changed', () => void toolsChanged++);
  await within(client.connect(new ModernTransport(url), { timeout: WAIT_MS }), WAIT_MS + 500, 'connect()');
  return { client, errors, updated, toolsChanged: () => toolsChanged };
}

test('official 2.x client: discovers a bare endpoint (pinned 2026-07-28), listens, gets what the hub publishes, closes cleanly', async () => {
  await withBareEndpoint({}, async ({ hub, endpoint, url }) => {
    const { client, errors, updated, toolsChanged } = await modernClient(url);
    try {
      strictEqual(client.getProtocolEra(), 'modern');
      strictEqual(client.getNegotiatedProtocolVersion(), MODERN);
      // Built from the endpoint's defaults: tools, prompts and resources, and its server info.
      deepStrictEqual(client.getServerCapabilities(), {
        tools: { listChanged: true },
        prompts: { listChanged: true },
        resources: { subscribe: true, listChanged: true },
      });
      deepStrictEqual(client.getServerVersion(), { name: 'mcp-rx-streams', version: '0.1.0' });

      const subscription = await within(client.listen({ resourceSubscriptions: [URI], toolsListChanged: true }, { timeout: WAIT_MS }), WAIT_MS + 500, 'the ack');
      deepStrictEqual(subscription.honoredFilter, { toolsListChanged: true, resourceSubscriptions: [URI] });
      strictEqual(endpoint.stats.streams, 1);
      hub.notifyResourceUpdated(OTHER_URI);
      hub.notifyResourceUpdated(URI);
      hub.notifyToolsChanged();
      await eventually(() => updated.length >= 1 && toolsChanged() >= 1, WAIT_MS, 'resources/updated and tools/list_changed');
      deepStrictEqual(updated, [URI], 'only the URI listened to');
      strictEqual(toolsChanged(), 1);

      await within(subscription.close(), WAIT_MS, 'subscription.close()');
      strictEqual(await within(subscription.closed, WAIT_MS, 'subscription.closed'), 'local');
      await eventually(() => endpoint.stats.streams === 0 && endpoint.stats.slots === 0, WAIT_MS, 'the stream to be released');
      deepStrictEqual(errors.map(String), []);
    } finally {
      await client.close().catch(() => {});
    }
  });
});

test("official 2.x client in mode 'auto' settles on 2026-07-28 against a bare endpoint (no fallback to initialize)", async () => {
  await withBareEndpoint({ capabilities: { resources: true } }, async ({ endpoint, url }) => {
    const { client } = await modernClient(url, { versionNegotiation: { mode: 'auto' } });
    try {
      strictEqual(client.getProtocolEra(), 'modern');
      deepStrictEqual(client.getServerCapabilities(), { resources: { subscribe: true, listChanged: true } });
      strictEqual(endpoint.stats.sessions, 0, 'no legacy session was opened');
    } finally {
      await client.close().catch(() => {});
    }
  });
});

test('server/discover is built from serverInfo, capabilities (tasks as the extension), extraCapabilities and instructions; answered on the modern path only', async () => {
  const serverInfo = { name: 'files', version: '1.2.0', title: 'Files' };
  await withBareEndpoint(
    { serverInfo, instructions: 'watch files', capabilities: { prompts: true, tasks: true }, extraCapabilities: { logging: {} } },
    async ({ url }) => {
      const discover = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': MODERN },
        body: '{"jsonrpc":"2.0","id":"d","method":"server/discover"}',
      });
      strictEqual(discover.status, 200);
      deepStrictEqual(await discover.json(), {
        jsonrpc: '2.0',
        id: 'd',
        result: {
          resultType: 'complete',
          ttlMs: 0,
          cacheScope: 'private',
          supportedVersions: [MODERN],
          capabilities: { logging: {}, prompts: { listChanged: true }, extensions: { 'io.modelcontextprotocol/tasks': {} } },
          instructions: 'watch files',
          _meta: { 'io.modelcontextprotocol/serverInfo': serverInfo },
        },
      });
      // The legacy handshake advertises the same server.
      const init = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '0' } } }),
      });
      const session = init.headers.get('mcp-session-id');
      deepStrictEqual((await init.json()).result, {
        protocolVersion: '2025-06-18',
        capabilities: { logging: {}, prompts: { listChanged: true } },
        serverInfo,
        instructions: 'watch files',
      });
      // Inside a legacy session server/discover is not a method.
      const inSession = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18', 'mcp-session-id': session! },
        body: '{"jsonrpc":"2.0","id":2,"method":"server/discover"}',
      });
      strictEqual((await inSession.json()).error.code, -32601);
    },
  );
});

test('a methods entry overrides the built-in server/discover (the 2.x client reads it) and initialize (the 1.x client reads it; the session is still opened)', async () => {
  await withBareEndpoint(
    {
      methods: {
        'server/discover': () => ({
          resultType: 'complete',
          ttlMs: 60_000,
          cacheScope: 'public',
          supportedVersions: [MODERN],
          capabilities: { resources: { subscribe: true } },
          _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'overridden', version: '2.0.0' } },
        }),
        initialize: () => ({
          protocolVersion: '1999-01-01',
          capabilities: { resources: { subscribe: true } },
          serverInfo: { name: 'overridden-legacy', version: '2.0.0' },
        }),
      },
    },
    async ({ endpoint, url }) => {
      const modern = await modernClient(url);
      try {
        deepStrictEqual(modern.client.getServerVersion(), { name: 'overridden', version: '2.0.0' });
        deepStrictEqual(modern.client.getServerCapabilities(), { resources: { subscribe: true } });
        strictEqual(modern.client.getDiscoverResult()?.ttlMs, 60_000);
      } finally {
        await modern.client.close().catch(() => {});
      }
      const legacy = new LegacyClient({ name: 'bare-endpoint-spec', version: '0.0.0' });
      const transport = new LegacyTransport(url);
      try {
        await within(legacy.connect(transport), WAIT_MS, 'connect()');
        deepStrictEqual(legacy.getServerVersion(), { name: 'overridden-legacy', version: '2.0.0' });
        deepStrictEqual(legacy.getServerCapabilities(), { resources: { subscribe: true } });
        // The protocolVersion is the one the session runs at, whatever the override said.
        strictEqual(transport.protocolVersion, '2025-11-25');
        ok(typeof transport.sessionId === 'string');
        strictEqual(endpoint.stats.sessions, 1);
      } finally {
        await legacy.close().catch(() => {});
      }
    },
  );
});

test('an initialize override that throws opens no session', async () => {
  const { JsonRpcError } = await import('../lib/jsonrpc.js');
  await withBareEndpoint(
    {
      methods: {
        initialize: () => {
          throw new JsonRpcError(-32602, 'this server wants a client name');
        },
      },
    },
    async ({ endpoint, url }) => {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '0' } } }),
      });
      strictEqual(response.headers.get('mcp-session-id'), null);
      deepStrictEqual(await response.json(), { jsonrpc: '2.0', id: 1, error: { code: -32602, message: 'this server wants a client name' } });
      strictEqual(endpoint.stats.sessions, 0);
    },
  );
});

test('2026-07-28: a listen for taskIds without the tasks extension is HTTP 400 with -32021 and the missing capability; a bad filter stays HTTP 200 -32602', async () => {
  await withBareEndpoint({ capabilities: { tasks: true } }, async ({ endpoint, url }) => {
    const listen = (notifications: unknown) =>
      fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': MODERN },
        body: JSON.stringify({ jsonrpc: '2.0', id: 'l', method: 'subscriptions/listen', params: { notifications } }),
      });
    const missing = await listen({ taskIds: ['t-1'] });
    strictEqual(missing.status, 400);
    const body = await missing.json();
    strictEqual(body.id, 'l');
    strictEqual(body.error.code, -32021);
    deepStrictEqual(body.error.data, { requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } });
    const malformed = await listen({ taskIds: 'nope' });
    strictEqual(malformed.status, 200);
    strictEqual((await malformed.json()).error.code, -32602);
    deepStrictEqual(endpoint.stats, { streams: 0, slots: 0, principals: 0, sessions: 0, sessionSubscriptions: 0 });
  });
});

test('official 1.x client: initializes a bare endpoint, subscribes, gets resources/updated, resumes with Last-Event-ID after the server cuts its GET', async () => {
  await withBareEndpoint({ reconnectDelay: 10 }, async ({ hub, endpoint, url, gets }) => {
    // The client's GETs after the first (its reconnects) wait for `releaseReconnect`, so a change
    // can be published while the session provably has no stream.
    let releaseReconnect!: () => void;
    const reconnectGate = new Promise<void>((resolve) => (releaseReconnect = resolve));
    let clientGets = 0;
    const gatedFetch = async (input: string | URL, init?: RequestInit): Promise<Response> => {
      if ((init?.method ?? 'GET') === 'GET' && ++clientGets > 1) await reconnectGate;
      return fetch(input, init);
    };
    const updated: string[] = [];
    const client = new LegacyClient({ name: 'bare-endpoint-spec', version: '0.0.0' });
    client.onerror = () => {}; // the cut is reported here ("SSE stream disconnected")
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => void updated.push(notification.params.uri));
    const transport = new LegacyTransport(url, {
      fetch: gatedFetch,
      reconnectionOptions: { initialReconnectionDelay: 10, maxReconnectionDelay: 10, reconnectionDelayGrowFactor: 1, maxRetries: 3 },
    });
    try {
      await within(client.connect(transport), WAIT_MS, 'connect()');
      strictEqual(transport.protocolVersion, '2025-11-25');
      ok(typeof transport.sessionId === 'string' && transport.sessionId.length >= 32, `session id: ${transport.sessionId}`);
      deepStrictEqual(client.getServerCapabilities(), {
        tools: { listChanged: true },
        prompts: { listChanged: true },
        resources: { subscribe: true, listChanged: true },
      });
      deepStrictEqual(client.getServerVersion(), { name: 'mcp-rx-streams', version: '0.1.0' });

      await eventually(() => endpoint.stats.streams === 1, WAIT_MS, 'the GET stream to open');
      deepStrictEqual(await within(client.subscribeResource({ uri: URI }), WAIT_MS, 'resources/subscribe'), {});
      hub.notifyResourceUpdated(OTHER_URI);
      hub.notifyResourceUpdated(URI);
      await eventually(() => updated.length >= 1, WAIT_MS, 'resources/updated');
      deepStrictEqual(updated, [URI]);
      const lastSeen = [...gets[0]!.written.matchAll(/^id: (\d+)$/gm)].map((match) => match[1]).at(-1);
      ok(lastSeen !== undefined, `the GET stream's frames carry ids: ${JSON.stringify(gets[0]!.written)}`);

      // The server cuts the GET; a change published meanwhile goes to the session's replay buffer.
      gets[0]!.socket.destroy();
      await eventually(() => endpoint.stats.streams === 0 && gets[0]!.closed, WAIT_MS, 'the server to notice the cut');
      hub.notifyResourceUpdated(URI);
      strictEqual(updated.length, 1, 'nothing delivered while disconnected');

      releaseReconnect();
      await eventually(() => updated.length >= 2, WAIT_MS, 'the missed update after the reconnect');
      strictEqual(gets.length, 2, 'one reconnect');
      strictEqual(gets[1]!.headers['last-event-id'], lastSeen, 'the reconnect resumes after the last id seen');
      deepStrictEqual(updated, [URI, URI], 'the update made while disconnected, once');
    } finally {
      await client.close().catch(() => {});
    }
  });
});

test.run();
