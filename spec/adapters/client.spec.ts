import { deepStrictEqual, ok, strictEqual } from 'node:assert';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { take, type Observable } from 'rxjs';
import { test } from 'uvu';
import { ListenClientError, listen, openSse } from '../../adapters/client.js';
import type { ParsedSseEvent } from '../../adapters/sseParser.js';
import { InvalidOptionError } from '../../lib/errors.js';
import { within } from '../helpers/wait.js';

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

interface Received {
  readonly method: string | undefined;
  readonly url: string | undefined;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** Runs `fn` against a real loopback server and always closes it (and its sockets) afterwards. */
async function withServer(handler: Handler, fn: (url: string, received: Received[]) => Promise<void>): Promise<void> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      received.push({ method: req.method, url: req.url, headers: req.headers, body });
      handler(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    await fn(`http://127.0.0.1:${port}/mcp`, received);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

interface Outcome<T> {
  readonly values: T[];
  readonly error: unknown;
  readonly completed: boolean;
}

/** Subscribes and resolves once the Observable ends, failing after `ms` of real time. */
function collect<T>(source: Observable<T>, ms = 2000): Promise<Outcome<T>> {
  const values: T[] = [];
  return within(
    new Promise<Outcome<T>>((resolve) => {
      source.subscribe({
        next: (v) => values.push(v),
        error: (error: unknown) => resolve({ values, error, completed: false }),
        complete: () => resolve({ values, error: undefined, completed: true }),
      });
    }),
    ms,
    'the Observable to end',
  );
}


function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform' };

const frame = (message: unknown): string => `event: message\r\ndata: ${JSON.stringify(message)}\r\n\r\n`;

const ack = (id: number | string, notifications: Record<string, unknown>) => ({
  jsonrpc: '2.0',
  method: 'notifications/subscriptions/acknowledged',
  params: { notifications, _meta: { 'io.modelcontextprotocol/subscriptionId': id } },
});
const toolsChanged = (id: number | string) => ({
  jsonrpc: '2.0',
  method: 'notifications/tools/list_changed',
  params: { _meta: { 'io.modelcontextprotocol/subscriptionId': id } },
});
const cancelled = (id: number | string) => ({
  jsonrpc: '2.0',
  method: 'notifications/cancelled',
  params: { requestId: id, reason: 'max_lifetime', _meta: { 'io.modelcontextprotocol/subscriptionId': id } },
});
const complete = (id: number | string) => ({
  jsonrpc: '2.0',
  id,
  result: { resultType: 'complete', _meta: { 'io.modelcontextprotocol/subscriptionId': id } },
});

test('listen sends the request body and headers exactly as specified', async () => {
  await withServer(
    (_req, res) => {
      res.writeHead(200, SSE_HEADERS);
      res.end(frame(ack(7, { toolsListChanged: true })) + frame(complete(7)));
    },
    async (url, received) => {
      const outcome = await collect(
        listen({
          url,
          id: 7,
          notifications: { toolsListChanged: true, resourceSubscriptions: ['file:///a'] },
          token: 'tok-123',
          headers: { 'X-Trace': 'abc', Accept: 'text/plain' },
        }),
      );
      strictEqual(outcome.error, undefined);
      strictEqual(received.length, 1);
      const [req] = received;
      strictEqual(req!.method, 'POST');
      strictEqual(req!.url, '/mcp');
      strictEqual(
        req!.body,
        '{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,' +
          '"resourceSubscriptions":["file:///a"]},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",' +
          '"io.modelcontextprotocol/clientCapabilities":{}}}}',
      );
      strictEqual(req!.headers['content-type'], 'application/json');
      // The caller's Accept cannot break the protocol: the listen needs text/event-stream.
      strictEqual(req!.headers.accept, 'application/json, text/event-stream');
      strictEqual(req!.headers['mcp-protocol-version'], '2026-07-28');
      strictEqual(req!.headers['mcp-method'], 'subscriptions/listen');
      strictEqual(req!.headers.authorization, 'Bearer tok-123');
      strictEqual(req!.headers['x-trace'], 'abc');
    },
  );
});

test('listen defaults the id to 1 and sends no Authorization without a token', async () => {
  await withServer(
    (_req, res) => {
      res.writeHead(200, SSE_HEADERS);
      res.end(frame(ack(1, {})) + frame(complete(1)));
    },
    async (url, received) => {
      const outcome = await collect(listen({ url: new URL(url), notifications: {} }));
      strictEqual(outcome.completed, true);
      strictEqual(JSON.parse(received[0]!.body).id, 1);
      strictEqual(received[0]!.headers.authorization, undefined);
    },
  );
});

test('listen emits the messages in order and completes on the listen result, even if the server keeps the stream open', async () => {
  const closed = deferred();
  const comments: string[] = [];
  await withServer(
    (_req, res) => {
      res.on('close', () => closed.resolve());
      res.writeHead(200, SSE_HEADERS);
      res.write(frame(ack(7, { toolsListChanged: true })));
      res.write(':\r\n');
      // A response to the string id "7" is not the result of listen id 7, and an event other
      // than `message` is not an MCP message.
      const wire =
        frame(toolsChanged(7)) +
        ': ping\r\n' +
        'event: other\r\ndata: {"jsonrpc":"2.0","method":"not/mcp"}\r\n\r\n' +
        frame(complete('7')) + frame(cancelled(7)) + frame(complete(7));
      // Cut the rest in small pieces, across lines and frames.
      let at = 0;
      const next = (): void => {
        if (at >= wire.length) return; // and never end the response
        res.write(wire.slice(at, at + 13));
        at += 13;
        setImmediate(next);
      };
      next();
    },
    async (url) => {
      const outcome = await collect(listen({ url, id: 7, notifications: { toolsListChanged: true }, onComment: (c) => comments.push(c) }));
      strictEqual(outcome.error, undefined);
      strictEqual(outcome.completed, true);
      deepStrictEqual(outcome.values, [ack(7, { toolsListChanged: true }), toolsChanged(7), complete('7'), cancelled(7), complete(7)]);
      deepStrictEqual(comments, ['', ' ping']);
      // Completing released the connection: the server's response was closed.
      await within(closed.promise, 2000, 'the server response to close');
    },
  );
});

test('listen completes on a JSON-RPC error response to the listen id, after emitting it', async () => {
  const error = { jsonrpc: '2.0', id: 'L', error: { code: -32603, message: 'boom' } };
  await withServer(
    (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
      res.write(frame(ack('L', {})) + frame(error));
    },
    async (url) => {
      const outcome = await collect(listen({ url, id: 'L', notifications: {} }));
      strictEqual(outcome.completed, true);
      deepStrictEqual(outcome.values, [ack('L', {}), error]);
    },
  );
});

test('listen completes without error when the server ends the stream without the result', async () => {
  await withServer(
    (_req, res) => {
      res.writeHead(200, SSE_HEADERS);
      res.end(frame(ack(1, {})) + frame(toolsChanged(1)) + 'data: {"unterminated":');
    },
    async (url) => {
      const outcome = await collect(listen({ url, notifications: { toolsListChanged: true } }));
      strictEqual(outcome.error, undefined);
      strictEqual(outcome.completed, true);
      deepStrictEqual(outcome.values, [ack(1, {}), toolsChanged(1)]);
    },
  );
});

test('listen errors with ListenClientError on a 406 with a JSON-RPC error body', async () => {
  const body = { jsonrpc: '2.0', id: 1, error: { code: -32600, message: 'Accept must include text/event-stream' } };
  await withServer(
    (_req, res) => {
      res.writeHead(406, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    },
    async (url) => {
      const outcome = await collect(listen({ url, notifications: {} }));
      strictEqual(outcome.completed, false);
      deepStrictEqual(outcome.values, []);
      const err = outcome.error;
      ok(err instanceof ListenClientError, `expected a ListenClientError, got ${String(err)}`);
      strictEqual(err.code, 'ERR_MCP_RX_LISTEN_CLIENT');
      strictEqual(err.name, 'ListenClientError');
      deepStrictEqual(err.info, { status: 406, body });
      ok(err.message.includes('406') && err.message.includes('-32600'), err.message);
    },
  );
});

test('listen errors with ListenClientError on a plain JSON -32602 answer (200, not a stream)', async () => {
  const body = { jsonrpc: '2.0', id: 1, error: { code: -32602, message: 'notifications.toolsListChanged must be a boolean' } };
  await withServer(
    (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    },
    async (url) => {
      const { error } = await collect(listen({ url, notifications: { toolsListChanged: 'yes' } }));
      ok(error instanceof ListenClientError);
      deepStrictEqual(error.info, { status: 200, body });
    },
  );
});

test('listen keeps a non-JSON refusal body as text', async () => {
  await withServer(
    (_req, res) => {
      res.writeHead(503, { 'content-type': 'text/plain' });
      res.end('busy');
    },
    async (url) => {
      const { error } = await collect(listen({ url, notifications: {} }));
      ok(error instanceof ListenClientError);
      deepStrictEqual(error.info, { status: 503, body: 'busy' });
    },
  );
});

test('listen errors when a message event does not carry a JSON object', async () => {
  await withServer(
    (_req, res) => {
      res.writeHead(200, SSE_HEADERS);
      res.write(frame(ack(1, {})) + 'event: message\ndata: not json\n\n');
    },
    async (url) => {
      const outcome = await collect(listen({ url, notifications: {} }));
      deepStrictEqual(outcome.values, [ack(1, {})]);
      ok(outcome.error instanceof ListenClientError);
      deepStrictEqual(outcome.error.info, { status: 200, body: 'not json' });
    },
  );
});

test('unsubscribing mid-stream closes the connection on the server side', async () => {
  const closed = deferred();
  const firstMessage = deferred();
  await withServer(
    (_req, res) => {
      res.on('close', () => closed.resolve());
      res.writeHead(200, SSE_HEADERS);
      res.write(frame(ack(1, {})));
    },
    async (url) => {
      const values: unknown[] = [];
      const subscription = listen({ url, notifications: {} }).subscribe({
        next: (v) => {
          values.push(v);
          firstMessage.resolve();
        },
      });
      await within(firstMessage.promise, 2000, 'the acknowledgment');
      subscription.unsubscribe();
      await within(closed.promise, 2000, 'the server response to close');
      deepStrictEqual(values, [ack(1, {})]);
    },
  );
});

test('unsubscribing from inside next (take(1)) closes the connection', async () => {
  const closed = deferred();
  await withServer(
    (_req, res) => {
      res.on('close', () => closed.resolve());
      res.writeHead(200, SSE_HEADERS);
      // Two messages in one chunk: the second must not reach anyone.
      res.write(frame(ack(1, {})) + frame(toolsChanged(1)));
    },
    async (url) => {
      const outcome = await collect(listen({ url, notifications: {} }).pipe(take(1)));
      deepStrictEqual(outcome.values, [ack(1, {})]);
      await within(closed.promise, 2000, 'the server response to close');
    },
  );
});

test('unsubscribing before the response arrives aborts the request', async () => {
  const closed = deferred();
  const arrived = deferred();
  await withServer(
    (_req, res) => {
      res.on('close', () => closed.resolve());
      arrived.resolve(); // and never answer
    },
    async (url) => {
      let emitted = false;
      const subscription = listen({ url, notifications: {} }).subscribe({
        next: () => (emitted = true),
        error: () => (emitted = true),
        complete: () => (emitted = true),
      });
      await within(arrived.promise, 2000, 'the request');
      subscription.unsubscribe();
      await within(closed.promise, 2000, 'the server response to close');
      strictEqual(emitted, false);
    },
  );
});

test('a connection reset mid-stream is an error, not a completion', async () => {
  await withServer(
    (_req, res) => {
      res.writeHead(200, SSE_HEADERS);
      res.write(frame(ack(1, {})), () => setImmediate(() => res.socket?.destroy()));
    },
    async (url) => {
      const outcome = await collect(listen({ url, notifications: {} }));
      deepStrictEqual(outcome.values, [ack(1, {})]);
      strictEqual(outcome.completed, false);
      ok(outcome.error instanceof Error);
      ok(!(outcome.error instanceof ListenClientError));
    },
  );
});

test('a refused connection is an error', async () => {
  let url = '';
  await withServer(
    (_req, res) => res.end(),
    async (u) => {
      url = u;
    },
  );
  const outcome = await collect(listen({ url, notifications: {} }));
  strictEqual(outcome.completed, false);
  ok(outcome.error instanceof Error);
  strictEqual((outcome.error as NodeJS.ErrnoException).code, 'ECONNREFUSED');
});

test('listen rejects a bad id or filter at call time', () => {
  let thrown: unknown;
  try {
    listen({ url: 'http://127.0.0.1:1/mcp', id: Number.NaN, notifications: {} });
  } catch (err) {
    thrown = err;
  }
  ok(thrown instanceof InvalidOptionError);
  strictEqual(thrown.info.option, 'id');
  thrown = undefined;
  try {
    listen({ url: 'http://127.0.0.1:1/mcp', notifications: null as unknown as Record<string, unknown> });
  } catch (err) {
    thrown = err;
  }
  ok(thrown instanceof InvalidOptionError);
  strictEqual(thrown.info.option, 'notifications');
});

test('openSse sends the legacy GET headers and emits events with their ids', async () => {
  await withServer(
    (_req, res) => {
      res.writeHead(200, SSE_HEADERS);
      res.write('id: 4\nevent: message\ndata: {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"a"}}\n\n');
      res.end(': bye\nid: 5\ndata: {"n":5}\n\n');
    },
    async (url, received) => {
      const comments: string[] = [];
      const outcome = await collect<ParsedSseEvent>(
        openSse(url, { sessionId: 'sess-1', lastEventId: '3', token: 't', onComment: (c) => comments.push(c) }),
      );
      strictEqual(outcome.completed, true);
      deepStrictEqual(outcome.values, [
        {
          event: 'message',
          data: '{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"a"}}',
          id: '4',
        },
        { event: 'message', data: '{"n":5}', id: '5' },
      ]);
      deepStrictEqual(comments, [' bye']);
      const [req] = received;
      strictEqual(req!.method, 'GET');
      strictEqual(req!.headers.accept, 'text/event-stream');
      strictEqual(req!.headers['mcp-session-id'], 'sess-1');
      strictEqual(req!.headers['last-event-id'], '3');
      strictEqual(req!.headers['mcp-protocol-version'], '2025-11-25');
      strictEqual(req!.headers.authorization, 'Bearer t');
    },
  );
});

test('openSse omits Last-Event-ID when none is given and errors on a 404', async () => {
  const body = { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Session not found' } };
  await withServer(
    (_req, res) => {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    },
    async (url, received) => {
      const { error } = await collect(openSse(url, { sessionId: 'gone', protocolVersion: '2025-06-18' }));
      ok(error instanceof ListenClientError);
      deepStrictEqual(error.info, { status: 404, body });
      strictEqual(received[0]!.headers['last-event-id'], undefined);
      strictEqual(received[0]!.headers['mcp-protocol-version'], '2025-06-18');
    },
  );
});

test('unsubscribing from openSse closes the connection on the server side', async () => {
  const closed = deferred();
  const first = deferred();
  await withServer(
    (_req, res) => {
      res.on('close', () => closed.resolve());
      res.writeHead(200, SSE_HEADERS);
      res.write('id: 1\ndata: x\n\n');
    },
    async (url) => {
      const subscription = openSse(url, { sessionId: 's' }).subscribe(() => first.resolve());
      await within(first.promise, 2000, 'the first event');
      subscription.unsubscribe();
      await within(closed.promise, 2000, 'the server response to close');
    },
  );
});

test.run();
