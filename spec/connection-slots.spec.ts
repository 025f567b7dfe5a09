// Issue "hostile clients", class 2: a slot is held only while its connection lives, whatever state
// the streaming request is in. Node 20 never emits 'close' on a response queued behind another
// one on a keep-alive connection (HTTP pipelining), so the adapter watches the socket itself.
import { strict as assert } from 'node:assert';
import net from 'node:net';
import { test } from 'uvu';
import type { AuthInfo } from '../lib/auth.js';
import type { EndpointRequest } from '../lib/context.js';
import { eventually, listenBody, startEndpoint, type TestServer } from './helpers/http.js';
import { initialize } from './helpers/legacy.js';

// Long enough that only the socket watch can explain a release within the test's wait: neither
// the stall guard (one keep-alive interval) nor the lifetime cap fires meanwhile.
const OPTIONS = { keepAliveInterval: 60_000, maxStreamLifetime: 3_600_000 };
const RELEASE_WITHIN_MS = 1000;

/** The principal from `x-principal`. */
const byHeader = (request: EndpointRequest): AuthInfo => ({ principal: `user:${request.header('x-principal') ?? 'anon'}`, scopes: new Set() });

function listenRequest(id: number, principal: string): string {
  const body = listenBody(id, { toolsListChanged: true });
  return (
    `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\n` +
    `MCP-Protocol-Version: 2026-07-28\r\nX-Principal: ${principal}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}

function getRequest(sessionId: string): string {
  return `GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nMcp-Session-Id: ${sessionId}\r\nMcp-Protocol-Version: 2025-11-25\r\n\r\n`;
}

/** A raw keep-alive connection that sends `requests` in one write (pipelined). */
function pipelined(server: TestServer, requests: string[]): net.Socket {
  const socket = net.connect(Number(new URL(server.url).port), '127.0.0.1');
  socket.on('error', () => {});
  socket.on('data', () => {});
  socket.write(requests.join(''));
  return socket;
}

test('listens pipelined behind an SSE response on one connection: every slot and principal entry is given back as soon as the connection ends', async () => {
  const server = await startEndpoint({ ...OPTIONS, authenticate: byHeader, maxListensPerPrincipal: 100 });
  try {
    // Ten connections, each: one live listen, then nine queued behind it.
    const sockets = Array.from({ length: 10 }, (_, c) => pipelined(server, Array.from({ length: 10 }, (_, i) => listenRequest(c * 10 + i, `p${c}`))));
    await eventually(() => server.endpoint.stats.slots === 100, 3000, 'every pipelined listen to hold its slot');
    assert.equal(server.endpoint.stats.principals, 10);
    const started = Date.now();
    for (const socket of sockets) socket.destroy();
    await eventually(() => server.endpoint.stats.slots === 0, RELEASE_WITHIN_MS, 'the slots of the queued listens to be released');
    await eventually(() => server.endpoint.stats.principals === 0 && server.endpoint.stats.streams === 0, RELEASE_WITHIN_MS, 'principals and streams');
    assert.ok(Date.now() - started < RELEASE_WITHIN_MS, `released after ${Date.now() - started} ms`);
    assert.deepEqual(server.hub.size, { topics: 0, subscriptions: 0 });
  } finally {
    await server.close();
  }
});

test('a listen pipelined behind a GET stream, and GET streams pipelined behind each other: released when the connection ends', async () => {
  const server = await startEndpoint({ ...OPTIONS, authenticate: byHeader, maxListensPerPrincipal: 100 });
  try {
    const headers = { 'x-principal': 'legacy' };
    const sessions = await Promise.all(Array.from({ length: 4 }, () => initialize(server.url, { headers })));
    const get = (sid: string) => getRequest(sid).replace('\r\n\r\n', '\r\nX-Principal: legacy\r\n\r\n');
    const socket = pipelined(server, [get(sessions[0]!.sessionId), get(sessions[1]!.sessionId), listenRequest(1, 'legacy'), get(sessions[2]!.sessionId)]);
    await eventually(() => server.endpoint.stats.slots === 4, 3000, 'the four pipelined streams to hold slots');
    const started = Date.now();
    socket.destroy();
    await eventually(() => server.endpoint.stats.slots === 0 && server.endpoint.stats.principals === 0, RELEASE_WITHIN_MS, 'every slot released');
    assert.ok(Date.now() - started < RELEASE_WITHIN_MS);
    // The sessions stay (in their grace period); their next GET works.
    assert.equal(server.endpoint.stats.sessions, 4);
  } finally {
    await server.close();
  }
});

test('a connection node:http stopped reading (large pipelined listens): its queued streams are released within one keep-alive interval of the client leaving', async () => {
  // 40 listens of about 25 KiB each: node:http reads a few, answers the first with a stream and
  // pauses the socket (pipelining backpressure), so it cannot see the client leave by reading.
  const interval = 1000;
  const server = await startEndpoint({ ...OPTIONS, keepAliveInterval: interval, authenticate: byHeader, maxListensPerPrincipal: 100 });
  try {
    const uris = Array.from({ length: 1000 }, (_, i) => `file:///srv/data/${i}`);
    const big = (id: number) => {
      const body = listenBody(id, { resourceSubscriptions: uris });
      return (
        `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\n` +
        `MCP-Protocol-Version: 2026-07-28\r\nX-Principal: big\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
      );
    };
    const socket = pipelined(server, Array.from({ length: 40 }, (_, i) => big(i)));
    await eventually(() => server.endpoint.stats.slots >= 2, 3000, 'pipelined listens to hold slots');
    await new Promise((resolve) => setTimeout(resolve, 200));
    const held = server.endpoint.stats.slots;
    assert.ok(held >= 2, `${held} slots held`);
    const started = Date.now();
    socket.destroy();
    await eventually(() => server.endpoint.stats.slots === 0 && server.endpoint.stats.principals === 0, 3 * interval, 'the slots of the paused connection');
    const took = Date.now() - started;
    // The next keep-alive provokes the peer's reset, the probe after it fails: one interval and a bit.
    assert.ok(took <= interval + 600, `released ${took} ms after the client left (keepAliveInterval ${interval})`);
  } finally {
    await server.close();
  }
});

test('a streaming request whose connection ends before it is answered (authentication pending) takes no slot', async () => {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let reached = 0;
  const server = await startEndpoint({
    ...OPTIONS,
    authenticate: async (request) => {
      reached++;
      await gate;
      return byHeader(request);
    },
  });
  try {
    const socket = pipelined(server, [listenRequest(1, 'slow'), listenRequest(2, 'slow')]);
    await eventually(() => reached === 2, 3000, 'both requests to reach authentication');
    socket.destroy();
    await new Promise((resolve) => setTimeout(resolve, 50));
    release();
    await eventually(() => server.endpoint.stats.slots === 0, RELEASE_WITHIN_MS, 'no slot held');
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(server.endpoint.stats.slots, 0);
    assert.equal(server.endpoint.stats.principals, 0);
  } finally {
    await server.close();
  }
});

test.run();
