// The channel protocol over WebSocket (adapters/channel/ws.ts, the `ws` package on loopback), and
// what only a WebSocket has: the upgrade admitted as an HTTP request, ws's own size limit.
import { deepStrictEqual, strictEqual } from 'node:assert';
import type { AddressInfo } from 'node:net';
import { test } from 'uvu';
import { WebSocket } from 'ws';
import { serveWebSocket, webSocketChannel, webSocketServer, type WebSocketServerLike } from '../../adapters/channel/ws.js';
import type { ChannelSession } from '../../adapters/channel/session.js';
import { McpEndpoint } from '../../adapters/http/endpoint.js';
import { AuthError } from '../../lib/auth.js';
import { Hub } from '../../lib/hub.js';
import { Peer, until } from '../helpers/channel.js';
import { channelProtocolSuite } from '../helpers/channelProtocol.js';

async function listening(wss: WebSocketServerLike): Promise<string> {
  await new Promise<void>((resolve) => wss.on('listening', resolve));
  const { port } = (wss as unknown as { address(): AddressInfo }).address();
  return `ws://127.0.0.1:${port}/mcp`;
}

function opened(socket: WebSocket): Promise<void> {
  return new Promise((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
}

channelProtocolSuite(
  'WebSocket (ws)',
  async (endpoint) => {
    const sessions: ChannelSession[] = [];
    const { WebSocketServer } = await import('ws');
    // serveWebSocket on a server of our own, so that the spec holds the session.
    const wss = new WebSocketServer({ port: 0, host: '127.0.0.1', path: '/mcp', maxPayload: endpoint.maxBodyBytes });
    wss.on('connection', (socket, request) => sessions.push(serveWebSocket(endpoint, socket, request)));
    const url = await listening(wss as unknown as WebSocketServerLike);
    const socket = new WebSocket(url);
    await opened(socket);
    await until(() => sessions.length === 1, 'the server session');
    return {
      client: webSocketChannel(socket),
      session: sessions[0]!,
      pause: () => socket.pause(),
      resume: () => socket.resume(),
      hangUp: () => socket.close(),
      dispose: () => new Promise<void>((resolve) => wss.close(() => resolve())),
    };
  },
  { oversized: 'close' },
);

test('webSocketServer: an upgrade the endpoint refuses gets its HTTP status (403 foreign Origin, 401 from authenticate); a message over maxBodyBytes closes with 1009', async () => {
  const hub = new Hub();
  const endpoint = new McpEndpoint({
    hub,
    allowedOrigins: ['http://app.example'],
    maxBodyBytes: 1000,
    authenticate: (request) => {
      if (request.header('authorization') !== 'Bearer ok') throw new AuthError('send the token');
      return { principal: 'sub:me', scopes: new Set() };
    },
  });
  const wss = webSocketServer(endpoint, { port: 0 });
  const url = await listening(wss);
  const refusal = (headers: Record<string, string>) =>
    new Promise<number>((resolve) => {
      const socket = new WebSocket(url, { headers });
      socket.on('unexpected-response', (_request, response) => resolve(response.statusCode ?? 0));
      socket.on('error', () => {});
    });
  strictEqual(await refusal({ origin: 'http://evil.example', authorization: 'Bearer ok' }), 403);
  strictEqual(await refusal({ origin: 'http://app.example' }), 401);
  const socket = new WebSocket(url, { headers: { origin: 'http://app.example', authorization: 'Bearer ok' } });
  await opened(socket);
  const peer = new Peer(webSocketChannel(socket));
  const discover = await peer.request(1, 'server/discover');
  strictEqual(discover.result.resultType, 'complete');
  peer.send({ jsonrpc: '2.0', id: 2, method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true } } });
  await until(() => peer.tagged(2).length === 1, 'the ack');
  strictEqual(endpoint.principals.size, 1);
  const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
  peer.send({ jsonrpc: '2.0', id: 3, method: 'ping', params: { pad: 'x'.repeat(2000) } });
  strictEqual(await closed, 1009);
  await until(() => endpoint.stats.slots === 0, 'the slot released with the connection');
  deepStrictEqual(endpoint.stats.streams, 0);
  await new Promise<void>((resolve) => wss.close(() => resolve()));
  endpoint.close();
  hub.close();
});

test.run();
