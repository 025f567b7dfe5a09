import { strict as assert } from 'node:assert';
import { test } from 'uvu';
import { MissingClientAddressError, webHandler, type WebConnectionInfo, type WebHandlerOptions } from '../../adapters/http/web.js';
import { McpEndpoint } from '../../adapters/http/endpoint.js';
import type { McpEndpointOptions } from '../../adapters/http/options.js';
import { McpRxError } from '../../lib/errors.js';
import { Hub } from '../../lib/hub.js';
import { channels, type DropEvent, type StopEvent } from '../../lib/telemetry.js';
import { eventually, LISTEN_HEADERS, listenBody } from '../helpers/http.js';

// The Fetch-API adapter is exercised in process: real `Request` objects in, the `Response` body
// read through its own reader, byte for byte. No server, no socket: the body's queue is the sink.

const URL = 'http://mcp.test/mcp';
const SUB_ID = 'io.modelcontextprotocol/subscriptionId';

const frame = (json: string) => `event: message\ndata: ${json}\n\n`;
const ackFrame = (id: unknown, notifications: unknown) =>
  frame(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications, _meta: { [SUB_ID]: id } } }));
const updatedFrame = (id: unknown, uri: string) =>
  frame(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri, _meta: { [SUB_ID]: id } } }));
const cancelledFrame = (id: unknown, reason: string) =>
  frame(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason, _meta: { [SUB_ID]: id } } }));
const resultFrame = (id: unknown) => frame(JSON.stringify({ jsonrpc: '2.0', id, result: { resultType: 'complete', _meta: { [SUB_ID]: id } } }));

function post(body: string, headers: Record<string, string> = { ...LISTEN_HEADERS }, init: RequestInit = {}): Request {
  return new Request(URL, { method: 'POST', headers, body, ...init });
}

/** A response body read through its reader, with at most one read in flight; every wait is bounded. */
class BodyReader {
  bytes = Buffer.alloc(0);
  done = false;
  error: unknown;
  readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  #pending: Promise<void> | undefined;

  constructor(readonly response: Response) {
    assert.ok(response.body !== null, 'the response has a body');
    this.reader = response.body.getReader();
  }

  /** The bytes so far as text, one character per byte: equal strings mean equal bytes. */
  get text(): string {
    return this.bytes.toString('latin1');
  }

  /** The `data:` payloads received so far, parsed. */
  get messages(): Record<string, any>[] {
    return [...this.text.matchAll(/^data: (.*)$/gm)].map((m) => JSON.parse(m[1]!));
  }

  /** Reads until `predicate` holds, failing after `ms`. */
  async until(predicate: (b: BodyReader) => boolean, ms = 3000, what = 'condition'): Promise<void> {
    const deadline = Date.now() + ms;
    while (!predicate(this)) {
      if (this.done) throw new Error(`body ended before ${what}; got:\n${this.text}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}; got:\n${this.text}`);
      await this.#readFor(left);
    }
  }

  /** Reads to the end of the body, failing after `ms`. */
  end(ms = 3000): Promise<void> {
    return this.until((b) => b.done, ms, 'the end of the body');
  }

  /** Reads for `ms` and fails if anything arrives or the body ends. */
  async quiet(ms: number): Promise<void> {
    const before = this.bytes.length;
    await this.#readFor(ms);
    assert.equal(this.bytes.length, before, `nothing more expected; got:\n${this.text.slice(before)}`);
    assert.equal(this.done, false, 'the body is still open');
  }

  cancel(): Promise<void> {
    return this.reader.cancel();
  }

  #readFor(ms: number): Promise<void> {
    this.#pending ??= this.reader.read().then(
      ({ done, value }) => {
        this.#pending = undefined;
        if (done) this.done = true;
        else this.bytes = Buffer.concat([this.bytes, value]);
      },
      (error: unknown) => {
        this.#pending = undefined;
        this.error = error;
        this.done = true;
      },
    );
    let timer: NodeJS.Timeout | undefined;
    return Promise.race([this.#pending, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]).finally(() => clearTimeout(timer));
  }
}

interface Harness {
  readonly hub: Hub;
  readonly endpoint: McpEndpoint;
  readonly handle: (request: Request, info?: WebConnectionInfo) => Promise<Response>;
  /** Sends a listen and returns its body's reader (cancelled when the test ends). */
  readonly listen: (request: Request, info?: WebConnectionInfo) => Promise<BodyReader>;
}

async function withEndpoint(
  options: Partial<McpEndpointOptions>,
  body: (h: Harness) => Promise<void>,
  handlerOptions: WebHandlerOptions = {},
): Promise<void> {
  const hub = new Hub();
  const endpoint = new McpEndpoint({ capabilities: { tools: true, prompts: true, resources: true }, ...options, hub });
  const served = webHandler(endpoint, handlerOptions);
  // One client address unless a test gives its own (without one, an anonymous endpoint refuses).
  const handle = (request: Request, info: WebConnectionInfo = { remoteAddress: '127.0.0.1' }) => served(request, info);
  const readers: BodyReader[] = [];
  const listen = async (request: Request, info?: WebConnectionInfo) => {
    const response = await handle(request, info);
    assert.equal(response.status, 200, 'a listen opens a stream');
    const reader = new BodyReader(response);
    readers.push(reader);
    return reader;
  };
  try {
    await body({ hub, endpoint, handle, listen });
  } finally {
    // Closing frames first, then the readers: nothing stays subscribed, no timer keeps the process up.
    endpoint.close();
    for (const reader of readers) await reader.cancel().catch(() => {});
  }
}

/** Every header as `[name, value]`, sorted by name (the DOM lib here has no iterable Headers). */
function headerList(headers: Headers): [string, string][] {
  const list: [string, string][] = [];
  headers.forEach((value, name) => list.push([name, value]));
  return list.sort(([a], [b]) => a.localeCompare(b));
}

async function json(response: Response): Promise<unknown> {
  assert.equal(response.headers.get('content-type'), 'application/json');
  return JSON.parse(await response.text());
}

// 1. Refusals: plain JSON answers, no stream.

test('M1: a listen without Accept: text/event-stream gets 406 and -32600, and no stream', async () => {
  await withEndpoint({}, async ({ handle, endpoint }) => {
    const response = await handle(post(listenBody(3, { toolsListChanged: true }), { 'content-type': 'application/json', accept: 'application/json' }));
    assert.equal(response.status, 406);
    assert.deepEqual(await json(response), {
      jsonrpc: '2.0',
      id: 3,
      error: { code: -32600, message: 'subscriptions/listen requires Accept: text/event-stream' },
    });
    assert.deepEqual(endpoint.stats, { streams: 0, slots: 0, principals: 0, sessions: 0, sessionSubscriptions: 0 });
  });
});

test('M3: a bad filter gets a plain JSON-RPC -32602 answer naming the field', async () => {
  await withEndpoint({}, async ({ handle, endpoint, hub }) => {
    const response = await handle(post(listenBody('q', { toolsListChanged: 'yes' })));
    assert.equal(response.status, 200);
    assert.deepEqual(await json(response), {
      jsonrpc: '2.0',
      id: 'q',
      error: { code: -32602, message: 'params.notifications.toolsListChanged must be a boolean' },
    });
    assert.deepEqual(endpoint.stats, { streams: 0, slots: 0, principals: 0, sessions: 0, sessionSubscriptions: 0 });
    assert.deepEqual(hub.size, { topics: 0, subscriptions: 0 });
  });
});

test('413 for a body over maxBodyBytes, sent whole or streamed; the streamed upload is cancelled', async () => {
  await withEndpoint({ maxBodyBytes: 1024 }, async ({ handle, endpoint }) => {
    const expected = { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'request body exceeds 1024 bytes' } };
    const whole = await handle(post(listenBody(1, { resourceSubscriptions: ['x'.repeat(2000)] })));
    assert.equal(whole.status, 413);
    assert.deepEqual(await json(whole), expected);

    // An endless upload: only the limit can end it, and reading must stop there.
    let pulled = 0;
    let cancelled = false;
    const upload = new ReadableStream<Uint8Array>({
      pull: (controller) => {
        pulled++;
        controller.enqueue(new Uint8Array(256).fill(0x20));
      },
      cancel: () => {
        cancelled = true;
      },
    });
    // `duplex` is required for a stream body but missing from the DOM lib's RequestInit.
    const init: RequestInit & { duplex: 'half' } = { method: 'POST', headers: LISTEN_HEADERS, body: upload, duplex: 'half' };
    const streamed = await handle(new Request(URL, init));
    assert.equal(streamed.status, 413);
    assert.deepEqual(await json(streamed), expected);
    await eventually(() => cancelled, 3000, 'the upload to be cancelled');
    assert.ok(pulled <= 8, `read ${pulled} chunks of 256 bytes for a 1024-byte limit`);
    assert.deepEqual(endpoint.stats, { streams: 0, slots: 0, principals: 0, sessions: 0, sessionSubscriptions: 0 });
  });
});

test('-32700 for malformed JSON; GET without a session 400 (legacy served) or 405 with Allow: POST (legacy: false)', async () => {
  await withEndpoint({}, async ({ handle }) => {
    const malformed = await handle(post('{"jsonrpc":'));
    assert.equal(malformed.status, 400);
    assert.deepEqual(await json(malformed), { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse error: the body is not valid JSON' } });
    const get = await handle(new Request(URL, { method: 'GET', headers: { accept: 'text/event-stream' } }));
    assert.equal(get.status, 400);
    assert.deepEqual(await json(get), { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Mcp-Session-Id header is required (send initialize first)' } });
  });
  await withEndpoint({ legacy: false }, async ({ handle }) => {
    const get = await handle(new Request(URL, { method: 'GET', headers: { accept: 'text/event-stream' } }));
    assert.equal(get.status, 405);
    assert.equal(get.headers.get('allow'), 'POST');
    assert.deepEqual(await json(get), { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'method GET is not allowed; use POST' } });
  });
});

// 2. A listen, byte for byte.

test('M5: status 200, exactly the three SSE headers, the acknowledgment bytes, then a resources/updated', async () => {
  await withEndpoint({}, async ({ listen, hub }) => {
    const body = await listen(post(listenBody(7, { resourceSubscriptions: ['file:///a'], promptsListChanged: false })));
    assert.deepEqual(headerList(body.response.headers), [
      ['cache-control', 'no-cache, no-transform'],
      ['content-type', 'text/event-stream'],
      ['x-accel-buffering', 'no'],
    ]);
    const ack = ackFrame(7, { resourceSubscriptions: ['file:///a'] });
    await body.until((b) => b.bytes.length >= ack.length, 3000, 'the ack');
    assert.equal(body.text, ack);
    hub.notifyResourceUpdated('file:///other');
    hub.notifyResourceUpdated('file:///a');
    const expected = ack + updatedFrame(7, 'file:///a');
    await body.until((b) => b.bytes.length >= expected.length, 3000, 'the notification');
    assert.equal(body.text, expected);
  });
});

test('M5: keep-alive comments are the bytes :\\r\\n', async () => {
  await withEndpoint({ keepAliveInterval: 20 }, async ({ listen }) => {
    const body = await listen(post(listenBody('k', { toolsListChanged: true })));
    const ack = ackFrame('k', { toolsListChanged: true });
    await body.until((b) => b.bytes.length >= ack.length + 6, 3000, 'two keep-alives');
    assert.ok(body.text.startsWith(ack), body.text);
    assert.match(body.text.slice(ack.length), /^(:\r\n)+$/);
  });
});

test('M7: a server-side close ends the body with cancelled, then the result, then done, byte for byte', async () => {
  const stops: StopEvent[] = [];
  const onStop = (e: unknown) => stops.push(e as StopEvent);
  channels.stop.subscribe(onStop);
  try {
    await withEndpoint({ maxStreamLifetime: 200 }, async ({ listen, hub, endpoint }) => {
      const body = await listen(post(listenBody(9, { resourceSubscriptions: ['file:///a'] })));
      const ack = ackFrame(9, { resourceSubscriptions: ['file:///a'] });
      await body.until((b) => b.bytes.length >= ack.length, 3000, 'the ack');
      hub.notifyResourceUpdated('file:///a');
      await body.end();
      assert.equal(body.error, undefined);
      assert.equal(body.text, ack + updatedFrame(9, 'file:///a') + cancelledFrame(9, 'max_lifetime') + resultFrame(9));
      assert.deepEqual(endpoint.stats, { streams: 0, slots: 0, principals: 0, sessions: 0, sessionSubscriptions: 0 });
      assert.deepEqual(hub.size, { topics: 0, subscriptions: 0 });
    });
    assert.deepEqual(stops.map((s) => s.reason), ['max_lifetime']);
  } finally {
    channels.stop.unsubscribe(onStop);
  }
});

// 3. Backpressure: desiredSize says busy, pull says ready.

test('M10: a consumer that does not read costs at most maxStreamQueue notifications; reading delivers them in order', async () => {
  const drops: DropEvent[] = [];
  const onDrop = (e: unknown) => drops.push(e as DropEvent);
  channels.drop.subscribe(onDrop);
  try {
    const highWaterMark = 1024;
    const maxStreamQueue = 20;
    await withEndpoint({ maxStreamQueue }, async ({ listen, hub, endpoint }) => {
      const uris = Array.from({ length: 100 }, (_, i) => `file:///r/${String(i).padStart(3, '0')}`);
      const body = await listen(post(listenBody('bp', { resourceSubscriptions: uris })));
      const ack = ackFrame('bp', { resourceSubscriptions: uris });
      await body.until((b) => b.bytes.length >= ack.length, 3000, 'the ack');
      assert.equal(body.text, ack);

      const rounds = 5;
      for (let round = 0; round < rounds; round++) for (const uri of uris) hub.notifyResourceUpdated(uri);

      // Every frame has the same length: the body's queue takes frames until it holds
      // highWaterMark bytes (desiredSize <= 0), then the stream holds maxStreamQueue more.
      const size = updatedFrame('bp', uris[0]!).length;
      const inBody = Math.ceil(highWaterMark / size);
      const expected = uris.slice(0, inBody + maxStreamQueue);
      assert.ok(drops.length > 0, 'the busy stream dropped notifications');
      for (const drop of drops) {
        assert.equal(drop.topic, 'resource');
        assert.ok(drop.queueLength <= maxStreamQueue, `queue held ${drop.queueLength}`);
      }
      assert.equal(endpoint.stats.streams, 1, 'the busy stream is not closed for it');

      const want = ack + expected.map((uri) => updatedFrame('bp', uri)).join('');
      await body.until((b) => b.bytes.length >= want.length, 3000, 'the queued notifications');
      await body.quiet(50);
      assert.equal(body.text, want, 'the queued notifications, in order, each once');

      // Drained: the stream flows again.
      hub.notifyResourceUpdated(uris[99]!);
      await body.until((b) => b.bytes.length > want.length, 3000, 'a notification after the drain');
      assert.equal(body.text, want + updatedFrame('bp', uris[99]!));
    }, { highWaterMark });
  } finally {
    channels.drop.unsubscribe(onDrop);
  }
});

test('M10: an identical burst while the consumer does not read loses nothing: one pending notification', async () => {
  const drops: DropEvent[] = [];
  const onDrop = (e: unknown) => drops.push(e as DropEvent);
  channels.drop.subscribe(onDrop);
  try {
    const highWaterMark = 1024;
    await withEndpoint({ maxStreamQueue: 20 }, async ({ listen, hub }) => {
      const fillers = Array.from({ length: 20 }, (_, i) => `file:///f/${String(i).padStart(3, '0')}`);
      const hot = 'file:///hot';
      const body = await listen(post(listenBody(1, { resourceSubscriptions: [...fillers, hot] })));
      const ack = ackFrame(1, { resourceSubscriptions: [...fillers, hot] });
      await body.until((b) => b.bytes.length >= ack.length, 3000, 'the ack');

      // Fill the body's queue to its high-water mark so that the stream holds what follows.
      const inBody = Math.ceil(highWaterMark / updatedFrame(1, fillers[0]!).length);
      for (const uri of fillers.slice(0, inBody)) hub.notifyResourceUpdated(uri);
      for (let i = 0; i < 1000; i++) hub.notifyResourceUpdated(hot);

      const want = ack + fillers.slice(0, inBody).map((uri) => updatedFrame(1, uri)).join('') + updatedFrame(1, hot);
      await body.until((b) => b.bytes.length >= want.length, 3000, 'the held notification');
      await body.quiet(50);
      assert.equal(body.text, want);
      assert.deepEqual(drops, [], 'nothing was dropped');
    }, { highWaterMark });
  } finally {
    channels.drop.unsubscribe(onDrop);
  }
});

// 4. The client going away releases everything.

test('M14: reader.cancel() unsubscribes: slot, principal and hub topics released, stop reason client_closed', async () => {
  const stops: StopEvent[] = [];
  const onStop = (e: unknown) => stops.push(e as StopEvent);
  channels.stop.subscribe(onStop);
  try {
    await withEndpoint({}, async ({ listen, hub, endpoint }) => {
      const body = await listen(post(listenBody(1, { toolsListChanged: true, resourceSubscriptions: ['file:///a', 'file:///b'] })));
      await body.until((b) => b.messages.length >= 1, 3000, 'the ack');
      assert.deepEqual(endpoint.stats, { streams: 1, slots: 1, principals: 1, sessions: 0, sessionSubscriptions: 0 });
      assert.deepEqual(hub.size, { topics: 2, subscriptions: 3 });
      await body.cancel();
      await eventually(() => endpoint.stats.streams === 0, 3000, 'the stream to be released');
      assert.deepEqual(endpoint.stats, { streams: 0, slots: 0, principals: 0, sessions: 0, sessionSubscriptions: 0 });
      assert.deepEqual(hub.size, { topics: 0, subscriptions: 0 });
    });
    assert.deepEqual(stops.map((s) => s.reason), ['client_closed']);
  } finally {
    channels.stop.unsubscribe(onStop);
  }
});

test('M14: aborting the request signal unsubscribes and releases everything', async () => {
  await withEndpoint({}, async ({ listen, hub, endpoint }) => {
    const controller = new AbortController();
    const body = await listen(post(listenBody(1, { resourceSubscriptions: ['file:///a'] }), { ...LISTEN_HEADERS }, { signal: controller.signal }));
    await body.until((b) => b.messages.length >= 1, 3000, 'the ack');
    assert.deepEqual(endpoint.stats, { streams: 1, slots: 1, principals: 1, sessions: 0, sessionSubscriptions: 0 });
    assert.deepEqual(hub.size, { topics: 1, subscriptions: 1 });
    controller.abort();
    await eventually(() => endpoint.stats.streams === 0, 3000, 'the stream to be released');
    assert.deepEqual(endpoint.stats, { streams: 0, slots: 0, principals: 0, sessions: 0, sessionSubscriptions: 0 });
    assert.deepEqual(hub.size, { topics: 0, subscriptions: 0 });
  });
});

test('M14: a request aborted before its response is built gets no stream and holds no slot', async () => {
  await withEndpoint({}, async ({ handle, hub, endpoint }) => {
    const controller = new AbortController();
    controller.abort();
    const response = await handle(post(listenBody(1, { resourceSubscriptions: ['file:///a'] }), { ...LISTEN_HEADERS }, { signal: controller.signal }));
    assert.notEqual(response.status, 200);
    assert.equal(response.headers.get('content-type'), null, 'not an SSE response');
    assert.deepEqual(endpoint.stats, { streams: 0, slots: 0, principals: 0, sessions: 0, sessionSubscriptions: 0 });
    assert.deepEqual(hub.size, { topics: 0, subscriptions: 0 });
  });
});

// 5. The anonymous principal is the caller's address bucket.

test('M8: the 5th listen from one address supersedes its first; another address touches nothing', async () => {
  await withEndpoint({}, async ({ listen, endpoint }) => {
    const ten1 = { remoteAddress: '10.0.0.1' };
    const mine: BodyReader[] = [];
    for (let i = 1; i <= 4; i++) mine.push(await listen(post(listenBody(i, { toolsListChanged: true })), ten1));
    await Promise.all(mine.map((b) => b.until((x) => x.messages.length >= 1, 3000, 'the ack')));
    assert.equal(endpoint.principals.count('addr:10.0.0.1'), 4);

    mine.push(await listen(post(listenBody(5, { toolsListChanged: true })), ten1));
    await mine[0]!.end();
    assert.equal(mine[0]!.text, ackFrame(1, { toolsListChanged: true }) + cancelledFrame(1, 'superseded') + resultFrame(1));
    assert.equal(endpoint.principals.count('addr:10.0.0.1'), 4);

    const other = await listen(post(listenBody(6, { toolsListChanged: true })), { remoteAddress: '10.0.0.2' });
    await other.until((b) => b.messages.length >= 1, 3000, 'the ack');
    assert.equal(endpoint.principals.count('addr:10.0.0.1'), 4);
    assert.equal(endpoint.principals.count('addr:10.0.0.2'), 1);
    assert.deepEqual(endpoint.stats, { streams: 5, slots: 5, principals: 2, sessions: 0, sessionSubscriptions: 0 });
    await Promise.all(mine.slice(1).map((b) => b.until((x) => x.messages.length >= 1, 3000, 'the ack')));
    await Promise.all(mine.slice(1).map((b) => b.quiet(50)));
    for (const [i, b] of mine.slice(1).entries()) assert.equal(b.text, ackFrame(i + 2, { toolsListChanged: true }));
  });
});

test('without a client address an anonymous endpoint refuses every call (MissingClientAddressError), serving nothing', async () => {
  const hub = new Hub();
  const endpoint = new McpEndpoint({ hub });
  const handle = webHandler(endpoint);
  try {
    for (const info of [undefined, {}, { remoteAddress: '' }, { remoteAddress: undefined }]) {
      const error: unknown = await handle(post(listenBody(1, { toolsListChanged: true })), info).then(
        () => assert.fail(`served without an address: ${JSON.stringify(info)}`),
        (e: unknown) => e,
      );
      assert.ok(error instanceof MissingClientAddressError, String(error));
      assert.ok(error instanceof McpRxError);
      assert.equal(error.code, 'ERR_MCP_RX_NO_CLIENT_ADDRESS');
      assert.equal(error.name, 'MissingClientAddressError');
      assert.deepEqual(error.info, { url: URL });
      assert.match(error.message, /handle\(request, \{ remoteAddress \}\)/);
      assert.match(error.message, /getConnInfo\(c\)\.remote\.address/);
      assert.match(error.message, /authenticate hook/);
    }
    // Whatever the request: refused before it is read.
    await assert.rejects(handle(new Request(URL, { method: 'GET', headers: { accept: 'text/event-stream' } })), MissingClientAddressError);
    assert.deepEqual(endpoint.stats, { streams: 0, slots: 0, principals: 0, sessions: 0, sessionSubscriptions: 0 });
    assert.deepEqual(hub.size, { topics: 0, subscriptions: 0 });
    assert.equal(endpoint.authenticates, false);
  } finally {
    endpoint.close();
  }
});

test('an endpoint with an authenticate hook needs no client address: the hook names the principals', async () => {
  await withEndpoint({ authenticate: (request) => ({ principal: `user:${request.header('x-user')}`, scopes: new Set() }) }, async ({ endpoint }) => {
    assert.equal(endpoint.authenticates, true);
    const handle = webHandler(endpoint);
    const readers: BodyReader[] = [];
    try {
      for (const [id, user] of [[1, 'a'], [2, 'b']] as const) {
        const response = await handle(post(listenBody(id, { toolsListChanged: true }), { ...LISTEN_HEADERS, 'x-user': user }));
        assert.equal(response.status, 200);
        readers.push(new BodyReader(response));
      }
      await Promise.all(readers.map((b) => b.until((x) => x.messages.length >= 1, 3000, 'the ack')));
      assert.equal(endpoint.principals.count('user:a'), 1);
      assert.equal(endpoint.principals.count('user:b'), 1);
    } finally {
      endpoint.close();
      for (const reader of readers) await reader.cancel().catch(() => {});
    }
  });
});

test.run();
