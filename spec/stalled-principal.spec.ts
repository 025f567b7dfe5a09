// Issue "Hostile clients II", item 1: a principal never holds more than its cap of slots, at any
// instant. A listen counts against its principal from the moment it takes its slot until the slot
// is given back: a superseded (or otherwise closed) stream whose client is not reading gives its
// slot back at once (its closing frames are dropped with the connection), and a listen superseded
// while it is still being authorized gives its slot back at once too. Here with clients that stop
// reading on raw sockets, and with a burst of listens held in a slow subscribe hook; the slots are
// counted on every acquire, so a moment over the cap is caught, not only the state afterwards.
import { strict as assert } from 'node:assert';
import net from 'node:net';
import { test } from 'uvu';
import type { AuthInfo } from '../lib/auth.js';
import type { EndpointRequest } from '../lib/context.js';
import { type Slot, StreamSlots } from '../lib/slots.js';
import { queueTotals } from '../lib/telemetry.js';
import { eventually, LISTEN_HEADERS, listenBody, SseConnection, startEndpoint, type TestServer } from './helpers/http.js';

/** The principal from `x-principal`. */
const byHeader = (request: EndpointRequest): AuthInfo => ({ principal: `user:${request.header('x-principal') ?? 'anon'}`, scopes: new Set() });

/** A pool that remembers how many slots were held right after each acquire. */
class CountingSlots extends StreamSlots {
  readonly heldAfterAcquire: number[] = [];

  override tryAcquire(): Slot | undefined {
    const slot = super.tryAcquire();
    if (slot !== undefined) this.heldAfterAcquire.push(this.inUse);
    return slot;
  }

  get most(): number {
    return Math.max(0, ...this.heldAfterAcquire);
  }
}

/** 200 resources whose notifications are 8 KiB each: a few rounds fill any loopback socket. */
const URIS = Array.from({ length: 200 }, (_, i) => `file:///${String(i).padStart(3, '0')}/${'s'.repeat(8 * 1024 - 16)}`);

/** A listen of `principal` on a raw socket that stops reading once its response starts. */
async function stalledListen(server: TestServer, principal: string, id: string): Promise<net.Socket> {
  const body = listenBody(id, { resourceSubscriptions: URIS });
  const socket = net.connect(Number(new URL(server.url).port), '127.0.0.1');
  socket.on('error', () => {});
  const headers = Object.entries({ ...LISTEN_HEADERS, 'x-principal': principal, 'content-length': String(Buffer.byteLength(body)) })
    .map(([key, value]) => `${key}: ${value}\r\n`)
    .join('');
  socket.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers}\r\n${body}`);
  await new Promise<void>((resolve) => socket.once('data', () => resolve()));
  socket.pause();
  return socket;
}

/** Publishes every URI, a round per turn, until frames wait in some stream's queue (its client is not reading). */
async function untilQueued(server: TestServer): Promise<void> {
  const before = queueTotals().frames;
  for (let round = 0; round < 50 && queueTotals().frames <= before; round++) {
    for (const uri of URIS) server.hub.notifyResourceUpdated(uri);
    await new Promise((resolve) => setImmediate(resolve));
  }
  assert.ok(queueTotals().frames > before, 'frames are queued for the stalled client');
}

test('the issue\'s setup (maxStreams 2, cap 1): a stalled listen superseded by its principal gives its slot back at once, and another principal gets its first listen', async () => {
  const slots = new CountingSlots(2);
  const server = await startEndpoint({ authenticate: byHeader, slots, maxListensPerPrincipal: 1, keepAliveInterval: 4000, maxBodyBytes: 8 * 1024 * 1024 });
  try {
    const first = await stalledListen(server, 'hog', 'first');
    await untilQueued(server);
    const second = await stalledListen(server, 'hog', 'second');
    assert.equal(slots.inUse, 1, 'the superseded stream gave its slot back as the new one took one');
    assert.equal(server.endpoint.stats.streams, 1);
    // Not 503 for 4 s (one keep-alive interval): at once.
    const polite = await SseConnection.open(server.url, listenBody('polite', { toolsListChanged: true }), { ...LISTEN_HEADERS, 'x-principal': 'polite' });
    assert.equal(polite.status, 200, `another principal's first listen: ${polite.status}`);
    await polite.until((c) => c.messages.length === 1);
    assert.ok(slots.most <= 2, `slots held ${slots.heldAfterAcquire.join(', ')}`);
    assert.deepEqual(slots.heldAfterAcquire, [1, 1, 2], 'the hog never held more than one slot');
    polite.destroy();
    first.destroy();
    second.destroy();
    await eventually(() => slots.inUse === 0, 3000, 'everything released');
  } finally {
    await server.close();
  }
});

test('cap 4, twelve listens of one principal, each stalled with frames queued: never more than four slots, at any acquire', async () => {
  const slots = new CountingSlots(12);
  const server = await startEndpoint({ authenticate: byHeader, slots, maxListensPerPrincipal: 4, maxBodyBytes: 8 * 1024 * 1024 });
  const sockets: net.Socket[] = [];
  try {
    for (let i = 0; i < 12; i++) {
      sockets.push(await stalledListen(server, 'hog', `hog-${i}`));
      await untilQueued(server);
      assert.ok(slots.inUse <= 4, `after listen ${i}: ${slots.inUse} slots held`);
    }
    assert.ok(slots.most <= 4, `slots held after each acquire: ${slots.heldAfterAcquire.join(', ')}`);
    assert.equal(server.endpoint.principals.count('user:hog'), 4);
    const polite = await SseConnection.open(server.url, listenBody('polite', { toolsListChanged: true }), { ...LISTEN_HEADERS, 'x-principal': 'polite' });
    assert.equal(polite.status, 200);
    polite.destroy();
  } finally {
    for (const socket of sockets) socket.destroy();
    await server.close();
  }
});

test('a burst of listens held in a slow subscribe hook: each counts from its slot on, the superseded ones give theirs back at once and open only to close (superseded)', async () => {
  const slots = new CountingSlots(12);
  let inHook = 0;
  let mostInHook = 0;
  const subscribeHook = async () => {
    mostInHook = Math.max(mostInHook, ++inHook);
    await new Promise((resolve) => setTimeout(resolve, 50));
    inHook--;
    return true;
  };
  const server = await startEndpoint({ authenticate: byHeader, slots, maxListensPerPrincipal: 4, subscribeHook });
  try {
    const burst = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        SseConnection.open(server.url, listenBody(`burst-${i}`, { resourceSubscriptions: ['file:///a'] }), { ...LISTEN_HEADERS, 'x-principal': 'hog' }),
      ),
    );
    assert.ok(mostInHook > 4, `the burst was authorized concurrently (${mostInHook} at once)`);
    assert.ok(slots.most <= 4, `slots held after each acquire: ${slots.heldAfterAcquire.join(', ')}`);
    for (const connection of burst) assert.equal(connection.status, 200);
    await eventually(() => burst.filter((c) => c.ended).length === 8, 3000, 'eight superseded listens to end');
    for (const connection of burst.filter((c) => c.ended)) {
      // Opened after it was superseded: the ack, then the closing frames.
      assert.deepEqual(
        connection.messages.map((m) => m.method ?? 'result'),
        ['notifications/subscriptions/acknowledged', 'notifications/cancelled', 'result'],
      );
      assert.equal(connection.messages[1]?.params.reason, 'superseded');
    }
    assert.equal(slots.inUse, 4);
    assert.equal(server.endpoint.stats.streams, 4);
    for (const connection of burst) connection.destroy();
    await eventually(() => slots.inUse === 0 && server.endpoint.stats.principals === 0, 3000, 'everything released');
  } finally {
    await server.close();
  }
});

test.run();
