// endpoint.streams() (issue 25, part 2): one entry per open listen stream and per legacy session,
// read from what each stream holds: era, id, principal, when it opened, what it listens to
// (counts; URIs on request), its queue, its drops and coalesces, its last notification.
import { strict as assert } from 'node:assert';
import { BehaviorSubject, type Observable } from 'rxjs';
import { test } from 'uvu';
import { McpEndpoint } from '../adapters/http/endpoint.js';
import type { ListenStreamInfo, SessionInfo } from '../protocol/inspect.js';
import type { McpEndpointOptions } from '../adapters/http/options.js';
import type { EndpointRequest } from '../lib/context.js';
import type { Frame } from '../lib/frame.js';
import { Hub } from '../lib/hub.js';
import { eventually, LISTEN_HEADERS, listenBody, SseConnection, withEndpoint } from './helpers/http.js';
import { call, GetStream, initialize } from './helpers/legacy.js';

const byHeader = (request: EndpointRequest) => ({ principal: `user:${request.header('x-principal') ?? 'anon'}`, scopes: new Set<string>() });

/** A listen request answered in process (no socket), for a stream whose demand the test holds. */
function listenRequest(id: number | string, notifications: unknown, principal: string): EndpointRequest {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'text/event-stream', 'x-principal': principal };
  return { method: 'POST', header: (name) => headers[name], body: listenBody(id, notifications), remoteAddress: '127.0.0.1' };
}

async function openInProcess(endpoint: McpEndpoint, id: number | string, notifications: unknown, principal: string, demand$: Observable<boolean>): Promise<Frame[]> {
  const response = await endpoint.handle(listenRequest(id, notifications, principal));
  assert.equal(response.kind, 'stream');
  const frames: Frame[] = [];
  if (response.kind === 'stream') response.open(demand$).subscribe((frame) => frames.push(frame));
  return frames;
}

function endpointWith(options: Partial<McpEndpointOptions> = {}): McpEndpoint {
  return new McpEndpoint({ hub: new Hub(), authenticate: byHeader, capabilities: { tools: true, prompts: true, resources: true }, ...options });
}

test('a listen stream: era, id, principal, request id, opened at, filter counts; URIs only when asked', async () => {
  const endpoint = endpointWith();
  const before = Date.now();
  await openInProcess(endpoint, 7, { toolsListChanged: true, resourceSubscriptions: ['file:///a', 'file:///b'] }, 'ann', new BehaviorSubject(true));
  await openInProcess(endpoint, 'x', { promptsListChanged: true }, 'ben', new BehaviorSubject(true));
  const [first, second] = endpoint.streams() as ListenStreamInfo[];
  assert.deepEqual({ ...first!, openedAt: 0, lastNotificationAt: 0 }, {
    era: 'modern',
    id: 'listen-0',
    principal: 'user:ann',
    requestId: 7,
    openedAt: 0,
    filter: { names: ['tools_list_changed', 'resource_subscriptions'], resourceSubscriptions: 2, taskIds: 0 },
    queuedFrames: 0,
    queuedBytes: 0,
    dropped: 0,
    coalesced: 0,
    lastNotificationAt: 0,
  });
  assert.ok(first!.openedAt >= before && first!.openedAt <= Date.now(), String(first!.openedAt));
  assert.ok(first!.lastNotificationAt >= first!.openedAt && first!.lastNotificationAt - first!.openedAt < 50, 'no notification yet: about when it opened');
  assert.deepEqual([second!.id, second!.principal, second!.requestId, second!.filter.names], ['listen-1', 'user:ben', 'x', ['prompts_list_changed']]);
  const withUris = endpoint.streams({ uris: true })[0]!;
  assert.deepEqual(withUris.filter, { names: ['tools_list_changed', 'resource_subscriptions'], resourceSubscriptions: 2, taskIds: 0, uris: ['file:///a', 'file:///b'], tasks: [] });
  endpoint.close();
  assert.deepEqual(endpoint.streams(), []);
});

test('a client that is not reading: its queued frames and bytes, then coalesced and dropped notifications; the last notification time moves', async () => {
  const endpoint = endpointWith({ maxStreamQueue: 2 });
  const demand$ = new BehaviorSubject(false);
  const frames = await openInProcess(endpoint, 1, { toolsListChanged: true, resourceSubscriptions: ['file:///a', 'file:///b', 'file:///c'] }, 'cy', demand$);
  assert.equal(frames.length, 0, 'the ack waits in the queue');
  let [info] = endpoint.streams();
  assert.equal(info!.queuedFrames, 1);
  assert.ok(info!.queuedBytes > 100, String(info!.queuedBytes));
  const opened = info!.openedAt!;
  await new Promise((resolve) => setTimeout(resolve, 5));
  const hub = endpoint.hub;
  hub.notifyResourceUpdated('file:///a');
  await new Promise((resolve) => setImmediate(resolve));
  hub.notifyResourceUpdated('file:///a'); // identical to one held: coalesced
  await new Promise((resolve) => setImmediate(resolve));
  hub.notifyResourceUpdated('file:///b');
  await new Promise((resolve) => setImmediate(resolve));
  hub.notifyResourceUpdated('file:///c'); // a third notification: over maxStreamQueue 2, dropped
  await new Promise((resolve) => setImmediate(resolve));
  [info] = endpoint.streams();
  assert.deepEqual([info!.queuedFrames, info!.dropped, info!.coalesced], [3, 1, 1]);
  assert.ok((info as ListenStreamInfo).lastNotificationAt > opened, 'a notification passed after the open');
  demand$.next(true);
  [info] = endpoint.streams();
  assert.deepEqual([info!.queuedFrames, info!.queuedBytes, info!.dropped, info!.coalesced], [0, 0, 1, 1]);
  assert.equal(frames.length, 3);
  endpoint.close();
});

test('legacy sessions: one entry each, before and after their GET stream opens, with subscriptions (URIs when asked) and list changes', async () => {
  await withEndpoint({ authenticate: byHeader }, async ({ url, endpoint }) => {
    const session = await initialize(url, { headers: { 'x-principal': 'dee' } });
    let [info] = endpoint.streams() as SessionInfo[];
    assert.deepEqual({ ...info!, lastActivity: 0 }, {
      era: 'legacy',
      id: session.sessionId,
      principal: 'user:dee',
      protocolVersion: '2025-11-25',
      lastActivity: 0,
      streamOpen: false,
      openedAt: null,
      filter: { names: ['tools_list_changed', 'prompts_list_changed', 'resources_list_changed'], resourceSubscriptions: 0, taskIds: 0 },
      queuedFrames: 0,
      queuedBytes: 0,
      dropped: 0,
      coalesced: 0,
    });
    const get = GetStream.open(url, session.sessionId, { headers: { 'x-principal': 'dee' } });
    await get.response;
    const subscribed = await call(url, session.sessionId, 2, 'resources/subscribe', { uri: 'file:///notes.txt' }, { 'x-principal': 'dee' });
    assert.deepEqual(subscribed.json.result, {});
    [info] = endpoint.streams() as SessionInfo[];
    assert.equal(info!.streamOpen, true);
    assert.ok(typeof info!.openedAt === 'number' && info!.openedAt <= Date.now());
    assert.deepEqual(info!.filter, { names: ['tools_list_changed', 'prompts_list_changed', 'resources_list_changed', 'resource_subscriptions'], resourceSubscriptions: 1, taskIds: 0 });
    assert.deepEqual((endpoint.streams({ uris: true })[0] as SessionInfo).filter.uris, ['file:///notes.txt']);
    const listen = await SseConnection.open(url, listenBody(3, { toolsListChanged: true }), { ...LISTEN_HEADERS, 'x-principal': 'dee' });
    await listen.until((c) => c.messages.length === 1);
    assert.deepEqual(endpoint.streams().map((stream) => [stream.era, stream.principal]), [
      ['modern', 'user:dee'],
      ['legacy', 'user:dee'],
    ]);
    get.destroy();
    await eventually(() => (endpoint.streams()[1] as SessionInfo).streamOpen === false, 3000, 'the GET stream to close');
    listen.destroy();
  });
});

test('legacy: false leaves only listen streams', async () => {
  const endpoint = endpointWith({ legacy: false });
  await openInProcess(endpoint, 1, { toolsListChanged: true }, 'eve', new BehaviorSubject(true));
  assert.deepEqual(endpoint.streams().map((stream) => stream.era), ['modern']);
  endpoint.close();
});

test.run();
