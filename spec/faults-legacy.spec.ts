// Faults in the legacy era (issue 7, DESIGN L2–L10): GET clients that vanish at every point of
// the stream's life, change sources that fail, principals that reach for each other's sessions,
// tokens that expire, and a server that shuts down. Each ends with nothing held: slots and streams
// at once, the session's live subscriptions after DELETE or the grace period, the hub's
// registrations, and the scheduler's pending timers (counted by a scheduler that wraps
// asyncScheduler), all back to zero.
import { strict as assert } from 'node:assert';
import net from 'node:net';
import {
  asyncScheduler,
  Observable,
  type SchedulerAction,
  type SchedulerLike,
  Subject,
  type Subscription,
} from 'rxjs';
import { test } from 'uvu';
import { AuthError, type AuthInfo } from '../lib/auth.js';
import type { EndpointRequest } from '../lib/context.js';
import type { McpEndpointOptions } from '../adapters/http/options.js';
import { Hub } from '../lib/hub.js';
import type { ResourceProvider } from '../lib/resources.js';
import { MemorySessionStore, type SessionChanges, type SessionRecord } from '../lib/session.js';
import { channels, type ErrorEvent } from '../lib/telemetry.js';
import { eventually, startEndpoint, type TestServer } from './helpers/http.js';
import {
  call,
  deferred,
  frameText,
  GetStream,
  initialize,
  listChangedMessage,
  rpcBody,
  send,
  sessionHeaders,
  sleep,
  updatedMessage,
} from './helpers/legacy.js';
import { collecting } from './helpers/telemetry.js';

/**
 * asyncScheduler, counting the timers it holds: an action is pending from `schedule` until it ran
 * without rescheduling itself or was unsubscribed. Keep-alives, grace periods, prune sweeps, token
 * expiries and stall guards all come from the endpoint's scheduler.
 */
class CountingScheduler implements SchedulerLike {
  readonly #actions = new Set<Subscription & { pending?: boolean }>();

  now(): number {
    return asyncScheduler.now();
  }

  schedule<T>(work: (this: SchedulerAction<T>, state?: T) => void, delay?: number, state?: T): Subscription {
    const action = asyncScheduler.schedule(work, delay, state) as Subscription & { pending?: boolean };
    this.#actions.add(action);
    return action;
  }

  /** Timers scheduled and not yet run or cancelled. */
  get pending(): number {
    let n = 0;
    for (const action of this.#actions) {
      if (action.closed || action.pending === false) this.#actions.delete(action);
      else n++;
    }
    return n;
  }
}

const ZERO = Object.freeze({ streams: 0, slots: 0, principals: 0, sessions: 0, sessionSubscriptions: 0 });

interface Fixture extends TestServer {
  readonly scheduler: CountingScheduler;
}

async function withServer(options: Partial<McpEndpointOptions>, body: (f: Fixture) => Promise<void>): Promise<void> {
  const scheduler = new CountingScheduler();
  const server = await startEndpoint({ scheduler, subscribeStreamWait: 0, ...options });
  try {
    await body({ ...server, scheduler });
  } finally {
    await server.close();
  }
}

/** Everything released: DELETE the sessions still held, then nothing is left anywhere, timers included. */
async function assertReleased(f: Fixture, sessions: readonly string[], headers: Record<string, string> = {}): Promise<void> {
  for (const sid of sessions) {
    const del = await send(f.url, 'DELETE', { 'mcp-session-id': sid, ...headers });
    assert.ok(del.status === 204 || del.status === 404, `DELETE ${del.status}`);
  }
  await eventually(() => f.endpoint.stats.slots === 0 && f.endpoint.stats.streams === 0, 3000, 'streams and slots to be released');
  assert.deepEqual(f.endpoint.stats, ZERO);
  assert.deepEqual(f.hub.size, { topics: 0, subscriptions: 0 });
  await eventually(() => f.scheduler.pending === 0, 1000, `no pending timer (still ${f.scheduler.pending})`);
}

/** `initialize`: the new session's id. */
async function session(url: string, headers: Record<string, string> = {}): Promise<string> {
  const init = await initialize(url, { headers });
  assert.equal(init.status, 200, init.body);
  return init.sessionId;
}

const ok = (id: number | string) => JSON.stringify({ jsonrpc: '2.0', id, result: {} });
const errorBody = (id: number | string | null, code: number, message: string) => JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } });

/** A GET on a raw socket (it can stop reading, or vanish at any byte), with extra header lines. */
function rawGet(url: string, sessionId: string, headers: Record<string, string> = {}): net.Socket & { received: () => string } {
  const socket = net.connect(Number(new URL(url).port), '127.0.0.1') as net.Socket & { received: () => string };
  let text = '';
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => (text += chunk));
  socket.on('error', () => {});
  socket.received = () => text;
  const extra = Object.entries(headers)
    .map(([key, value]) => `${key}: ${value}\r\n`)
    .join('');
  socket.write(`GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nMcp-Session-Id: ${sessionId}\r\nMcp-Protocol-Version: 2025-11-25\r\n${extra}\r\n`);
  return socket;
}

/** Lets a paused raw socket read a little at a time until `enough` holds for what it received. */
function readUntil(socket: net.Socket & { received: () => string }, enough: (received: string) => boolean): Promise<void> {
  return new Promise<void>((resolve) => {
    const step = () => {
      if (enough(socket.received())) return resolve();
      socket.resume();
      setTimeout(() => {
        socket.pause();
        step();
      }, 1);
    };
    step();
  });
}

/* ----------------------------------------------------------------------------------------------
 * A GET client gone at every point
 * ------------------------------------------------------------------------------------------- */

test('a GET client gone before the response head (authentication or the session store pending) leaks nothing', async () => {
  for (const where of ['authenticate', 'store'] as const) {
    const pending = deferred<void>();
    const reached = deferred<void>();
    const hold = async (request: EndpointRequest) => {
      if (request.method !== 'GET') return;
      reached.resolve();
      await pending.promise;
    };
    // A store whose reads wait while `held` (the GET path reads the record of a session with no stream here).
    const memory = new MemorySessionStore();
    const store = Object.assign(
      {
        held: false,
        create: (record: SessionRecord) => memory.create(record),
        update: (id: string, changes: SessionChanges) => memory.update(id, changes),
        delete: (id: string) => memory.delete(id),
        idleSince: (cutoff: number) => memory.idleSince(cutoff),
      },
      {
        get: async (id: string) => {
          if (store.held) {
            reached.resolve();
            await pending.promise;
          }
          return memory.get(id);
        },
      },
    );
    await withServer(
      {
        sessionStore: store,
        authenticate: async (request): Promise<AuthInfo> => {
          if (where === 'authenticate') await hold(request);
          return { principal: 'p', scopes: new Set() };
        },
      },
      async (f) => {
        const sid = await session(f.url);
        store.held = where === 'store';
        const socket = rawGet(f.url, sid);
        await reached.promise;
        socket.destroy();
        await sleep(30); // node:http notices the close before the endpoint answers
        pending.resolve();
        store.held = false;
        await eventually(() => f.endpoint.stats.slots === 0, 2000, `${where}: the slot to be released`);
        await sleep(20);
        assert.deepEqual(f.endpoint.stats, { ...ZERO, sessions: 1 }, where);
        assert.deepEqual(f.hub.size, { topics: 0, subscriptions: 0 }, where);
        assert.equal(socket.received(), '', 'nothing was written');
        await assertReleased(f, [sid]);
      },
    );
  }
});

test('a GET client gone during a replay of 100 frames (8 KiB each, more than the socket buffers) leaks nothing; the next GET replays them all', async () => {
  await withServer({ replayBufferSize: 100 }, async (f) => {
    const sid = await session(f.url);
    const first = GetStream.open(f.url, sid);
    await eventually(() => f.endpoint.stats.streams === 1, 3000, 'the first stream');
    // 100 distinct URIs of the longest length accepted (MAX_URI_BYTES): 100 frames of about 8 KiB
    // that cannot coalesce while they wait for a slow socket.
    const uris = Array.from({ length: 100 }, (_, i) => `file:///${String(i).padStart(3, '0')}/${'r'.repeat(8 * 1024 - 12)}`);
    for (const [i, uri] of uris.entries()) assert.equal((await call(f.url, sid, i, 'resources/subscribe', { uri })).body, ok(i));
    first.destroy();
    await eventually(() => f.endpoint.stats.streams === 0, 3000, 'the drop to be noticed');
    // Within the grace period: the subscriptions keep feeding the buffer.
    for (const uri of uris) f.hub.notifyResourceUpdated(uri);
    const whole = uris.map((uri, i) => frameText(i + 1, updatedMessage(uri))).join('');
    for (const cut of [1, 10_000, Math.floor(whole.length / 2), whole.length - 100]) {
      const socket = rawGet(f.url, sid, { 'Last-Event-ID': '0' });
      socket.pause();
      // Read up to `cut` bytes of the replay, a few KiB at a time, then vanish.
      await readUntil(socket, (received) => received.split('\r\n\r\n').slice(1).join('\r\n\r\n').length >= cut);
      socket.resetAndDestroy();
      await eventually(() => f.endpoint.stats.streams === 0 && f.endpoint.stats.slots === 0, 3000, `cut at ${cut}: stream released`);
      assert.equal(f.endpoint.stats.sessionSubscriptions, 101, 'the session waits in its grace period');
    }
    // Nothing was lost or stamped twice: a full replay is still the same 100 frames.
    const get = GetStream.open(f.url, sid, { lastEventId: '0' });
    await get.untilId(100);
    assert.equal(get.withoutKeepAlives, whole);
    get.destroy();
    await assertReleased(f, [sid]);
  });
});

test('a GET client gone mid-frame (half of an 8 KiB notification read) leaks nothing; the frame is replayed whole', async () => {
  await withServer({}, async (f) => {
    const sid = await session(f.url);
    // The longest URI accepted (MAX_URI_BYTES): the largest frame a GET stream carries.
    const big = `file:///${'m'.repeat(8 * 1024 - 8)}`;
    const socket = rawGet(f.url, sid);
    await eventually(() => f.endpoint.stats.streams === 1, 3000, 'the stream');
    assert.equal((await call(f.url, sid, 1, 'resources/subscribe', { uri: big })).body, ok(1));
    socket.pause();
    f.hub.notifyResourceUpdated(big);
    const whole = frameText(1, updatedMessage(big));
    // Read the frame a few bytes at a time until about half of it is in, then vanish.
    await readUntil(socket, (received) => {
      const at = received.indexOf('event: message\nid: 1\n');
      return at >= 0 && received.length - at >= whole.length / 2;
    });
    socket.resetAndDestroy();
    await eventually(() => f.endpoint.stats.streams === 0 && f.endpoint.stats.slots === 0, 3000, 'stream released');
    const again = GetStream.open(f.url, sid, { lastEventId: '0' });
    await again.untilId(1);
    assert.equal(again.withoutKeepAlives, whole);
    again.destroy();
    await assertReleased(f, [sid]);
  });
});

/** A `db://` provider whose `subscribable` waits for `gate` (when set) and counts its calls. */
function gatedProvider(hub: Hub) {
  const state = { gate: undefined as Promise<void> | undefined, asked: 0, inFlight: 0 };
  const provider: ResourceProvider = {
    subscribable: async (uri) => {
      state.asked++;
      state.inFlight++;
      try {
        if (state.gate !== undefined) await state.gate;
        return uri.startsWith('db://');
      } finally {
        state.inFlight--;
      }
    },
    canRead: () => true,
    changes: (uri) => hub.topic({ topic: 'resource', uri }),
  };
  return { provider, state };
}

const principalOf = 'addr:127.0.0.1';
const recordWith = (id: string, subscriptions: string[]): SessionRecord => ({ id, principal: principalOf, protocolVersion: '2025-11-25', subscriptions, lastActivity: Date.now() });

test('a GET client gone while restores are pending: nothing is established after it left; the record keeps every URI', async () => {
  const hub = new Hub();
  const store = new MemorySessionStore();
  const { provider, state } = gatedProvider(hub);
  const uris = Array.from({ length: 20 }, (_, i) => `db://restore/${i}`);
  await withServer({ hub, sessionStore: store, resourceProviders: [provider], sessionGracePeriod: 100 }, async (f) => {
    const sid = '5e551011-0000-4000-8000-000000000001';
    store.create(recordWith(sid, uris));
    const gate = deferred<void>();
    state.gate = gate.promise;
    const get = GetStream.open(f.url, sid);
    await eventually(() => state.inFlight === 8, 3000, 'eight restores in flight');
    get.destroy();
    await eventually(() => f.endpoint.stats.streams === 0 && f.endpoint.stats.slots === 0, 3000, 'the stream released');
    gate.resolve();
    await sleep(20);
    assert.equal(state.asked, 8, 'the restores not yet started never start');
    assert.equal(f.endpoint.stats.sessionSubscriptions, 1, 'no restore completed after the stream left (list changes only, in grace)');
    await eventually(() => f.endpoint.stats.sessionSubscriptions === 0, 3000, 'the grace period to run out');
    assert.deepEqual(hub.size, { topics: 0, subscriptions: 0 });
    assert.deepEqual(store.get(sid)!.subscriptions, uris, 'a cancelled restore keeps its URI on the record');
    await assertReleased(f, [sid]);
  });
});

test('a second GET replacing the first while its restores are pending: each URI is subscribed exactly once', async () => {
  const hub = new Hub();
  const store = new MemorySessionStore();
  const { provider, state } = gatedProvider(hub);
  const uris = Array.from({ length: 20 }, (_, i) => `db://twice/${i}`);
  await withServer({ hub, sessionStore: store, resourceProviders: [provider] }, async (f) => {
    const sid = '5e551011-0000-4000-8000-000000000002';
    store.create(recordWith(sid, uris));
    const gate = deferred<void>();
    state.gate = gate.promise;
    const first = GetStream.open(f.url, sid);
    await eventually(() => state.inFlight === 8, 3000, 'eight restores in flight');
    const second = GetStream.open(f.url, sid);
    await first.untilEnded();
    assert.ok(first.endedCleanly, 'the replaced stream ends cleanly');
    await eventually(() => state.inFlight === 16, 3000, "the second stream's restores in flight");
    gate.resolve();
    await eventually(() => f.endpoint.stats.sessionSubscriptions === 21, 3000, 'the restore to finish');
    await sleep(20);
    assert.equal(f.endpoint.stats.sessionSubscriptions, 21);
    assert.deepEqual(hub.size, { topics: 20, subscriptions: 23 }, 'each URI once, and the three list changes');
    for (const uri of uris) hub.notifyResourceUpdated(uri);
    await second.untilId(20);
    assert.equal(second.withoutKeepAlives, uris.map((uri, i) => frameText(i + 1, updatedMessage(uri))).join(''), 'one frame per change');
    second.destroy();
    await assertReleased(f, [sid]);
  });
});

test('a GET client gone right after a second GET replaced it, and a replaced client that stopped reading: both released', async () => {
  await withServer({ keepAliveInterval: 150, sessionGracePeriod: 60_000 }, async (f) => {
    const sid = await session(f.url);
    // 1. Replaced, then the replacement's client vanishes at once.
    const first = GetStream.open(f.url, sid);
    await eventually(() => f.endpoint.stats.streams === 1, 3000, 'the first stream');
    f.hub.notifyToolsChanged();
    await first.untilId(1);
    const second = GetStream.open(f.url, sid);
    await second.response;
    second.destroy();
    await first.untilEnded();
    assert.ok(first.endedCleanly);
    await eventually(() => f.endpoint.stats.streams === 0 && f.endpoint.stats.slots === 0, 3000, 'both released');
    assert.equal(f.endpoint.stats.sessionSubscriptions, 1, 'the session is in its grace period');
    f.hub.notifyToolsChanged(); // id 2, buffered

    // 2. A client that stopped reading (a backlog of 8 KiB frames, more than loopback buffers hold
    // plus a full queue) is replaced: it is dropped at once by the stall guard, before the new one takes its slot.
    const bigs = Array.from({ length: 200 }, (_, i) => `file:///${String(i).padStart(3, '0')}/${'s'.repeat(8 * 1024 - 16)}`);
    const stalled = rawGet(f.url, sid, { 'Last-Event-ID': '2' });
    stalled.pause();
    await eventually(() => f.endpoint.stats.streams === 1, 3000, 'the stalled stream');
    for (const [i, uri] of bigs.entries()) assert.equal((await call(f.url, sid, i, 'resources/subscribe', { uri })).body, ok(i));
    // One round per tick: the first rounds fill the socket (demand false), the rest wait in the
    // stream's queue (bounded by maxStreamQueueBytes) or are dropped.
    for (let round = 0; round < 8; round++) {
      for (const uri of bigs) f.hub.notifyResourceUpdated(uri);
      await new Promise((resolve) => setImmediate(resolve));
    }
    await sleep(50);
    let stalledClosed = false;
    stalled.on('close', () => (stalledClosed = true));
    const slots = f.endpoint.slots;
    const acquire = slots.tryAcquire.bind(slots);
    const inUseAtAcquire: number[] = [];
    slots.tryAcquire = () => {
      inUseAtAcquire.push(slots.inUse);
      return acquire();
    };
    const third = GetStream.open(f.url, sid, { lastEventId: '2' });
    await third.response;
    assert.deepEqual(inUseAtAcquire, [0], 'the replaced stream gave its slot back before the new one took one: never two for one session');
    assert.equal(f.endpoint.stats.slots, 1);
    // It reads again: it finds its connection dropped.
    stalled.resume();
    await eventually(() => stalledClosed, 3000, 'the stalled replaced client to find its connection dropped');
    f.hub.notifyPromptsChanged();
    await third.until((s) => s.text.includes('prompts/list_changed'), 3000, 'the third stream to be live');
    // 1600 updates were stamped after id 2; the replay buffer (100 frames) holds the newest of them.
    const last = 2 + 8 * bigs.length;
    assert.match(third.withoutKeepAlives, new RegExp(`^event: message\nid: ${last - 99}\n`), 'the replay starts at the oldest frame kept');
    assert.equal(third.primedWith, '2', 'primed with its own Last-Event-ID');
    assert.equal(third.frames.length, 101, 'the 100 kept updates the stalled client missed, then the sentinel');
    third.destroy();
    await assertReleased(f, [sid]);
  });
});

/* ----------------------------------------------------------------------------------------------
 * Change sources that fail
 * ------------------------------------------------------------------------------------------- */

/** A `db://` provider whose sources are Subjects the test drives; `mode` picks how `changes` fails at subscribe. */
function drivenProvider() {
  const sources = new Map<string, Subject<void>>();
  const calls: string[] = [];
  const provider: ResourceProvider = {
    subscribable: (uri) => uri.startsWith('db://'),
    canRead: () => true,
    changes: (uri) => {
      calls.push(uri);
      if (uri === 'db://throws') throw new Error('secret: changes threw');
      if (uri === 'db://errors-at-once') return new Observable((s) => s.error(new Error('secret: errored at subscribe')));
      if (uri === 'db://emits-then-errors') {
        return new Observable((s) => {
          s.next(undefined);
          s.error(new Error('secret: emitted, then errored at subscribe'));
        });
      }
      const subject = new Subject<void>();
      sources.set(uri, subject);
      return subject;
    },
  };
  return { provider, sources, calls };
}

test('a change source that errors or completes later: the GET stream stays up for the others, the error is on channels.error, the URI stays on the record and is restored on the next GET', async () => {
  await collecting<ErrorEvent>(channels.error, async (errors) => {
    const store = new MemorySessionStore();
    const { provider, sources } = drivenProvider();
    await withServer({ sessionStore: store, resourceProviders: [provider] }, async (f) => {
      const sid = await session(f.url);
      const get = GetStream.open(f.url, sid);
      await eventually(() => f.endpoint.stats.streams === 1, 3000, 'the stream');
      for (const [i, uri] of ['db://a', 'db://b', 'db://c'].entries()) assert.equal((await call(f.url, sid, i, 'resources/subscribe', { uri })).body, ok(i));
      assert.equal(f.endpoint.stats.sessionSubscriptions, 4);

      sources.get('db://a')!.error(new Error('secret: the feed broke'));
      sources.get('db://c')!.complete();
      assert.equal(f.endpoint.stats.sessionSubscriptions, 2, 'a and c are no longer live');
      assert.deepEqual(
        errors.map((e) => [e.where, (e.error as Error).message]),
        [['source', 'secret: the feed broke']],
        'the error is reported once; a completion is not an error',
      );
      sources.get('db://b')!.next();
      f.hub.notifyToolsChanged();
      await get.untilId(2);
      assert.equal(get.withoutKeepAlives, frameText(1, updatedMessage('db://b')) + frameText(2, listChangedMessage('tools')));
      assert.ok(!get.text.includes('secret'), 'the error never reaches the client');
      assert.equal(get.ended, false, 'the stream stays up');
      assert.deepEqual(store.get(sid)!.subscriptions, ['db://a', 'db://b', 'db://c'], 'the failed URIs stay on the record');

      // The next GET restores what is on the record and not live: a and c, with fresh sources.
      const next = GetStream.open(f.url, sid, { lastEventId: '2' });
      await get.untilEnded();
      await eventually(() => f.endpoint.stats.sessionSubscriptions === 4, 3000, 'a and c restored');
      sources.get('db://a')!.next();
      sources.get('db://c')!.next();
      await next.untilId(4);
      assert.equal(next.withoutKeepAlives, frameText(3, updatedMessage('db://a')) + frameText(4, updatedMessage('db://c')));
      next.destroy();
      await assertReleased(f, [sid]);
    });
  });
});

test('a change source that throws or errors as it is subscribed → -32603 "failed to subscribe: <uri>", nothing live or recorded, the stream untouched', async () => {
  await collecting<ErrorEvent>(channels.error, async (errors) => {
    const store = new MemorySessionStore();
    const { provider } = drivenProvider();
    await withServer({ sessionStore: store, resourceProviders: [provider] }, async (f) => {
      const sid = await session(f.url);
      const get = GetStream.open(f.url, sid);
      await eventually(() => f.endpoint.stats.streams === 1, 3000, 'the stream');
      for (const [i, uri] of ['db://throws', 'db://errors-at-once'].entries()) {
        const reply = await call(f.url, sid, i, 'resources/subscribe', { uri });
        assert.equal(reply.status, 200);
        assert.equal(reply.body, errorBody(i, -32603, `failed to subscribe: ${uri}`));
      }
      assert.equal(errors.length, 2);
      assert.ok(errors.every((e) => e.where === 'source'));
      assert.deepEqual(store.get(sid)!.subscriptions, []);
      assert.equal(f.endpoint.stats.sessionSubscriptions, 1);
      f.hub.notifyToolsChanged();
      await get.untilId(1);
      assert.equal(get.withoutKeepAlives, frameText(1, listChangedMessage('tools')));
      get.destroy();
      await assertReleased(f, [sid]);
    });
  });
});

// a source that emits synchronously and then errors as it is subscribed gets
// -32603, but the value it emitted has already been pushed: the client hears of a URI whose
// subscribe failed (and the frame takes an event id in the replay buffer).
test('a subscribe answered -32603 sends no notification for its URI', async () => {
  const { provider } = drivenProvider();
  await withServer({ resourceProviders: [provider] }, async (f) => {
    const sid = await session(f.url);
    const get = GetStream.open(f.url, sid);
    await eventually(() => f.endpoint.stats.streams === 1, 3000, 'the stream');
    const reply = await call(f.url, sid, 1, 'resources/subscribe', { uri: 'db://emits-then-errors' });
    assert.equal(reply.body, errorBody(1, -32603, 'failed to subscribe: db://emits-then-errors'));
    f.hub.notifyToolsChanged();
    await get.until((s) => s.text.includes('tools/list_changed'));
    assert.equal(get.withoutKeepAlives, frameText(1, listChangedMessage('tools')));
    get.destroy();
  });
});

/* ----------------------------------------------------------------------------------------------
 * Principals and tokens
 * ------------------------------------------------------------------------------------------- */

/** The principal from `x-user`; a token lifetime in ms from `x-ttl` (≤ 0: expired, refused with 401 when `strict`). */
const byHeader =
  (strict: boolean) =>
  (request: EndpointRequest): AuthInfo => {
    const ttl = request.header('x-ttl');
    if (strict && ttl !== undefined && Number(ttl) <= 0) throw new AuthError('the token has expired', 'Bearer error="invalid_token"');
    return { principal: `user:${request.header('x-user') ?? 'anon'}`, scopes: new Set(), ...(ttl === undefined ? {} : { expiresAt: Date.now() + Number(ttl) }) };
  };

test("one principal can neither see nor end another's session: 403 for POST, GET and DELETE with its id; the owner's stream is unaffected", async () => {
  const store = new MemorySessionStore();
  await withServer({ sessionStore: store, authenticate: byHeader(false) }, async (f) => {
    const alice = { 'x-user': 'alice' };
    const mallory = { 'x-user': 'mallory' };
    const sid = await session(f.url, alice);
    const get = GetStream.open(f.url, sid, { headers: alice });
    await eventually(() => f.endpoint.stats.streams === 1, 3000, "alice's stream");
    assert.equal((await call(f.url, sid, 1, 'resources/subscribe', { uri: 'file:///alice' }, alice)).body, ok(1));
    f.hub.notifyResourceUpdated('file:///alice');
    await get.untilId(1);
    const forbidden = errorBody(null, -32600, 'this session belongs to another principal');
    const attempts: [string, string | undefined, Record<string, string>][] = [
      ['POST', rpcBody(2, 'resources/unsubscribe', { uri: 'file:///alice' }), {}],
      ['POST', rpcBody(3, 'resources/subscribe', { uri: 'file:///mallory' }), {}],
      ['POST', rpcBody(4, 'ping'), {}],
      ['POST', JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), {}],
      ['GET', undefined, { 'last-event-id': '0' }],
      ['GET', undefined, {}],
      ['DELETE', undefined, {}],
    ];
    for (const [method, body, extra] of attempts) {
      const reply = await send(f.url, method, sessionHeaders(sid, { ...mallory, ...extra, accept: 'application/json, text/event-stream' }), body);
      assert.equal(reply.status, 403, `${method} ${body}`);
      assert.equal(reply.body, forbidden);
      assert.ok(!reply.body.includes('alice'));
    }
    assert.equal(get.ended, false, "alice's stream was neither replaced nor ended");
    assert.deepEqual(store.get(sid)!.subscriptions, ['file:///alice']);
    assert.deepEqual(f.endpoint.stats, { streams: 1, slots: 1, principals: 0, sessions: 1, sessionSubscriptions: 2 });
    f.hub.notifyResourceUpdated('file:///alice');
    f.hub.notifyResourceUpdated('file:///mallory');
    f.hub.notifyToolsChanged();
    await get.untilId(3);
    assert.equal(
      get.withoutKeepAlives,
      frameText(1, updatedMessage('file:///alice')) + frameText(2, updatedMessage('file:///alice')) + frameText(3, listChangedMessage('tools')),
      'no replay injected, no frame for mallory',
    );
    get.destroy();
    await assertReleased(f, [sid], alice);
  });
});

test('a GET stream never outlives its token: it ends at expiry; a reconnect with an expired token → 401 (a hook that checks expiry)', async () => {
  await withServer({ authenticate: byHeader(true), keepAliveInterval: 60_000 }, async (f) => {
    const sid = await session(f.url);
    const started = Date.now();
    const get = GetStream.open(f.url, sid, { headers: { 'x-ttl': '150' } });
    await eventually(() => f.endpoint.stats.streams === 1, 3000, 'the stream');
    f.hub.notifyToolsChanged();
    await get.untilId(1);
    await get.untilEnded(2000);
    const lived = Date.now() - started;
    assert.ok(get.endedCleanly, 'the server ended the response');
    assert.ok(lived >= 140 && lived < 1000, `lived ${lived} ms`);
    assert.equal(get.withoutKeepAlives, frameText(1, listChangedMessage('tools')));
    await eventually(() => f.endpoint.stats.streams === 0 && f.endpoint.stats.slots === 0, 3000, 'released');
    f.hub.notifyToolsChanged(); // id 2, buffered in the grace period

    for (const method of ['GET', 'POST', 'DELETE']) {
      const reply = await send(f.url, method, sessionHeaders(sid, { 'x-ttl': '-1', 'last-event-id': '0' }), method === 'POST' ? rpcBody(1, 'ping') : undefined);
      assert.equal(reply.status, 401, method);
      assert.equal(reply.headers['www-authenticate'], 'Bearer error="invalid_token"');
      assert.equal(reply.body, errorBody(null, -32600, 'unauthorized: the token has expired'));
    }
    assert.equal(f.endpoint.stats.streams, 0);
    // A fresh token gets the replay.
    const fresh = GetStream.open(f.url, sid, { lastEventId: '1', headers: { 'x-ttl': '60000' } });
    await fresh.untilId(2);
    assert.equal(fresh.withoutKeepAlives, frameText(2, listChangedMessage('tools')));
    fresh.destroy();
    await assertReleased(f, [sid]);
  });
});

// with a hook that does not refuse expired credentials itself (it reports
// `expiresAt` in the past), a GET still opens and writes the session's buffered frames before the
// expiry ends it a tick later: a stream outlives its token by its replay.
test('a GET whose token has already expired gets no frame (not even the replay)', async () => {
  await withServer({ authenticate: byHeader(false), keepAliveInterval: 60_000 }, async (f) => {
    const sid = await session(f.url);
    const get = GetStream.open(f.url, sid);
    await eventually(() => f.endpoint.stats.streams === 1, 3000, 'the stream');
    f.hub.notifyToolsChanged();
    await get.untilId(1);
    get.destroy();
    await eventually(() => f.endpoint.stats.streams === 0, 3000, 'released');
    const expired = GetStream.open(f.url, sid, { lastEventId: '0', headers: { 'x-ttl': '-1000' } });
    await expired.untilEnded(2000);
    assert.equal(expired.withoutKeepAlives, '', 'nothing for an expired token');
    await assertReleased(f, [sid]);
  });
});

// a legacy GET stream is bounded by nothing but its token, DELETE, eviction and
// shutdown — not by maxStreamLifetime. Its live subscriptions are authorized once and never again
// while it stays up (a restore on the next GET re-runs canRead), so a revoked permission can go on
// delivering for as long as the connection lasts.
test('a GET stream ends at maxStreamLifetime (the client reconnects with Last-Event-ID and is re-authorized)', async () => {
  await withServer({ maxStreamLifetime: 200, keepAliveInterval: 50 }, async (f) => {
    const sid = await session(f.url);
    const get = GetStream.open(f.url, sid);
    await get.untilEnded(1500);
    assert.ok(get.endedCleanly, 'the server ended the stream at its lifetime');
    await assertReleased(f, [sid]);
  });
});

/* ----------------------------------------------------------------------------------------------
 * Shutdown
 * ------------------------------------------------------------------------------------------- */

test('endpoint.close() ends every GET stream cleanly and releases everything; a later GET → 503', async () => {
  await withServer({}, async (f) => {
    const sids = [await session(f.url), await session(f.url), await session(f.url)];
    const streams = sids.map((sid) => GetStream.open(f.url, sid));
    await eventually(() => f.endpoint.stats.streams === 3, 3000, 'three streams');
    for (const [i, sid] of sids.entries()) assert.equal((await call(f.url, sid, i, 'resources/subscribe', { uri: `file:///${i}` })).body, ok(i));
    f.hub.notifyToolsChanged();
    await Promise.all(streams.map((s) => s.untilId(1)));
    assert.ok(f.scheduler.pending > 0);

    f.endpoint.close();
    await Promise.all(streams.map((s) => s.untilEnded()));
    for (const s of streams) {
      assert.ok(s.endedCleanly, 'ended by the server, not cut');
      assert.equal(s.withoutKeepAlives, frameText(1, listChangedMessage('tools')));
    }
    await eventually(() => f.endpoint.stats.slots === 0, 3000, 'slots released');
    assert.deepEqual(f.endpoint.stats, { ...ZERO, sessions: 3 }, 'the sessions stay on record; nothing live');
    assert.deepEqual(f.hub.size, { topics: 0, subscriptions: 0 });
    assert.equal(f.scheduler.pending, 0, 'no keep-alive, grace or prune timer left');

    const later = await send(f.url, 'GET', sessionHeaders(sids[0]!, { accept: 'text/event-stream' }));
    assert.equal(later.status, 503);
    assert.equal(later.json.error.code, -32000);
    assert.equal(f.endpoint.stats.slots, 0);
  });
});

test.run();
