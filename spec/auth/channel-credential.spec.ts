// A message channel (stdio, WebSocket, an in-process pair) is authenticated once, when it opens:
// nothing would refuse its credential again, as the next HTTP request refuses an expired or revoked
// token. So the channel ends when its credential ends, in both eras: at its expiry (listens first
// with their closing frames, token_expired), when its recheck finds it inactive (revoked), and
// when its principal is revoked (`endpoint.revoke`, which counts a channel after its `initialize`
// as a session). A legacy channel's subscriptions end with it: no resources/updated after.
import { strict as assert } from 'node:assert';
import { VirtualTimeScheduler } from 'rxjs';
import { test } from 'uvu';
import { channelPair } from '../../adapters/channel/pair.js';
import { serveChannel, type ChannelSession } from '../../adapters/channel/session.js';
import { McpEndpoint } from '../../adapters/http/endpoint.js';
import type { AuthInfo, CredentialRecheck } from '../../lib/auth.js';
import { Hub } from '../../lib/hub.js';
import { advanceInSteps } from '../helpers/wait.js';
import { Peer, until } from '../helpers/channel.js';

const URI = 'file:///notes/today.md';
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

class Credential implements CredentialRecheck {
  active$ = true;
  constructor(readonly interval: number) {}
  async active(): Promise<boolean> {
    return this.active$;
  }
}

function setup(options: { legacy?: false } = {}) {
  const scheduler = new VirtualTimeScheduler();
  const hub = new Hub({ scheduler });
  const endpoint = new McpEndpoint({ hub, scheduler, keepAliveInterval: 60_000, maxStreamLifetime: 3_600_000, capabilities: { tools: true, resources: true }, ...options });
  const advance = advanceInSteps(scheduler);
  const open = (auth: AuthInfo): { peer: Peer; session: ChannelSession } => {
    const [client, server] = channelPair();
    const peer = new Peer(client);
    return { peer, session: serveChannel(endpoint, server, { auth }) };
  };
  return { scheduler, hub, endpoint, advance, open };
}

/** A channel made a legacy session and subscribed to URI; the update it hears. */
async function legacySession(peer: Peer, hub: Hub): Promise<void> {
  const init = await peer.request(1, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'spec', version: '1' } });
  assert.equal(init.result.protocolVersion, '2025-11-25');
  assert.deepEqual((await peer.request(2, 'resources/subscribe', { uri: URI })).result, {});
  hub.notifyResourceUpdated(URI);
  await peer.next((message) => message.method === 'notifications/resources/updated', 'the first update');
}

async function listen(peer: Peer, id: number): Promise<void> {
  peer.send({ jsonrpc: '2.0', id, method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true } } });
  await peer.next((message) => message.method === 'notifications/subscriptions/acknowledged', 'the ack');
}

const updates = (peer: Peer) => peer.received.filter((message) => message.method === 'notifications/resources/updated').length;

test('a legacy channel whose recheck finds its credential inactive closes; its subscription ends with it (no update after)', async () => {
  const { hub, endpoint, advance, open } = setup();
  const a = new Credential(1_000);
  const { peer, session } = open({ principal: 'sub:a', scopes: new Set(), recheck: a });
  await legacySession(peer, hub);
  assert.equal(session.stats.subscriptions, 1);
  a.active$ = false;
  await advance(1_000);
  await session.closed;
  await until(() => peer.ended, 'the client end closed');
  assert.equal(session.stats.subscriptions, 0);
  hub.notifyResourceUpdated(URI);
  await nextTurn();
  assert.equal(updates(peer), 1);
  endpoint.close();
});

test('at its expiry a channel\'s listens end with their closing frames (token_expired), then the channel closes; a legacy channel closes too', async () => {
  const { hub, endpoint, advance, open } = setup();
  const modern = open({ principal: 'sub:m', scopes: new Set(), expiresAt: 3_000 });
  await listen(modern.peer, 7);
  const legacy = open({ principal: 'sub:l', scopes: new Set(), expiresAt: 3_000 });
  await legacySession(legacy.peer, hub);
  const lasting = open({ principal: 'sub:forever', scopes: new Set() });
  await listen(lasting.peer, 8);
  await advance(2_900);
  assert.equal(modern.peer.ended || legacy.peer.ended, false, 'nothing ends before the expiry');
  await advance(3_000);
  await Promise.all([modern.session.closed, legacy.session.closed]);
  await until(() => modern.peer.ended && legacy.peer.ended, 'both client ends closed');
  const cancelled = modern.peer.received.find((message) => message.method === 'notifications/cancelled');
  assert.equal(cancelled?.params.reason, 'token_expired');
  const last = modern.peer.received.at(-1)!;
  assert.deepEqual(last, { jsonrpc: '2.0', id: 7, result: { resultType: 'complete', _meta: { 'io.modelcontextprotocol/subscriptionId': 7 } } }, 'the listen result is the last message before the close');
  hub.notifyResourceUpdated(URI);
  await nextTurn();
  assert.equal(updates(legacy.peer), 1, 'no update after the expiry');
  assert.equal(lasting.peer.ended, false, 'a channel without expiry goes on');
  assert.equal(lasting.session.stats.listens, 1);
  lasting.session.close();
  endpoint.close();
});

test('revoke(principal): its legacy channel closes and counts as a session, its modern channel\'s listen gets its closing frames and the channel closes; another principal\'s channel stays', async () => {
  const { hub, endpoint, open } = setup();
  const legacy = open({ principal: 'sub:eve', scopes: new Set() });
  await legacySession(legacy.peer, hub);
  const modern = open({ principal: 'sub:eve', scopes: new Set() });
  await listen(modern.peer, 3);
  const other = open({ principal: 'sub:bob', scopes: new Set() });
  await legacySession(other.peer, hub);
  const heard = updates(legacy.peer);
  assert.deepEqual(await endpoint.revoke('sub:eve'), { streams: 1, sessions: 1 });
  await Promise.all([legacy.session.closed, modern.session.closed]);
  await until(() => legacy.peer.ended && modern.peer.ended, 'both of eve\'s client ends closed');
  assert.equal(modern.peer.received.find((message) => message.method === 'notifications/cancelled')?.params.reason, 'revoked');
  assert.equal(modern.peer.received.at(-1)!.id, 3);
  hub.notifyResourceUpdated(URI);
  await other.peer.next((message) => message.method === 'notifications/resources/updated', 'bob\'s second update', 4_000, other.peer.received.findIndex((message) => message.method === 'notifications/resources/updated') + 1);
  assert.equal(updates(legacy.peer), heard, 'eve hears nothing after the revoke');
  assert.equal(other.peer.ended, false);
  other.session.close();
  endpoint.close();
});

test('an endpoint that serves no legacy era: revoke still closes the principal\'s channels', async () => {
  const { endpoint, open } = setup({ legacy: false });
  const modern = open({ principal: 'sub:eve', scopes: new Set() });
  await listen(modern.peer, 4);
  assert.deepEqual(await endpoint.revoke('sub:eve'), { streams: 1, sessions: 0 });
  await modern.session.closed;
  await until(() => modern.peer.ended, 'the client end closed');
  endpoint.close();
});

test.run();
