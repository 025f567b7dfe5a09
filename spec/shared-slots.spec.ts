// A stream-slot pool other processes share (`SharedSlots`: the workers of a cluster count their
// places through the primary) is asked asynchronously, and the endpoint waits for its answer
// before a listen is admitted or a GET stream opens: the pool's own cap is the only one, its
// "full" is a 503 before anyone is superseded, a GET that waits is replaced by a newer GET of its
// session like one that is opening, and a place granted to an endpoint that closed meanwhile is
// given back. The pool here is an in-process fake whose every answer waits for the test.
import { strict as assert } from 'node:assert';
import { test } from 'uvu';
import { type Slot, StreamSlots } from '../lib/slots.js';
import { listenBody, post, SseConnection, startEndpoint } from './helpers/http.js';
import { deferred, type Deferred, GetStream, initialize, sleep } from './helpers/legacy.js';

/** A shared pool of `capacity` places whose `acquire` waits until the test lets it answer. */
class FakeSharedSlots extends StreamSlots {
  held = 0;
  asked = 0;
  /** Each pending `acquire`: resolve it with `grant()`. */
  readonly waiting: Deferred<void>[] = [];
  /** Answer at once (no waiting). */
  immediate = false;

  override tryAcquire(): Slot | undefined {
    throw new Error('a shared pool is taken with acquire(), never tryAcquire()');
  }

  override get inUse(): number {
    return this.held;
  }

  async acquire(): Promise<Slot | undefined> {
    this.asked++;
    if (!this.immediate) {
      const gate = deferred<void>();
      this.waiting.push(gate);
      await gate.promise;
    }
    if (this.held >= this.capacity) return undefined;
    this.held++;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.held--;
      },
    };
  }

  /** Lets the oldest pending `acquire` answer. */
  async grant(): Promise<void> {
    for (let i = 0; this.waiting.length === 0; i++) {
      if (i === 200) throw new Error('no acquire() came');
      await sleep(5);
    }
    this.waiting.shift()!.resolve();
    await sleep(20);
  }
}

const FULL = JSON.stringify({ jsonrpc: '2.0', id: 3, error: { code: -32000, message: 'server is at its stream capacity (maxStreams); retry later', data: { retryAfterMs: 5000 } } });

test('a listen waits for the shared pool: its place is the slot it holds; a full pool is a 503 and the principal is not superseded', async () => {
  const slots = new FakeSharedSlots(2);
  const server = await startEndpoint({ slots, maxListensPerPrincipal: 1 });
  try {
    const opening = SseConnection.open(server.url, listenBody(1, { toolsListChanged: true }));
    await sleep(50);
    assert.equal(server.endpoint.stats.streams, 0, 'nothing is admitted before the pool answers');
    assert.equal(server.endpoint.principals.count('127.0.0.1'), 0);
    await slots.grant();
    const first = await opening;
    await first.until((c) => c.messages.length === 1, 3000, 'the ack');
    assert.equal(slots.held, 1);
    slots.held = 2; // the other processes took the last place
    const refused = post(server.url, listenBody(3, { toolsListChanged: true }));
    await slots.grant();
    const answer = await refused;
    assert.equal(answer.status, 503);
    assert.equal(answer.body, FULL);
    await sleep(50);
    assert.doesNotMatch(first.text, /superseded/, 'refused before anyone was superseded (M9)');
    first.destroy();
    await sleep(50);
    assert.equal(slots.held, 1, 'the ended stream gave its place back to the pool');
  } finally {
    await server.close();
  }
});

test('a legacy GET waits for the shared pool; full → 503; a newer GET of the session replaces one that waits', async () => {
  const slots = new FakeSharedSlots(1);
  const server = await startEndpoint({ slots });
  try {
    const { sessionId } = await initialize(server.url);
    const waiting = GetStream.open(server.url, sessionId);
    await sleep(50);
    assert.equal(slots.waiting.length, 1, 'the GET asked the pool');
    const newer = GetStream.open(server.url, sessionId);
    await sleep(50);
    await slots.grant(); // the first GET's place: it was replaced while it waited
    await waiting.untilEnded();
    assert.equal(waiting.res?.statusCode, 200);
    assert.equal(waiting.text, '', 'replaced while it waited: it ends at once, with nothing');
    await slots.grant(); // the newer GET's place
    await newer.until((s) => s.primedWith !== undefined, 3000, 'the priming event');
    assert.equal(slots.held, 1, 'the replaced GET gave its place back');
    const third = await initialize(server.url, { id: 2 });
    const refused = GetStream.open(server.url, third.sessionId);
    await slots.grant();
    assert.equal((await refused.response).statusCode, 503);
    newer.destroy();
  } finally {
    await server.close();
  }
});

test('a place granted after the endpoint closed is given back, and the request told it is shutting down', async () => {
  const slots = new FakeSharedSlots(4);
  const server = await startEndpoint({ slots });
  try {
    const { sessionId } = await initialize(server.url);
    const listen = post(server.url, listenBody(1, { toolsListChanged: true }));
    const get = GetStream.open(server.url, sessionId);
    await sleep(50);
    server.endpoint.close();
    await slots.grant();
    await slots.grant();
    assert.equal((await listen).status, 503);
    assert.equal((await get.response).statusCode, 503);
    assert.equal(slots.held, 0);
  } finally {
    await server.close();
  }
});

test.run();
