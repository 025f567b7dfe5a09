// Issue "hostile clients", class 6: a legacy client never loses a change at a reconnect it did not
// cause. Every GET stream opens with a priming event (MCP 2025-11-25 transports: an event id and
// an empty data field, and `retry`), so a client that has heard nothing yet still resumes with
// `Last-Event-ID` after the server ends its stream (maxStreamLifetime) and gets what changed in
// the gap. Over real loopback sockets, with a raw client and with the official 1.x client.
import { strict as assert } from 'node:assert';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { test } from 'uvu';
import { eventually, startEndpoint } from './helpers/http.js';
import { call, frameText, GetStream, INIT_HEADERS, initialize, listChangedMessage, nextTurn, primingText, rpcBody, send, updatedMessage } from './helpers/legacy.js';

const URI = 'file:///srv/report.txt';

test('a GET stream of a 2025-11-25 session opens with `id: <newest>`, `retry: <reconnectDelay>` and an empty data line, before anything else', async () => {
  const server = await startEndpoint({ reconnectDelay: 2500 });
  try {
    const { sessionId } = await initialize(server.url, { protocolVersion: '2025-11-25' });
    const first = GetStream.open(server.url, sessionId);
    await first.until((s) => s.text.length > 0, 3000, 'the priming event');
    assert.equal(first.text, primingText(0, 2500), 'nothing heard yet: id 0');
    assert.equal((await call(server.url, sessionId, 1, 'resources/subscribe', { uri: URI })).status, 200);
    server.hub.notifyResourceUpdated(URI);
    await nextTurn(); // two changes in one turn would be one frame
    server.hub.notifyResourceUpdated(URI);
    await first.untilId(2);
    first.destroy();
    await eventually(() => server.endpoint.stats.streams === 0, 3000, 'the drop');
    // A reconnect without Last-Event-ID is primed with the newest id; with one, with that id.
    const fresh = GetStream.open(server.url, sessionId);
    await fresh.until((s) => s.primedWith !== undefined, 3000, 'the priming event');
    assert.equal(fresh.primedWith, '2');
    fresh.destroy();
    const resumed = GetStream.open(server.url, sessionId, { lastEventId: '1' });
    await resumed.untilId(2);
    assert.equal(resumed.text, primingText(1, 2500) + frameText(2, updatedMessage(URI)));
    resumed.destroy();
  } finally {
    await server.close();
  }
});

test('a stream the server ends at maxStreamLifetime before any notification: the reconnect with the primed id gets the change made in the gap', async () => {
  const server = await startEndpoint({ maxStreamLifetime: 200 });
  try {
    const { sessionId } = await initialize(server.url);
    const first = GetStream.open(server.url, sessionId);
    await eventually(() => server.endpoint.stats.streams === 1, 3000, 'the stream');
    assert.equal((await call(server.url, sessionId, 1, 'resources/subscribe', { uri: URI })).status, 200);
    await first.untilEnded(3000);
    assert.ok(first.endedCleanly, 'ended by the server at its lifetime');
    assert.equal(first.ids.length, 0, 'the client heard no notification');
    const primed = first.primedWith;
    assert.equal(primed, '0', 'but it has an event id to resume from');
    // The change lands while the client has no stream (within the grace period).
    server.hub.notifyResourceUpdated(URI);
    const again = GetStream.open(server.url, sessionId, { lastEventId: primed });
    await again.untilId(1);
    assert.equal(again.withoutKeepAlives, frameText(1, updatedMessage(URI)), 'the change made in the gap, replayed');
    again.destroy();
  } finally {
    await server.close();
  }
});

test('the official 1.x client: its GET ended by the server before any notification, it reconnects with the primed Last-Event-ID and gets the change made in the gap', async () => {
  const server = await startEndpoint({ maxStreamLifetime: 300, reconnectDelay: 50 });
  const gets: (string | null)[] = [];
  let releaseReconnect!: () => void;
  const reconnectGate = new Promise<void>((resolve) => (releaseReconnect = resolve));
  // The client's second GET (its reconnect) waits until the change has been published.
  const gatedFetch = async (input: string | URL, init?: RequestInit): Promise<Response> => {
    if ((init?.method ?? 'GET') === 'GET') {
      gets.push(new Headers(init?.headers).get('last-event-id'));
      if (gets.length > 1) await reconnectGate;
    }
    return fetch(input, init);
  };
  const updates: string[] = [];
  const client = new Client({ name: 'priming-spec', version: '0.0.0' });
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => {
    updates.push(notification.params.uri);
  });
  const transport = new StreamableHTTPClientTransport(new URL(server.url), {
    fetch: gatedFetch,
    reconnectionOptions: { initialReconnectionDelay: 10, maxReconnectionDelay: 10, reconnectionDelayGrowFactor: 1, maxRetries: 3 },
  });
  try {
    await client.connect(transport);
    await eventually(() => server.endpoint.stats.streams === 1, 3000, 'the GET stream');
    await client.subscribeResource({ uri: URI });
    // The server ends the stream at its lifetime; the client has heard only the priming event.
    await eventually(() => gets.length === 2, 3000, 'the client to reconnect after the server ended its stream');
    assert.equal(gets[0], null, 'the first GET carries no Last-Event-ID');
    assert.equal(gets[1], '0', 'the reconnect resumes from the primed id');
    assert.equal(updates.length, 0);
    server.hub.notifyResourceUpdated(URI);
    releaseReconnect();
    await eventually(() => updates.length === 1, 3000, 'the change made in the gap');
    assert.deepEqual(updates, [URI]);
  } finally {
    releaseReconnect();
    await client.close().catch(() => {});
    await server.close();
  }
});

// Issue 24, item 3: the empty-data priming event is a 2025-11-25 feature, and clients of earlier
// revisions (the AI SDK on 2025-06-18) fail to parse it. As the official 1.x server does, it goes
// only to sessions on 2025-11-25 or later; earlier sessions still get an `id:` on every frame, and
// their reconnects with Last-Event-ID are replayed exactly as before.
for (const version of ['2025-06-18', '2025-03-26'] as const) {
  // A 2025-03-26 client sends no MCP-Protocol-Version header (the header came with 2025-06-18).
  const versionHeader: Record<string, string> = version === '2025-03-26' ? {} : { 'mcp-protocol-version': version };
  const headers = (sessionId: string): Record<string, string> => ({ ...INIT_HEADERS, 'mcp-session-id': sessionId, ...versionHeader });
  const open = (url: string, sessionId: string, lastEventId?: string) =>
    GetStream.open(url, sessionId, { protocolVersion: version === '2025-03-26' ? null : version, ...(lastEventId === undefined ? {} : { lastEventId }) });

  test(`a ${version} session: its GET stream has no priming event, every frame an id, and Last-Event-ID replays after it (byte-exact)`, async () => {
    const server = await startEndpoint({ reconnectDelay: 2500 });
    try {
      const init = await initialize(server.url, { protocolVersion: version });
      assert.equal(init.json.result.protocolVersion, version, 'the session runs at the revision the client asked for');
      const { sessionId } = init;
      const first = open(server.url, sessionId);
      await eventually(() => server.endpoint.stats.streams === 1, 3000, 'the stream');
      const subscribe = await send(server.url, 'POST', headers(sessionId), rpcBody(1, 'resources/subscribe', { uri: URI }));
      assert.equal(subscribe.body, '{"jsonrpc":"2.0","id":1,"result":{}}');
      server.hub.notifyResourceUpdated(URI);
      await first.untilId(1);
      assert.equal(first.text, frameText(1, updatedMessage(URI)), 'the first bytes are the first frame: no priming event, no retry:');
      first.destroy();
      await eventually(() => server.endpoint.stats.streams === 0, 3000, 'the drop');
      // Changed while the client is away: kept for the replay.
      server.hub.notifyResourceUpdated(URI);
      await nextTurn();
      const resumed = open(server.url, sessionId, '1');
      await resumed.untilId(2);
      await eventually(() => server.endpoint.stats.streams === 1, 3000, 'the resumed stream');
      server.hub.notifyResourceUpdated(URI);
      await resumed.untilId(3);
      assert.equal(resumed.text, frameText(2, updatedMessage(URI)) + frameText(3, updatedMessage(URI)), 'the missed frame with its id, then the live one');
      resumed.destroy();
      await eventually(() => server.endpoint.stats.streams === 0, 3000, 'the second drop');
      // Without Last-Event-ID: nothing replayed and nothing primed.
      const fresh = open(server.url, sessionId);
      await eventually(() => server.endpoint.stats.streams === 1, 3000, 'the fresh stream');
      server.hub.notifyToolsChanged();
      await fresh.untilId(4);
      assert.equal(fresh.text, frameText(4, listChangedMessage('tools')));
      fresh.destroy();
    } finally {
      await server.close();
    }
  });
}

test.run();
