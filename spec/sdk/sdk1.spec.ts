// This library beside servers built on the official SDK 1.x (issue 16, item 3), on one node:
// `replayEventStore` as the StreamableHTTPServerTransport's eventStore (bounded Last-Event-ID replay)
// and `ResourceUpdates` serving resources/subscribe from our providers through the SDK server's
// sendResourceUpdated. Real loopback sockets and the official 1.x client
// (`@modelcontextprotocol/sdk` Client + StreamableHTTPClientTransport).
import { deepStrictEqual, ok, rejects, strictEqual, throws } from 'node:assert';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport, type EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ResourceUpdatedNotificationSchema, SubscribeRequestSchema, UnsubscribeRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { Subject } from 'rxjs';
import { test } from 'uvu';
import { eventLogStore, replayEventStore, ResourceUpdates, STANDALONE_STREAM_ID, type ResourceUpdatesOptions } from '../../adapters/sdk/index.js';
import { InvalidOptionError } from '../../lib/errors.js';
import { Hub } from '../../lib/hub.js';
import { ReplayBuffer } from '../../lib/replayBuffer.js';
import type { ResourceProvider } from '../../lib/resources.js';
import { notesServer } from '../../examples/sdk1-event-store.js';
import { eventually } from '../helpers/http.js';
import { within } from '../helpers/wait.js';

const WAIT_MS = 4_000;
const NOTE = 'memo://notes/today';

// Compile-time: what the factories return is the SDK's EventStore.
const _storeType: EventStore = replayEventStore();
void _storeType;

/** A request the server received, with every byte written on its response. */
interface Seen {
  readonly method: string;
  readonly headers: http.IncomingHttpHeaders;
  readonly socket: Socket;
  written: string;
  closed: boolean;
}

/** Serves `handle` on port 0, recording every response's bytes. */
async function serveRecorded(handle: (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void>) {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    const entry: Seen = { method: req.method!, headers: req.headers, socket: req.socket, written: '', closed: false };
    seen.push(entry);
    const write = res.write.bind(res) as (chunk: unknown, ...rest: unknown[]) => boolean;
    res.write = ((chunk: unknown, ...rest: unknown[]) => {
      entry.written += typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8');
      return write(chunk, ...rest);
    }) as typeof res.write;
    res.once('close', () => (entry.closed = true));
    handle(req, res).catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`),
    seen,
    gets: () => seen.filter((entry) => entry.method === 'GET'),
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** The official 1.x client whose GETs after the first wait for `release()`. */
function gatedClient(url: URL) {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let gets = 0;
  const updated: string[] = [];
  const client = new Client({ name: 'sdk1-spec', version: '0.0.0' });
  client.onerror = () => {}; // the cut is reported here
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => void updated.push(notification.params.uri));
  const transport = new StreamableHTTPClientTransport(url, {
    fetch: async (input: string | URL, init?: RequestInit) => {
      if ((init?.method ?? 'GET') === 'GET' && ++gets > 1) await gate;
      return fetch(input, init);
    },
    reconnectionOptions: { initialReconnectionDelay: 10, maxReconnectionDelay: 10, reconnectionDelayGrowFactor: 1, maxRetries: 3 },
  });
  return { client, transport, updated, release };
}

const frame = (eventId: string, message: object) => `event: message\nid: ${eventId}\ndata: ${JSON.stringify(message)}\n\n`;
const updatedMessage = (uri: string) => ({ method: 'notifications/resources/updated', params: { uri }, jsonrpc: '2.0' });

test('examples/sdk1-event-store.ts with the official 1.x client: subscribe, an update, a server-side cut, an update while cut, resumed with Last-Event-ID from the replay store', async () => {
  const hub = new Hub();
  const served = await serveRecorded(notesServer(hub));
  const { client, transport, updated, release } = gatedClient(served.url);
  try {
    await within(client.connect(transport), WAIT_MS, 'connect()');
    strictEqual(transport.protocolVersion, '2025-11-25');
    await eventually(() => served.gets().length === 1, WAIT_MS, 'the GET stream');
    deepStrictEqual(await within(client.subscribeResource({ uri: NOTE }), WAIT_MS, 'resources/subscribe'), {});
    await within(client.callTool({ name: 'touch', arguments: {} }), WAIT_MS, 'tools/call touch');
    hub.notifyResourceUpdated('memo://notes/other'); // nobody subscribed: nothing
    await eventually(() => updated.length === 1, WAIT_MS, 'resources/updated');
    const [first] = served.gets();
    // The SDK 1.x GET stream has no priming event: its first id is the first update's.
    strictEqual(first!.written, frame(`${STANDALONE_STREAM_ID}:1`, updatedMessage(NOTE)));

    // The server cuts the GET; the next update is stored for the session's GET stream, not written.
    first!.socket.destroy();
    await eventually(() => first!.closed, WAIT_MS, 'the cut');
    await within(client.callTool({ name: 'touch', arguments: {} }), WAIT_MS, 'tools/call touch while cut');
    strictEqual(updated.length, 1, 'nothing delivered while cut');

    release();
    await eventually(() => updated.length === 2, WAIT_MS, 'the missed update after the reconnect');
    const second = served.gets()[1]!;
    strictEqual(second.headers['last-event-id'], `${STANDALONE_STREAM_ID}:1`, 'the client resumes after the last id it saw');
    strictEqual(second.written, frame(`${STANDALONE_STREAM_ID}:2`, updatedMessage(NOTE)), 'replayed with its original id, once');

    // Live again on the resumed stream.
    hub.notifyResourceUpdated(NOTE);
    await eventually(() => updated.length === 3, WAIT_MS, 'a live update on the resumed stream');
    strictEqual(second.written, frame(`${STANDALONE_STREAM_ID}:2`, updatedMessage(NOTE)) + frame(`${STANDALONE_STREAM_ID}:3`, updatedMessage(NOTE)));
    deepStrictEqual(updated, [NOTE, NOTE, NOTE]);
    // DELETE ends the session: the transport closes, and ResourceUpdates with it.
    await within(transport.terminateSession(), WAIT_MS, 'DELETE');
  } finally {
    await client.close().catch(() => {});
    await served.close();
  }
  await eventually(() => hub.size.subscriptions === 0, WAIT_MS, 'the session to leave the hub (transport closed)');
});

/** An SDK 1.x server for one session with ResourceUpdates over `options`, and the official client on it. */
async function withSession(options: ResourceUpdatesOptions, fn: (session: { client: Client; updates: ResourceUpdates; updated: string[]; seen: Seen[] }) => Promise<void>) {
  let updates!: ResourceUpdates;
  let transport: StreamableHTTPServerTransport | undefined;
  const served = await serveRecorded(async (req, res) => {
    if (transport === undefined) {
      const server = new McpServer({ name: 'db', version: '1.0.0' }, { capabilities: { resources: { subscribe: true, listChanged: true }, tools: { listChanged: true } } });
      updates = new ResourceUpdates(server.server, options);
      server.server.setRequestHandler(SubscribeRequestSchema, updates.subscribe);
      server.server.setRequestHandler(UnsubscribeRequestSchema, updates.unsubscribe);
      transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), eventStore: replayEventStore() });
      transport.onclose = () => updates.close();
      await server.connect(transport);
    }
    await transport.handleRequest(req, res);
  });
  const client = new Client({ name: 'sdk1-spec', version: '0.0.0' });
  const updated: string[] = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => void updated.push(notification.params.uri));
  const clientTransport = new StreamableHTTPClientTransport(served.url);
  try {
    await within(client.connect(clientTransport), WAIT_MS, 'connect()');
    await eventually(() => served.gets().length === 1, WAIT_MS, 'the GET stream');
    await fn({ client, updates, updated, seen: served.seen });
    await within(clientTransport.terminateSession(), WAIT_MS, 'DELETE');
  } finally {
    await client.close().catch(() => {});
    await served.close();
  }
}

test('ResourceUpdates answers like a legacy session (DESIGN L3, L4): not subscribable, permission denied, failed, a cap; unsubscribe stops; onChange is told', async () => {
  const hub = new Hub();
  const failures: unknown[] = [];
  const providers: ResourceProvider[] = [
    { subscribable: (uri) => uri.startsWith('db://public/'), canRead: () => true, changes: (uri) => hub.topic({ topic: 'resource', uri }) },
    { subscribable: (uri) => uri.startsWith('db://private/'), canRead: (_uri, { auth }) => auth.scopes.has('private'), changes: () => new Subject() },
    {
      subscribable: (uri) => uri.startsWith('db://broken/'),
      canRead: () => true,
      changes: () => {
        const error = new Error('change feed down');
        failures.push(error);
        throw error;
      },
    },
  ];
  const changes: (readonly string[])[] = [];
  await withSession({ resourceProviders: providers, maxSubscriptions: 2, onChange: (uris) => void changes.push(uris) }, async ({ client, updates, updated, seen }) => {
    const refused = async (uri: string, code: number, message: string) => {
      await rejects(client.subscribeResource({ uri }), (error: { code?: number; message?: string }) => error.code === code && error.message === `MCP error ${code}: ${message}`);
    };
    await refused('db://elsewhere/1', -32602, 'resource is not subscribable: db://elsewhere/1');
    await refused('db://private/1', -32602, 'permission denied: db://private/1');
    await refused('db://broken/1', -32603, 'failed to subscribe: db://broken/1');
    strictEqual(failures.length, 1);
    // The SDK wrote our error as is: code and message, no data.
    const answer = seen.find((entry) => entry.written.includes('resource is not subscribable'))!.written;
    ok(/^data: \{"jsonrpc":"2\.0","id":\d+,"error":\{"code":-32602,"message":"resource is not subscribable: db:\/\/elsewhere\/1"\}\}$/m.test(answer), answer);

    deepStrictEqual(await client.subscribeResource({ uri: 'db://public/1' }), {});
    deepStrictEqual(await client.subscribeResource({ uri: 'db://public/2' }), {});
    deepStrictEqual(await client.subscribeResource({ uri: 'db://public/2' }), {}, 're-subscribing replaces, and does not count twice');
    await refused('db://public/3', -32602, 'a session can hold at most 2 resource subscriptions; unsubscribe from one first');
    deepStrictEqual(updates.subscriptions, ['db://public/1', 'db://public/2']);
    strictEqual(updates.live, 2);
    hub.notifyResourceUpdated('db://public/2');
    hub.notifyResourceUpdated('db://public/2', { scope: 'admin' }); // scoped: this anonymous session does not hold it
    await eventually(() => updated.length === 1, WAIT_MS, 'resources/updated');

    deepStrictEqual(await client.unsubscribeResource({ uri: 'db://public/2' }), {});
    deepStrictEqual(await client.unsubscribeResource({ uri: 'db://never/1' }), {});
    hub.notifyResourceUpdated('db://public/2');
    hub.notifyResourceUpdated('db://public/1');
    await eventually(() => updated.length === 2, WAIT_MS, 'the update of the URI still subscribed');
    deepStrictEqual(updated, ['db://public/2', 'db://public/1']);
    deepStrictEqual(changes, [['db://public/1'], ['db://public/1', 'db://public/2'], ['db://public/1']]);

    // A synchronous burst of changes to one URI is one notification (it carries nothing but the URI).
    deepStrictEqual(await client.subscribeResource({ uri: 'db://public/2' }), {});
    for (let n = 0; n < 5; n++) hub.notifyResourceUpdated('db://public/1');
    hub.notifyResourceUpdated('db://public/2');
    await eventually(() => updated.length === 4, WAIT_MS, 'the burst and the marker');
    await new Promise((resolve) => setTimeout(resolve, 50));
    deepStrictEqual(updated, ['db://public/2', 'db://public/1', 'db://public/1', 'db://public/2']);
  });
  strictEqual(hub.size.subscriptions, 0, 'the transport closed: every hub subscription ended');
});

test('ResourceUpdates: hub list changes forwarded when asked; restore re-establishes persisted URIs and drops the ones no longer readable; close cancels a subscribe in flight', async () => {
  const hub = new Hub();
  let readable = true;
  let releaseRead!: () => void;
  const slowRead = new Promise<boolean>((resolve) => (releaseRead = () => resolve(true)));
  const providers: ResourceProvider[] = [
    { subscribable: (uri) => uri.startsWith('db://slow/'), canRead: () => slowRead, changes: () => new Subject() },
    { subscribable: () => true, canRead: () => readable, changes: (uri) => hub.topic({ topic: 'resource', uri }) },
  ];
  let toolsChanged = 0;
  await withSession({ hub, resourceProviders: providers, listChanges: ['tools'] }, async ({ client, updates, updated }) => {
    client.setNotificationHandler((await import('@modelcontextprotocol/sdk/types.js')).ToolListChangedNotificationSchema, () => void toolsChanged++);
    hub.notifyToolsChanged();
    hub.notifyToolsChanged({ scope: 'admin' }); // scoped: not sent to a session
    await eventually(() => toolsChanged === 1, WAIT_MS, 'tools/list_changed');

    const result = await updates.restore(['db://a', 'db://b', 'db://a']);
    deepStrictEqual(result, { restored: ['db://a', 'db://b'], dropped: [], failed: [] });
    hub.notifyResourceUpdated('db://b');
    await eventually(() => updated.length === 1, WAIT_MS, 'an update of a restored URI');
    readable = false;
    const again = await updates.restore(['db://c']);
    deepStrictEqual(again, { restored: [], dropped: ['db://c'], failed: [] });
    deepStrictEqual(updates.subscriptions, ['db://a', 'db://b']);

    const inFlight = client.subscribeResource({ uri: 'db://slow/1' });
    await new Promise((resolve) => setTimeout(resolve, 20));
    updates.close();
    releaseRead();
    await rejects(inFlight, (error: { code?: number; message?: string }) => error.code === -32602 && /resources\/subscribe for db:\/\/slow\/1 was cancelled: the session closed/.test(error.message!));
    strictEqual(updates.live, 0);
    strictEqual(hub.size.subscriptions, 0);
    await rejects(client.subscribeResource({ uri: 'db://a' }), (error: { code?: number }) => error.code === -32602);
  });
});

test('ResourceUpdates options are checked with messages naming them', () => {
  const hub = new Hub();
  const sender = { sendResourceUpdated: async () => {} };
  throws(() => new ResourceUpdates({} as never, { hub }), (error: unknown) => error instanceof InvalidOptionError && error.info.option === 'server');
  throws(() => new ResourceUpdates(sender, {}), /hub must be a Hub \(or give resourceProviders\)/);
  throws(() => new ResourceUpdates(sender, { hub, maxSubscriptions: 0 }), /maxSubscriptions must be a positive integer count, got 0/);
  throws(() => new ResourceUpdates(sender, { hub, listChanges: ['tool' as never] }), /listChanges must be an array of 'tools', 'prompts' and 'resources'/);
  throws(() => new ResourceUpdates(sender, { hub, listChanges: ['tools'] }), /it has no send for tools/);
});

test('replayEventStore: ids name their stream, replay is per stream and bounded by capacity, priming events take an id and are never replayed', async () => {
  const store = replayEventStore({ capacity: 3 });
  strictEqual(await store.storeEvent(STANDALONE_STREAM_ID, {}), '_GET_stream:1');
  for (let n = 1; n <= 5; n++) await store.storeEvent(STANDALONE_STREAM_ID, updatedMessage(`memo://${n}`));
  const post = randomUUID();
  strictEqual(await store.storeEvent(post, {}), `${post}:1`);
  strictEqual(await store.storeEvent(post, { jsonrpc: '2.0', id: 7, result: {} }), `${post}:2`);
  strictEqual(await store.getStreamIdForEventId(`${post}:1`), post);
  strictEqual(await store.getStreamIdForEventId('_GET_stream_17_abc'), undefined, 'a foreign id (the SDK answers 400)');
  strictEqual(await store.getStreamIdForEventId('_GET_stream:x'), undefined);

  const replay = async (lastEventId: string) => {
    const sent: [string, object][] = [];
    const streamId = await store.replayEventsAfter(lastEventId, { send: async (eventId, message) => void sent.push([eventId, message]) });
    return { streamId, sent };
  };
  // Kept: ids 4, 5, 6 of the GET stream (capacity 3); a cursor older than that gets all that is kept.
  deepStrictEqual(await replay('_GET_stream:1'), {
    streamId: STANDALONE_STREAM_ID,
    sent: [
      ['_GET_stream:4', updatedMessage('memo://3')],
      ['_GET_stream:5', updatedMessage('memo://4')],
      ['_GET_stream:6', updatedMessage('memo://5')],
    ],
  });
  deepStrictEqual(await replay('_GET_stream:5'), { streamId: STANDALONE_STREAM_ID, sent: [['_GET_stream:6', updatedMessage('memo://5')]] });
  deepStrictEqual(await replay('_GET_stream:6'), { streamId: STANDALONE_STREAM_ID, sent: [] });
  deepStrictEqual(await replay(`${post}:1`), { streamId: post, sent: [[`${post}:2`, { jsonrpc: '2.0', id: 7, result: {} }]] }, 'the priming event is skipped');
  await rejects(replay('nope'), TypeError);
  await rejects(store.storeEvent('bad stream', {}), /stream id must be visible ASCII/);
});

test('replayEventStore keeps at most maxStreams streams, forgetting the least recently written, never the GET stream', async () => {
  const store = replayEventStore({ maxStreams: 2 });
  await store.storeEvent(STANDALONE_STREAM_ID, updatedMessage('memo://get'));
  await store.storeEvent('a', updatedMessage('memo://a'));
  await store.storeEvent('b', updatedMessage('memo://b')); // over 2: 'a' goes (the GET stream is older but kept)
  const count = async (lastEventId: string) => {
    let sent = 0;
    await store.replayEventsAfter(lastEventId, { send: async () => void sent++ });
    return sent;
  };
  strictEqual(await count('_GET_stream:0'), 1);
  strictEqual(await count('a:0'), 0, 'forgotten');
  strictEqual(await count('b:0'), 1);
  throws(() => replayEventStore({ capacity: 0 }), /capacity must be a positive integer count, got 0/);
  throws(() => replayEventStore({ maxStreams: 1.5 }), /maxStreams must be a positive integer count, got 1.5/);
});

test('eventLogStore keys each stream of a session in the shared logs as <sessionId>/<streamId>', async () => {
  const logs = new Map<string, ReplayBuffer>();
  const eventLogs = (key: string) => logs.get(key) ?? logs.set(key, new ReplayBuffer(10)).get(key)!;
  const one = eventLogStore(eventLogs, 'session-1');
  const two = eventLogStore(eventLogs, 'session-2');
  strictEqual(await one.storeEvent(STANDALONE_STREAM_ID, updatedMessage('memo://1')), '_GET_stream:1');
  strictEqual(await two.storeEvent(STANDALONE_STREAM_ID, updatedMessage('memo://2')), '_GET_stream:1');
  deepStrictEqual([...logs.keys()], ['session-1/_GET_stream', 'session-2/_GET_stream']);
  const sent: object[] = [];
  await two.replayEventsAfter('_GET_stream:0', { send: async (_id, message) => void sent.push(message) });
  deepStrictEqual(sent, [updatedMessage('memo://2')], "another session's GET stream is not mixed in");
  throws(() => eventLogStore(eventLogs, ''), /sessionId must be a non-empty string/);
  throws(() => eventLogStore({} as never, 's'), /eventLogs must be a function/);
});

test.run();
