// Issue "hostile clients", class 1: every per-stream buffer is bounded in bytes, ids and URIs are
// bounded before a stream opens, the adapters write in bounded chunks, and an exception anywhere
// on a stream's write path ends that stream alone (reported, slot and principal given back) and
// never reaches the process.
import { strict as assert } from 'node:assert';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { BehaviorSubject, Subject } from 'rxjs';
import { test } from 'uvu';
import { nodeHandler } from '../adapters/http/node.js';
import { webHandler } from '../adapters/http/web.js';
import type { AuthInfo } from '../lib/auth.js';
import { encodeFrame, encodedByteLength } from '../lib/encode.js';
import { noUncaught } from './helpers/wait.js';
import { McpEndpoint } from '../adapters/http/endpoint.js';
import type { EndpointRequest } from '../lib/context.js';
import { InvalidOptionError } from '../lib/errors.js';
import { controlFrame, type Frame, type MessageFrame } from '../lib/frame.js';
import { Hub } from '../lib/hub.js';
import { listenStream } from '../operators/listenPipeline.js';
import { channels, type DropEvent, type ErrorEvent, type StartEvent } from '../lib/telemetry.js';
import { dropWhenQueueExceeds } from '../operators/dropWhenQueueExceeds.js';
import { eventually, listenBody, LISTEN_HEADERS, post, SseConnection } from './helpers/http.js';
import { collecting } from './helpers/telemetry.js';
import { updated } from './helpers/frames.js';

const ID_1KIB = 'i'.repeat(1024);
const uris = (n: number, prefix = 'file:///data/') => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

/** An http.Server serving `endpoint`, with `wrap` given each response before the handler sees it. */
async function serve(endpoint: McpEndpoint, wrap: (res: http.ServerResponse) => void = () => {}) {
  const handler = nodeHandler(endpoint);
  const server = http.createServer((req, res) => {
    wrap(res);
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        endpoint.close();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/* The byte budget of a stream's queue */

test('a stalled listen with a 1 KiB id and 1000 URIs holds at most maxStreamQueueBytes, drops past it with telemetry; once drained its closing frames follow', async () => {
  await collecting<DropEvent>(channels.drop, async (drops) => {
    // Three rounds of the same 1000 URIs in one turn fill the queue (storms collapse otherwise).
    const hub = new Hub({ coalesce: false });
    const demand$ = new BehaviorSubject(true);
    const shutdown$ = new Subject<void>();
    const frames: Frame[] = [];
    const budget = 64 * 1024;
    const subscription = listenStream({
      requestId: ID_1KIB,
      filter: { resourceSubscriptions: uris(1000) },
      hub,
      demand$,
      shutdown$,
      options: { maxStreamQueueBytes: budget },
    }).subscribe((frame) => frames.push(frame));
    demand$.next(false);
    for (let round = 0; round < 3; round++) for (const uri of uris(1000)) hub.notifyResourceUpdated(uri);
    assert.equal(frames.length, 1, 'only the ack went out before the sink got busy');
    assert.ok(drops.length > 0, 'notifications past the budget are dropped');
    for (const drop of drops) assert.ok(drop.queueBytes <= budget, `held ${drop.queueBytes} bytes`);
    demand$.next(true);
    // Closed once its client has taken the queue (closed while it is not reading, it would end at once).
    shutdown$.next();
    const held = frames.slice(1);
    const bytesOf = (list: Frame[]) => list.reduce((sum, frame) => sum + Buffer.byteLength(encodeFrame(frame)), 0);
    const notifications = held.filter((frame) => frame.type === 'message' && frame.priority === 'notification');
    const closing = held.filter((frame) => frame.type === 'message' && frame.priority === 'control');
    assert.equal(closing.length, 2, 'the closing frames');
    // Each notification carries the 1 KiB id (about 1.2 KB on the wire): about 54 fit in 64 KiB.
    const bytes = bytesOf(notifications);
    assert.ok(bytes <= budget, `${bytes} bytes of notifications were held`);
    assert.ok(bytes > budget - 1300, `the budget is used: ${bytes} bytes held`);
    // Every round drops the notifications that did not fit; the held ones coalesce their repeats.
    assert.equal(drops.length, 3 * (1000 - notifications.length));
    assert.deepEqual(held.slice(notifications.length), closing, 'the closing frames come last');
    subscription.unsubscribe();
  });
});

test('dropWhenQueueExceeds: the byte budget drops notifications, counts control frames, never drops them; a bad budget is refused by name', () => {
  const demand$ = new BehaviorSubject(true);
  const source = new Subject<Frame>();
  const out: Frame[] = [];
  const drops: [MessageFrame, number, number][] = [];
  const a = updated('file:///a');
  const size = encodedByteLength(a);
  source.pipe(dropWhenQueueExceeds({ notifications: 100, bytes: 2 * size }, demand$, (frame, n, bytes) => drops.push([frame, n, bytes]))).subscribe((f) => out.push(f));
  demand$.next(false);
  source.next(a);
  source.next(updated('file:///b'));
  source.next(updated('file:///c')); // past the budget: dropped
  const control = controlFrame({ jsonrpc: '2.0', id: 1, result: {} });
  source.next(control); // never dropped, counted
  source.next(updated('file:///a')); // coalesced with the pending one
  assert.deepEqual(drops.map(([frame, n, bytes]) => [(frame.message as unknown as { params: { uri: string } }).params.uri, n, bytes]), [['file:///c', 2, 2 * size]]);
  demand$.next(true);
  assert.deepEqual(out.map((f) => (f.type === 'message' ? ((f.message as { params?: { uri?: string } }).params?.uri ?? 'control') : f.type)), ['file:///a', 'file:///b', 'control']);
  for (const bytes of [0, -1, 1.5, Number.NaN, 2 ** 60]) {
    assert.throws(() => dropWhenQueueExceeds({ notifications: 1, bytes }, demand$), (error: unknown) => error instanceof InvalidOptionError && /dropWhenQueueExceeds bytes/.test(error.message));
  }
  assert.throws(() => new McpEndpoint({ hub: new Hub(), maxStreamQueueBytes: 0 }), /maxStreamQueueBytes must be a positive integer of bytes, got 0/);
});

/* Ids and URIs are bounded before a stream opens */

test('a request id past 1 KiB (UTF-8 bytes) or a URI past 8 KiB is refused naming the field, before any stream, slot or start event', async () => {
  await collecting<StartEvent>(channels.start, async (starts) => {
    const endpoint = new McpEndpoint({ hub: new Hub() });
    const s = await serve(endpoint);
    try {
      // 342 three-byte characters are 1026 bytes: counted in UTF-8, not in UTF-16 units.
      for (const id of ['i'.repeat(1025), '€'.repeat(342)]) {
        const reply = await post(s.url, listenBody(id, { toolsListChanged: true }));
        assert.equal(reply.status, 400);
        assert.deepEqual(JSON.parse(reply.body), { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'id must be a string of at most 1024 bytes or a number' } });
      }
      const long = `file:///${'u'.repeat(8192 - 8 + 1)}`;
      const refused = await post(s.url, listenBody(7, { resourceSubscriptions: ['file:///ok', long] }));
      assert.equal(refused.status, 200);
      assert.deepEqual(JSON.parse(refused.body).error, { code: -32602, message: 'params.notifications.resourceSubscriptions[1] must be a URI of at most 8192 bytes' });
      assert.equal(starts.length, 0, 'no stream started');
      assert.equal(endpoint.stats.slots, 0);
      // At the bounds exactly: a stream.
      const stream = await SseConnection.open(s.url, listenBody(ID_1KIB, { resourceSubscriptions: [long.slice(0, -1)] }));
      await stream.until((c) => c.text.includes('\n\n'));
      assert.equal(stream.status, 200);
      assert.equal(stream.messages[0]!.params._meta['io.modelcontextprotocol/subscriptionId'], ID_1KIB);
      assert.deepEqual(stream.messages[0]!.params.notifications.resourceSubscriptions, [long.slice(0, -1)]);
      stream.destroy();
      await eventually(() => endpoint.stats.slots === 0, 3000, 'the stream released');
    } finally {
      await s.close();
    }
  });
});

/* Bounded writes */

test('node adapter: a burst of 1000 notifications with a 1 KiB id in one tick is written in bounded chunks, never one string', async () => {
  // The burst (1.2 MB) is more than the default byte budget can hold while the socket drains: a
  // budget of 4 MiB lets every notification through, so that the chunks can be counted.
  const endpoint = new McpEndpoint({ hub: new Hub(), maxStreamQueueBytes: 4 * 1024 * 1024 });
  const writes: number[] = [];
  const s = await serve(endpoint, (res) => {
    const write = res.write.bind(res) as (chunk: unknown) => boolean;
    res.write = ((chunk: unknown) => {
      writes.push(typeof chunk === 'string' ? chunk.length : (chunk as Buffer).length);
      return write(chunk);
    }) as typeof res.write;
  });
  try {
    const stream = await SseConnection.open(s.url, listenBody(ID_1KIB, { resourceSubscriptions: uris(1000) }));
    const frames = (c: SseConnection) => c.text.split('\n\n').length - 1;
    await stream.until((c) => frames(c) === 1);
    writes.length = 0;
    for (const uri of uris(1000)) endpoint.hub.notifyResourceUpdated(uri);
    await stream.until((c) => frames(c) === 1001, 5000, 'every notification');
    const frame = 1200; // one notification with its 1 KiB id, rounded up
    assert.ok(writes.length > 10, `${writes.length} writes`);
    assert.ok(Math.max(...writes) < 16_384 + frame, `the largest write was ${Math.max(...writes)} characters`);
    stream.destroy();
    await eventually(() => endpoint.stats.slots === 0, 3000, 'released');
  } finally {
    await s.close();
  }
});

/* Nothing escapes a socket callback */

/** The principal from `x-principal`. */
const byHeader = (request: EndpointRequest): AuthInfo => ({ principal: `user:${request.header('x-principal') ?? 'anon'}`, scopes: new Set() });
const as = (principal: string) => ({ ...LISTEN_HEADERS, 'x-principal': principal });

test('a write that throws ends that stream alone: reported on channels.error, slot and principal released, the server and the other streams live', async () => {
  await noUncaught(() =>
    collecting<ErrorEvent>(channels.error, async (errors) => {
      const endpoint = new McpEndpoint({ hub: new Hub(), authenticate: byHeader });
      const s = await serve(endpoint, (res) => {
        const write = res.write.bind(res) as (chunk: unknown) => boolean;
        res.write = ((chunk: unknown) => {
          // The notification, not the acknowledgment (which names the URI too).
          if (typeof chunk === 'string' && chunk.includes('resources/updated')) throw new Error('boom in write');
          return write(chunk);
        }) as typeof res.write;
      });
      try {
        const doomed = await SseConnection.open(s.url, listenBody(1, { resourceSubscriptions: ['file:///boom'] }), as('a'));
        const healthy = await SseConnection.open(s.url, listenBody(2, { toolsListChanged: true }), as('b'));
        await doomed.until((c) => c.messages.length === 1);
        await healthy.until((c) => c.messages.length === 1);
        assert.equal(endpoint.stats.principals, 2);
        endpoint.hub.notifyResourceUpdated('file:///boom');
        await doomed.until((c) => c.ended, 3000, 'the failing stream to be dropped');
        await eventually(() => endpoint.stats.slots === 1 && endpoint.stats.principals === 1, 3000, 'its slot and principal given back');
        assert.ok(errors.some((e) => e.where === 'adapter' && String(e.error).includes('boom in write')), 'reported');
        endpoint.hub.notifyToolsChanged();
        await healthy.until((c) => c.messages.length === 2, 3000, 'the other stream still served');
        healthy.destroy();
        await eventually(() => endpoint.stats.slots === 0 && endpoint.stats.principals === 0, 3000, 'released');
      } finally {
        await s.close();
      }
    }),
  );
});

test("an exception inside 'drain' (a stalled client reading again) ends that stream alone and never reaches the process", async () => {
  await noUncaught(() =>
    collecting<ErrorEvent>(channels.error, (errors) => collecting<DropEvent>(channels.drop, async (drops) => {
      const endpoint = new McpEndpoint({ hub: new Hub() });
      let drainsSeen = 0;
      let thrownInDrain = 0;
      let armed = false;
      const s = await serve(endpoint, (res) => {
        let inDrain = false;
        // Registered before the adapter's own listener: it runs first and marks the dispatch.
        res.on('drain', () => {
          drainsSeen++;
          inDrain = true;
          setImmediate(() => (inDrain = false));
        });
        const write = res.write.bind(res) as (chunk: unknown) => boolean;
        res.write = ((chunk: unknown) => {
          if (inDrain && armed) {
            thrownInDrain++;
            throw new Error('boom inside drain');
          }
          return write(chunk);
        }) as typeof res.write;
      });
      try {
        const socket = net.connect(s.port, '127.0.0.1');
        socket.on('error', () => {});
        const body = listenBody(ID_1KIB, { resourceSubscriptions: uris(1000) });
        socket.write(
          `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
        );
        await eventually(() => endpoint.stats.streams === 1, 3000, 'the stream');
        socket.pause();
        // Fill the socket and the stream's queue: 20 rounds of 1000 notifications of about 1.2 KB.
        for (let round = 0; round < 20; round++) {
          for (const uri of uris(1000)) endpoint.hub.notifyResourceUpdated(uri);
          await new Promise((resolve) => setImmediate(resolve));
        }
        assert.ok(drops.length > 0, 'the client stalled: its queue filled up');
        armed = true;
        socket.resume();
        await eventually(() => endpoint.stats.slots === 0 && endpoint.stats.streams === 0, 5000, 'the stream to be ended and released');
        assert.ok(drainsSeen >= 1 && thrownInDrain >= 1, `a write threw inside 'drain' (${thrownInDrain} of ${drainsSeen} drains)`);
        assert.ok(errors.some((e) => e.where === 'adapter' && String(e.error).includes('boom inside drain')), 'reported on channels.error');
        assert.equal(endpoint.stats.principals, 0);
        socket.destroy();
        // The server still answers.
        const stream = await SseConnection.open(s.url, listenBody(9, { toolsListChanged: true }));
        await stream.until((c) => c.messages.length === 1);
        stream.destroy();
      } finally {
        await s.close();
      }
    })),
  );
});

test('web adapter: a frame that cannot be written ends that stream alone (reported, slot released), never the process', async () => {
  await noUncaught(() =>
    collecting<ErrorEvent>(channels.error, async (errors) => {
      const endpoint = new McpEndpoint({ hub: new Hub() });
      const handle = webHandler(endpoint);
      const encode = TextEncoder.prototype.encode;
      TextEncoder.prototype.encode = function (this: TextEncoder, input?: string) {
        if (input?.includes('resources/updated') === true) throw new RangeError('cannot encode this one');
        return encode.call(this, input);
      };
      try {
        const response = await handle(
          new Request('http://127.0.0.1/mcp', { method: 'POST', headers: LISTEN_HEADERS, body: listenBody(1, { resourceSubscriptions: ['file:///boom'] }) }),
          { remoteAddress: '127.0.0.1' },
        );
        const reader = response.body!.getReader();
        await reader.read(); // the ack
        assert.equal(endpoint.stats.slots, 1);
        endpoint.hub.notifyResourceUpdated('file:///boom');
        await assert.rejects(reader.read(), /cannot encode this one/);
        assert.equal(endpoint.stats.slots, 0, 'the slot given back');
        assert.equal(endpoint.stats.principals, 0);
        assert.ok(errors.some((e) => e.where === 'adapter' && e.error instanceof RangeError));
      } finally {
        TextEncoder.prototype.encode = encode;
        endpoint.close();
      }
    }),
  );
});

test.run();
