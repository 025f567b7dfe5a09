// The machine-wide seams of mcp-rx-streams/cluster with the primary and its workers in this process
// (spec/helpers/cluster.ts: every IPC message a JSON copy delivered in a later turn, in order): each
// worker a real Hub + McpEndpoint on its own loopback port, read byte for byte. Exactly-once and
// in-order delivery across workers, the machine's maxStreams and per-principal cap, a legacy session
// served by any worker and replayed on another, the machine's session caps, a worker's death, the
// lease, and the revoke seam. spec/cluster/serve.spec.ts does the same with real processes.
import { strict as assert } from 'node:assert';
import http from 'node:http';
import { test } from 'uvu';
import { eventually, listenBody, LISTEN_HEADERS, post, SseConnection } from '../helpers/http.js';
import { call, frameText, GetStream, initialize, listChangedMessage, nextTurn, sleep, updatedMessage } from '../helpers/legacy.js';
import { startMachine, type TestMachine } from '../helpers/cluster.js';

const count = (text: string, part: string) => text.split(part).length - 1;
const meta = (id: number) => `"_meta":{"io.modelcontextprotocol/subscriptionId":${id}}`;
const frame = (json: string) => `event: message\ndata: ${json}\n\n`;
const ack = (id: number, notifications: string) => frame(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":${notifications},${meta(id)}}}`);
const closing = (id: number, reason: string) =>
  frame(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":${id},"reason":"${reason}",${meta(id)}}}`) +
  frame(`{"jsonrpc":"2.0","id":${id},"result":{"resultType":"complete",${meta(id)}}}`);

async function listen(url: string, id: number, uris: readonly string[], options: http.RequestOptions = {}): Promise<SseConnection> {
  const conn = await SseConnection.open(url, listenBody(id, { resourceSubscriptions: uris }), { ...LISTEN_HEADERS }, options);
  await conn.until((c) => c.text.includes('acknowledged'), 3000, `the ack of listen ${id}`);
  return conn;
}

let machine: TestMachine | undefined;
test.after.each(async () => {
  await machine?.close();
  machine = undefined;
});

test('a change published on any worker reaches every matching stream on every worker exactly once, in order per publisher', async () => {
  machine = await startMachine(3, { maxListensPerPrincipal: 100 });
  const [a, b, c] = machine.workers;
  const uris = Array.from({ length: 40 }, (_, i) => `file:///x/${i}`);
  const streams = await Promise.all([a!, b!, c!, a!, b!].map((w, i) => listen(w.url, i + 1, uris)));
  // Two publishers interleaved, one publish per turn (identical ones in a turn would be one frame).
  for (let i = 0; i < 20; i++) {
    a!.hub.notifyResourceUpdated(uris[i]!);
    b!.hub.notifyResourceUpdated(uris[20 + i]!);
    await nextTurn();
  }
  await sleep(100);
  for (const [n, stream] of streams.entries()) {
    const heard = [...stream.text.matchAll(/"uri":"(file:\/\/\/x\/\d+)"/g)].map((m) => m[1]!);
    assert.equal(heard.length, 40, `stream ${n + 1} heard ${heard.length}: ${heard.join(' ')}`);
    assert.equal(new Set(heard).size, 40, `stream ${n + 1}: a change twice`);
    assert.deepEqual(heard.filter((uri) => Number(uri.split('/').pop()) < 20), uris.slice(0, 20), "a's order");
    assert.deepEqual(heard.filter((uri) => Number(uri.split('/').pop()) >= 20), uris.slice(20), "b's order");
  }
  assert.equal(machine.primary.stats.hubEvents, 40);
  for (const stream of streams) stream.destroy();
});

test('maxStreams is the machine\'s: with 4 and two workers the fifth stream anywhere gets 503, a listen or a GET; a place freed on one is taken on the other', async () => {
  machine = await startMachine(2, { maxStreams: 4, maxListensPerPrincipal: 10 });
  const [a, b] = machine.workers;
  const held = [await listen(a!.url, 1, ['file:///a']), await listen(b!.url, 2, ['file:///a']), await listen(a!.url, 3, ['file:///a'])];
  const { sessionId } = await initialize(b!.url);
  const get = GetStream.open(b!.url, sessionId);
  await get.until((s) => s.primedWith !== undefined, 3000, 'the GET stream');
  assert.equal(machine.primary.stats.slots, 4);
  for (const url of [a!.url, b!.url]) {
    const refused = await post(url, listenBody(9, { toolsListChanged: true }));
    assert.equal(refused.status, 503, refused.body);
    assert.match(refused.body, /maxStreams/);
  }
  const { sessionId: other } = await initialize(a!.url, { id: 2 });
  const refusedGet = GetStream.open(a!.url, other);
  assert.equal((await refusedGet.response).statusCode, 503);
  held[1]!.destroy(); // on b
  await sleep(100);
  const taken = await listen(a!.url, 5, ['file:///a']);
  assert.equal(machine.primary.stats.slots, 4);
  for (const conn of [...held, taken]) conn.destroy();
  get.destroy();
});

test("the per-principal cap is the machine's: a principal's third listen, on another worker, supersedes its oldest (byte-exact closing frames)", async () => {
  machine = await startMachine(2, { maxListensPerPrincipal: 2 });
  const [a, b] = machine.workers;
  const from = { localAddress: '127.0.0.7' };
  const oldest = await listen(a!.url, 1, ['file:///a'], from);
  const newer = await listen(a!.url, 2, ['file:///a'], from);
  const other = await listen(b!.url, 3, ['file:///a'], { localAddress: '127.0.0.8' });
  const third = await listen(b!.url, 4, ['file:///a'], from);
  await oldest.until((c) => c.ended, 3000, 'the oldest stream superseded');
  const acked = (id: number) => ack(id, '{"resourceSubscriptions":["file:///a"]}');
  assert.equal(oldest.text, acked(1) + closing(1, 'superseded'));
  await sleep(50);
  assert.equal(newer.text, acked(2));
  assert.equal(other.text, acked(3), 'another principal is never touched');
  assert.equal(third.text, acked(4));
  for (const conn of [newer, other, third]) conn.destroy();
});

test('a legacy session on any worker: a subscribe POSTed on one reaches the GET on the other; a reconnect there replays exactly the missed frames, then live', async () => {
  machine = await startMachine(2, {}, { sessionGracePeriod: 60_000 });
  const [a, b] = machine.workers;
  const uri = 'file:///notes.txt';
  const { sessionId } = await initialize(a!.url);
  let get = GetStream.open(a!.url, sessionId);
  await get.until((s) => s.primedWith !== undefined, 3000, 'the GET stream on a');
  await sleep(50); // the claim reaches the record
  assert.deepEqual((await call(b!.url, sessionId, 2, 'resources/subscribe', { uri })).json, { jsonrpc: '2.0', id: 2, result: {} });
  await sleep(50);
  for (let i = 0; i < 3; i++) {
    b!.hub.notifyResourceUpdated(uri);
    await nextTurn();
  }
  await get.untilId(3);
  assert.equal(get.withoutKeepAlives, frameText(1, updatedMessage(uri)) + frameText(2, updatedMessage(uri)) + frameText(3, updatedMessage(uri)));
  get.destroy();
  await sleep(50);
  // Published while the client is away: logged by a, which holds the subscriptions for the grace period.
  for (let i = 0; i < 4; i++) {
    a!.hub.notifyResourceUpdated(uri);
    await nextTurn();
  }
  await sleep(50);
  get = GetStream.open(b!.url, sessionId, { lastEventId: '3' });
  await get.untilId(7);
  await sleep(100); // a lets go (claimed), b restores the subscription
  b!.hub.notifyResourceUpdated(uri);
  await get.untilId(8);
  await sleep(50);
  let expected = '';
  for (let id = 4; id <= 8; id++) expected += frameText(id, updatedMessage(uri));
  assert.equal(get.withoutKeepAlives, expected, 'exactly the 4 missed frames with their ids, then live, once');
  assert.equal(a!.endpoint.stats.sessionSubscriptions, 0, 'a let go of the session');
  get.destroy();
});

test('a subscribe that arrives on one worker before the session\'s GET opens on another (what an SDK client does right after connect) waits for it and is established there', async () => {
  machine = await startMachine(2);
  const [a, b] = machine.workers;
  const uri = 'file:///notes.txt';
  const { sessionId } = await initialize(a!.url);
  // The subscribe reaches b first; the GET reaches a 100 ms later.
  const subscribed = call(b!.url, sessionId, 2, 'resources/subscribe', { uri });
  await sleep(100);
  const get = GetStream.open(a!.url, sessionId);
  assert.deepEqual((await subscribed).json, { jsonrpc: '2.0', id: 2, result: {} });
  await get.until((s) => s.primedWith !== undefined, 3000, 'the GET stream on a');
  await sleep(100); // the subscribe handed to a is established there
  b!.hub.notifyResourceUpdated(uri);
  await get.untilId(1);
  assert.equal(get.withoutKeepAlives, frameText(1, updatedMessage(uri)));
  get.destroy();
});

test("the session caps are the machine's: maxSessions refuses the next initialize on any worker; maxSessionsPerPrincipal ends that principal's least recently used session wherever its GET is", async () => {
  machine = await startMachine(2, { maxSessions: 2, maxSessionsPerPrincipal: 1 });
  const [a, b] = machine.workers;
  const first = await initialize(a!.url, { headers: {} });
  const get = GetStream.open(a!.url, first.sessionId);
  await get.until((s) => s.primedWith !== undefined, 3000, 'the GET stream');
  // The same principal (127.0.0.1) on the other worker: its first session ends, its GET with it.
  const second = await initialize(b!.url, { id: 2 });
  assert.equal(second.status, 200);
  await get.untilEnded();
  assert.equal((await call(b!.url, first.sessionId, 3, 'ping')).status, 404);
  // Another principal fills the machine; a third one is refused on either worker.
  const other = await new Promise<number>((resolve, reject) => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } });
    const req = http.request(a!.url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, localAddress: '127.0.0.9', agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    req.on('error', reject);
    req.end(body);
  });
  assert.equal(other, 200);
  const refused = await new Promise<{ status: number; body: string; retryAfter: string | undefined }>((resolve, reject) => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } });
    const req = http.request(b!.url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, localAddress: '127.0.0.10', agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, body: text, retryAfter: res.headers['retry-after'] as string | undefined }));
    });
    req.on('error', reject);
    req.end(body);
  });
  assert.equal(refused.status, 503);
  assert.equal(refused.retryAfter, '5');
  assert.equal(refused.body, JSON.stringify({ jsonrpc: '2.0', id: 5, error: { code: -32000, message: 'server is at its session capacity (maxSessions); retry later', data: { retryAfterMs: 5000 } } }));
});

test("a worker that dies: the primary releases its slots and admissions at once; the other worker takes its session up (the re-read signal first); its client reconnects there and gets what the log holds", async () => {
  machine = await startMachine(2, { maxStreams: 2, maxListensPerPrincipal: 10 });
  const [a, b] = machine.workers;
  const uri = 'file:///todo.txt';
  const { sessionId } = await initialize(a!.url);
  const get = GetStream.open(a!.url, sessionId);
  await get.until((s) => s.primedWith !== undefined, 3000, 'the GET stream');
  await call(a!.url, sessionId, 2, 'resources/subscribe', { uri });
  const listening = await listen(a!.url, 7, [uri]);
  for (let i = 0; i < 3; i++) {
    b!.hub.notifyResourceUpdated(uri);
    await nextTurn();
  }
  await get.untilId(3);
  assert.equal(machine.primary.stats.slots, 2);
  const left = new Promise((resolve) => machine!.primary.events$.subscribe((event) => event.kind === 'left' && resolve(event)));
  a!.kill();
  assert.deepEqual(await left, { kind: 'left', worker: 1, pid: 100_001, nodeId: 'm/1', code: null, signal: 'SIGKILL', released: { slots: 2, streams: 1, sessions: 1 } });
  assert.equal(machine.primary.stats.slots, 0);
  // b keeps the session's subscription and list changes live until its client is back (issue 31).
  await eventually(() => b!.endpoint.stats.sessionSubscriptions === 2, 2000, 'b to take the session up');
  // Its clients reconnect to the other worker: the listen opens (its place is free), the session resumes.
  const again = await listen(b!.url, 8, [uri]);
  const resumed = GetStream.open(b!.url, sessionId, { lastEventId: '1' });
  await resumed.untilId(7);
  await sleep(50);
  b!.hub.notifyResourceUpdated(uri);
  await resumed.untilId(8);
  await again.until((c) => c.text.includes('updated'), 3000, 'the live change on the new listen');
  assert.equal(
    resumed.withoutKeepAlives,
    frameText(2, updatedMessage(uri)) +
      frameText(3, updatedMessage(uri)) +
      // What b logged as it took the session up: changes made while nobody held it are not in the log.
      frameText(4, updatedMessage(uri)) +
      frameText(5, listChangedMessage('tools')) +
      frameText(6, listChangedMessage('prompts')) +
      frameText(7, listChangedMessage('resources')) +
      frameText(8, updatedMessage(uri)),
  );
  for (const conn of [listening, again]) conn.destroy();
  resumed.destroy();
});

test('a lease: one worker holds it; it moves to the next the moment the holder dies, and when it lets go', async () => {
  machine = await startMachine(3);
  const [a, b, c] = machine.workers;
  const leases = [a!, b!, c!].map((w) => w.node.lease('/srv/data'));
  await sleep(50);
  assert.deepEqual(leases.map((lease) => lease.held), [true, false, false]);
  a!.kill();
  await sleep(50);
  assert.deepEqual(leases.slice(1).map((lease) => lease.held), [true, false]);
  leases[1]!.close();
  await sleep(50);
  assert.equal(leases[2]!.held, true);
});

test('revoke (the seam for McpEndpoint.revoke): a principal\'s listens end on every worker, others untouched', async () => {
  machine = await startMachine(2, { maxListensPerPrincipal: 10 });
  const [a, b] = machine.workers;
  const from = { localAddress: '127.0.0.11' };
  const streams = [await listen(a!.url, 1, ['file:///a'], from), await listen(b!.url, 2, ['file:///a'], from)];
  const other = await listen(b!.url, 3, ['file:///a'], { localAddress: '127.0.0.12' });
  await b!.node.principals.revoke('addr:127.0.0.11');
  for (const stream of streams) await stream.until((s) => s.ended, 3000, 'the revoked stream to end');
  assert.match(streams[0]!.text, /notifications\/cancelled/);
  await sleep(50);
  assert.equal(other.ended, false);
  assert.equal(a!.node.principals.count('addr:127.0.0.11') + b!.node.principals.count('addr:127.0.0.11'), 0);
  other.destroy();
});

test('McpEndpoint.revoke on one worker ends the principal\'s listens and legacy sessions on every worker (reason revoked); another principal\'s stream goes on', async () => {
  machine = await startMachine(2, { maxListensPerPrincipal: 10 }, { sessionGracePeriod: 60_000 });
  const [a, b] = machine.workers;
  const streams = [await listen(a!.url, 1, ['file:///a']), await listen(b!.url, 2, ['file:///a'])];
  const other = await listen(a!.url, 3, ['file:///a'], { localAddress: '127.0.0.12' });
  const { sessionId } = await initialize(a!.url);
  const get = GetStream.open(a!.url, sessionId);
  await get.until((s) => s.primedWith !== undefined, 3000, 'the GET stream on a');
  await sleep(50);
  // Asked on b: b's own listen and nothing of a's are counted there; a ends its own through the primary.
  assert.deepEqual(await b!.endpoint.revoke('addr:127.0.0.1'), { streams: 1, sessions: 0 });
  for (const [i, stream] of streams.entries()) {
    await stream.until((s) => s.ended, 3000, `revoked stream ${i + 1} to end`);
    assert.ok(stream.text.endsWith(closing(i + 1, 'revoked')), stream.text);
  }
  await get.until((s) => s.ended, 3000, 'the revoked session\'s GET stream to end');
  for (const worker of [a!, b!]) assert.equal((await call(worker.url, sessionId, 9, 'resources/subscribe', { uri: 'file:///a' })).status, 404);
  await sleep(50);
  assert.equal(other.ended, false);
  assert.equal(a!.node.principals.count('addr:127.0.0.1') + b!.node.principals.count('addr:127.0.0.1'), 0);
  other.destroy();
});

test('the primary ends the idle sessions no worker holds (after sessionIdleTimeout), never one whose GET stream a live worker holds', async () => {
  machine = await startMachine(2, { sessionIdleTimeout: 300, sessionPruneInterval: 50 });
  const [a, b] = machine.workers;
  const idle = await initialize(a!.url);
  const held = await initialize(b!.url, { id: 2, headers: {} });
  const get = GetStream.open(b!.url, held.sessionId);
  await get.until((s) => s.primedWith !== undefined, 3000, 'the GET stream');
  assert.equal(machine.primary.stats.sessions, 2);
  await sleep(700);
  assert.equal(machine.primary.stats.sessions, 1, 'the idle session was ended');
  assert.equal((await call(b!.url, idle.sessionId, 3, 'ping')).status, 404);
  assert.equal(a!.endpoint.stats.sessions, 0, 'the worker that created it was told');
  assert.equal(get.ended, false);
  assert.equal((await call(a!.url, held.sessionId, 4, 'ping')).status, 200, 'the session with a live GET stream is served anywhere');
  get.destroy();
});

test('beyond the machine (a fleet): hub events and session commands go out through the primary\'s buses and come in to every worker; a fleet resync reaches every stream', async () => {
  const out: unknown[] = [];
  let deliver: ((event: { topic: 'resource'; uri: string }) => void) | undefined;
  let resync: (() => void) | undefined;
  let command: ((sid: string, c: { kind: 'ended' }) => void) | undefined;
  const bus = { publish: (event: unknown) => void out.push(event), connect: (d: never, r: never) => ((deliver = d), (resync = r), () => undefined) };
  const sessionBus = { nodeId: 'fleet', publish: async (sid: string, c: unknown) => void out.push([sid, c]), connect: (d: never) => ((command = d), () => undefined) };
  machine = await startMachine(2, { bus, sessionBus });
  const [a, b] = machine.workers;
  const streams = [await listen(a!.url, 1, ['file:///f']), await listen(b!.url, 2, ['file:///f'])];
  a!.hub.notifyResourceUpdated('file:///f');
  await sleep(50);
  assert.deepEqual(out, [{ topic: 'resource', uri: 'file:///f' }], "a worker's event goes out once");
  deliver!({ topic: 'resource', uri: 'file:///f' }); // from another machine
  await sleep(50);
  for (const stream of streams) assert.equal(count(stream.text, '"method":"notifications/resources/updated"'), 2, stream.text);
  resync!();
  await sleep(50);
  for (const stream of streams) assert.equal(count(stream.text, '"method":"notifications/resources/updated"'), 3, 'a resync re-reads every subscribed URI');
  assert.equal(out.length, 1, 'events from the fleet and resyncs are not sent back out');
  const { sessionId } = await initialize(a!.url);
  const get = GetStream.open(a!.url, sessionId);
  await get.until((s) => s.primedWith !== undefined, 3000, 'the GET stream');
  await sleep(50);
  assert.deepEqual(out.slice(1), [[sessionId, { kind: 'claimed', node: 'm/1' }]], 'the claim goes out to the fleet');
  command!(sessionId, { kind: 'ended' }); // another machine ended it
  await get.untilEnded();
  for (const stream of streams) stream.destroy();
});

test.run();
