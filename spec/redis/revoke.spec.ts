// A revoke on one node of a fleet ends the principal's streams and sessions on every node (issue 25,
// part 2): two endpoints in this process, each with its own RedisPrincipalCap, session store, event
// log and session bus on one real redis-server, streams read byte for byte over loopback.
import { strict as assert } from 'node:assert';
import { test } from 'uvu';
import { redisEventLogs } from '../../adapters/redis/eventLog.js';
import { RedisPrincipalCap } from '../../adapters/redis/principals.js';
import { RedisSessionBus } from '../../adapters/redis/sessionBus.js';
import { RedisSessionStore } from '../../adapters/redis/sessionStore.js';
import { RevokeRelayError } from '../../protocol/revoke.js';
import type { EndpointRequest } from '../../lib/context.js';
import { eventually, LISTEN_HEADERS, listenBody, SseConnection, startEndpoint, type TestServer } from '../helpers/http.js';
import { call, GetStream, initialize } from '../helpers/legacy.js';
import { closingText, toolsAckText } from '../helpers/frames.js';
import { redisForSuite } from '../helpers/redis.js';

const suite = redisForSuite(test);

let prefixes = 0;
const byHeader = (request: EndpointRequest) => ({ principal: `user:${request.header('x-principal') ?? 'anon'}`, scopes: new Set<string>() });
const as = (principal: string) => ({ 'x-principal': principal });

const ack = toolsAckText;
const revoked = (id: number) => closingText(id, 'revoked');

interface Node {
  readonly server: TestServer;
  readonly principals: RedisPrincipalCap;
  readonly sessionBus: RedisSessionBus;
}

async function fleet(body: (a: Node, b: Node) => Promise<void>): Promise<void> {
  const prefix = `revoke${prefixes++}`;
  const closers: (() => Promise<void>)[] = [];
  const nodes: Node[] = [];
  try {
    for (const nodeId of ['A', 'B']) {
      const principals = new RedisPrincipalCap({ redis: suite.server.url, nodeId, prefix: `${prefix}-cap`, maxPerPrincipal: 4 });
      const sessionStore = new RedisSessionStore({ redis: suite.server.url, prefix });
      const eventLog = redisEventLogs({ redis: suite.server.url, prefix });
      const sessionBus = new RedisSessionBus({ redis: suite.server.url, nodeId, channel: `${prefix}-sessions` });
      closers.push(() => principals.close(), () => sessionStore.close(), () => eventLog.close(), () => sessionBus.close());
      await Promise.all([sessionStore.ready(), eventLog.ready(), sessionBus.ready()]);
      const server = await startEndpoint({ principals, sessionStore, eventLog, sessionBus, authenticate: byHeader });
      nodes.push({ server, principals, sessionBus });
    }
    // Both caps subscribed to their channels before anything is revoked.
    await eventually(() => nodes.every((node) => node.principals.stats.failures === 0), 2000, 'the caps');
    await new Promise((resolve) => setTimeout(resolve, 100));
    await body(nodes[0]!, nodes[1]!);
  } finally {
    for (const node of nodes) await node.server.close();
    await Promise.all(closers.map((close) => close()));
  }
}

async function openListen(node: Node, id: number, principal: string): Promise<SseConnection> {
  const conn = await SseConnection.open(node.server.url, listenBody(id, { toolsListChanged: true }), { ...LISTEN_HEADERS, ...as(principal) });
  await conn.until((c) => c.text.includes('acknowledged'), 3000, `the ack of listen ${id}`);
  return conn;
}

test('a revoke on node A ends the principal\'s listens and sessions on A and B; another principal\'s are untouched', async () => {
  await fleet(async (a, b) => {
    const onA = await openListen(a, 1, 'alice');
    const onB = await openListen(b, 2, 'alice');
    const bobOnB = await openListen(b, 3, 'bob');
    // A legacy session of alice's, initialized on A, its GET stream on B.
    const session = await initialize(a.server.url, { headers: as('alice') });
    const get = GetStream.open(b.server.url, session.sessionId, { headers: as('alice') });
    await get.response;
    await eventually(() => b.server.endpoint.stats.streams === 3, 3000, 'the GET stream on B');
    const bobSession = await initialize(b.server.url, { headers: as('bob') });

    const result = await a.server.endpoint.revoke('user:alice');
    // A held alice's listen; her session it let go of when B claimed its GET stream: B ends it.
    assert.deepEqual(result, { streams: 1, sessions: 0 });
    await onA.until((c) => c.ended, 3000, "A's listen to end");
    await onB.until((c) => c.ended, 3000, "B's listen to end, told through Redis");
    assert.equal(onA.text, ack(1) + revoked(1));
    assert.equal(onB.text, ack(2) + revoked(2));
    await get.until((g) => g.ended, 3000, "the GET stream on B to end");
    for (const node of [a, b]) {
      const reply = await call(node.server.url, session.sessionId, 5, 'ping', undefined, as('alice'));
      assert.equal(reply.status, 404, `the session is gone on ${node === a ? 'A' : 'B'}`);
    }
    assert.equal(bobOnB.ended, false);
    assert.equal((await call(b.server.url, bobSession.sessionId, 6, 'ping', undefined, as('bob'))).status, 200);
    await eventually(() => a.principals.count('user:alice') + b.principals.count('user:alice') === 0, 2000, 'alice to count nowhere');
    assert.equal(b.principals.stats.revoked, 1);
    assert.equal(b.server.endpoint.stats.slots, 1, "B holds bob's listen only");
    bobOnB.destroy();
  });
});

test('with Redis down, a revoke ends what this node holds and rejects with RevokeRelayError saying so', async () => {
  await fleet(async (a) => {
    const onA = await openListen(a, 1, 'carol');
    await suite.server.stop();
    await eventually(() => a.sessionBus.connected === false, 3000, 'the bus to notice');
    const error = await a.server.endpoint.revoke('user:carol').then(
      () => undefined,
      (failure: unknown) => failure,
    );
    assert.ok(error instanceof RevokeRelayError, String(error));
    assert.deepEqual(error.info, { streams: 1, sessions: 0 });
    assert.match(error.message, /^ended 1 listen stream\(s\) and 0 session\(s\) on this node, but could not tell the other nodes/);
    await onA.until((c) => c.ended, 3000, 'the local listen to end anyway');
    assert.equal(onA.text, ack(1) + revoked(1));
    await suite.server.restart();
  });
});

test.run();
