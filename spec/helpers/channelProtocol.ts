// The protocol every message channel serves the same way (issue 23): one suite, run by each
// transport's spec (the in-process pair, stdio over streams, WebSocket) with its own way to connect.
import { deepStrictEqual, ok, strictEqual } from 'node:assert';
import { suite } from 'uvu';
import type { MessageChannel } from '../../adapters/channel/channel.js';
import type { ChannelSession } from '../../adapters/channel/session.js';
import { McpEndpoint } from '../../adapters/http/endpoint.js';
import type { McpEndpointOptions } from '../../adapters/http/options.js';
import { Hub } from '../../lib/hub.js';
import { type Message, Peer, until } from './channel.js';

const SUB = 'io.modelcontextprotocol/subscriptionId';
const ENVELOPE = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };

/** One connected channel: the client's end, the server's session, and how to stop and restart reading. */
export interface Connected {
  readonly client: MessageChannel;
  readonly session: ChannelSession;
  /** The client stops reading (the server's sends then say busy past the transport's mark). */
  pause(): void;
  resume(): void;
  /** Ends the connection from the client's side. */
  hangUp(): void;
  /** Releases what the transport holds (servers, sockets). */
  dispose(): Promise<void>;
}

/** How a transport connects a client to `endpoint`. */
export type Connect = (endpoint: McpEndpoint) => Promise<Connected>;

interface Fixture {
  readonly hub: Hub;
  readonly endpoint: McpEndpoint;
  readonly peer: Peer;
  readonly connected: Connected;
}

async function withChannel(connect: Connect, options: Partial<McpEndpointOptions>, body: (fixture: Fixture) => Promise<void>): Promise<void> {
  const hub = new Hub();
  const endpoint = new McpEndpoint({ capabilities: { tools: true, prompts: true, resources: true }, ...options, hub });
  const connected = await connect(endpoint);
  try {
    await body({ hub, endpoint, peer: new Peer(connected.client), connected });
  } finally {
    connected.hangUp();
    await connected.session.closed;
    endpoint.close();
    hub.close();
    await connected.dispose();
  }
}

const listen = (id: string | number, notifications: object) => ({ jsonrpc: '2.0', id, method: 'subscriptions/listen', params: { _meta: ENVELOPE, notifications } });

/** Registers the shared protocol tests for the transport `name`. */
export function channelProtocolSuite(name: string, connect: Connect, extra: { readonly oversized?: 'error' | 'close' } = {}): void {
  const test = suite(name);

  test('server/discover is answered on the channel, one message per line of JSON', async () => {
    await withChannel(connect, {}, async ({ peer }) => {
      const answer = await peer.request('server-discover-probe-1', 'server/discover', { _meta: ENVELOPE });
      strictEqual(answer.result.resultType, 'complete');
      deepStrictEqual(answer.result.supportedVersions, ['2026-07-28']);
      deepStrictEqual(answer.result.capabilities.resources, { subscribe: true, listChanged: true });
      // The exact text: JSON with no line break in it, nothing around it.
      const text = peer.texts.find((entry) => entry.includes('server-discover-probe-1'))!;
      strictEqual(text, JSON.stringify(answer));
      ok(!/[\r\n]/.test(text));
    });
  });

  test('two concurrent listens: each acknowledged first, every message tagged with its own id, a change reaching only the one that asked', async () => {
    await withChannel(connect, {}, async ({ hub, endpoint, peer }) => {
      peer.send(listen('listen:0', { resourceSubscriptions: ['file:///a'] }));
      peer.send(listen(7, { toolsListChanged: true, resourceSubscriptions: ['file:///b'] }));
      await peer.next((m) => m.method === 'notifications/subscriptions/acknowledged' && m.params._meta[SUB] === 7, 'the second ack');
      await peer.next((m) => m.method === 'notifications/subscriptions/acknowledged' && m.params._meta[SUB] === 'listen:0', 'the first ack');
      strictEqual(endpoint.stats.streams, 2);
      hub.notifyResourceUpdated('file:///b');
      hub.notifyResourceUpdated('file:///a');
      hub.notifyToolsChanged();
      await peer.next((m) => m.method === 'notifications/tools/list_changed', 'tools/list_changed');
      await until(() => peer.tagged('listen:0').length === 2, 'the update of file:///a');
      deepStrictEqual(
        peer.tagged('listen:0').map((m) => [m.method, m.params.uri]),
        [
          ['notifications/subscriptions/acknowledged', undefined],
          ['notifications/resources/updated', 'file:///a'],
        ],
      );
      deepStrictEqual(
        peer.tagged(7).map((m) => m.method),
        ['notifications/subscriptions/acknowledged', 'notifications/resources/updated', 'notifications/tools/list_changed'],
      );
      // Byte-exact: the ack of the numeric id, the id verbatim (a number stays a number).
      ok(
        peer.texts.includes(
          '{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true,"resourceSubscriptions":["file:///b"]},"_meta":{"io.modelcontextprotocol/subscriptionId":7}}}',
        ),
        JSON.stringify(peer.texts),
      );
      ok(peer.texts.includes('{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a","_meta":{"io.modelcontextprotocol/subscriptionId":"listen:0"}}}'));
    });
  });

  test('notifications/cancelled for a listen id ends that stream alone and gives its slot back; the other keeps receiving', async () => {
    await withChannel(connect, {}, async ({ hub, endpoint, peer }) => {
      peer.send(listen('one', { resourceSubscriptions: ['file:///a'] }));
      peer.send(listen('two', { resourceSubscriptions: ['file:///a'] }));
      await until(() => peer.tagged('one').length === 1 && peer.tagged('two').length === 1, 'both acks');
      strictEqual(endpoint.stats.slots, 2);
      peer.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'one', reason: 'done' } });
      await until(() => endpoint.stats.slots === 1 && endpoint.stats.streams === 1, 'the slot of "one" to be released');
      hub.notifyResourceUpdated('file:///a');
      await until(() => peer.tagged('two').length === 2, 'the update on "two"');
      // A cancelled listen is sent nothing more: no update, no closing frames.
      strictEqual(peer.tagged('one').length, 1);
      // An unknown or repeated cancel changes nothing.
      peer.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'one' } });
      peer.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'nobody' } });
      const pong = await peer.request(99, 'server/discover');
      ok(pong.result !== undefined);
      strictEqual(endpoint.stats.streams, 1);
    });
  });

  test('a server-side close (lifetime): notifications/cancelled then the listen result, tagged, and the slot given back; the channel goes on', async () => {
    await withChannel(connect, { maxStreamLifetime: 150 }, async ({ endpoint, peer }) => {
      peer.send(listen('short', { toolsListChanged: true }));
      const result = await peer.next((m) => m.id === 'short', 'the listen result', 3_000);
      deepStrictEqual(result, { jsonrpc: '2.0', id: 'short', result: { resultType: 'complete', _meta: { [SUB]: 'short' } } });
      deepStrictEqual(
        peer.tagged('short').map((m) => m.method ?? 'result'),
        ['notifications/subscriptions/acknowledged', 'notifications/cancelled', 'result'],
      );
      deepStrictEqual(peer.tagged('short')[1]!.params, { requestId: 'short', reason: 'max_lifetime', _meta: { [SUB]: 'short' } });
      await until(() => endpoint.stats.slots === 0, 'the slot to be released');
      ok((await peer.request(2, 'server/discover')).result !== undefined, 'the channel goes on');
    });
  });

  test('the per-principal cap: a fifth listen of the channel supersedes its oldest, which gets its closing frames', async () => {
    await withChannel(connect, { maxListensPerPrincipal: 4 }, async ({ endpoint, peer }) => {
      for (let i = 1; i <= 5; i++) {
        peer.send(listen(i, { toolsListChanged: true }));
        await until(() => peer.tagged(i).length >= 1, `ack ${i}`);
      }
      await peer.next((m) => m.id === 1, 'the result of listen 1');
      strictEqual(peer.tagged(1)[1]!.params.reason, 'superseded');
      await until(() => endpoint.stats.streams === 4 && endpoint.stats.slots === 4, 'four streams');
    });
  });

  test('listen refusals are the JSON-RPC errors HTTP answers: bad params -32602, an id in use -32600', async () => {
    await withChannel(connect, {}, async ({ peer }) => {
      const bad = await peer.request('x', 'subscriptions/listen', { notifications: { resourceSubscriptions: 'file:///a' } });
      strictEqual(bad.error.code, -32602);
      peer.send(listen('dup', { toolsListChanged: true }));
      await until(() => peer.tagged('dup').length === 1, 'the ack');
      peer.send(listen('dup', { toolsListChanged: true }));
      const refused = await peer.next((m) => m.id === 'dup' && m.error !== undefined, 'the refusal');
      strictEqual(refused.error.code, -32600);
    });
  });

  test('legacy era: initialize, resources/subscribe delivering notifications/resources/updated and list changes on the channel, unsubscribe; no session id, no event id', async () => {
    await withChannel(connect, {}, async ({ hub, endpoint, peer, connected }) => {
      const init = await peer.request(0, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'legacy', version: '1' } });
      strictEqual(init.result.protocolVersion, '2025-06-18');
      deepStrictEqual(init.result.capabilities.resources, { subscribe: true, listChanged: true });
      peer.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      // No GET stream to open first: the subscribe answers at once.
      deepStrictEqual((await peer.request(1, 'resources/subscribe', { uri: 'file:///a' })).result, {});
      strictEqual(connected.session.stats.subscriptions, 1);
      hub.notifyResourceUpdated('file:///other');
      hub.notifyResourceUpdated('file:///a');
      hub.notifyToolsChanged();
      await peer.next((m) => m.method === 'notifications/tools/list_changed', 'tools/list_changed');
      const updates = peer.received.filter((m) => m.method === 'notifications/resources/updated');
      deepStrictEqual(updates, [{ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'file:///a' } }]);
      ok(peer.texts.includes('{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a"}}'));
      deepStrictEqual((await peer.request(2, 'resources/unsubscribe', { uri: 'file:///a' })).result, {});
      hub.notifyResourceUpdated('file:///a');
      deepStrictEqual((await peer.request(3, 'resources/unsubscribe', { uri: 'file:///a' })).result, {});
      strictEqual(peer.received.filter((m) => m.method === 'notifications/resources/updated').length, 1);
      // DESIGN L3 on a channel; M12: no listen in the legacy era; a second initialize.
      strictEqual((await peer.request(4, 'resources/subscribe', {})).error.code, -32602);
      strictEqual((await peer.request(5, 'subscriptions/listen', { notifications: { toolsListChanged: true } })).error.code, -32601);
      strictEqual((await peer.request(6, 'initialize', { protocolVersion: '2025-06-18' })).error.code, -32600);
      strictEqual(endpoint.stats.sessions, 0, 'no HTTP session was made');
    });
  });

  test('legacy era: the same authorization as HTTP (a URI the read check refuses: -32602 permission denied, never notified)', async () => {
    await withChannel(connect, { canRead: (uri) => !uri.includes('/private/') }, async ({ hub, peer }) => {
      await peer.request(0, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'legacy', version: '1' } });
      const refused = await peer.request(1, 'resources/subscribe', { uri: 'file:///private/x' });
      deepStrictEqual(refused.error, { code: -32602, message: 'permission denied: file:///private/x' });
      hub.notifyResourceUpdated('file:///private/x');
      await peer.request(2, 'ping');
      strictEqual(peer.received.filter((m) => m.method === 'notifications/resources/updated').length, 0);
    });
  });

  test('bad input gets the JSON-RPC error HTTP answers (id null where unknown) and the channel goes on', async () => {
    await withChannel(connect, { maxBodyBytes: 4096 }, async ({ peer, connected }) => {
      peer.send('{"jsonrpc":"2.0","id":1,');
      peer.send('[{"jsonrpc":"2.0","id":2,"method":"ping"}]');
      peer.send('{"jsonrpc":"1.0","id":3,"method":"ping"}');
      peer.send('"just a string"');
      await until(() => peer.received.length === 4, 'four errors');
      deepStrictEqual(
        peer.received.map((m) => [m.id, m.error.code]),
        [
          [null, -32700],
          [null, -32600],
          [3, -32600],
          [null, -32600],
        ],
      );
      strictEqual(peer.texts[0], '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: the message is not valid JSON"}}');
      if (extra.oversized !== 'close') {
        peer.send(JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'ping', params: { pad: 'x'.repeat(5000) } }));
        await until(() => peer.received.length === 5, 'the refusal of the oversized message');
        deepStrictEqual(peer.received[4], { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'message exceeds 4096 bytes' } });
      }
      // A response from the client (to nothing) is not answered.
      peer.send({ jsonrpc: '2.0', id: 'x', result: {} });
      ok((await peer.request(5, 'server/discover')).result !== undefined);
      strictEqual(connected.session.stats.listens, 0);
    });
  });

  test('the channel ending ends every stream and releases every slot and subscription', async () => {
    await withChannel(connect, {}, async ({ endpoint, peer, connected }) => {
      peer.send(listen('a', { toolsListChanged: true }));
      peer.send(listen('b', { resourceSubscriptions: ['file:///x'] }));
      await until(() => endpoint.stats.streams === 2, 'two streams');
      connected.hangUp();
      await connected.session.closed;
      deepStrictEqual({ streams: endpoint.stats.streams, slots: endpoint.stats.slots, principals: endpoint.stats.principals }, { streams: 0, slots: 0, principals: 0 });
    });
  });

  test('a client that stops reading: notifications wait in the bounded queue (coalesced, then dropped), answers are never lost, and the stream resumes in order', async () => {
    await withChannel(connect, { maxStreamQueue: 50 }, async ({ hub, endpoint, peer, connected }) => {
      const uris = Array.from({ length: 1000 }, (_, i) => `file:///doc/${i}`);
      peer.send(listen('bulk', { resourceSubscriptions: uris }));
      await until(() => peer.tagged('bulk').length === 1, 'the ack', 8_000);
      connected.pause();
      // Enough to fill every buffer between the stream and the client, then the queue.
      const pad = 'x'.repeat(400);
      const padded = uris.map((uri) => `${uri}?${pad}`);
      peer.send(listen('padded', { resourceSubscriptions: padded }));
      for (let round = 0; round < 6; round++) {
        for (const uri of padded) hub.notifyResourceUpdated(uri);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      peer.send({ jsonrpc: '2.0', id: 'while-paused', method: 'server/discover' });
      for (const uri of uris) hub.notifyResourceUpdated(uri);
      await new Promise((resolve) => setTimeout(resolve, 100));
      connected.resume();
      const answer = await peer.next((m) => m.id === 'while-paused', 'the answer sent while the client was not reading', 8_000);
      ok(answer.result !== undefined);
      await until(() => peer.tagged('bulk').length > 1, 'updates on "bulk"', 8_000);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const bulk = peer.tagged('bulk').slice(1).map((m) => Number(m.params.uri.split('/').pop()));
      // In publish order, no duplicate, at most the queue's 50 (plus what the buffers held) of them.
      deepStrictEqual(bulk, [...bulk].sort((x, y) => x - y));
      strictEqual(new Set(bulk).size, bulk.length);
      ok(bulk.length < 1000, `some were dropped: ${bulk.length}`);
      // The second listen's ack came through (a control frame is never dropped).
      strictEqual(peer.tagged('padded')[0]?.method, 'notifications/subscriptions/acknowledged');
      strictEqual(endpoint.stats.streams, 2);
      // And the stream is live again.
      hub.notifyResourceUpdated('file:///doc/5');
      await until(() => peer.tagged('bulk').some((m: Message, i: number) => i > bulk.length && m.params.uri === 'file:///doc/5'), 'a live update after the stall', 8_000);
    });
  });

  test.run();
}
