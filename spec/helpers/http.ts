import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpEndpoint } from '../../adapters/http/endpoint.js';
import type { McpEndpointOptions } from '../../adapters/http/options.js';
import { Hub } from '../../lib/hub.js';
import { nodeHandler } from '../../adapters/http/node.js';

/** A real http.Server on 127.0.0.1:0 serving an McpEndpoint. */
export interface TestServer {
  readonly url: string;
  readonly hub: Hub;
  readonly endpoint: McpEndpoint;
  readonly server: http.Server;
  close(): Promise<void>;
}

export async function startEndpoint(options: Partial<McpEndpointOptions> = {}): Promise<TestServer> {
  const hub = options.hub ?? new Hub();
  const endpoint = new McpEndpoint({ capabilities: { tools: true, prompts: true, resources: true }, ...options, hub });
  const server = http.createServer(nodeHandler(endpoint));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    hub,
    endpoint,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        endpoint.close();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Runs `body` against a fresh {@link startEndpoint} server with `options`; always closes it. */
export async function withEndpoint(options: Partial<McpEndpointOptions>, body: (server: TestServer) => Promise<void>): Promise<void> {
  const server = await startEndpoint(options);
  try {
    await body(server);
  } finally {
    await server.close();
  }
}

export const LISTEN_HEADERS = Object.freeze({
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2026-07-28',
});

export function listenBody(id: unknown, notifications: unknown): string {
  return JSON.stringify({ jsonrpc: '2.0', id, method: 'subscriptions/listen', params: { notifications } });
}

/** A plain request; resolves with the whole response. */
export function post(url: string, body: string, headers: Record<string, string> = { ...LISTEN_HEADERS }): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Text that arrives over time (a response body), with a way to wait for what it should contain. */
export abstract class ArrivingText {
  text = '';
  /** True once the response ended or the connection closed. */
  ended = false;
  private waiters: (() => void)[] = [];

  /** Waits until `predicate` holds (checked on every chunk), failing after `ms`. */
  async until(predicate: (self: this) => boolean, ms = 3000, what = 'condition'): Promise<void> {
    const deadline = Date.now() + ms;
    while (!predicate(this)) {
      if (this.ended && !predicate(this)) throw new Error(`stream ended before ${what}; got:\n${this.text}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}; got:\n${this.text}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** Re-checks every pending `until` (call on each chunk and at the end). */
  protected wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
}

/** An open SSE response read as text, exactly as it arrives. */
export class SseConnection extends ArrivingText {
  readonly done: Promise<void>;

  private constructor(
    readonly req: http.ClientRequest,
    readonly res: http.IncomingMessage,
  ) {
    super();
    res.setEncoding('utf8');
    this.done = new Promise((resolve) => {
      res.on('data', (chunk: string) => {
        this.text += chunk;
        this.wake();
      });
      res.on('end', () => {
        this.ended = true;
        this.wake();
        resolve();
      });
      res.on('error', () => resolve());
      res.on('close', () => {
        this.ended = true;
        this.wake();
        resolve();
      });
    });
  }

  /** POSTs `body`; `options` adds to the request's (`localAddress`: the loopback address it comes from). */
  static open(url: string, body: string, headers: Record<string, string> = { ...LISTEN_HEADERS }, options: http.RequestOptions = {}): Promise<SseConnection> {
    return new Promise((resolve, reject) => {
      const req = http.request(url, { ...options, method: 'POST', headers, agent: false }, (res) => resolve(new SseConnection(req, res)));
      req.on('error', reject);
      req.end(body);
    });
  }

  get status(): number {
    return this.res.statusCode!;
  }

  /** The `data:` payloads received so far, parsed. */
  get messages(): Record<string, any>[] {
    return [...this.text.matchAll(/^data: (.*)$/gm)].map((m) => JSON.parse(m[1]!));
  }


  /** Cuts the connection abruptly. */
  destroy(): void {
    this.req.destroy();
    this.res.destroy();
  }

}

/** Polls `predicate` every 5 ms until it holds, failing after `ms`. */
export async function eventually(predicate: () => boolean, ms = 3000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
