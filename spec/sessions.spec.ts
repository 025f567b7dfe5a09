// Session plumbing below the wire-level L1–L10 spec: option validation, the session cap, the
// in-memory store, an asynchronous event log, and two endpoints sharing a store, a log and a
// SessionBus (a fleet in one process: what the Redis adapters do across processes).
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { BehaviorSubject, type Observable, of } from 'rxjs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { McpEndpoint } from '../adapters/http/endpoint.js';
import type { EndpointResponse } from '../adapters/http/responses.js';
import type { EndpointRequest } from '../lib/context.js';
import { InvalidOptionError } from '../lib/errors.js';
import type { Frame, MessageFrame } from '../lib/frame.js';
import type { PrincipalCap } from '../lib/principals.js';
import { Hub } from '../lib/hub.js';
import { resolveSessionOptions } from '../protocol/legacy/sessionOptions.js';
import { ReplayBuffer, type EventLog } from '../lib/replayBuffer.js';
import { MemorySessionStore, type SessionBus, type SessionCommand } from '../lib/session.js';
import { asyncLog } from './helpers/frames.js';
import { startEndpoint, type TestServer } from './helpers/http.js';
import { call, frameText, GetStream, INIT_HEADERS, initialize, listChangedMessage, nextTurn, rpcBody, send, sessionHeaders, updatedMessage } from './helpers/legacy.js';
import { eventually } from './helpers/http.js';

test('session options: defaults, and each bad value refused by name', () => {
  assert.equal(resolveSessionOptions(), {
    sessionIdleTimeout: 1_800_000,
    sessionGracePeriod: 60_000,
    sessionPruneInterval: 60_000,
    replayBufferSize: 100,
    allowClientSessionDelete: true,
    subscribeStreamWait: 1_000,
    maxSessions: 10_000,
    maxSubscriptionsPerSession: 1_000,
    maxSessionsPerPrincipal: 100,
    reconnectDelay: 1_000,
  });
  assert.is(resolveSessionOptions({ subscribeStreamWait: 0 }).subscribeStreamWait, 0);
  const bad: [string, unknown][] = [
    ['sessionIdleTimeout', 0],
    ['sessionGracePeriod', -1],
    ['sessionPruneInterval', 2 ** 31],
    ['replayBufferSize', 1.5],
    ['allowClientSessionDelete', 'no'],
    ['subscribeStreamWait', -5],
    ['maxSessions', Number.NaN],
    ['maxSubscriptionsPerSession', 0],
    ['maxSessionsPerPrincipal', 0.5],
    ['reconnectDelay', -1],
  ];
  for (const [name, value] of bad) {
    assert.throws(
      () => resolveSessionOptions({ [name]: value }),
      (error: unknown) => error instanceof InvalidOptionError && error.message.startsWith(`${name} must be`),
      name,
    );
  }
});

test("the MemorySessionStore's takeUp makes a node the keeper only if the one it names is (forgetting a GET stream there); keptBy finds a node's and its workers' sessions", () => {
  const store = new MemorySessionStore();
  const record = (id: string) => ({ id, principal: 'p', protocolVersion: '2025-11-25', subscriptions: ['a'], lastActivity: 10 });
  for (const id of ['s1', 's2', 's3', 's4']) store.create(record(id));
  store.update('s1', { streamNode: 'm/1', keeper: 'm/1', scopes: ['x'] });
  store.update('s2', { keeper: 'm/2' });
  store.update('s3', { keeper: 'mx' });
  assert.equal(store.keptBy('m').map(({ id, keeper }) => `${id} ${keeper}`), ['s1 m/1', 's2 m/2']);
  assert.equal(store.keptBy('m/1'), [{ id: 's1', keeper: 'm/1' }]);
  assert.is(store.takeUp('s1', 'm/2', 'n'), false, 'not its keeper');
  assert.is(store.takeUp('s1', 'm/1', 'n'), true);
  assert.equal({ ...store.get('s1') }, { ...record('s1'), streamNode: null, keeper: 'n', scopes: ['x'] });
  assert.is(store.takeUp('s1', 'm/1', 'o'), false, 'one of the nodes that try wins');
  assert.is(store.takeUp('s1', 'n', null), true, 'a keeper lets go');
  assert.is(store.get('s1')!.keeper, null);
  assert.is(store.takeUp('s4', null, 'n'), true, 'a session nobody keeps');
  assert.is(store.takeUp('missing', null, 'n'), false);
});

test('the MemorySessionStore hands out frozen copies and finds idle records', () => {
  const store = new MemorySessionStore();
  const subscriptions = ['a'];
  store.create({ id: 's1', principal: 'p', protocolVersion: '2025-11-25', subscriptions, lastActivity: 10 });
  subscriptions.push('b');
  assert.equal(store.get('s1')!.subscriptions, ['a']);
  assert.ok(Object.isFrozen(store.get('s1')));
  store.update('s1', { subscriptions: ['a', 'c'], streamNode: 'n1' });
  assert.equal(store.get('s1')!.subscriptions, ['a', 'c']);
  assert.is(store.get('s1')!.streamNode, 'n1');
  // Every field is kept through an update, and none is added.
  assert.equal({ ...store.get('s1') }, { id: 's1', principal: 'p', protocolVersion: '2025-11-25', subscriptions: ['a', 'c'], lastActivity: 10, streamNode: 'n1' });
  store.update('s1', { streamNode: null, lastActivity: 12 });
  assert.equal({ ...store.get('s1') }, { id: 's1', principal: 'p', protocolVersion: '2025-11-25', subscriptions: ['a', 'c'], lastActivity: 12, streamNode: null });
  store.update('s1', { lastActivity: 10 });
  store.create({ id: 's2', principal: 'p', protocolVersion: '2025-11-25', subscriptions: [], lastActivity: 20 });
  assert.equal(Object.keys(store.get('s2')!), ['id', 'principal', 'protocolVersion', 'subscriptions', 'lastActivity']);
  store.delete('s2');
  store.update('missing', { lastActivity: 1 });
  assert.is(store.get('missing'), undefined);
  assert.equal(store.idleSince(11), ['s1']);
  assert.equal(store.idleSince(10), []);
  store.delete('s1');
  assert.is(store.size, 0);
});

test('maxSessions: an initialize beyond the cap gets 503 and -32000, a DELETE makes room', async () => {
  const server = await startEndpoint({ maxSessions: 2 });
  try {
    const a = await initialize(server.url);
    await initialize(server.url);
    const refused = await initialize(server.url, { id: 9 });
    assert.is(refused.status, 503);
    assert.equal(refused.json, { jsonrpc: '2.0', id: 9, error: { code: -32000, message: 'server is at its session capacity (maxSessions); retry later', data: { retryAfterMs: 5000 } } });
    assert.is(refused.sessionId, undefined);
    assert.is((await send(server.url, 'DELETE', sessionHeaders(a.sessionId))).status, 204);
    assert.is((await initialize(server.url)).status, 200);
  } finally {
    await server.close();
  }
});

test('an asynchronous event log: frames reach the GET stream in publish order with their ids, and replay works', async () => {
  const logs = new Map<string, EventLog>();
  const server = await startEndpoint({
    subscribeStreamWait: 0,
    // Later appends resolve first: the session must still write 1, 2, 3… in order.
    eventLog: (id) => logs.get(id) ?? (logs.set(id, asyncLog(100, (n) => (n % 3) * 4)), logs.get(id)!),
  });
  try {
    const { sessionId } = await initialize(server.url);
    const get = GetStream.open(server.url, sessionId);
    await eventually(() => server.endpoint.stats.streams === 1, 2000, 'the GET stream');
    assert.equal((await call(server.url, sessionId, 2, 'resources/subscribe', { uri: 'file:///a' })).json.result, {});
    // One per turn: identical notifications in one turn are one frame.
    for (let i = 0; i < 6; i++) {
      server.hub.notifyResourceUpdated('file:///a');
      await nextTurn();
    }
    await get.untilId(6);
    assert.equal(get.ids, [1, 2, 3, 4, 5, 6]);
    get.destroy();
    const again = GetStream.open(server.url, sessionId, { lastEventId: '4' });
    await again.untilId(6);
    assert.is(again.withoutKeepAlives, frameText(5, updatedMessage('file:///a')) + frameText(6, updatedMessage('file:///a')));
    again.destroy();
  } finally {
    await server.close();
  }
});

/** An in-process SessionBus network: what RedisSessionBus does between processes. */
function busNetwork() {
  const members = new Set<{ nodeId: string; deliver: (id: string, command: SessionCommand) => void }>();
  const sent: [string, string, SessionCommand][] = [];
  const bus = (nodeId: string): SessionBus => ({
    nodeId,
    publish: (id, command) => {
      sent.push([nodeId, id, command]);
      for (const member of members) if (member.nodeId !== nodeId) member.deliver(id, command);
    },
    connect: (deliver) => {
      const member = { nodeId, deliver };
      members.add(member);
      return () => members.delete(member);
    },
  });
  return { bus, sent };
}

async function fleet(body: (a: TestServer, b: TestServer, sent: [string, string, SessionCommand][]) => Promise<void>): Promise<void> {
  const hub = new Hub(); // one hub stands for a hub plus a cross-node bus
  const store = new MemorySessionStore();
  const logs = new Map<string, ReplayBuffer>();
  const eventLog = (id: string) => logs.get(id) ?? (logs.set(id, new ReplayBuffer(100)), logs.get(id)!);
  const network = busNetwork();
  const common = { hub, sessionStore: store, eventLog, subscribeStreamWait: 0 };
  const a = await startEndpoint({ ...common, sessionBus: network.bus('A') });
  const b = await startEndpoint({ ...common, sessionBus: network.bus('B') });
  try {
    await body(a, b, network.sent);
  } finally {
    await a.close();
    await b.close();
  }
}

test('fleet: a subscribe POSTed on B reaches the GET stream on A', async () => {
  await fleet(async (a, b) => {
    const { sessionId } = await initialize(a.url);
    const get = GetStream.open(a.url, sessionId);
    await eventually(() => a.endpoint.stats.streams === 1, 2000, 'the GET stream on A');
    await eventually(() => a.endpoint.stats.sessionSubscriptions === 1, 2000, 'list-changed on A');
    const reply = await call(b.url, sessionId, 2, 'resources/subscribe', { uri: 'file:///x' });
    assert.equal(reply.json, { jsonrpc: '2.0', id: 2, result: {} });
    await eventually(() => a.endpoint.stats.sessionSubscriptions === 2, 2000, 'the subscription on A');
    assert.is(b.endpoint.stats.sessionSubscriptions, 0);
    a.hub.notifyResourceUpdated('file:///x');
    await get.untilId(1);
    assert.is(get.withoutKeepAlives, frameText(1, updatedMessage('file:///x')));
    // Unsubscribed on B: A drops it.
    assert.equal((await call(b.url, sessionId, 3, 'resources/unsubscribe', { uri: 'file:///x' })).json.result, {});
    await eventually(() => a.endpoint.stats.sessionSubscriptions === 1, 2000, 'the unsubscribe on A');
    get.destroy();
  });
});

test('fleet: a reconnect with Last-Event-ID served by B replays what A logged, then B carries on the ids', async () => {
  await fleet(async (a, b, sent) => {
    const { sessionId } = await initialize(a.url);
    const get = GetStream.open(a.url, sessionId);
    await eventually(() => a.endpoint.stats.streams === 1, 2000, 'the GET stream on A');
    assert.equal((await call(a.url, sessionId, 2, 'resources/subscribe', { uri: 'file:///x' })).json.result, {});
    a.hub.notifyResourceUpdated('file:///x');
    await get.untilId(1);
    get.destroy();
    await eventually(() => a.endpoint.stats.streams === 0, 2000, 'A to notice the drop');
    // During A's grace period its subscription keeps logging.
    for (let i = 0; i < 10; i++) {
      a.hub.notifyResourceUpdated('file:///x');
      await nextTurn();
    }
    const resumed = GetStream.open(b.url, sessionId, { lastEventId: '1' });
    await resumed.untilId(11);
    assert.equal(resumed.ids, [2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    // B claimed the stream: A let go of the session's subscriptions, B restored them from the record.
    assert.ok(sent.some(([node, id, command]) => node === 'B' && id === sessionId && command.kind === 'claimed'));
    await eventually(() => a.endpoint.stats.sessionSubscriptions === 0 && b.endpoint.stats.sessionSubscriptions === 2, 2000, 'the handover');
    a.hub.notifyResourceUpdated('file:///x');
    await resumed.untilId(12);
    assert.equal(resumed.ids.slice(-2), [11, 12], 'exactly one frame per change after the handover');
    resumed.destroy();
  });
});

test('fleet: DELETE on B ends the stream on A', async () => {
  await fleet(async (a, b) => {
    const { sessionId } = await initialize(a.url);
    const get = GetStream.open(a.url, sessionId);
    await eventually(() => a.endpoint.stats.streams === 1, 2000, 'the GET stream on A');
    assert.is((await send(b.url, 'DELETE', sessionHeaders(sessionId))).status, 204);
    await get.untilEnded();
    assert.ok(get.endedCleanly);
    await eventually(() => a.endpoint.stats.sessions === 0 && a.endpoint.stats.slots === 0, 2000, 'A to forget the session');
    assert.is((await call(a.url, sessionId, 5, 'ping')).status, 404);
  });
});


/* What an idle session holds (issue 15): nothing of the requests that made it */

/** The global `gc` of V8, made available without a command-line flag. */
function collectGarbage(): () => void {
  v8.setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

/** One request as an adapter hands it to the endpoint; only a WeakRef of it is kept outside. */
function request(method: string, headers: Record<string, string>, body?: string): EndpointRequest {
  return { method, header: (name) => headers[name], remoteAddress: '127.0.0.1', body };
}

test('an open session with its GET stream and a subscription keeps none of the requests that opened them', async () => {
  const gc = collectGarbage();
  const hub = new Hub();
  const endpoint = new McpEndpoint({ hub, capabilities: { tools: true, resources: true } });
  const frames: Frame[] = [];
  let get: WeakRef<EndpointRequest>;
  let subscribe: WeakRef<EndpointRequest>;
  const stream = await (async () => {
    const init = await endpoint.handle(request('POST', { ...INIT_HEADERS }, rpcBody(1, 'initialize', { protocolVersion: '2025-11-25', capabilities: {} })));
    assert.is(init.kind, 'json');
    const sessionId = (init as { headers: Record<string, string> }).headers['Mcp-Session-Id']!;
    const getRequest = request('GET', { accept: 'text/event-stream', 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' });
    get = new WeakRef(getRequest);
    const response = await endpoint.handle(getRequest);
    assert.is(response.kind, 'stream');
    const subscription = (response as Extract<EndpointResponse, { kind: 'stream' }>).open(new BehaviorSubject(true)).subscribe((frame) => frames.push(frame));
    const subscribeRequest = request('POST', sessionHeaders(sessionId), rpcBody(2, 'resources/subscribe', { uri: 'file:///a' }));
    subscribe = new WeakRef(subscribeRequest);
    const reply = await endpoint.handle(subscribeRequest);
    assert.equal(JSON.parse((reply as { body: string }).body), { jsonrpc: '2.0', id: 2, result: {} });
    return subscription;
  })();
  for (let i = 0; i < 3; i++) {
    await nextTurn();
    gc();
  }
  assert.is(subscribe!.deref(), undefined, 'the subscribe request is not kept by the subscription');
  assert.is(get!.deref(), undefined, 'the GET request is not kept by its stream (nothing to restore, no fleet)');
  // And the session still works.
  hub.notifyResourceUpdated('file:///a');
  assert.equal(
    frames.filter((frame) => frame.type === 'message').map((frame) => (frame as MessageFrame).eventId),
    ['1'],
  );
  stream.unsubscribe();
  endpoint.close();
});

/** Initializes a session in process and returns its GET stream's `open`, for a test to subscribe when it wants. */
async function sessionStream(endpoint: McpEndpoint): Promise<(demand$: BehaviorSubject<boolean>) => Observable<Frame>> {
  const init = await endpoint.handle(request('POST', { ...INIT_HEADERS }, rpcBody(1, 'initialize', { protocolVersion: '2025-11-25', capabilities: {} })));
  const sessionId = (init as { headers: Record<string, string> }).headers['Mcp-Session-Id']!;
  const response = await endpoint.handle(request('GET', { accept: 'text/event-stream', 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' }));
  return (response as Extract<EndpointResponse, { kind: 'stream' }>).open;
}

test('list changes: sessions share one hub registration per topic, and a session that starts listening within a storm still hears it', async () => {
  const hub = new Hub();
  const endpoint = new McpEndpoint({ hub, capabilities: { tools: true } });
  const openA = await sessionStream(endpoint);
  const openB = await sessionStream(endpoint);
  const a: Frame[] = [];
  const b: Frame[] = [];
  const messages = (frames: Frame[]) => frames.filter((frame) => frame.type === 'message').map((frame) => (frame as MessageFrame).message);
  // All in one turn: A listens, a change, B starts listening, the same change again.
  const streamA = openA(new BehaviorSubject(true)).subscribe((frame) => a.push(frame));
  assert.equal(hub.size, { topics: 0, subscriptions: 1 }, 'one registration for the sessions');
  hub.notifyToolsChanged();
  const streamB = openB(new BehaviorSubject(true)).subscribe((frame) => b.push(frame));
  assert.equal(hub.size, { topics: 0, subscriptions: 1 }, 'still one with two sessions');
  hub.notifyToolsChanged();
  // As for any subscriber that comes in between (HubOptions.coalesce): the run is not collapsed.
  assert.equal(messages(a), [listChangedMessage('tools'), listChangedMessage('tools')], 'A heard both');
  assert.equal(messages(b), [listChangedMessage('tools')], 'B, listening since the first, heard the second');
  hub.notifyToolsChanged();
  assert.equal(messages(b).length, 1, 'a third in the same turn is collapsed for both');
  assert.equal(messages(a).length, 2);
  streamA.unsubscribe();
  streamB.unsubscribe();
  endpoint.close();
  assert.equal(hub.size, { topics: 0, subscriptions: 0 }, 'the registration goes with the last session that listens');
});

test('a GET stream replaced while it is still opening gives its slot back at once and ends as it opens; one session never holds two slots', async () => {
  const endpoint = new McpEndpoint({ hub: new Hub() });
  const init = await endpoint.handle(request('POST', { ...INIT_HEADERS }, rpcBody(1, 'initialize', { protocolVersion: '2025-11-25', capabilities: {} })));
  const sessionId = (init as { headers: Record<string, string> }).headers['Mcp-Session-Id']!;
  const get = () => endpoint.handle(request('GET', { accept: 'text/event-stream', 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' }));
  // Two GETs of one session answered before either is opened (their responses on their way to the adapter).
  const first = (await get()) as Extract<EndpointResponse, { kind: 'stream' }>;
  assert.is(endpoint.stats.slots, 1);
  const second = (await get()) as Extract<EndpointResponse, { kind: 'stream' }>;
  assert.is(endpoint.stats.slots, 1, 'the second replaced the first before taking its slot');
  let firstCompleted = false;
  first.open(new BehaviorSubject(true)).subscribe({ complete: () => (firstCompleted = true) });
  assert.ok(firstCompleted, 'the replaced one ends as it opens');
  assert.is(endpoint.stats.streams, 0);
  const frames: Frame[] = [];
  const live = second.open(new BehaviorSubject(true)).subscribe((frame) => frames.push(frame));
  assert.is(endpoint.stats.streams, 1);
  assert.is(endpoint.stats.slots, 1);
  assert.is(frames.length, 1, 'the newest one is primed and live');
  first.abandon();
  assert.is(endpoint.stats.slots, 1, 'abandoning the replaced one gives back nothing twice');
  live.unsubscribe();
  assert.is(endpoint.stats.slots, 0);
  // A GET answered and never opened (its client left) gives its slot back.
  const third = (await get()) as Extract<EndpointResponse, { kind: 'stream' }>;
  assert.is(endpoint.stats.slots, 1);
  third.abandon();
  assert.is(endpoint.stats.slots, 0);
  endpoint.close();
});

test('a GET stream closed as it opens (the endpoint shut down in between) gives back its slot', async () => {
  const endpoint = new McpEndpoint({ hub: new Hub() });
  const open = await sessionStream(endpoint);
  assert.is(endpoint.stats.slots, 1);
  endpoint.close();
  let completed = false;
  open(new BehaviorSubject(true)).subscribe({ complete: () => (completed = true) });
  assert.ok(completed, 'the stream ended at once');
  assert.is(endpoint.stats.streams, 0);
  assert.is(endpoint.stats.slots, 0, 'its slot is given back');
});

test('GET streams are not admitted through the per-principal listen cap (DESIGN L9: one per session)', async () => {
  let admitted = 0;
  const principals: PrincipalCap = {
    maxPerPrincipal: 1,
    size: 0,
    count: () => 0,
    admit: () => {
      admitted++;
      return { superseded$: of(undefined), release: () => {} };
    },
  };
  const endpoint = new McpEndpoint({ hub: new Hub(), principals });
  const open = await sessionStream(endpoint);
  let completed = false;
  const stream = open(new BehaviorSubject(true)).subscribe({ complete: () => (completed = true) });
  assert.is(admitted, 0, 'not admitted');
  assert.not.ok(completed, 'not superseded');
  assert.is(endpoint.stats.streams, 1);
  stream.unsubscribe();
  endpoint.close();
});

test.run();
