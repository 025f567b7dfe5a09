// SDK 1.x servers (@modelcontextprotocol/sdk) as a fleet on one Redis: every node records each
// session's streams in the shared Redis event logs (eventLogStore over redisEventLogs), so when a
// client's GET stream is cut and its reconnect lands on another node (the first one restarted, or
// the load balancer moved it), that node replays exactly what the client missed with Last-Event-ID
// and keeps the session's resource subscriptions going from there.
// The SDK keeps a session in the process that initialized it; taking its GET stream over elsewhere
// is the `resume` branch below (docs/existing-server.md explains the choices).
// Run two:  REDIS_URL=redis://127.0.0.1:6379 node --import tsx examples/sdk1-fleet.ts 3001 (and 3002)
// spec/sdk/sdk1-redis.spec.ts runs two nodes on one redis-server and drives them with the official 1.x client.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { pathToFileURL } from 'node:url';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { SubscribeRequestSchema, UnsubscribeRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { Redis } from 'ioredis';
import { Hub } from '../index.js';
import { redisEventLogs } from '../adapters/redis/index.js';
import { eventLogStore, ResourceUpdates } from '../adapters/sdk/index.js';
import type { EventLog } from '../index.js';

/** Where the fleet keeps each session's subscribed URIs (a session unknown here is unknown everywhere). */
export interface SubscriptionRecords {
  get(sessionId: string): Promise<readonly string[] | undefined>;
  set(sessionId: string, uris: readonly string[]): Promise<void>;
  delete(sessionId: string): Promise<void>;
}

/** {@link SubscriptionRecords} as one Redis string per session, expiring `ttl` milliseconds after its last change. */
export function redisSubscriptionRecords(redis: Redis, ttl = 1_800_000): SubscriptionRecords {
  const key = (sessionId: string) => `sdk-subscriptions:{${sessionId}}`;
  return {
    get: async (sessionId) => {
      const text = await redis.get(key(sessionId));
      return text === null ? undefined : (JSON.parse(text) as string[]);
    },
    set: async (sessionId, uris) => void (await redis.set(key(sessionId), JSON.stringify(uris), 'PX', ttl)),
    delete: async (sessionId) => void (await redis.del(key(sessionId))),
  };
}

/** What one node needs: its hub, the fleet's shared event logs and subscription records. */
export interface FleetNodeOptions {
  readonly hub: Hub;
  readonly eventLogs: (key: string) => EventLog;
  readonly records: SubscriptionRecords;
}

/** One node: a `(req, res)` handler, and `close()` for when the node stops (sessions live on in Redis). */
export function fleetNode({ hub, eventLogs, records }: FleetNodeOptions) {
  /** The SDK server of a session (or of a session's GET stream taken over here); `updates` serve its subscribes. */
  function sessionServer(sessionId: string, owner?: ResourceUpdates) {
    const server = new McpServer({ name: 'notes', version: '1.0.0' }, { capabilities: { resources: { subscribe: true } } });
    const updates = owner ?? new ResourceUpdates(server.server, { hub, onChange: (uris) => records.set(sessionId, uris) });
    server.server.setRequestHandler(SubscribeRequestSchema, updates.subscribe);
    server.server.setRequestHandler(UnsubscribeRequestSchema, updates.unsubscribe);
    return { server, updates };
  }
  const local = new Map<string, StreamableHTTPServerTransport>();
  const resumed = new Map<string, { readonly transport: StreamableHTTPServerTransport; readonly updates: ResourceUpdates }>();

  async function open(): Promise<StreamableHTTPServerTransport> {
    const sessionId = randomUUID();
    const { server, updates } = sessionServer(sessionId);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => sessionId,
      eventStore: eventLogStore(eventLogs, sessionId),
      onsessioninitialized: async (id) => {
        local.set(id, transport);
        await records.set(id, []);
      },
      onsessionclosed: (id) => records.delete(id), // DELETE: the session ends fleet-wide
    });
    transport.onclose = () => {
      updates.close();
      local.delete(sessionId);
    };
    await server.connect(transport);
    return transport;
  }

  /** A GET for a session of the fleet that this node does not hold: replay from Redis, then live. */
  async function resume(sessionId: string, uris: readonly string[]): Promise<StreamableHTTPServerTransport> {
    await resumed.get(sessionId)?.transport.close(); // a newer GET replaces the previous one
    const { server, updates } = sessionServer(sessionId);
    // No session id generator: the SDK serves this one GET without an initialize of its own.
    const transport = new StreamableHTTPServerTransport({ eventStore: eventLogStore(eventLogs, sessionId) });
    transport.onclose = () => {
      updates.close();
      if (resumed.get(sessionId)?.transport === transport) resumed.delete(sessionId);
    };
    await server.connect(transport);
    await updates.restore(uris);
    resumed.set(sessionId, { transport, updates });
    return transport;
  }

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const sessionId = req.headers['mcp-session-id'];
    if (sessionId === undefined && req.method === 'POST') return (await open()).handleRequest(req, res);
    if (typeof sessionId !== 'string') return void res.writeHead(400).end();
    const held = local.get(sessionId);
    if (held !== undefined) return held.handleRequest(req, res);
    const uris = await records.get(sessionId);
    if (uris === undefined) return void res.writeHead(404).end();
    if (req.method === 'GET') return (await resume(sessionId, uris)).handleRequest(req, res);
    if (req.method === 'DELETE') {
      await resumed.get(sessionId)?.transport.close();
      await records.delete(sessionId);
      return void res.writeHead(200).end();
    }
    // A POST of a session initialized elsewhere: served statelessly (a fresh SDK server for one
    // request). Its subscribes go to the GET stream resumed here if there is one; otherwise they are
    // recorded, and established where the session's GET stream resumes next.
    const owner = resumed.get(sessionId)?.updates;
    const { server, updates } = sessionServer(sessionId, owner);
    const transport = new StreamableHTTPServerTransport({});
    if (owner === undefined) transport.onclose = () => updates.close();
    res.once('close', () => void transport.close());
    await server.connect(transport);
    await transport.handleRequest(req, res);
  };

  return {
    handle,
    /** Stops this node's sessions (their records and event logs stay in Redis for the others). */
    close: async () => {
      const transports = [...local.values(), ...[...resumed.values()].map((entry) => entry.transport)];
      await Promise.all(transports.map((transport) => transport.close()));
    },
  };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const eventLogs = redisEventLogs({ redis: redisUrl, capacity: 100 });
  await eventLogs.ready();
  const node = fleetNode({ hub: new Hub(), eventLogs, records: redisSubscriptionRecords(new Redis(redisUrl)) });
  const server = http.createServer((req, res) => void node.handle(req, res).catch(() => res.destroy()));
  server.listen(Number(process.argv[2] ?? 3000), '127.0.0.1', () => {
    const { port } = server.address() as { port: number };
    console.log(`notes fleet node (SDK 1.x + mcp-rx-streams on Redis) listening on http://127.0.0.1:${port}/mcp`);
  });
}
