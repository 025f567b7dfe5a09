import http from 'node:http';
import net from 'node:net';
import { ArrivingText } from './http.js';

/** Headers of a legacy POST before a session exists (what the official 1.x client sends with `initialize`). */
export const INIT_HEADERS = Object.freeze({
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
});

/** A whole HTTP response, its body parsed as JSON when it is JSON. */
export interface Reply {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
  readonly json: any;
}

/** Any request (GET, POST, DELETE…); resolves with the whole response. `options` adds to the request's (`localAddress`). */
export function send(url: string, method: string, headers: Record<string, string>, body?: string, options: http.RequestOptions = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { ...options, method, headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        let json: unknown;
        try {
          json = text === '' ? undefined : JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode!, headers: res.headers, body: text, json });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The JSON text of a JSON-RPC request (`params` left out when undefined). */
export function rpcBody(id: number | string, method: string, params?: unknown): string {
  return JSON.stringify(params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params });
}

/** POSTs `initialize`; `sessionId` is the `Mcp-Session-Id` response header. */
export async function initialize(
  url: string,
  options: { protocolVersion?: string; headers?: Record<string, string>; id?: number } = {},
): Promise<Reply & { sessionId: string }> {
  const params = { protocolVersion: options.protocolVersion ?? '2025-11-25', capabilities: {}, clientInfo: { name: 'legacy-spec', version: '1.0.0' } };
  const reply = await send(url, 'POST', { ...INIT_HEADERS, ...options.headers }, rpcBody(options.id ?? 1, 'initialize', params));
  return { ...reply, sessionId: reply.headers['mcp-session-id'] as string };
}

/** The headers of a request inside session `sessionId`. */
export function sessionHeaders(sessionId: string, extra: Record<string, string> = {}): Record<string, string> {
  return { ...INIT_HEADERS, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25', ...extra };
}

/** A JSON-RPC request inside a session. */
export function call(url: string, sessionId: string, id: number | string, method: string, params?: unknown, extra?: Record<string, string>): Promise<Reply> {
  return send(url, 'POST', sessionHeaders(sessionId, extra), rpcBody(id, method, params));
}

/** A `notifications/resources/updated` message, as the GET stream carries it. */
export const updatedMessage = (uri: string) => ({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri } });

/** A list-changed notification (`tools`, `prompts` or `resources`). */
export const listChangedMessage = (kind: 'tools' | 'prompts' | 'resources') => ({ jsonrpc: '2.0', method: `notifications/${kind}/list_changed` });

/** The exact bytes of one GET-stream frame (DESIGN L7). */
export const frameText = (id: number, message: unknown): string => `event: message\nid: ${id}\ndata: ${JSON.stringify(message)}\n\n`;

/** The exact bytes of the priming event every GET stream opens with (DESIGN L7): the id its client can resume from. */
export const primingText = (id: number | string, retry = 1000): string => `id: ${id}\nretry: ${retry}\ndata:\n\n`;

/** The id the priming event of a GET with `lastEventId` carries when the session's newest id is `newest`. */
export function primingId(lastEventId: string | undefined, newest: number): string {
  if (lastEventId === undefined) return String(newest);
  if (!/^[0-9]+$/.test(lastEventId)) return '0';
  return BigInt(lastEventId) <= BigInt(newest) ? lastEventId : String(newest);
}

// A log without `newestId` primes with `retry:` alone.
const PRIMING = /^(?:id: ([^\n]*)\n)?retry: (\d+)\ndata:\n\n/;

/** The exact bytes of frames `from..to` that all carry `message`. */
export function framesText(from: number, to: number, message: (id: number) => unknown): string {
  let text = '';
  for (let id = from; id <= to; id++) text += frameText(id, message(id));
  return text;
}

const FRAME = /event: message\nid: (\d+)\ndata: ([^\n]*)\n\n/g;

/** A legacy `GET /mcp` stream read as text, exactly as it arrives. */
export class GetStream extends ArrivingText {
  /** True when the response ended cleanly (`res` 'end': the server finished it), not by a cut. */
  endedCleanly = false;
  res: http.IncomingMessage | undefined;
  /** The response head: resolves when the server sends the status line and headers. */
  readonly response: Promise<http.IncomingMessage>;
  private constructor(readonly req: http.ClientRequest) {
    super();
    this.response = new Promise((resolve, reject) => {
      req.on('error', (error) => {
        this.ended = true;
        this.wake();
        reject(error);
      });
      req.on('response', (res) => {
        this.res = res;
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          this.text += chunk;
          this.wake();
        });
        res.on('end', () => {
          this.endedCleanly = true;
          this.ended = true;
          this.wake();
        });
        res.on('error', () => {});
        res.on('close', () => {
          this.ended = true;
          this.wake();
        });
        resolve(res);
      });
    });
    this.response.catch(() => {});
  }

  /**
   * Sends `GET /mcp` for `sessionId` and returns at once: the server writes the response head
   * with its first frame, so callers wait for the server to attach the stream (or for a frame).
   */
  static open(
    url: string,
    sessionId: string | undefined,
    options: { lastEventId?: string; accept?: string; headers?: Record<string, string>; protocolVersion?: string | null } = {},
  ): GetStream {
    // `protocolVersion: null` sends no MCP-Protocol-Version (a 2025-03-26 client has none).
    const version = options.protocolVersion === undefined ? '2025-11-25' : options.protocolVersion;
    const headers: Record<string, string> = { accept: options.accept ?? 'text/event-stream', ...(version === null ? {} : { 'mcp-protocol-version': version }), ...options.headers };
    if (sessionId !== undefined) headers['mcp-session-id'] = sessionId;
    if (options.lastEventId !== undefined) headers['last-event-id'] = options.lastEventId;
    const req = http.request(url, { method: 'GET', headers, agent: false });
    req.end();
    return new GetStream(req);
  }

  /** The frames received so far: their ids and parsed `data:`. */
  get frames(): { id: number; message: any }[] {
    return [...this.text.matchAll(FRAME)].map((m) => ({ id: Number(m[1]), message: JSON.parse(m[2]!) }));
  }

  /** The ids of the frames received so far. */
  get ids(): number[] {
    return this.frames.map((frame) => frame.id);
  }

  /** The id of the newest frame received, or undefined. */
  get lastId(): number | undefined {
    const ids = this.ids;
    return ids[ids.length - 1];
  }

  /** The id of the priming event the stream opened with (`undefined` until it arrived). */
  get primedWith(): string | undefined {
    return PRIMING.exec(this.text)?.[1];
  }

  /** The text after the priming event, without keep-alive comments. */
  get withoutKeepAlives(): string {
    return this.text.replace(PRIMING, '').replaceAll(':\r\n', '');
  }

  /** Waits until a frame with id `id` (or a later one) has arrived. */
  untilId(id: number, ms = 3000): Promise<void> {
    return this.until((s) => (s.lastId ?? 0) >= id, ms, `frame id ${id}`);
  }

  /** Waits until the response ends (cleanly or not). */
  untilEnded(ms = 3000): Promise<void> {
    return this.until((s) => s.ended, ms, 'the end of the stream').catch((error: unknown) => {
      if (this.ended) return;
      throw error;
    });
  }

  /** Cuts the connection abruptly. */
  destroy(): void {
    this.req.destroy();
    this.res?.destroy();
  }

}

/**
 * A `GET /mcp` over a raw socket that can stop reading (`socket.pause()`), for slow-consumer
 * tests: node's http client would keep reading into memory.
 */
export function rawGet(url: string, sessionId: string): net.Socket {
  const socket = net.connect(Number(new URL(url).port), '127.0.0.1');
  socket.write(`GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nMcp-Session-Id: ${sessionId}\r\nMcp-Protocol-Version: 2025-11-25\r\n\r\n`);
  return socket;
}

/** A promise resolved or rejected by hand. */
export interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

export function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Resolves after `ms` milliseconds of real time. */
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Resolves in the next event-loop turn. Identical notifications published in one turn are one
 * frame (a storm collapses); a spec that wants each of them as a frame of its own publishes one
 * per turn.
 */
export const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
