// The `mcp-rx-streams/ws` entry: MCP over WebSocket, a thin adapter over the message-channel seam.
// A socket of the `ws` package is typed by its shape, so only `webSocketServer` loads `ws` (an
// optional peer dependency); `webSocketChannel` and `serveWebSocket` work with any socket of that shape.
import type { IncomingMessage, Server } from 'node:http';
import { Observable, Subject } from 'rxjs';
import type { AuthInfo } from '../../lib/auth.js';
import type { EndpointRequest } from '../../lib/context.js';
import { Refusal } from '../../lib/refusal.js';
import { HttpError } from '../http/httpError.js';
import { reportError } from '../../lib/telemetry.js';
import { endpoint as validEndpoint, implementing, options as validOptions, port as validPort, string } from '../../lib/validate.js';
import { channelAuth, highWaterMark } from './check.js';
import { type McpEndpoint, refusalStatus } from '../http/endpoint.js';
import { requestHeader } from '../http/node.js';
import { requirePeer } from '../peer.js';
import type { ChannelInput, MessageChannel } from './channel.js';
import { type ChannelSession, serveChannel } from './session.js';

/** What this adapter uses of a WebSocket: the `WebSocket` of the `ws` package (client or server side) has it. */
export interface WebSocketLike {
  /** 0 while connecting, 1 while open, 2 while closing, 3 once closed (`WebSocket.CONNECTING` … `WebSocket.CLOSED`). */
  readonly readyState: number;
  send(data: string, callback?: (error?: Error) => void): void;
  close(code?: number, reason?: string): void;
  on(event: 'open', listener: () => void): unknown;
  on(event: 'message', listener: (data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) => void): unknown;
  on(event: 'close', listener: () => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  off(event: string, listener: (...args: any[]) => void): unknown;
}

/** Options of {@link webSocketChannel}. */
export interface WebSocketChannelOptions {
  /**
   * Bytes of sent messages the socket may hold unwritten before the channel says it is busy;
   * defaults to 65 536. Counted from each `send` until `ws` calls its callback (the bytes reached
   * the kernel), so a client that stops reading fills it once the kernel's buffers are full. What
   * is sent before the socket opens is held, and counted, from the `send` on.
   */
  readonly highWaterMark?: number;
}

const CONNECTING = 0;
const OPEN = 1;
const CLOSED = 3;
const PATH_RULE = { pattern: /^\//, what: 'a path starting with /' };

/** A WebSocket of the `ws` package (or one like it: `send`, `close`, `on`, `off`). */
function webSocket(label: string, value: unknown): WebSocketLike {
  return implementing<WebSocketLike>(label, value, ['send', 'close', 'on', 'off'], 'a WebSocket (the ws package)');
}

/**
 * A {@link MessageChannel} over a WebSocket: each text message is one JSON-RPC message (a binary
 * one is taken as UTF-8 bytes), each message sent is one text message. Works on either side: a
 * server's socket (see {@link serveWebSocket}) or a client's.
 *
 * A client's socket may be given as `new WebSocket(url)` returns it, still connecting: what is sent
 * before it opens is held, in order, and goes out when it opens, ahead of anything sent later (an
 * official client's `server/discover` is sent at once); it counts toward `highWaterMark` like what
 * `ws` holds. A socket that closes without ever opening (nothing listens, the upgrade is refused
 * with 401 or 403, `close()` was called) ends the channel: `incoming` completes, what was held is
 * dropped, and unless `close()` asked for it an `Error` naming the cause and what was dropped is
 * reported on `channels.error` (`where: 'adapter'`; its `cause` is the socket's error). A sender
 * told to wait for `drain$` is then let go. The channel listens to the socket's `'error'` (`ws`
 * throws one nobody listens to); the socket's own `'error'` and `'unexpected-response'` events are
 * there for more.
 *
 * @example
 * import { Client } from '@modelcontextprotocol/client';
 * import { channelTransport } from 'mcp-rx-streams';
 * import { webSocketChannel } from 'mcp-rx-streams/ws';
 * import { WebSocket } from 'ws';
 * const client = new Client({ name: 'me', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
 * await client.connect(channelTransport(webSocketChannel(new WebSocket('ws://127.0.0.1:3000/mcp'))));
 * @param socket an open or opening WebSocket of the `ws` package, or one of its shape.
 * @param options `highWaterMark` in bytes; defaults to 65 536.
 * @see serveWebSocket
 * @see channelTransport
 */
export function webSocketChannel(socket: WebSocketLike, options?: WebSocketChannelOptions): MessageChannel {
  webSocket('webSocketChannel socket', socket);
  const mark = highWaterMark(validOptions('webSocketChannel options', options, ['highWaterMark']).highWaterMark) ?? 65_536;
  return new WebSocketChannel(socket, mark);
}

class WebSocketChannel implements MessageChannel {
  readonly incoming: Observable<ChannelInput>;
  readonly drain$ = new Subject<void>();
  /** Bytes sent on the channel that have not reached the kernel: held until the socket opens, then handed to `ws` until its callback. */
  #unsent = 0;
  #owesDrain = false;
  #ended = false;
  /** What was sent while the socket was connecting, in order; `undefined` once it opened, or closed without opening. */
  #held: string[] | undefined;
  /** The socket's first error before it opened: what a refused connection or upgrade says. */
  #openError: Error | undefined;
  /** `close()` was called: a socket that then never opens did what was asked. */
  #closing = false;

  constructor(
    private readonly socket: WebSocketLike,
    private readonly highWaterMark: number,
  ) {
    // An error is followed by 'close', which ends the channel; listening keeps ws from throwing it,
    // also before `incoming` is subscribed (a socket refused, or closed while connecting).
    socket.on('error', (error) => {
      if (this.#held !== undefined) this.#openError ??= error;
    });
    if (socket.readyState === CONNECTING) {
      this.#held = [];
      // Registered before `incoming`'s 'close' listener, so the channel knows it never opened when that completes it.
      const onClose = () => {
        socket.off('open', onOpen);
        this.#neverOpened();
      };
      const onOpen = () => {
        socket.off('close', onClose);
        this.#release();
      };
      socket.on('open', onOpen);
      socket.on('close', onClose);
    }
    this.incoming = new Observable<ChannelInput>((subscriber) => {
      // 'close' was emitted already: it will not come again.
      if (socket.readyState === CLOSED) {
        this.#ended = true;
        subscriber.complete();
        return;
      }
      const onMessage = (data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) => {
        const buffer = Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);
        subscriber.next(isBinary ? new Uint8Array(buffer) : buffer.toString('utf8'));
      };
      const onClose = () => subscriber.complete();
      socket.on('message', onMessage);
      socket.on('close', onClose);
      return () => {
        this.#ended = true;
        socket.off('message', onMessage);
        socket.off('close', onClose);
      };
    });
  }

  send(json: string): boolean {
    // An 'open' listener the application registered before the channel's runs first: what is held goes first.
    if (this.#held !== undefined && this.socket.readyState === OPEN) this.#release();
    if (this.#ended || (this.#held === undefined && this.socket.readyState !== OPEN)) return true;
    const size = Buffer.byteLength(json);
    this.#unsent += size;
    if (this.#held === undefined) this.#write(json, size);
    else this.#held.push(json);
    if (this.#unsent < this.highWaterMark) return true;
    this.#owesDrain = true;
    return false;
  }

  close(): void {
    this.#closing = true;
    try {
      // While connecting, ws aborts the handshake (then emits 'error' and 'close'); it does not throw.
      this.socket.close(1000);
    } catch (error) {
      reportError('adapter', error);
    }
  }

  /** Hands `json` (`size` bytes, counted in `#unsent` already) to ws; its callback says the bytes reached the kernel. */
  #write(json: string, size: number): void {
    this.socket.send(json, () => {
      this.#unsent -= size;
      if (this.#owesDrain && this.#unsent < this.highWaterMark) {
        this.#owesDrain = false;
        this.drain$.next();
      }
    });
  }

  /** The socket opened: what was held goes out, in the order it was sent. */
  #release(): void {
    const held = this.#held;
    if (held === undefined) return;
    this.#held = undefined;
    for (const json of held) this.#write(json, Buffer.byteLength(json));
  }

  /** The socket closed without opening: what was held is dropped, and said so unless `close()` asked for it. */
  #neverOpened(): void {
    const dropped = this.#held?.length ?? 0;
    this.#held = undefined;
    this.#unsent = 0;
    if (!this.#closing) {
      const cause = this.#openError;
      const what = dropped === 0 ? 'nothing had been sent on it' : dropped === 1 ? 'the 1 message sent on it was dropped' : `the ${dropped} messages sent on it were dropped`;
      reportError(
        'adapter',
        new Error(`webSocketChannel: the WebSocket closed before it opened (${cause?.message ?? 'no error given'}), and ${what}; check the URL, and that a server there accepts the upgrade`, { cause }),
      );
    }
    // A sender told to wait is let go: the ended channel takes (and drops) whatever it is given.
    if (this.#owesDrain) {
      this.#owesDrain = false;
      this.drain$.next();
    }
  }
}

/**
 * Serves an {@link McpEndpoint} on one WebSocket connection: the endpoint's admission of the
 * upgrade request (one `Host`, `allowedHosts`/`allowedOrigins`, its `authenticate`, `trustProxy`)
 * names the channel's principal, then every message is served as on any channel (see
 * `serveChannel`). A refused upgrade closes the socket with 1008 (policy violation); to answer it
 * with its HTTP status instead, admit it before the upgrade, as {@link webSocketServer} does.
 *
 * @example
 * import { WebSocketServer } from 'ws';
 * const wss = new WebSocketServer({ server, path: '/mcp', maxPayload: endpoint.maxBodyBytes });
 * wss.on('connection', (socket, request) => serveWebSocket(endpoint, socket, request));
 * @param endpoint the endpoint to serve.
 * @param socket the connection's WebSocket.
 * @param request the upgrade request (its headers and address are what the hooks see).
 * @param auth the principal, when the upgrade was admitted already (see {@link webSocketServer}).
 * @returns the channel's session.
 */
export function serveWebSocket(endpoint: McpEndpoint, socket: WebSocketLike, request?: IncomingMessage, auth?: AuthInfo): ChannelSession {
  validEndpoint<McpEndpoint>('serveWebSocket endpoint', endpoint);
  webSocket('serveWebSocket socket', socket);
  if (request !== undefined) implementing('serveWebSocket request', request, ['on'], 'the upgrade request (an IncomingMessage)');
  if (auth !== undefined) channelAuth('serveWebSocket auth', auth);
  const seen = request === undefined ? undefined : upgradeRequest(request);
  const admit = auth ?? (seen === undefined ? undefined : () => endpoint.admit(seen));
  const session = serveChannel(endpoint, webSocketChannel(socket), { ...(admit === undefined ? {} : { auth: admit }), ...(seen === undefined ? {} : { request: seen }) });
  return session;
}

/** The endpoint's view of an upgrade request. */
function upgradeRequest(request: IncomingMessage): EndpointRequest {
  return { method: request.method ?? 'GET', header: (name) => requestHeader(request, name), remoteAddress: request.socket?.remoteAddress, body: undefined };
}

/** What {@link webSocketServer} returns: the `WebSocketServer` of the `ws` package. */
export interface WebSocketServerLike {
  close(callback?: (error?: Error) => void): void;
  on(event: string, listener: (...args: any[]) => void): unknown;
  readonly clients: Set<WebSocketLike>;
}

/** Options of {@link webSocketServer}: where it listens. */
export interface WebSocketServerOptions {
  /** An http(s) server to share (its upgrades on `path`); or give `port`. */
  readonly server?: Server;
  /** A port of its own (0: any free one), when no `server` is given. */
  readonly port?: number;
  /** Interface to bind with `port`; defaults to `127.0.0.1`. */
  readonly host?: string;
  /** The path upgrades are accepted on; defaults to `/mcp`. */
  readonly path?: string;
}

/**
 * A `ws` `WebSocketServer` that serves `endpoint` on each connection, with the endpoint's limits:
 * a message larger than `maxBodyBytes` closes its connection with 1009 (what `ws` does past
 * `maxPayload`, before holding it whole), and an upgrade the endpoint does not admit (two `Host`
 * lines, a foreign `Host`/`Origin`, `authenticate` refusing) is answered with its HTTP status
 * (400, 403, 401) and never upgraded. Needs the `ws` package (an optional peer dependency).
 *
 * @example
 * import http from 'node:http';
 * import { Hub, McpEndpoint, nodeHandler } from 'mcp-rx-streams';
 * import { webSocketServer } from 'mcp-rx-streams/ws';
 * const endpoint = new McpEndpoint({ hub: new Hub() });
 * const server = http.createServer(nodeHandler(endpoint)).listen(3000, '127.0.0.1');
 * webSocketServer(endpoint, { server }); // ws://127.0.0.1:3000/mcp, next to HTTP on /mcp
 * @param endpoint the endpoint to serve.
 * @param options where to listen; see {@link WebSocketServerOptions}.
 * @throws MissingPeerDependencyError without the `ws` package.
 */
export function webSocketServer(endpoint: McpEndpoint, options: WebSocketServerOptions = {}): WebSocketServerLike {
  validEndpoint<McpEndpoint>('webSocketServer endpoint', endpoint);
  const given = validOptions('webSocketServer options', options, ['server', 'port', 'host', 'path']);
  if (given.server !== undefined) implementing('server', given.server, ['on', 'listen'], 'an http.Server');
  if (given.port !== undefined) validPort('port', given.port);
  if (given.host !== undefined) string('host', given.host, { nonEmpty: true });
  if (given.path !== undefined) string('path', given.path, PATH_RULE);
  const { WebSocketServer } = requirePeer<{ WebSocketServer: new (options: object) => WebSocketServerLike }>('ws', 'mcp-rx-streams/ws');
  const admitted = new WeakMap<IncomingMessage, AuthInfo>();
  const where = options.server === undefined ? { port: options.port ?? 0, host: options.host ?? '127.0.0.1' } : { server: options.server };
  const wss = new WebSocketServer({
    ...where,
    path: options.path ?? '/mcp',
    maxPayload: endpoint.maxBodyBytes,
    verifyClient: (info: { req: IncomingMessage }, done: (ok: boolean, status?: number, message?: string, headers?: Record<string, string>) => void) => {
      endpoint.admit(upgradeRequest(info.req)).then(
        (auth) => {
          admitted.set(info.req, auth);
          done(true);
        },
        (error: unknown) => {
          if (error instanceof HttpError) return done(false, error.status, error.rpc.message, error.headers as Record<string, string>);
          if (error instanceof Refusal) {
            const { status, headers } = refusalStatus(error);
            return done(false, status, error.rpc.message, headers as Record<string, string>);
          }
          reportError('adapter', error);
          done(false, 500);
        },
      );
    },
  });
  wss.on('connection', (socket: WebSocketLike, request: IncomingMessage) => {
    serveWebSocket(endpoint, socket, request, admitted.get(request));
    admitted.delete(request);
  });
  return wss;
}
