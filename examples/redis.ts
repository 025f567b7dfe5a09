// One node of a fleet: several of these behind a load balancer, sharing one Redis, behave as one
// server (docs/fleet.md): every notify* reaches the matching streams on every node, the
// per-principal cap is fleet-wide, and legacy sessions with their Last-Event-ID replay live in Redis.
// Run it:   node --import tsx examples/redis.ts redis://127.0.0.1:6379 3001 a    (and again with 3002 b)
// spec/adapters/frameworks.spec.ts runs two nodes on one redis-server and listens across them.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { Hub, McpEndpoint, nodeHandler } from '../index.js';
import { RedisBus, RedisPrincipalCap, RedisSessionBus, RedisSessionStore, redisEventLogs } from '../adapters/redis/index.js';

/** A running node of {@link startFleetNode}. */
export interface FleetNode {
  /** Publish here: the streams of every node hear it. */
  readonly hub: Hub;
  readonly endpoint: McpEndpoint;
  /** `http://127.0.0.1:<port>/mcp`. */
  readonly url: string;
  /** Ends the streams, stops listening, then closes the Redis connections. */
  close(): Promise<void>;
}

/**
 * Starts an McpEndpoint on 127.0.0.1:`port` (0: any free port) whose hub, per-principal cap and
 * legacy sessions are shared through the Redis at `redis` with the other nodes, named `nodeId`
 * (unique per node).
 */
export async function startFleetNode(redis: string, nodeId: string, port = 0): Promise<FleetNode> {
  const ttl = 1_800_000 + 60_000; // sessionIdleTimeout + sessionPruneInterval: a record outlives its session
  const bus = new RedisBus({ redis, nodeId });
  const principals = new RedisPrincipalCap({ redis, nodeId, maxPerPrincipal: 4 });
  const sessionStore = new RedisSessionStore({ redis, ttl });
  const eventLog = redisEventLogs({ redis, ttl, capacity: 100 });
  const sessionBus = new RedisSessionBus({ redis, nodeId });
  await Promise.all([bus.ready(), sessionStore.ready(), eventLog.ready(), sessionBus.ready()]);

  const hub = new Hub({ bus });
  const endpoint = new McpEndpoint({ hub, principals, sessionStore, eventLog, sessionBus, capabilities: { tools: true, resources: true } });
  const server = http.createServer(nodeHandler(endpoint));
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    hub,
    endpoint,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    async close() {
      endpoint.close(); // every stream gets its closing frames
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      hub.close();
      await Promise.all([bus.close(), principals.close(), sessionStore.close(), eventLog.close(), sessionBus.close()]);
    },
  };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [redis = 'redis://127.0.0.1:6379', port = '3001', nodeId = `node-${process.pid}`] = process.argv.slice(2);
  const node = await startFleetNode(redis, nodeId, Number(port));
  console.log(`${nodeId} listening on ${node.url}`);
  const stop = () => void node.close();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
