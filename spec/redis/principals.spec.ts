// RedisPrincipalCap against a real redis-server: the M8 supersede rule across two nodes (two
// endpoints in this process, each with its own cap and connections), dead nodes, and an outage.
import { strict as assert } from 'node:assert';
import net from 'node:net';
import { test } from 'uvu';
import { RedisPrincipalCap } from '../../adapters/redis/principals.js';
import type { EndpointRequest } from '../../lib/context.js';
import { InvalidOptionError } from '../../lib/errors.js';
import { eventually, LISTEN_HEADERS, listenBody, SseConnection, startEndpoint, type TestServer } from '../helpers/http.js';
import { redisForSuite } from '../helpers/redis.js';

const suite = redisForSuite(test);

let prefixes = 0;
const freshPrefix = () => `cap${prefixes++}`;
const members = (prefix: string, principal: string) => suite.raw.zrange(`${prefix}:principal:{${principal}}`, '0', '-1');
// The heartbeats of the nodes holding streams of a principal, next to its set (one Cluster slot).
const beats = (prefix: string, principal: string) => `${prefix}:principal:{${principal}}:nodes`;
const byHeader = (request: EndpointRequest) => ({ principal: request.header('x-principal') ?? 'anon', scopes: new Set<string>() });

const frame = (json: string) => `event: message\ndata: ${json}\n\n`;
const meta = (id: number) => `"_meta":{"io.modelcontextprotocol/subscriptionId":${id}}`;
const ack = (id: number) => frame(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true},${meta(id)}}}`);
const supersededClose = (id: number) =>
  frame(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":${id},"reason":"superseded",${meta(id)}}}`) +
  frame(`{"jsonrpc":"2.0","id":${id},"result":{"resultType":"complete",${meta(id)}}}`);

/**
 * A TCP forwarder to the suite's redis-server (listen on it yourself), and its close (its sockets too).
 * `hold`, when given, sees each reply chunk first; returning true, it has taken over that chunk.
 */
function forwarderToRedis(hold?: (chunk: Buffer, socket: net.Socket, upstream: net.Socket) => boolean): { forwarder: net.Server; close(): Promise<void> } {
  const target = new URL(suite.server.url);
  const sockets = new Set<net.Socket>();
  const forwarder = net.createServer((socket) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    for (const end of [socket, upstream]) {
      sockets.add(end);
      end.on('error', () => undefined);
      end.on('close', () => sockets.delete(end));
    }
    socket.pipe(upstream);
    if (hold === undefined) upstream.pipe(socket);
    else upstream.on('data', (chunk: Buffer) => void (hold(chunk, socket, upstream) || socket.write(chunk)));
  });
  const close = async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => forwarder.close(resolve));
  };
  return { forwarder, close };
}

test('cap 2 across two nodes: a third listen on node B supersedes the oldest stream, on node A', async () => {
  const prefix = freshPrefix();
  const caps = ['A', 'B'].map((nodeId) => new RedisPrincipalCap({ redis: suite.server.url, nodeId, prefix, maxPerPrincipal: 2 }));
  const servers: TestServer[] = [];
  try {
    for (const principals of caps) servers.push(await startEndpoint({ principals, authenticate: byHeader }));
    const [a, b] = servers as [TestServer, TestServer];
    const open = async (server: TestServer, id: number, principal: string) => {
      const conn = await SseConnection.open(server.url, listenBody(id, { toolsListChanged: true }), { ...LISTEN_HEADERS, 'x-principal': principal });
      await conn.until((c) => c.text.includes('acknowledged'), 2000, `the ack of ${id}`);
      return conn;
    };
    const first = await open(a, 1, 'p');
    const second = await open(a, 2, 'p');
    const other = await open(a, 9, 'q');
    // Fleet-wide order is the order Redis recorded the admissions in.
    await eventually(() => caps[0]!.stats.recorded === 3, 2000, "A's admissions to be recorded");
    const third = await open(b, 3, 'p');
    await first.until((c) => c.ended, 2000, 'the oldest stream to be superseded');
    assert.equal(first.text, ack(1) + supersededClose(1));
    await new Promise((resolve) => setTimeout(resolve, 50));
    for (const conn of [second, third, other]) assert.equal(conn.ended, false);
    assert.deepEqual([caps[0]!.count('p'), caps[1]!.count('p'), caps[0]!.count('q')], [1, 1, 1]);
    assert.deepEqual(await members(prefix, 'p'), ['A:1', 'B:0']);
    assert.deepEqual(await members(prefix, 'q'), ['A:2']);

    // Releasing removes the member: a client that goes away frees its place fleet-wide.
    second.destroy();
    await eventually(() => caps[0]!.count('p') === 0, 2000, 'the release');
    await eventually(() => caps[0]!.size === 1, 2000, 'principal p to leave node A');
    assert.deepEqual(await members(prefix, 'p'), ['B:0']);
    third.destroy();
    other.destroy();
  } finally {
    for (const server of servers) await server.close();
    await Promise.all(caps.map((cap) => cap.close()));
  }
});

test("a dead node's streams stop counting (no heartbeat); a live node's count", async () => {
  for (const ghostAlive of [false, true]) {
    const prefix = freshPrefix();
    // Two streams of node "ghost", admitted later than anything on B (higher scores): if they
    // count, B's first stream is the oldest beyond the cap.
    const future = String((Date.now() + 60_000) * 1000);
    await suite.raw.zadd(`${prefix}:principal:{p}`, future, 'ghost:0', future + 1, 'ghost:1');
    // A heartbeat is the node's expiry time in Redis server milliseconds.
    if (ghostAlive) await suite.raw.hset(beats(prefix, 'p'), 'ghost', String(Date.now() + 60_000));
    const cap = new RedisPrincipalCap({ redis: suite.server.url, nodeId: 'B', prefix, maxPerPrincipal: 2 });
    try {
      const superseded: number[] = [];
      for (const n of [0, 1]) cap.admit('p').superseded$.subscribe(() => superseded.push(n));
      await eventually(() => cap.stats.recorded === 2, 2000, 'both admissions to be recorded');
      if (ghostAlive) {
        assert.deepEqual(superseded, [0, 1]);
        assert.deepEqual(await members(prefix, 'p'), ['ghost:0', 'ghost:1']);
      } else {
        assert.deepEqual(superseded, []);
        assert.deepEqual(await members(prefix, 'p'), ['B:0', 'B:1']);
      }
    } finally {
      await cap.close();
    }
  }
});

test('Redis down: the cap holds per node at once; after the restart the fleet-wide record matches the live streams again', async () => {
  const prefix = freshPrefix();
  const cap = new RedisPrincipalCap({ redis: suite.server.url, nodeId: 'A', prefix, maxPerPrincipal: 2, maxReconnectDelay: 50 });
  try {
    const first = cap.admit('p');
    await eventually(() => cap.stats.recorded === 1, 2000, 'the first admission to be recorded');
    await suite.server.stop();
    const superseded: string[] = [];
    first.superseded$.subscribe(() => superseded.push('first'));
    const second = cap.admit('p');
    const third = cap.admit('p');
    // Synchronous: the burst never holds more than the cap live, Redis or not.
    assert.deepEqual(superseded, ['first']);
    assert.equal(cap.count('p'), 2);
    second.release();
    await eventually(() => cap.stats.failures >= 3, 2000, 'the record of second and third and the removals to fail');
    await suite.server.restart();
    // The restarted Redis is empty: the node re-records its live stream (third, A:2) and its
    // heartbeat; the removals that failed are retried and remove nothing.
    await eventually(() => cap.stats.recorded === 2, 3000, 'the live stream to be recorded again');
    assert.deepEqual(await members(prefix, 'p'), ['A:2']);
    assert.equal(await suite.raw.hexists(beats(prefix, 'p'), 'A'), 1);
    third.release();
    await eventually(() => cap.size === 0, 1000, 'no principal left');
  } finally {
    await cap.close();
  }
});

test('a stream admitted while its node could not reach Redis keeps its place: recorded late, it is still the oldest the cap supersedes', async () => {
  const prefix = freshPrefix();
  // Node A reaches Redis through a forwarder that is not listening yet (a node still connecting,
  // or cut off); node B reaches it directly.
  const reserved = net.createServer();
  await new Promise<void>((resolve) => reserved.listen(0, '127.0.0.1', resolve));
  const { port } = reserved.address() as net.AddressInfo;
  await new Promise((resolve) => reserved.close(resolve));
  const { forwarder, close: closeForwarder } = forwarderToRedis();
  const a = new RedisPrincipalCap({ redis: `redis://127.0.0.1:${port}`, nodeId: 'A', prefix, maxPerPrincipal: 2, maxReconnectDelay: 50 });
  const b = new RedisPrincipalCap({ redis: suite.server.url, nodeId: 'B', prefix, maxPerPrincipal: 2 });
  try {
    const ended: string[] = [];
    const onA = a.admit('p');
    onA.superseded$.subscribe(() => ended.push('A:0'));
    await eventually(() => a.stats.failures >= 1, 2000, "A's record to fail");
    await new Promise((resolve) => setTimeout(resolve, 100));
    const onB = b.admit('p');
    onB.superseded$.subscribe(() => ended.push('B:0'));
    await eventually(() => b.stats.recorded === 1, 2000, "B's record");
    // A reaches Redis now and records its stream, admitted before B's.
    await new Promise<void>((resolve) => forwarder.listen(port, '127.0.0.1', resolve));
    await eventually(() => a.stats.recorded === 1, 3000, "A's late record");
    assert.deepEqual(await members(prefix, 'p'), ['A:0', 'B:0'], "A's stream scored before B's");
    // A third stream: the oldest, A's, is superseded, not B's.
    const third = b.admit('p');
    await eventually(() => ended.length > 0, 3000, 'a supersede');
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.deepEqual(ended, ['A:0']);
    onB.release();
    third.release();
  } finally {
    await Promise.all([a.close(), b.close()]);
    await closeForwarder();
  }
});

test("a node whose clock reading came back late still scores its streams in the fleet's order: the shortest of its TIME round trips counts", async () => {
  const prefix = freshPrefix();
  // Node B reaches Redis through a forwarder that holds the first TIME reply back for 300 ms (a
  // reply waiting for a busy event loop); node A reaches it directly. From that reading alone, B
  // would put its streams 150 ms earlier than they came.
  let held = 0;
  const { forwarder, close: closeForwarder } = forwarderToRedis((chunk, socket, upstream) => {
    // TIME's reply: two bulk strings, the seconds (10 digits) first.
    if (held > 0 || !chunk.toString('latin1').startsWith('*2\r\n$10\r\n')) return false;
    held++;
    upstream.pause();
    setTimeout(() => {
      socket.write(chunk);
      upstream.resume();
    }, 300);
    return true;
  });
  await new Promise<void>((resolve) => forwarder.listen(0, '127.0.0.1', resolve));
  const { port } = forwarder.address() as net.AddressInfo;
  const a = new RedisPrincipalCap({ redis: suite.server.url, nodeId: 'A', prefix, maxPerPrincipal: 2 });
  const b = new RedisPrincipalCap({ redis: `redis://127.0.0.1:${port}`, nodeId: 'B', prefix, maxPerPrincipal: 2 });
  try {
    await eventually(() => held === 1, 3000, "B's first TIME reply to be held");
    await new Promise((resolve) => setTimeout(resolve, 600));
    const ended: string[] = [];
    const first = a.admit('p');
    first.superseded$.subscribe(() => ended.push('A:0'));
    await eventually(() => a.stats.recorded === 1, 2000, "A's record");
    await new Promise((resolve) => setTimeout(resolve, 50));
    const second = b.admit('p');
    second.superseded$.subscribe(() => ended.push('B:0'));
    await eventually(() => b.stats.recorded === 1, 2000, "B's record");
    assert.deepEqual(await members(prefix, 'p'), ['A:0', 'B:0'], "A's stream, admitted 50 ms before B's, scored before it");
    const third = a.admit('p');
    await eventually(() => ended.length > 0, 3000, 'a supersede');
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.deepEqual(ended, ['A:0']);
    second.release();
    third.release();
  } finally {
    await Promise.all([a.close(), b.close()]);
    await closeForwarder();
  }
});

test('maxPerPrincipal, heartbeatTtl and nodeId are validated at construction, naming the option', () => {
  const cases: [Record<string, unknown>, string][] = [
    [{ redis: suite.server.url, maxPerPrincipal: 0 }, 'maxPerPrincipal must be a positive integer, got 0'],
    [{ redis: suite.server.url, heartbeatTtl: 10 }, 'heartbeatTtl must be a positive integer of milliseconds (at least 30), got 10'],
    [{ redis: suite.server.url, nodeId: 'a:b' }, 'nodeId must be a string without ":" (it separates node and stream in members), got "a:b"'],
    [{ redis: suite.server.url, prefix: 'a b' }, 'prefix must be a non-empty string without whitespace, got "a b"'],
  ];
  for (const [options, message] of cases) {
    assert.throws(() => new RedisPrincipalCap(options as never), (error: unknown) => error instanceof InvalidOptionError && error.message === message);
  }
});

test.run();
