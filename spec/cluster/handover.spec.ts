// Nothing lost across a handover, on the workers of one machine (issue 31, items 2–4): the primary
// and two workers in this process (spec/helpers/cluster.ts: IPC as JSON copies in later turns),
// each worker a real endpoint on a loopback port, read by raw legacy clients ("id:" lines).
// - A worker stopped gracefully hands its sessions' subscriptions to the other before it lets go;
//   one that dies has them taken up by the other at once (the primary sees it exit), which logs
//   the re-read signal for the moment nobody held them: a reconnect with Last-Event-ID replays
//   every change made meanwhile, with consecutive ids.
// - A subscribe served by one worker while its GET opens on the other answers {} in every order,
//   also when the claim reaches the first worker while it reads the record.
// - A GET reconnecting on another worker while the old one still logs (it heard the claim late)
//   gets every id in order; ids the log no longer holds are announced with the re-read signal.
import { strict as assert } from 'node:assert';
import { test } from 'uvu';
import { ReplayBuffer } from '../../lib/replayBuffer.js';
import { eventually } from '../helpers/http.js';
import { updated } from '../helpers/frames.js';
import { assertConsecutive, Changes, collapsed, gatedStore, heard, lateClaims, opened, quiet, report, rereadOf } from '../helpers/handover.js';
import { call, frameText, GetStream, initialize, listChangedMessage, nextTurn, sleep, updatedMessage } from '../helpers/legacy.js';
import { startMachine, type TestMachine } from '../helpers/cluster.js';

const X = 'file:///srv/x.txt';
const Y = 'file:///srv/y.txt';
const Z = 'file:///srv/z.txt';

let machine: TestMachine | undefined;
let changes: Changes | undefined;
test.after.each(async () => {
  await changes?.stop();
  changes = undefined;
  await machine?.close();
  machine = undefined;
});

/** A session of worker `a` with its GET stream there, subscribed to X, Y and Z, and the stream. */
async function sessionOn(url: string): Promise<{ sessionId: string; get: GetStream }> {
  const { sessionId } = await initialize(url);
  const get = GetStream.open(url, sessionId);
  await get.until(opened, 3000, 'the GET stream');
  for (const [i, uri] of [X, Y, Z].entries()) assert.deepEqual((await call(url, sessionId, i + 2, 'resources/subscribe', { uri })).json.result, {});
  return { sessionId, get };
}

test('a worker stopped gracefully while files change: the other takes its session over before it lets go; the reconnect there replays every change, ids consecutive', async () => {
  machine = await startMachine(2, {}, { sessionGracePeriod: 60_000 });
  const [a, b] = machine.workers;
  const { sessionId, get } = await sessionOn(a!.url);
  changes = new Changes([X, Y, Z], (uri) => b!.hub.notifyResourceUpdated(uri));
  await get.untilId(3);
  const seen = get.lastId!;
  await a!.close(); // its GET stream ends (shutdown); its session's subscriptions go to b first
  await get.untilEnded();
  await sleep(200); // changes while the client is away
  const resumed = GetStream.open(b!.url, sessionId, { lastEventId: String(seen) });
  await sleep(150);
  await changes.stop();
  await sleep(100);
  assertConsecutive(resumed, seen + 1, 'the replay and the live frames');
  // A change logged by both workers while they overlap is heard twice in a row, never missed.
  report('machine, graceful stop', resumed, changes.published.length - seen);
  assert.deepEqual(collapsed(heard(resumed)), changes.published.slice(seen), 'every change made after the last one the client saw');
  resumed.destroy();
});

test('a worker that dies while files change: the other takes its session up at once with the re-read signal; the reconnect replays it and every later change, ids consecutive', async () => {
  machine = await startMachine(2, {}, { sessionGracePeriod: 60_000 });
  const [a, b] = machine.workers;
  const { sessionId, get } = await sessionOn(a!.url);
  changes = new Changes([X, Y, Z], (uri) => b!.hub.notifyResourceUpdated(uri));
  await get.untilId(3);
  a!.kill();
  await get.untilEnded();
  const seen = get.lastId!;
  // Taken up: its three URIs and the list changes are live on b (no GET stream there yet).
  await eventually(() => b!.endpoint.stats.sessionSubscriptions === 4, 2000, 'b to take the session up');
  const from = changes.published.length;
  await sleep(200);
  const resumed = GetStream.open(b!.url, sessionId, { lastEventId: String(seen) });
  await sleep(150);
  await changes.stop();
  await sleep(100);
  assertConsecutive(resumed, seen + 1, 'the replay and the live frames');
  const got = heard(resumed);
  const reread = got.indexOf('notifications/tools/list_changed') - 3;
  assert.ok(reread >= 0, `the re-read signal: ${got.join(' ')}`);
  assert.deepEqual(got.slice(reread, reread + 6), rereadOf([X, Y, Z]), 'resources/updated for each subscribed URI, list_changed for each list');
  const after = collapsed(got.slice(reread + 6));
  report('machine, killed', resumed, changes.published.length - seen, {});
  assert.deepEqual(after.slice(-(changes.published.length - from)), changes.published.slice(from), 'every change made after the take-up, in order');
  resumed.destroy();
});

test('a subscribe on one worker while its GET opens on the other, the claim reaching it while it reads the record: {} and live there', async () => {
  const gates: ReturnType<typeof gatedStore>[] = [];
  machine = await startMachine(2, {}, (i, node) => {
    gates[i] = gatedStore(node.sessionStore);
    return { sessionStore: gates[i]!.store };
  });
  const [a, b] = machine.workers;
  const { sessionId } = await initialize(a!.url);
  // The subscribe's own read of the record (after the request's) answers only once b has claimed.
  const read = gates[0]!.holdGet(2);
  const subscribed = quiet(call(a!.url, sessionId, 2, 'resources/subscribe', { uri: X }));
  await read.reached;
  const get = GetStream.open(b!.url, sessionId);
  await get.until(opened, 3000, 'the GET stream on b');
  await eventually(() => a!.endpoint.stats.sessions === 0, 2000, 'a to hear the claim');
  read.release();
  assert.deepEqual((await subscribed).json, { jsonrpc: '2.0', id: 2, result: {} });
  await eventually(() => b!.endpoint.stats.sessionSubscriptions === 2, 2000, 'the subscription on b');
  a!.hub.notifyResourceUpdated(X);
  await get.untilId(1);
  assert.equal(get.withoutKeepAlives, frameText(1, updatedMessage(X)));
  get.destroy();
});

test('a subscribe on one worker while its GET opens on the other, in either order and at every moment of the wait: {} and live there', async () => {
  const gates: ReturnType<typeof gatedStore>[] = [];
  machine = await startMachine(2, {}, (i, node) => {
    gates[i] = gatedStore(node.sessionStore);
    return { sessionStore: gates[i]!.store };
  });
  const [a, b] = machine.workers;
  const timings = ['GET first, its claim recorded after the subscribe read the record', 'subscribe first, the GET during its wait', 'GET first'] as const;
  for (const [n, timing] of timings.entries()) {
    const { sessionId } = await initialize(a!.url, { id: 10 + n });
    // The sessions of the earlier rounds keep theirs in their grace period: this one's are 2 more.
    const held = b!.endpoint.stats.sessionSubscriptions;
    let get: GetStream;
    let subscribed: ReturnType<typeof call>;
    if (timing === 'GET first, its claim recorded after the subscribe read the record') {
      const claim = gates[1]!.holdClaim();
      get = GetStream.open(b!.url, sessionId);
      await claim.reached;
      const read = gates[0]!.holdGet(2);
      subscribed = quiet(call(a!.url, sessionId, 2, 'resources/subscribe', { uri: X }));
      await read.reached;
      read.release();
      await sleep(50);
      claim.release();
    } else if (timing === 'subscribe first, the GET during its wait') {
      subscribed = quiet(call(a!.url, sessionId, 2, 'resources/subscribe', { uri: X }));
      await sleep(100);
      get = GetStream.open(b!.url, sessionId);
    } else {
      get = GetStream.open(b!.url, sessionId);
      await get.until(opened, 3000, 'the GET stream on b');
      subscribed = quiet(call(a!.url, sessionId, 2, 'resources/subscribe', { uri: X }));
    }
    assert.deepEqual((await subscribed).json, { jsonrpc: '2.0', id: 2, result: {} }, timing);
    await get.until(opened, 3000, 'the GET stream on b');
    await eventually(() => b!.endpoint.stats.sessionSubscriptions === held + 2, 3000, `the subscription on b (${timing})`);
    a!.hub.notifyResourceUpdated(X);
    await get.untilId(1);
    assert.equal(get.withoutKeepAlives, frameText(1, updatedMessage(X)), timing);
    get.destroy();
  }
});

test('a reconnect on another worker while the old one still logs (it hears the claim 300 ms late): every id, in order', async () => {
  machine = await startMachine(2, {}, (i, node) => ({ sessionGracePeriod: 60_000, ...(i === 0 ? { sessionBus: lateClaims(node.sessionBus, 300) } : {}) }));
  const [a, b] = machine.workers;
  const { sessionId } = await initialize(a!.url);
  const get = GetStream.open(a!.url, sessionId);
  await get.until(opened, 3000, 'the GET stream on a');
  await call(a!.url, sessionId, 2, 'resources/subscribe', { uri: X });
  for (const uri of [X, X]) {
    b!.hub.notifyResourceUpdated(uri);
    await nextTurn();
  }
  await get.untilId(2);
  get.destroy();
  await eventually(() => a!.endpoint.stats.streams === 0, 2000, 'a to notice the cut');
  const resumed = GetStream.open(b!.url, sessionId, { lastEventId: '2' });
  await eventually(() => b!.endpoint.stats.sessionSubscriptions === 2, 2000, 'the subscription restored on b');
  // a (grace period) and b both log these: b's stream must not skip a's ids.
  for (let i = 0; i < 4; i++) {
    b!.hub.notifyResourceUpdated(X);
    await sleep(20);
  }
  await sleep(400); // a hears the claim and lets go
  b!.hub.notifyResourceUpdated(X);
  await resumed.untilId(11);
  await sleep(50);
  assert.equal(resumed.primedWith, '2');
  assertConsecutive(resumed, 3, 'the reconnected stream');
  assert.equal(resumed.lastId, 11, 'four changes logged twice, then one by b alone');
  resumed.destroy();
});

test('ids the log no longer holds (another node logged more than it keeps since the stream last wrote): the stream writes what is kept, then the re-read signal', async () => {
  const logs = new Map<string, ReplayBuffer>();
  const eventLog = (id: string) => logs.get(id) ?? (logs.set(id, new ReplayBuffer(3)), logs.get(id)!);
  machine = await startMachine(2, { eventLog });
  const [a, b] = machine.workers;
  const { sessionId } = await initialize(a!.url);
  const get = GetStream.open(b!.url, sessionId);
  await get.until(opened, 3000, 'the GET stream');
  await call(a!.url, sessionId, 2, 'resources/subscribe', { uri: X });
  await eventually(() => b!.endpoint.stats.sessionSubscriptions === 2, 3000, 'the subscription handed to b');
  b!.hub.notifyResourceUpdated(X);
  await get.untilId(1);
  // Five frames logged for the session elsewhere (as a node in its grace period would), 2–6: the
  // log keeps 3, so once the next change (7) is logged it holds 5, 6 and 7, and 2–4 are gone.
  for (let i = 0; i < 5; i++) logs.get(sessionId)!.append(updated(Y));
  b!.hub.notifyResourceUpdated(X);
  await get.untilId(11);
  await sleep(50);
  const expected =
    frameText(1, updatedMessage(X)) +
    frameText(5, updatedMessage(Y)) +
    frameText(6, updatedMessage(Y)) +
    frameText(7, updatedMessage(X)) +
    // The re-read signal: resources/updated for each subscribed URI, list_changed for each list.
    frameText(8, updatedMessage(X)) +
    frameText(9, listChangedMessage('tools')) +
    frameText(10, listChangedMessage('prompts')) +
    frameText(11, listChangedMessage('resources'));
  assert.equal(get.withoutKeepAlives, expected);
  get.destroy();
});

test.run();
