// One authorization model for both eras (issue 16 item 4, DESIGN M4 and L3): a resource provider's
// `subscribable`/`canRead`, the endpoint's `canRead` and its `subscribeHook` decide a modern
// `subscriptions/listen` and a legacy `resources/subscribe` alike. The listen drops a refused URI
// silently (from its acknowledgment and its stream); the subscribe answers the L3 error. A
// provider's `changes` reach modern streams as they reach legacy ones. Real loopback sockets,
// byte-exact wire text.
import { strict as assert } from 'node:assert';
import { defer, filter, finalize, Subject, type Subscription, throwError } from 'rxjs';
import { test } from 'uvu';
import type { AuthInfo } from '../lib/auth.js';
import { McpEndpoint } from '../adapters/http/endpoint.js';
import type { McpEndpointOptions } from '../adapters/http/options.js';
import type { RequestContext } from '../lib/context.js';
import { Hub } from '../lib/hub.js';
import { hubResources, type ResourceProvider } from '../lib/resources.js';
import { channels, type ErrorEvent } from '../lib/telemetry.js';
import { eventually, LISTEN_HEADERS, listenBody, SseConnection, startEndpoint, type TestServer } from './helpers/http.js';
import { call, frameText, GetStream, initialize, primingText, send, sessionHeaders } from './helpers/legacy.js';
import { collecting } from './helpers/telemetry.js';

type Verdict = 'allow' | 'deny';

/** One row of the table: what each check answers (`undefined`: the option is not given). */
interface Row {
  readonly subscribable: boolean;
  readonly providerCanRead: Verdict;
  readonly endpointCanRead: Verdict | undefined;
  readonly subscribeHook: Verdict | undefined;
}

/** What the row should come to, and which checks run, in order, before the decision. */
function expected(row: Row): { readonly refusal: 'not subscribable' | 'permission denied' | undefined; readonly checks: readonly string[] } {
  const checks = ['subscribable'];
  if (!row.subscribable) return { refusal: 'not subscribable', checks };
  checks.push('provider.canRead');
  if (row.providerCanRead === 'deny') return { refusal: 'permission denied', checks };
  if (row.endpointCanRead !== undefined) {
    checks.push('endpoint.canRead');
    if (row.endpointCanRead === 'deny') return { refusal: 'permission denied', checks };
  }
  if (row.subscribeHook !== undefined) {
    checks.push('subscribeHook');
    if (row.subscribeHook === 'deny') return { refusal: 'permission denied', checks };
  }
  return { refusal: undefined, checks };
}

/** Every combination: 2 × 2 × 3 × 3 = 36 rows. */
function table(): Row[] {
  const rows: Row[] = [];
  for (const subscribable of [true, false]) {
    for (const providerCanRead of ['allow', 'deny'] as const) {
      for (const endpointCanRead of [undefined, 'allow', 'deny'] as const) {
        for (const subscribeHook of [undefined, 'allow', 'deny'] as const) rows.push({ subscribable, providerCanRead, endpointCanRead, subscribeHook });
      }
    }
  }
  return rows;
}

const describe = (row: Partial<Row>) =>
  `subscribable=${row.subscribable ?? 'default'} provider.canRead=${row.providerCanRead ?? 'default'} endpoint.canRead=${row.endpointCanRead ?? 'unset'} subscribeHook=${row.subscribeHook ?? 'unset'}`;

const URI = 'db://shop/Product/42';
const LISTEN_ID = 7;
const TAG = `"_meta":{"io.modelcontextprotocol/subscriptionId":${LISTEN_ID}}`;

/** The exact acknowledgment of a listen for tool changes and `uris`. */
const ackText = (uris: readonly string[]) =>
  `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true${
    uris.length === 0 ? '' : `,"resourceSubscriptions":${JSON.stringify(uris)}`
  }},${TAG}}}\n\n`;
const listenUpdatedText = (uri: string) => `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"${uri}",${TAG}}}\n\n`;
const listenToolsText = `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{${TAG}}}\n\n`;
const updated = (uri: string) => ({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri } });
const toolsChanged = { jsonrpc: '2.0', method: 'notifications/tools/list_changed' };
const okBody = (id: number) => JSON.stringify({ jsonrpc: '2.0', id, result: {} });
const errorBody = (id: number, code: number, message: string) => JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } });

/** A change feed of URIs that counts the subscriptions of each URI's source (what a database change stream would be). */
class Feed {
  readonly commits = new Subject<string>();
  /** Live subscriptions per URI. */
  readonly live = new Map<string, number>();
  /** Every subscription made, per URI. */
  readonly made = new Map<string, number>();

  changes(uri: string) {
    return defer(() => {
      this.live.set(uri, (this.live.get(uri) ?? 0) + 1);
      this.made.set(uri, (this.made.get(uri) ?? 0) + 1);
      return this.commits.pipe(filter((changed) => changed === uri));
    }).pipe(finalize(() => this.live.set(uri, this.live.get(uri)! - 1)));
  }

  get liveTotal(): number {
    let total = 0;
    for (const count of this.live.values()) total += count;
    return total;
  }
}

async function withServer(options: Partial<McpEndpointOptions>, body: (server: TestServer) => Promise<void>): Promise<void> {
  const server = await startEndpoint({ capabilities: { tools: true, resources: true }, ...options });
  try {
    await body(server);
  } finally {
    await server.close();
  }
}

/** A modern listen for tool changes and `uris`, read until its acknowledgment arrived. */
async function listen(url: string, uris: readonly string[], id: number = LISTEN_ID, headers: Record<string, string> = {}): Promise<SseConnection> {
  const conn = await SseConnection.open(url, listenBody(id, { toolsListChanged: true, resourceSubscriptions: uris }), { ...LISTEN_HEADERS, ...headers });
  assert.equal(conn.status, 200);
  await conn.until((c) => c.text.includes('\n\n'), 3000, 'the acknowledgment');
  return conn;
}

/** A ready legacy session with its GET stream open (the server then holds `streams` streams). */
async function legacySession(server: TestServer, streams: number, headers: Record<string, string> = {}): Promise<{ sid: string; get: GetStream }> {
  const init = await initialize(server.url, { headers });
  assert.equal(init.status, 200, init.body);
  const sid = init.sessionId;
  assert.equal((await send(server.url, 'POST', sessionHeaders(sid, headers), JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }))).status, 202);
  const get = GetStream.open(server.url, sid, { headers });
  await eventually(() => server.endpoint.stats.streams === streams, 3000, `${streams} open stream(s)`);
  await get.until((s) => s.primedWith !== undefined, 3000, 'the priming event');
  return { sid, get };
}

/** Lets a turn of the event loop pass, so that a notification is written before the next one is published. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

test('every provider/hook combination decides a modern listen and a legacy subscribe alike (36 rows, both eras)', async () => {
  const rows = table();
  assert.equal(rows.length, 36);
  for (const row of rows) {
    const what = describe(row);
    const { refusal, checks } = expected(row);
    const feed = new Feed();
    let log: string[] = [];
    const verdict = (name: string, answer: Verdict) => {
      log.push(name);
      return answer === 'allow';
    };
    const provider: ResourceProvider = {
      subscribable: (uri) => {
        log.push('subscribable');
        return row.subscribable && uri.startsWith('db://');
      },
      canRead: () => verdict('provider.canRead', row.providerCanRead),
      changes: (uri) => feed.changes(uri),
    };
    const { endpointCanRead, subscribeHook } = row;
    const options: Partial<McpEndpointOptions> = {
      resourceProviders: [provider],
      ...(endpointCanRead === undefined ? {} : { canRead: async () => verdict('endpoint.canRead', endpointCanRead) }),
      ...(subscribeHook === undefined ? {} : { subscribeHook: async () => verdict('subscribeHook', subscribeHook) }),
    };
    await withServer(options, async (server) => {
      // Modern: the acknowledgment lists the URI only when every check allows it.
      const modern = await listen(server.url, [URI]);
      assert.equal(modern.text, ackText(refusal === undefined ? [URI] : []), `${what}: the acknowledgment`);
      assert.deepEqual(log, checks, `${what}: the checks a listen runs, in order`);
      assert.equal(feed.liveTotal, refusal === undefined ? 1 : 0, `${what}: the provider's changes are subscribed for the listen only when it was allowed`);

      // Legacy: the same decision, as the L3 answer.
      log = [];
      const { sid, get } = await legacySession(server, 2);
      const reply = await call(server.url, sid, 3, 'resources/subscribe', { uri: URI });
      assert.equal(reply.status, 200);
      const answer =
        refusal === undefined
          ? okBody(3)
          : errorBody(3, -32602, refusal === 'not subscribable' ? `resource is not subscribable: ${URI}` : `permission denied: ${URI}`);
      assert.equal(reply.body, answer, `${what}: the resources/subscribe answer`);
      assert.deepEqual(log, checks, `${what}: the checks a subscribe runs, in order`);

      // A commit of the provider's feed reaches both eras, or neither; the tools change is the fence.
      feed.commits.next(URI);
      await nextTurn();
      server.hub.notifyToolsChanged();
      await modern.until((c) => c.text.includes('tools/list_changed'), 3000, `${what}: the modern fence`);
      await get.until((s) => s.text.includes('tools/list_changed'), 3000, `${what}: the legacy fence`);
      assert.equal(modern.text, ackText(refusal === undefined ? [URI] : []) + (refusal === undefined ? listenUpdatedText(URI) : '') + listenToolsText, `${what}: the listen stream`);
      assert.equal(
        get.text,
        primingText(0) + (refusal === undefined ? frameText(1, updated(URI)) + frameText(2, toolsChanged) : frameText(1, toolsChanged)),
        `${what}: the GET stream`,
      );
      modern.destroy();
      get.destroy();
    });
    assert.equal(feed.liveTotal, 0, `${what}: every subscription of the provider's changes ended with the server`);
  }
});

test('no resourceProviders: the default hub provider, the endpoint canRead and subscribeHook decide both eras alike (9 rows)', async () => {
  for (const endpointCanRead of [undefined, 'allow', 'deny'] as const) {
    for (const subscribeHook of [undefined, 'allow', 'deny'] as const) {
      const row = { subscribable: true, providerCanRead: 'allow' as const, endpointCanRead, subscribeHook };
      const what = describe({ endpointCanRead, subscribeHook });
      const { refusal } = expected(row);
      let log: string[] = [];
      const options: Partial<McpEndpointOptions> = {
        ...(endpointCanRead === undefined ? {} : { canRead: () => (log.push('endpoint.canRead'), endpointCanRead === 'allow') }),
        ...(subscribeHook === undefined ? {} : { subscribeHook: () => (log.push('subscribeHook'), subscribeHook === 'allow') }),
      };
      const checks = expected(row).checks.filter((check) => check !== 'subscribable' && check !== 'provider.canRead');
      await withServer(options, async (server) => {
        const modern = await listen(server.url, [URI]);
        assert.equal(modern.text, ackText(refusal === undefined ? [URI] : []), `${what}: the acknowledgment`);
        assert.deepEqual(log, checks, `${what}: the checks a listen runs`);
        log = [];
        const { sid, get } = await legacySession(server, 2);
        const reply = await call(server.url, sid, 3, 'resources/subscribe', { uri: URI });
        assert.equal(reply.body, refusal === undefined ? okBody(3) : errorBody(3, -32602, `permission denied: ${URI}`), `${what}: the resources/subscribe answer`);
        assert.deepEqual(log, checks, `${what}: the checks a subscribe runs`);
        server.hub.notifyResourceUpdated(URI);
        await nextTurn();
        server.hub.notifyToolsChanged();
        await modern.until((c) => c.text.includes('tools/list_changed'), 3000, `${what}: the modern fence`);
        await get.until((s) => s.text.includes('tools/list_changed'), 3000, `${what}: the legacy fence`);
        assert.equal(modern.text, ackText(refusal === undefined ? [URI] : []) + (refusal === undefined ? listenUpdatedText(URI) : '') + listenToolsText, `${what}: the listen stream`);
        assert.equal(
          get.text,
          primingText(0) + (refusal === undefined ? frameText(1, updated(URI)) + frameText(2, toolsChanged) : frameText(1, toolsChanged)),
          `${what}: the GET stream`,
        );
        modern.destroy();
        get.destroy();
      });
    }
  }
});

test("a provider's changes reach modern listens: subscribed once per URI for all the listens of a node, ended with the last of them", async () => {
  const feed = new Feed();
  const provider: ResourceProvider = { subscribable: (uri) => uri.startsWith('db://'), canRead: () => true, changes: (uri) => feed.changes(uri) };
  await withServer({ resourceProviders: [provider], maxListensPerPrincipal: 10 }, async (server) => {
    const a = 'db://shop/Product/1';
    const b = 'db://shop/Product/2';
    const onA = [await listen(server.url, [a], 1), await listen(server.url, [a, b], 2), await listen(server.url, [a], 3)];
    const onB = await listen(server.url, [b], 4);
    assert.deepEqual([...feed.live], [[a, 1], [b, 1]], 'one subscription of the source per URI, however many listens name it');
    feed.commits.next(a);
    feed.commits.next(b);
    const hears = (conn: SseConnection, id: number, uri: string) => conn.text.includes(`"params":{"uri":"${uri}","_meta":{"io.modelcontextprotocol/subscriptionId":${id}}}`);
    await eventually(() => onA.every((conn, index) => hears(conn, index + 1, a)) && hears(onA[1]!, 2, b) && hears(onB, 4, b), 3000, 'every listen hears its URIs');
    assert.ok(!hears(onA[0]!, 1, b) && !hears(onA[2]!, 3, b) && !hears(onB, 4, a), 'nothing for a URI a listen did not name');

    onA[0]!.destroy();
    onA[2]!.destroy();
    await eventually(() => server.endpoint.stats.streams === 2, 3000, 'two listens left');
    assert.deepEqual([...feed.live], [[a, 1], [b, 1]], 'the source stays subscribed while a listen names the URI');
    onA[1]!.destroy();
    await eventually(() => feed.live.get(a) === 0, 3000, "the last listen on a ended: a's source unsubscribed");
    assert.equal(feed.live.get(b), 1, 'b is still listened to');
    // A new listen on a subscribes the source again.
    const again = await listen(server.url, [a], 5);
    assert.equal(feed.live.get(a), 1);
    assert.equal(feed.made.get(a), 2);
    feed.commits.next(a);
    await again.until((c) => hears(c, 5, a), 3000, 'a change after resubscribing');
    // Closing the endpoint closes every listen: nothing stays subscribed.
    server.endpoint.close();
    await eventually(() => feed.liveTotal === 0, 3000, 'every source unsubscribed on close');
    onB.destroy();
    again.destroy();
  });
  assert.equal(feed.made.get('db://shop/Product/1'), 2);
  assert.equal(feed.made.get('db://shop/Product/2'), 1);
});

test("10 000 listens on one URI subscribe its provider's changes once; one change reaches all of them; the last to end unsubscribes it (in process)", async () => {
  const feed = new Feed();
  const provider: ResourceProvider = { subscribable: () => true, canRead: () => true, changes: (uri) => feed.changes(uri) };
  const hub = new Hub();
  const endpoint = new McpEndpoint({ hub, capabilities: { resources: true }, resourceProviders: [provider], maxStreams: 10_000, maxListensPerPrincipal: 10_000 });
  const headers: Record<string, string> = { ...LISTEN_HEADERS };
  const streams: Subscription[] = [];
  let heard = 0;
  for (let id = 1; id <= 10_000; id++) {
    const response = await endpoint.handle({ method: 'POST', header: (name) => headers[name], remoteAddress: '127.0.0.1', body: listenBody(id, { resourceSubscriptions: [URI] }) });
    assert.equal(response.kind, 'stream');
    if (response.kind !== 'stream') return;
    streams.push(
      response.open(new Subject<boolean>()).subscribe((frame) => {
        if (frame.type === 'message' && 'method' in frame.message && frame.message.method === 'notifications/resources/updated') heard++;
      }),
    );
  }
  assert.deepEqual([...feed.made], [[URI, 1]], 'one subscription of the source for 10 000 listens');
  feed.commits.next(URI);
  await eventually(() => heard === 10_000, 3000, 'every listen to hear the change');
  for (const stream of streams.slice(0, -1)) stream.unsubscribe();
  assert.equal(feed.live.get(URI), 1, 'still subscribed while one listen is open');
  streams.at(-1)!.unsubscribe();
  assert.equal(feed.live.get(URI), 0, 'unsubscribed with the last listen');
  assert.deepEqual(endpoint.stats, { streams: 0, slots: 0, principals: 0, sessions: 0, sessionSubscriptions: 0 });
  assert.deepEqual(hub.size, { topics: 0, subscriptions: 0 });
  endpoint.close();
});

test("hub-backed providers: hubResources' changes are the hub itself (nothing more is subscribed); a hand-made hub source neither loops nor is lost", async () => {
  const hub = new Hub();
  const byHand: ResourceProvider = { subscribable: (uri) => uri.startsWith('hand://'), canRead: () => true, changes: (uri) => hub.topic({ topic: 'resource', uri }) };
  // Spread from hubResources with a check of its own: still known as the hub's changes.
  const spread: ResourceProvider = { ...hubResources(hub), subscribable: (uri) => uri.startsWith('file://') };
  await withServer({ hub, resourceProviders: [byHand, spread] }, async (server) => {
    const conn = await listen(server.url, ['file:///a'], 1);
    assert.deepEqual(hub.size, { topics: 1, subscriptions: 2 }, 'the listen alone (tools and file:///a): the provider was not subscribed');
    const hand = await listen(server.url, ['hand://x'], 2);
    assert.deepEqual(hub.size, { topics: 2, subscriptions: 5 }, 'the hand-made provider is subscribed once, beside the listen');
    hub.notifyResourceUpdated('hand://x');
    hub.notifyResourceUpdated('file:///a');
    await nextTurn();
    hub.notifyToolsChanged();
    await hand.until((c) => c.text.includes('tools/list_changed'), 3000, 'the fence');
    await conn.until((c) => c.text.includes('tools/list_changed'), 3000, 'the fence');
    const count = (text: string, needle: string) => text.split(needle).length - 1;
    assert.equal(count(conn.text, 'notifications/resources/updated'), 1, 'one publish, one notification');
    // Documented (ResourceProvider): the endpoint cannot tell a hand-made source is its own hub, so
    // the publish comes back once through the provider, never in a loop; it comes back in the same
    // turn, so the hub collapses it into the first (HubOptions.coalesce) and the listen hears one.
    assert.equal(count(hand.text, 'notifications/resources/updated'), 1);
    conn.destroy();
    hand.destroy();
    await eventually(() => hub.size.subscriptions === 0, 3000, 'everything released');
  });
});

test('a provider that fails drops its URI from a listen silently (reported on channels.error); the other URIs are honoured', async () => {
  await collecting<ErrorEvent>(channels.error, async (errors) => {
    const feed = new Feed();
    const provider: ResourceProvider = {
      subscribable: (uri) => {
        if (uri === 'bad://subscribable') throw new Error('subscribable failed');
        return true;
      },
      canRead: (uri) => (uri === 'bad://canRead' ? Promise.reject(new Error('canRead failed')) : true),
      changes: (uri) => {
        if (uri === 'bad://changes') throw new Error('changes failed');
        if (uri === 'bad://source') return throwError(() => new Error('source failed'));
        return feed.changes(uri);
      },
    };
    await withServer({ resourceProviders: [provider] }, async (server) => {
      const conn = await listen(server.url, ['bad://subscribable', 'bad://canRead', 'db://fine', 'bad://changes', 'bad://source']);
      assert.equal(conn.text, ackText(['db://fine']));
      assert.deepEqual(
        errors.map((event) => [event.where, (event.error as Error).message]),
        [
          ['source', 'subscribable failed'],
          ['source', 'canRead failed'],
          ['source', 'changes failed'],
          ['source', 'source failed'],
        ],
      );
      conn.destroy();
    });
    assert.equal(feed.liveTotal, 0);
  });
});

test("a provider's source that fails later is reported and let go; the next listen on the URI subscribes it again", async () => {
  await collecting<ErrorEvent>(channels.error, async (errors) => {
    let sources = 0;
    let fail!: (error: Error) => void;
    const provider: ResourceProvider = {
      subscribable: () => true,
      canRead: () => true,
      changes: () => {
        sources++;
        return new Promise((_resolve, reject) => (fail = reject));
      },
    };
    await withServer({ resourceProviders: [provider] }, async (server) => {
      const first = await listen(server.url, [URI]);
      assert.equal(sources, 1);
      fail(new Error('change feed lost'));
      await eventually(() => errors.length === 1, 3000, 'the failure reported');
      assert.deepEqual(errors.map((event) => [event.where, (event.error as Error).message]), [['source', 'change feed lost']]);
      assert.equal(first.text, ackText([URI]), 'the open listen goes on, unharmed');
      const second = await listen(server.url, [URI], 8);
      assert.equal(sources, 2, 'a new listen subscribes the source again');
      first.destroy();
      second.destroy();
    });
  });
});

test("a provider on another hub feeds listens with each publish's scope: only principals holding it hear it", async () => {
  const changes = new Hub(); // e.g. the hub a database trigger publishes on
  const authenticate = (request: { header(name: string): string | undefined }): AuthInfo => {
    const who = request.header('x-user') ?? 'anonymous';
    return { principal: who, scopes: new Set(who === 'admin' ? ['private'] : []) };
  };
  await withServer({ resourceProviders: [hubResources(changes)], authenticate }, async (server) => {
    const user = await listen(server.url, [URI], LISTEN_ID, { 'x-user': 'user' });
    const admin = await listen(server.url, [URI], LISTEN_ID, { 'x-user': 'admin' });
    assert.deepEqual(changes.size, { topics: 1, subscriptions: 1 }, "one subscription of the other hub's topic for both listens");
    changes.notifyResourceUpdated(URI, { scope: 'private' });
    await nextTurn();
    changes.notifyResourceUpdated(URI);
    await nextTurn();
    server.hub.notifyToolsChanged();
    for (const conn of [user, admin]) await conn.until((c) => c.text.includes('tools/list_changed'), 3000, 'the fence');
    assert.equal(admin.text, ackText([URI]) + listenUpdatedText(URI) + listenUpdatedText(URI) + listenToolsText);
    assert.equal(user.text, ackText([URI]) + listenUpdatedText(URI) + listenToolsText, 'the scoped change is not heard without the scope');
    user.destroy();
    admin.destroy();
    await eventually(() => changes.size.subscriptions === 0, 3000, "the other hub's topic let go with the last listen");
  });
});

test("secure by default: the README's legacy provider (canRead on the provider only) restricts a listen as it restricts a subscribe", async () => {
  const commits = new Subject<string>();
  // As in the README: subscribable, canRead by scope, changes from the application's own feed.
  const products: ResourceProvider = {
    subscribable: (uri) => uri.startsWith('db://shop/Product'),
    canRead: (_uri, { auth }: RequestContext) => auth.scopes.has('shop:read'),
    changes: (uri) => commits.pipe(filter((changed) => changed === uri)),
  };
  const authenticate = (request: { header(name: string): string | undefined }): AuthInfo => {
    const who = request.header('x-user') ?? 'anonymous';
    return { principal: who, scopes: new Set(who === 'reader' ? ['shop:read'] : []) };
  };
  await withServer({ resourceProviders: [products], authenticate }, async (server) => {
    const stranger = await listen(server.url, [URI], LISTEN_ID, { 'x-user': 'stranger' });
    const reader = await listen(server.url, [URI], LISTEN_ID, { 'x-user': 'reader' });
    assert.equal(stranger.text, ackText([]));
    assert.equal(reader.text, ackText([URI]));
    const { sid } = await legacySession(server, 3, { 'x-user': 'stranger' });
    assert.equal((await call(server.url, sid, 3, 'resources/subscribe', { uri: URI }, { 'x-user': 'stranger' })).body, errorBody(3, -32602, `permission denied: ${URI}`));
    commits.next(URI);
    await reader.until((c) => c.text.includes('resources/updated'), 3000, "the reader hears the provider's change");
    await nextTurn();
    server.hub.notifyToolsChanged();
    await stranger.until((c) => c.text.includes('tools/list_changed'), 3000, 'the fence');
    assert.equal(stranger.text, ackText([]) + listenToolsText, 'the stranger hears nothing of the resource');
    stranger.destroy();
    reader.destroy();
  });
});

test.run();
