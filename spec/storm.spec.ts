// Notification storms collapse on legacy sessions (issue 15 item 2): a registry that calls
// notifyToolsChanged() 1000 times in one turn gives each session one tools/list_changed, not 1000;
// repeated resources/updated of one URI likewise, and a collapsed frame takes no id. A
// notification of another kind or URI is never collapsed, and distinct notifications keep their
// order. (Listen streams coalesce in a slow client's queue; collapsing their current turn's batch
// is left: its per-frame bookkeeping cost 30 % of fan-out throughput at N = 10 000.)
import { strict as assert } from 'node:assert';
import { test } from 'uvu';
import { TurnKeys } from '../lib/turn.js';
import { startEndpoint, eventually } from './helpers/http.js';
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
