// webSocketChannel on the client's side (issue 31, item 9): a channel made from `new WebSocket(url)`
// while it is still CONNECTING, as its doc example writes it. What is sent before 'open' goes out in
// order once it opens and counts toward the busy signal; a socket that never opens ends the channel
// and says what was lost; the official 2.x client connects over it. Real sockets on 127.0.0.1.
import { deepStrictEqual, ok, strictEqual } from 'node:assert';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/client';
import { test } from 'uvu';
import { WebSocket, WebSocketServer } from 'ws';
import { webSocketChannel, webSocketServer, type WebSocketServerLike } from '../../adapters/channel/ws.js';
import { AuthError, channelTransport, channels, type ErrorEvent, Hub, McpEndpoint } from '../../index.js';
import { Peer, until } from '../helpers/channel.js';
import { collecting } from '../helpers/telemetry.js';
import { within } from '../helpers/wait.js';

const WAIT_MS = 4_000;
const PIN = { versionNegotiation: { mode: { pin: '2026-07-28' as const } } };

/** A plain `ws` server on loopback that records each text message it receives, byte for byte, and echoes it. */
async function recorder(): Promise<{ url: string; received: string[]; close(): Promise<void> }> {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  const received: string[] = [];
  wss.on('connection', (socket) =>
    socket.on('message', (data, isBinary) => {
      received.push(String(data));
      socket.send(data, { binary: isBinary });
    }),
  );
  await new Promise<void>((resolve) => wss.on('listening', resolve));
  const { port } = wss.address() as AddressInfo;
  return { url: `ws://127.0.0.1:${port}/`, received, close: () => new Promise<void>((resolve) => wss.close(() => resolve())) };
}

async function listening(wss: WebSocketServerLike): Promise<string> {
  await new Promise<void>((resolve) => wss.on('listening', resolve));
  const { port } = (wss as unknown as { address(): AddressInfo }).address();
  return `ws://127.0.0.1:${port}/mcp`;
}

/** A loopback port nothing listens on (one that was just free). */
async function deadPort(): Promise<number> {
  const server = net.createServer().listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A JSON-RPC notification of exactly `bytes` bytes. */
function padded(bytes: number): string {
  const empty = '{"jsonrpc":"2.0","method":"notifications/pad","params":{"pad":""}}';
  const text = empty.replace('"pad":""', `"pad":"${'x'.repeat(bytes - empty.length)}"`);
  strictEqual(Buffer.byteLength(text), bytes);
  return text;
}

const adapterErrors = (events: ErrorEvent[]) => events.filter((event) => event.where === 'adapter').map((event) => (event.error as Error).message);

test('sent while CONNECTING: every message goes out once the socket opens, in order and byte for byte, before one sent from an earlier open listener', async () => {
  const server = await recorder();
  const socket = new WebSocket(server.url);
  strictEqual(socket.readyState, WebSocket.CONNECTING);
  // The application's own 'open' listener, registered before the channel's, sends first in time.
  let channel: ReturnType<typeof webSocketChannel> | undefined;
  socket.once('open', () => channel!.send('{"jsonrpc":"2.0","id":4,"method":"ping"}'));
  channel = webSocketChannel(socket);
  const peer = new Peer(channel);
  const early = ['{"jsonrpc":"2.0","id":1,"method":"server/discover"}', '{"jsonrpc":"2.0","id":2,"method":"ping","params":{"é":"ü"}}', '{"jsonrpc":"2.0","id":3,"method":"ping"}'];
  deepStrictEqual(
    early.map((json) => channel.send(json)),
    [true, true, true],
  );
  const all = [...early, '{"jsonrpc":"2.0","id":4,"method":"ping"}'];
  await until(() => peer.texts.length === 4, 'the four echoes');
  deepStrictEqual(server.received, all);
  deepStrictEqual(peer.texts, all);
  channel.close();
  await until(() => peer.ended, 'the channel to end');
  await server.close();
});

test('sent while CONNECTING counts toward highWaterMark: send says false past it, drain$ emits once the held bytes are written after open', async () => {
  const server = await recorder();
  const socket = new WebSocket(server.url);
  const channel = webSocketChannel(socket, { highWaterMark: 100 });
  let drains = 0;
  channel.drain$.subscribe(() => void drains++);
  const peer = new Peer(channel);
  const [first, second] = [padded(70), padded(70)];
  // 70 bytes held: under the mark; 140 held: past it.
  deepStrictEqual([channel.send(first), channel.send(second)], [true, false]);
  strictEqual(socket.readyState, WebSocket.CONNECTING, 'both were sent before the socket opened');
  await until(() => drains === 1, 'drain$ after the open');
  await until(() => server.received.length === 2, 'both messages at the server');
  deepStrictEqual(server.received, [first, second]);
  strictEqual(drains, 1);
  channel.close();
  await until(() => peer.ended, 'the channel to end');
  await server.close();
});

test('a socket that never opens (nothing listening): incoming completes, the messages sent meanwhile are reported dropped on channels.error, a sender waiting for drain$ is let go', async () => {
  await collecting<ErrorEvent>(channels.error, async (events) => {
    const port = await deadPort();
    const channel = webSocketChannel(new WebSocket(`ws://127.0.0.1:${port}/mcp`), { highWaterMark: 100 });
    let drains = 0;
    channel.drain$.subscribe(() => void drains++);
    const peer = new Peer(channel);
    deepStrictEqual([channel.send(padded(70)), channel.send(padded(70))], [true, false]);
    await until(() => peer.ended, 'the channel to end');
    deepStrictEqual(adapterErrors(events), [
      `webSocketChannel: the WebSocket closed before it opened (connect ECONNREFUSED 127.0.0.1:${port}), and the 2 messages sent on it were dropped; check the URL, and that a server there accepts the upgrade`,
    ]);
    strictEqual(((events[0]!.error as Error).cause as NodeJS.ErrnoException).code, 'ECONNREFUSED');
    strictEqual(drains, 1, 'the sender told to wait is let go');
    // The channel has ended: it takes (and drops) what it is given, as the seam says.
    strictEqual(channel.send('{"jsonrpc":"2.0","id":9,"method":"ping"}'), true);
    channel.close();
  });
});

test('the official 2.x client over webSocketChannel(new WebSocket(url)): connect() returns (its server/discover sent before the open is answered), a listen is acknowledged and hears a change', async () => {
  const hub = new Hub();
  const endpoint = new McpEndpoint({ hub, capabilities: { tools: true }, serverInfo: { name: 'ws-client-spec-server', version: '3.1.0' } });
  const wss = webSocketServer(endpoint, { port: 0 });
  const url = await listening(wss);
  const client = new Client({ name: 'ws-client-spec', version: '0.0.0' }, PIN);
  const errors: unknown[] = [];
  client.onerror = (error) => errors.push(error);
  let toolsChanged = 0;
  client.setNotificationHandler('notifications/tools/list_changed', () => void toolsChanged++);
  const socket = new WebSocket(url);
  strictEqual(socket.readyState, WebSocket.CONNECTING);
  try {
    await within(client.connect(channelTransport(webSocketChannel(socket)), { timeout: WAIT_MS }), WAIT_MS, 'connect()');
    strictEqual(client.getNegotiatedProtocolVersion(), '2026-07-28');
    // What server/discover answered.
    deepStrictEqual(client.getServerVersion(), { name: 'ws-client-spec-server', version: '3.1.0' });
    const tools = await within(client.listen({ toolsListChanged: true }, { timeout: WAIT_MS }), WAIT_MS, 'listen');
    deepStrictEqual(tools.honoredFilter, { toolsListChanged: true });
    strictEqual(endpoint.stats.streams, 1);
    hub.notifyToolsChanged();
    await until(() => toolsChanged === 1, 'tools/list_changed on the listen', WAIT_MS);
    await tools.close();
    strictEqual(await tools.closed, 'local');
    deepStrictEqual(errors.map(String), []);
  } finally {
    await client.close();
  }
  await until(() => endpoint.stats.slots === 0, 'the slot released with the socket');
  await new Promise<void>((resolve) => wss.close(() => resolve()));
  endpoint.close();
  hub.close();
});

test('the official 2.x client over a socket whose upgrade is refused (401): connect() rejects at once, the cause on channels.error', async () => {
  await collecting<ErrorEvent>(channels.error, async (events) => {
    const hub = new Hub();
    const endpoint = new McpEndpoint({
      hub,
      authenticate: () => {
        throw new AuthError('send the token');
      },
    });
    const wss = webSocketServer(endpoint, { port: 0 });
    const url = await listening(wss);
    const client = new Client({ name: 'ws-client-spec', version: '0.0.0' }, PIN);
    const outcome = await within(
      client.connect(channelTransport(webSocketChannel(new WebSocket(url))), { timeout: 60_000 }).then(
        () => 'connected',
        (error: Error) => error.message,
      ),
      WAIT_MS,
      'connect() to settle',
    );
    ok(outcome !== 'connected' && /closed/i.test(outcome), outcome);
    deepStrictEqual(adapterErrors(events), [
      'webSocketChannel: the WebSocket closed before it opened (Unexpected server response: 401), and the 1 message sent on it was dropped; check the URL, and that a server there accepts the upgrade',
    ]);
    await client.close();
    await new Promise<void>((resolve) => wss.close(() => resolve()));
    endpoint.close();
    hub.close();
  });
});

test('close() while CONNECTING does not throw and ends the channel, reporting nothing: with incoming subscribed, and before anything subscribed', async () => {
  await collecting<ErrorEvent>(channels.error, async (events) => {
    const server = await recorder();
    const subscribed = webSocketChannel(new WebSocket(server.url));
    const peer = new Peer(subscribed);
    strictEqual(subscribed.send('{"jsonrpc":"2.0","id":1,"method":"ping"}'), true);
    subscribed.close();
    subscribed.close();
    await until(() => peer.ended, 'the subscribed channel to end');
    // Nobody listens to the socket's 'error' but the channel (ws throws one nobody listens to).
    const socket = new WebSocket(server.url);
    const unsubscribed = webSocketChannel(socket);
    unsubscribed.close();
    await new Promise<void>((resolve) => socket.once('close', () => resolve()));
    const late = new Peer(unsubscribed);
    await until(() => late.ended, 'incoming subscribed after the close to complete');
    await new Promise((resolve) => setTimeout(resolve, 100));
    deepStrictEqual(server.received, [], 'nothing held was sent after the close');
    deepStrictEqual(adapterErrors(events), []);
    await server.close();
  });
});

test.run();
