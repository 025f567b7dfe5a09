// A publish may carry a read scope: only streams whose principal holds it hear that notification,
// so a change never reveals activity on a resource the receiver may not read (issue "hostile
// clients", class 4). Listen streams, legacy GET streams and the public `notifications` source.
import { strict as assert } from 'node:assert';
import { test } from 'uvu';
import type { AuthInfo } from '../lib/auth.js';
import type { EndpointRequest } from '../lib/context.js';
import type { Frame, MessageFrame } from '../lib/frame.js';
import { InvalidOptionError } from '../lib/errors.js';
import { Hub, type HubBus, type HubEvent } from '../lib/hub.js';
import { listenStream } from '../operators/listenPipeline.js';
import { notifications } from '../lib/notifications.js';
import { eventually, LISTEN_HEADERS, listenBody, SseConnection, startEndpoint } from './helpers/http.js';
import { call, GetStream, initialize, nextTurn } from './helpers/legacy.js';

const methodOf = (frame: Frame) => (frame.type === 'message' ? (frame.message as { method?: string }).method : frame.type);

test('listenStream: a scoped publish reaches only streams whose scopes hold it; unscoped publishes reach all', () => {
  const hub = new Hub();
  const filter = { toolsListChanged: true, resourcesListChanged: true, resourceSubscriptions: ['file:///srv/'] } as const;
  const seen = { plain: [] as Frame[], scoped: [] as Frame[] };
  const a = listenStream({ requestId: 1, filter, hub }).subscribe((f) => seen.plain.push(f));
  const b = listenStream({ requestId: 2, filter, hub, scopes: new Set(['private']) }).subscribe((f) => seen.scoped.push(f));
  hub.notifyResourceUpdated('file:///srv/', { scope: 'private' });
  hub.notifyResourcesChanged({ scope: 'private' });
  hub.notifyToolsChanged({ scope: 'admin' });
  hub.notifyResourceUpdated('file:///srv/');
  assert.deepEqual(seen.plain.map(methodOf), ['notifications/subscriptions/acknowledged', 'notifications/resources/updated']);
  assert.deepEqual(seen.scoped.map(methodOf), [
    'notifications/subscriptions/acknowledged',
    'notifications/resources/updated',
    'notifications/resources/list_changed',
    'notifications/resources/updated',
  ]);
  a.unsubscribe();
  b.unsubscribe();
});

test('notifications(hub, filter, scopes): the same rule for users composing the operators themselves', () => {
  const hub = new Hub();
  const plain: MessageFrame[] = [];
  const scoped: MessageFrame[] = [];
  const a = notifications(hub, { resourceSubscriptions: ['file:///x'] }).subscribe((f) => plain.push(f));
  const b = notifications(hub, { resourceSubscriptions: ['file:///x'] }, new Set(['private'])).subscribe((f) => scoped.push(f));
  hub.notifyResourceUpdated('file:///x', { scope: 'private' });
  assert.equal(plain.length, 0);
  assert.equal(scoped.length, 1);
  a.unsubscribe();
  b.unsubscribe();
  assert.deepEqual(hub.size, { topics: 0, subscriptions: 0 }, 'unsubscribing leaves the hub');
});

test('a scoped publish is relayed with its scope, and a relayed one is delivered under it', () => {
  const relayed: HubEvent[] = [];
  let deliver!: (event: HubEvent) => void;
  const bus: HubBus = { publish: (event) => relayed.push(event), connect: (fn) => ((deliver = fn), () => {}) };
  const hub = new Hub({ bus });
  hub.notifyResourceUpdated('file:///x', { scope: 'private' });
  hub.notifyPromptsChanged({ scope: 'private' });
  assert.deepEqual(relayed, [{ topic: 'resource', uri: 'file:///x', scope: 'private' }, { topic: 'prompts', scope: 'private' }]);
  const plain: Frame[] = [];
  const subscription = listenStream({ requestId: 1, filter: { promptsListChanged: true }, hub }).subscribe((f) => plain.push(f));
  deliver({ topic: 'prompts', scope: 'private' });
  deliver({ topic: 'prompts' });
  assert.deepEqual(plain.map(methodOf), ['notifications/subscriptions/acknowledged', 'notifications/prompts/list_changed']);
  // Its keep-alive timer would keep the test process alive.
  subscription.unsubscribe();
});

test('a scope must be a non-empty string', () => {
  const hub = new Hub();
  for (const scope of ['', 5, null]) {
    assert.throws(
      () => hub.notifyResourceUpdated('file:///x', { scope: scope as string }),
      (error: unknown) => error instanceof InvalidOptionError && error.info.option === 'hub.notifyResourceUpdated options.scope',
    );
  }
});

/** The principal from `x-principal`, scopes from `x-scopes`. */
const byHeader = (request: EndpointRequest): AuthInfo => ({
  principal: `user:${request.header('x-principal') ?? 'anon'}`,
  scopes: new Set((request.header('x-scopes') ?? '').split(' ').filter(Boolean)),
});

test('over HTTP: a listen and a legacy GET stream of an unscoped principal never hear a scoped change; scoped ones do', async () => {
  const server = await startEndpoint({ authenticate: byHeader, maxListensPerPrincipal: 10 });
  try {
    const folder = 'file:///srv/';
    const open = (principal: string, scopes: string) =>
      SseConnection.open(server.url, listenBody(principal, { resourceSubscriptions: [folder] }), { ...LISTEN_HEADERS, 'x-principal': principal, 'x-scopes': scopes });
    const outsider = await open('outsider', '');
    const insider = await open('insider', 'private');
    const headers = { 'x-principal': 'legacy', 'x-scopes': '' };
    const { sessionId } = await initialize(server.url, { headers });
    const get = GetStream.open(server.url, sessionId, { headers });
    await eventually(() => server.endpoint.stats.streams === 3, 3000, 'three streams');
    assert.equal((await call(server.url, sessionId, 1, 'resources/subscribe', { uri: folder }, headers)).status, 200);
    server.hub.notifyResourceUpdated(folder, { scope: 'private' });
    server.hub.notifyResourcesChanged({ scope: 'private' });
    await nextTurn(); // in the same turn the sentinel would be collapsed into the scoped update
    server.hub.notifyResourceUpdated(folder); // a sentinel everyone hears
    await insider.until((c) => c.messages.length === 3, 3000, 'the scoped change and the sentinel');
    await outsider.until((c) => c.messages.length === 2, 3000, 'the sentinel');
    await get.untilId(1);
    assert.deepEqual(get.ids, [1], 'the legacy stream heard only the sentinel (a scoped change takes no id)');
    assert.deepEqual(outsider.messages.map((m) => m.method), ['notifications/subscriptions/acknowledged', 'notifications/resources/updated']);
    outsider.destroy();
    insider.destroy();
    get.destroy();
    // A session whose principal holds the scope hears it.
    const scopedHeaders = { 'x-principal': 'legacy2', 'x-scopes': 'private' };
    const scoped = await initialize(server.url, { headers: scopedHeaders });
    const get2 = GetStream.open(server.url, scoped.sessionId, { headers: scopedHeaders });
    await eventually(() => server.endpoint.stats.streams === 1, 3000, 'the scoped GET');
    assert.equal((await call(server.url, scoped.sessionId, 1, 'resources/subscribe', { uri: folder }, scopedHeaders)).status, 200);
    server.hub.notifyResourceUpdated(folder, { scope: 'private' });
    await get2.untilId(1);
    get2.destroy();
  } finally {
    await server.close();
  }
});

test.run();
