// SDK 1.x servers as a fleet on one real redis-server (issue 16, item 3): two nodes in this process
// run examples/sdk1-fleet.ts (eventLogStore over redisEventLogs, ResourceUpdates), the official 1.x
// client is cut from node A, node A stops, and the client's Last-Event-ID reconnect lands on node B,
// which replays from Redis exactly what A recorded while the client was away, then carries on live.
import { deepStrictEqual, ok, strictEqual } from 'node:assert';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { test } from 'uvu';
import { redisEventLogs, type RedisEventLogs } from '../../adapters/redis/eventLog.js';
import { sessionKeys } from '../../adapters/redis/sessionStore.js';
import { STANDALONE_STREAM_ID } from '../../adapters/sdk/index.js';
import { Hub } from '../../lib/hub.js';
import { fleetNode, redisSubscriptionRecords } from '../../examples/sdk1-fleet.js';
import { eventually } from '../helpers/http.js';
import { redisForSuite } from '../helpers/redis.js';
import { within } from '../helpers/wait.js';

const suite = redisForSuite(test);
const WAIT_MS = 5_000;
const NOTE = 'memo://notes/today';

interface Seen {
  readonly method: string;
  readonly headers: http.IncomingHttpHeaders;
  readonly socket: Socket;
  written: string;
  closed: boolean;
}

/** One node: its own hub, its own Redis connections, an http.Server on port 0 recording each response. */
async function startNode() {
  const hub = new Hub();
  const eventLogs: RedisEventLogs = redisEventLogs({ redis: suite.server.url, capacity: 100 });
  await eventLogs.ready();
  const node = fleetNode({ hub, eventLogs, records: redisSubscriptionRecords(suite.raw) });
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    const entry: Seen = { method: req.method!, headers: req.headers, socket: req.socket, written: '', closed: false };
    seen.push(entry);
    const write = res.write.bind(res) as (chunk: unknown, ...rest: unknown[]) => boolean;
    res.write = ((chunk: unknown, ...rest: unknown[]) => {
      entry.written += typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8');
      return write(chunk, ...rest);
    }) as typeof res.write;
    res.once('close', () => (entry.closed = true));
    node.handle(req, res).catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  let stopped = false;
  return {
    hub,
    port: (server.address() as AddressInfo).port,
    gets: () => seen.filter((entry) => entry.method === 'GET'),
    /** The node stops: its sessions close, its connections end (what Redis holds stays). */
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await node.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await eventLogs.close();
      hub.close();
    },
  };
}

const frame = (eventId: string, message: object) => `event: message\nid: ${eventId}\ndata: ${JSON.stringify(message)}\n\n`;
const updatedMessage = (uri: string) => ({ method: 'notifications/resources/updated', params: { uri }, jsonrpc: '2.0' });

test('official 1.x client: cut from node A, A stops, the Last-Event-ID reconnect on node B replays what A recorded in Redis, then B carries on live', async () => {
  const a = await startNode();
  const b = await startNode();
  // The "load balancer": the client has one URL; its requests go to whichever node is current.
  let target = a.port;
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let gets = 0;
  const updated: string[] = [];
  const client = new Client({ name: 'sdk1-fleet-spec', version: '0.0.0' });
  client.onerror = () => {}; // the cut is reported here
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => void updated.push(notification.params.uri));
  const transport = new StreamableHTTPClientTransport(new URL('http://127.0.0.1:1/mcp'), {
    fetch: async (input: string | URL, init?: RequestInit) => {
      if ((init?.method ?? 'GET') === 'GET' && ++gets > 1) await gate;
      const url = new URL(input);
      url.port = String(target);
      return fetch(url, init);
    },
    reconnectionOptions: { initialReconnectionDelay: 10, maxReconnectionDelay: 10, reconnectionDelayGrowFactor: 1, maxRetries: 3 },
  });
  try {
    await within(client.connect(transport), WAIT_MS, 'connect() to node A');
    const sessionId = transport.sessionId!;
    ok(typeof sessionId === 'string');
    await eventually(() => a.gets().length === 1, WAIT_MS, 'the GET stream on A');
    deepStrictEqual(await within(client.subscribeResource({ uri: NOTE }), WAIT_MS, 'resources/subscribe on A'), {});
    deepStrictEqual(JSON.parse((await suite.raw.get(`sdk-subscriptions:{${sessionId}}`))!), [NOTE], 'the subscription is recorded for the fleet');
    a.hub.notifyResourceUpdated(NOTE);
    await eventually(() => updated.length === 1, WAIT_MS, 'the first update, live from A');
    strictEqual(a.gets()[0]!.written, frame(`${STANDALONE_STREAM_ID}:1`, updatedMessage(NOTE)));

    // The client's GET is cut; A records the next update in Redis (nothing to write it to), then A stops.
    const log = sessionKeys('mcp-rx-streams:session', `${sessionId}/${STANDALONE_STREAM_ID}`).log;
    a.gets()[0]!.socket.destroy();
    await eventually(() => a.gets()[0]!.closed, WAIT_MS, 'the cut');
    a.hub.notifyResourceUpdated(NOTE);
    let logged = 0;
    const counting = setInterval(() => void suite.raw.llen(log).then((length) => (logged = length)), 5);
    try {
      await eventually(() => logged === 2, WAIT_MS, "A's second event in Redis");
    } finally {
      clearInterval(counting);
    }
    await a.stop();
    strictEqual(updated.length, 1, 'nothing delivered while cut');

    // The reconnect lands on B: replayed from Redis with A's id, then live from B's hub.
    target = b.port;
    release();
    await eventually(() => updated.length === 2, WAIT_MS, 'the missed update, replayed by B');
    const resumed = b.gets()[0]!;
    strictEqual(resumed.headers['last-event-id'], `${STANDALONE_STREAM_ID}:1`);
    strictEqual(resumed.headers['mcp-session-id'], sessionId);
    strictEqual(resumed.written, frame(`${STANDALONE_STREAM_ID}:2`, updatedMessage(NOTE)));
    b.hub.notifyResourceUpdated('memo://notes/other'); // not subscribed
    b.hub.notifyResourceUpdated(NOTE);
    await eventually(() => updated.length === 3, WAIT_MS, 'a live update from B');
    strictEqual(resumed.written, frame(`${STANDALONE_STREAM_ID}:2`, updatedMessage(NOTE)) + frame(`${STANDALONE_STREAM_ID}:3`, updatedMessage(NOTE)));
    deepStrictEqual(updated, [NOTE, NOTE, NOTE]);
    strictEqual(b.hub.size.subscriptions, 1, 'B holds the restored subscription');

    // DELETE (served by B) ends the session fleet-wide.
    await within(transport.terminateSession(), WAIT_MS, 'DELETE on B');
    strictEqual(await suite.raw.get(`sdk-subscriptions:{${sessionId}}`), null);
    await eventually(() => b.hub.size.subscriptions === 0, WAIT_MS, "B to release the session's subscription");
  } finally {
    await client.close().catch(() => {});
    await a.stop();
    await b.stop();
  }
});

test.run();
