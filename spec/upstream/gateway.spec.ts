// The gateway with real upstreams (issue 34): the reference server behind it speaking either era,
// the official clients of both eras in front of it, over real loopback sockets. Each downstream
// stream follows its own era's rules whatever its upstream speaks; URIs are the upstream's,
// namespaced `upstream://<name>/…`; a listen's acknowledgment is what the upstreams honour.
import { deepStrictEqual, ok, strictEqual } from 'node:assert';
import { test } from 'uvu';
import { listen, openSse } from '../../adapters/client.js';
import type { ParsedSseEvent } from '../../adapters/sseParser.js';
import { upstreamUri } from '../../adapters/upstream/index.js';
import type { JsonRpcMessage } from '../../lib/jsonrpc.js';
import { acknowledged, legacyClient, modernClient, referenceUpstream, sleep, startGateway, until, uriOf, WAIT_MS } from '../helpers/gateway.js';
import { within } from '../helpers/wait.js';

const ERAS = ['modern', 'legacy'] as const;
const FAST = { initialDelay: 20, maxDelay: 200, jitter: 0 };

for (const era of ERAS) {
  test(`official 2.x client listening through the gateway to the reference server speaking ${era}: the ack names the gateway's URIs, an update and a tools change reach it, a URI the upstream does not serve is left out`, async () => {
    const upstream = await referenceUpstream({ 'a.txt': 'a', 'b.txt': 'b' });
    const front = await startGateway({ upstreams: [{ name: 'notes', url: upstream.server.url, era, reconnect: FAST }] });
    const a = upstreamUri('notes', upstream.uri('a.txt'));
    const missing = upstreamUri('notes', upstream.uri('missing.txt'));
    const { client, updated, toolsChanged } = await modernClient(front.url);
    try {
      const subscription = await within(client.listen({ resourceSubscriptions: [a, missing], toolsListChanged: true }), WAIT_MS, 'listen()');
      deepStrictEqual(subscription.honoredFilter, { resourceSubscriptions: [a], toolsListChanged: true });
      upstream.server.hub.notifyResourceUpdated(upstream.uri('a.txt'));
      upstream.server.hub.notifyResourceUpdated(upstream.uri('b.txt'));
      await until(() => updated.length === 1, 'the update of a.txt');
      upstream.server.hub.notifyToolsChanged();
      await until(() => toolsChanged() === 1, 'the tools change');
      deepStrictEqual(updated, [a]);
      strictEqual(front.gateway.stats[0]!.era, era);
      // The read of the gateway URI is the upstream's, its URI rewritten.
      const read = await client.readResource({ uri: a });
      deepStrictEqual(read.contents.map((entry) => [entry.uri, 'text' in entry ? entry.text : undefined]), [[a, 'a']]);
    } finally {
      await client.close();
      await front.close();
      await upstream.server.close();
    }
  });

  test(`official 1.x client (a 2025 session) through the gateway to the reference server speaking ${era}: resources/subscribe, the update on its GET stream, the read rewritten, list changes`, async () => {
    const upstream = await referenceUpstream({ 'a.txt': 'a' });
    const front = await startGateway({ upstreams: [{ name: 'notes', url: upstream.server.url, era, reconnect: FAST }] });
    const a = upstreamUri('notes', upstream.uri('a.txt'));
    const { client, updated, toolsChanged } = await legacyClient(front.url);
    try {
      await until(() => front.endpoint.stats.streams === 1, 'the GET stream to open');
      deepStrictEqual(await within(client.subscribeResource({ uri: a }), WAIT_MS, 'resources/subscribe'), {});
      await client.subscribeResource({ uri: upstreamUri('notes', upstream.uri('missing.txt')) }).then(
        () => ok(false, 'a URI the upstream does not serve is refused'),
        (error: { code?: number; message?: string }) => deepStrictEqual([error.code, /resource is not subscribable/.test(error.message ?? '')], [-32602, true]),
      );
      upstream.server.hub.notifyResourceUpdated(upstream.uri('a.txt'));
      await until(() => updated.length === 1, 'the update of a.txt');
      upstream.server.hub.notifyToolsChanged();
      await until(() => toolsChanged() === 1, 'the tools change');
      deepStrictEqual(updated, [a]);
      const read = await client.readResource({ uri: a });
      deepStrictEqual(read.contents.map((entry) => entry.uri), [a]);
      strictEqual('resultType' in read, false, 'a legacy result has no resultType');
      const listed = await client.listResources();
      ok(listed.resources.some((resource) => resource.uri === a), `resources/list holds ${a}: ${JSON.stringify(listed.resources.map((r) => r.uri))}`);
    } finally {
      await client.close();
      await front.close();
      await upstream.server.close();
    }
  });
}

test('a listen naming URIs of two upstreams (one of each era) is acknowledged with the union of what they honour, and hears both', async () => {
  const [one, two] = await Promise.all([referenceUpstream({ 'a.txt': 'a' }), referenceUpstream({ 'b.txt': 'b' })]);
  const front = await startGateway({
    upstreams: [
      { name: 'one', url: one.server.url, era: 'modern', reconnect: FAST },
      { name: 'two', url: two.server.url, era: 'legacy', reconnect: FAST },
    ],
  });
  const a = upstreamUri('one', one.uri('a.txt'));
  const b = upstreamUri('two', two.uri('b.txt'));
  const unknown = upstreamUri('three', 'file:///x');
  const messages: JsonRpcMessage[] = [];
  const subscription = listen({ url: front.url, notifications: { resourceSubscriptions: [b, unknown, a, upstreamUri('one', one.uri('nope'))] } }).subscribe((message) => messages.push(message));
  try {
    await until(() => messages.length === 1, 'the acknowledgment');
    deepStrictEqual(acknowledged(messages[0]), { resourceSubscriptions: [b, a] });
    one.server.hub.notifyResourceUpdated(one.uri('a.txt'));
    two.server.hub.notifyResourceUpdated(two.uri('b.txt'));
    await until(() => messages.length === 3, 'both updates');
    deepStrictEqual(new Set(messages.slice(1).map(uriOf)), new Set([a, b]));
  } finally {
    subscription.unsubscribe();
    await front.close();
    await Promise.all([one.server.close(), two.server.close()]);
  }
});

test('a 2025 session served from a 2026-07-28 upstream keeps its own era\'s rules: event ids, and a GET resumed with Last-Event-ID replays what changed upstream while it was cut', async () => {
  const upstream = await referenceUpstream({ 'a.txt': 'a' });
  const front = await startGateway({ upstreams: [{ name: 'notes', url: upstream.server.url, era: 'modern', reconnect: FAST }] });
  const a = upstreamUri('notes', upstream.uri('a.txt'));
  const post = async (body: object, session?: string) => {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };
    if (session !== undefined) headers['mcp-session-id'] = session;
    const response = await fetch(front.url, { method: 'POST', headers, body: JSON.stringify(body) });
    return { session: response.headers.get('mcp-session-id') ?? undefined, text: await response.text() };
  };
  const events: ParsedSseEvent[] = [];
  const updates = () => events.filter((event) => event.data.includes('notifications/resources/updated'));
  try {
    const { session } = await post({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } });
    ok(session !== undefined, 'a session');
    await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, session);
    let stream = openSse(front.url, { sessionId: session! }).subscribe((event) => events.push(event));
    await until(() => front.endpoint.stats.streams === 1, 'the GET stream');
    deepStrictEqual(JSON.parse((await post({ jsonrpc: '2.0', id: 2, method: 'resources/subscribe', params: { uri: a } }, session)).text), { jsonrpc: '2.0', id: 2, result: {} });
    upstream.server.hub.notifyResourceUpdated(upstream.uri('a.txt'));
    await until(() => updates().length === 1, 'the first update');
    const seen = updates()[0]!.id!;
    ok(/^\d+$/.test(seen), `the session's own event id: ${seen}`);
    deepStrictEqual(JSON.parse(updates()[0]!.data), { jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: a } });

    // Cut: the session's subscriptions go on filling its replay buffer (its grace period).
    stream.unsubscribe();
    await until(() => front.endpoint.stats.streams === 0, 'the GET stream gone');
    upstream.server.hub.notifyResourceUpdated(upstream.uri('a.txt'));
    await until(() => front.gateway.stats[0]!.framesOut === 2, 'the second change through the gateway');
    events.length = 0;
    stream = openSse(front.url, { sessionId: session!, lastEventId: seen }).subscribe((event) => events.push(event));
    await until(() => updates().length === 1, 'the replayed update');
    ok(Number(updates()[0]!.id) > Number(seen), `replayed with a later id: ${updates()[0]!.id} after ${seen}`);
    upstream.server.hub.notifyResourceUpdated(upstream.uri('a.txt'));
    await until(() => updates().length === 2, 'a live update after the replay');
    await sleep(100);
    strictEqual(updates().length, 2, 'nothing replayed twice');
    stream.unsubscribe();
  } finally {
    await front.close();
    await upstream.server.close();
  }
});

test.run();
