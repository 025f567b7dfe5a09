// Notification storms collapse (issue 15 item 2): a registry that calls notifyToolsChanged() 1000
// times in one turn sends each stream one tools/list_changed, not 1000; repeated resources/updated
// of one URI likewise; on a legacy GET stream a collapsed frame takes no id. A notification of
// another kind or URI is never collapsed, and distinct notifications keep their order.
import { strict as assert } from 'node:assert';
import { test } from 'uvu';
import { queueTotals } from '../lib/telemetry.js';
import { TurnKeys } from '../lib/turn.js';
import { LISTEN_HEADERS, listenBody, SseConnection, startEndpoint, eventually } from './helpers/http.js';
import { call, frameText, GetStream, initialize, listChangedMessage, updatedMessage } from './helpers/legacy.js';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

test('TurnKeys: a key seen twice in one turn is collapsed, another key never; a new turn starts over', async () => {
  const keys = new TurnKeys();
  assert.equal(keys.seen('a'), false);
  assert.equal(keys.seen('b'), false);
  assert.equal(keys.seen('c'), false);
  assert.equal(keys.seen('a'), true);
  assert.equal(keys.seen('c'), true);
  assert.equal(keys.seen('d'), false);
  await tick();
  assert.equal(keys.seen('c'), false, 'the next turn');
  assert.equal(keys.seen('c'), true);
  assert.equal(new TurnKeys().seen('c'), false, 'per receiver');
});

test('listen over node:http: 1000 tools/list_changed in one turn are one frame; other kinds and URIs are kept, in order', async () => {
  const server = await startEndpoint();
  try {
    const filter = { toolsListChanged: true, promptsListChanged: true, resourceSubscriptions: ['file:///a', 'file:///b'] };
    const stream = await SseConnection.open(server.url, listenBody(7, filter), { ...LISTEN_HEADERS });
    await stream.until((s) => s.messages.length === 1, 3000, 'the ack');
    const before = queueTotals().coalesced;
    const { hub } = server;
    for (let i = 0; i < 1000; i++) hub.notifyToolsChanged();
    hub.notifyResourceUpdated('file:///a');
    hub.notifyResourceUpdated('file:///b');
    hub.notifyResourceUpdated('file:///a');
    hub.notifyPromptsChanged();
    hub.notifyToolsChanged();
    await tick();
    hub.notifyToolsChanged(); // the next turn: a new change, written
    await stream.until((s) => s.messages.length === 6, 3000, 'five notifications after the ack');
    await new Promise((resolve) => setTimeout(resolve, 50));
    const methods = stream.messages.slice(1).map((m) => `${m.method} ${(m.params?.uri as string | undefined) ?? ''}`.trim());
    assert.deepEqual(methods, [
      'notifications/tools/list_changed',
      'notifications/resources/updated file:///a',
      'notifications/resources/updated file:///b',
      'notifications/prompts/list_changed',
      'notifications/tools/list_changed',
    ]);
    assert.equal(queueTotals().coalesced - before, 999 + 1 + 1, 'what was collapsed is counted');
    stream.destroy();
  } finally {
    await server.close();
  }
});

test('legacy GET stream: a storm is one frame, and the collapsed frames take no id', async () => {
  const server = await startEndpoint();
  try {
    const { sessionId } = await initialize(server.url);
    const get = GetStream.open(server.url, sessionId);
    await eventually(() => server.endpoint.stats.streams === 1, 3000, 'the GET stream');
    assert.equal((await call(server.url, sessionId, 2, 'resources/subscribe', { uri: 'file:///a' })).status, 200);
    const { hub } = server;
    for (let i = 0; i < 1000; i++) hub.notifyToolsChanged();
    hub.notifyResourceUpdated('file:///a');
    hub.notifyToolsChanged();
    hub.notifyResourceUpdated('file:///a');
    await tick();
    hub.notifyToolsChanged();
    await get.untilId(3);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(
      get.withoutKeepAlives,
      frameText(1, listChangedMessage('tools')) + frameText(2, updatedMessage('file:///a')) + frameText(3, listChangedMessage('tools')),
    );
    get.destroy();
  } finally {
    await server.close();
  }
});

test.run();
