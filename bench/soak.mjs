// Soak: bounded churn and fault injection against one in-process McpEndpoint on node:http
// (issue 7). It proves, at scale and over minutes, what the specs prove case by case: whatever
// clients do, every stream the server opened is closed, and nothing is left behind.
//
// Method. One http.Server serves `dist/` (run `npm run build` first; `npm run soak` does) with short
// keep-alive, lifetime and token times so that every server-side close path runs often. Client
// workers on raw TCP sockets loop over scenarios picked at random, each one a way a real client
// (or network) behaves:
//   normal     listen, read the ack and a few notifications, then hang up
//   abrupt     send the request and reset the socket at a random point (mid-request-body
//              included, before or after the response starts)
//   midwrite   listen to 8 KiB resource URIs (the longest accepted) and reset mid-notification
//   stalled    listen, stop reading while notifications flood, then vanish or wait to be dropped
//   expiring   a token that expires in 50–300 ms: read to the closing frames
//   lifetime   a per-principal burst over the cap (supersede), read to the closing frames
//   garbage    malformed requests (bad JSON, batches, wrong types, oversized bodies)
// and the legacy era (2025-11-25 sessions, DESIGN L1–L10):
//   legacy     initialize, GET, resources/subscribe, read a few pushes, cut the GET abruptly (or
//              stop reading, then vanish), reconnect with Last-Event-ID (the replay must continue
//              the ids with no duplicate), then DELETE the session or abandon it to idle eviction
//   legacyBad  hostile requests in and around a session: unknown/garbage session ids (404),
//              another principal's session (403), wrong params (-32602), batches (400), a GET
//              replaced by a second GET of the same session
// A publisher posts tools/resources changes and 8 KiB resource updates every few milliseconds.
// At the end the workers stop, every client socket is destroyed, and the server must hold nothing:
// endpoint streams, slots and principals at 0, hub topics and registrations at 0, as many stop
// events as start events; then, after one idle timeout and a final prune sweep, no legacy session,
// no session subscription and no session record left (sessions opened, deleted by their client
// and evicted idle are counted through the session store). Heap is read after forced GCs (run with --expose-gc) after a warm-up and
// at the end. The exit code is 1 when anything leaked (or heap grew by more than --max-heap-growth
// MiB, default 32), else 0.
//
//   npm run soak                                   (~150 s + a 5 s idle sweep; builds first)
//   node --expose-gc bench/soak.mjs --duration 20  (seconds)
//   node --expose-gc bench/soak.mjs --workers 300 --duration 600
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { channels, Hub, McpEndpoint, MemorySessionStore, nodeHandler } from '../dist/index.js';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '150' },
    workers: { type: 'string', default: '200' },
    'max-heap-growth': { type: 'string', default: '32' },
  },
});
const DURATION_MS = Number(values.duration) * 1000;
const WORKERS = Number(values.workers);
const MAX_HEAP_GROWTH = Number(values['max-heap-growth']) * 1024 * 1024;
for (const [name, value] of [['--duration', DURATION_MS], ['--workers', WORKERS], ['--max-heap-growth', MAX_HEAP_GROWTH]]) {
  if (!Number.isFinite(value) || value <= 0) {
    console.error(`${name} must be a positive number`);
    process.exit(2);
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const pick = (list) => list[Math.floor(Math.random() * list.length)];
const between = (min, max) => min + Math.floor(Math.random() * (max - min + 1));
const gc = () => {
  if (typeof globalThis.gc !== 'function') return;
  for (let i = 0; i < 3; i++) globalThis.gc();
};
const mib = (bytes) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

/* The server */

const hub = new Hub();
/** The session store, counting records created and deleted (a client's DELETE, or eviction). */
class CountingStore extends MemorySessionStore {
  created = 0;
  deleted = 0;
  create(record) {
    this.created++;
    super.create(record);
  }
  delete(id) {
    if (this.get(id) !== undefined) this.deleted++;
    super.delete(id);
  }
}
const store = new CountingStore();
const SESSION_IDLE_MS = 5_000;
const endpoint = new McpEndpoint({
  hub,
  capabilities: { tools: true, prompts: true, resources: true },
  keepAliveInterval: 250,
  listenIdleTimeout: 3_000,
  maxStreamLifetime: 4_000,
  maxListensPerPrincipal: 4,
  maxStreams: 2_000,
  maxStreamQueue: 32,
  maxBodyBytes: 1024 * 1024,
  sessionStore: store,
  sessionIdleTimeout: SESSION_IDLE_MS,
  sessionGracePeriod: 500,
  sessionPruneInterval: 500,
  replayBufferSize: 100,
  maxSessions: 20_000,
  authenticate: (request) => {
    const ttl = request.header('x-ttl');
    return {
      principal: `p:${request.header('x-principal') ?? 'anon'}`,
      scopes: new Set(),
      ...(ttl === undefined ? {} : { expiresAt: Date.now() + Number(ttl) }),
    };
  },
});
const server = http.createServer(nodeHandler(endpoint));
server.headersTimeout = 5_000;
server.requestTimeout = 10_000;
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const PORT = server.address().port;

const telemetry = { start: 0, stop: 0, drop: 0, reasons: {} };
channels.start.subscribe(() => telemetry.start++);
channels.stop.subscribe((event) => {
  telemetry.stop++;
  telemetry.reasons[event.reason] = (telemetry.reasons[event.reason] ?? 0) + 1;
});
channels.drop.subscribe(() => telemetry.drop++);

/* The publisher */

// The longest URIs accepted (MAX_URI_BYTES, 8 KiB).
const BIG = Array.from({ length: 4 }, (_, i) => `file:///big/${i}/${'b'.repeat(8 * 1024 - 16)}`);
const SMALL = Array.from({ length: 50 }, (_, i) => `file:///small/${i}`);
let publishing = true;
let published = 0;
const publisher = (async () => {
  while (publishing) {
    hub.notifyToolsChanged();
    for (let i = 0; i < 10; i++) hub.notifyResourceUpdated(pick(SMALL));
    hub.notifyResourceUpdated(pick(BIG));
    if (Math.random() < 0.1) hub.notifyResourcesChanged();
    published += 12;
    await sleep(between(2, 8));
  }
})();

/* The clients */

const sockets = new Set();
const counts = {
  normal: 0, abrupt: 0, midwrite: 0, stalled: 0, expiring: 0, lifetime: 0, garbage: 0, legacy: 0, legacyBad: 0,
  acks: 0, closingFrames: 0, refused: 0, errors: 0,
  sessionsOpened: 0, sessionsDeleted: 0, sessionsAbandoned: 0, sessionsIdleBeforeDelete: 0, legacySlow: 0, resumed: 0, replayedFrames: 0, legacyRefused: 0,
};

function listenRequest(id, notifications, headers = {}) {
  const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'subscriptions/listen', params: { notifications } });
  const extra = Object.entries(headers)
    .map(([key, value]) => `${key}: ${value}\r\n`)
    .join('');
  return `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\n${extra}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

/** A raw client socket: resolves `until(predicate)` on received text; `closed` when the server or we end it. */
function connect() {
  const socket = net.connect(PORT, '127.0.0.1');
  sockets.add(socket);
  let text = '';
  let head = '';
  const seen = { ack: false, closed: false };
  let waiter;
  const closed = new Promise((resolve) => {
    socket.on('close', () => {
      sockets.delete(socket);
      waiter?.();
      resolve();
    });
  });
  socket.on('error', () => {});
  socket.setEncoding('latin1');
  socket.on('data', (chunk) => {
    // Markers are looked for across the chunk boundary, then only the tail is kept: an ack that
    // names 256 KiB of URIs, or minutes of notifications, would otherwise pile up here.
    const joined = text + chunk;
    if (!seen.ack && joined.includes('notifications/subscriptions/acknowledged')) seen.ack = true;
    if (!seen.closed && joined.includes('"result":{"resultType":"complete"')) seen.closed = true;
    if (head.length < 256) head = joined.slice(0, 256);
    text = joined.slice(-256);
    waiter?.();
  });
  return {
    socket,
    closed,
    /** Resolves true when `predicate(seen, text)` holds, false when the socket closed or `ms` passed first. */
    until: (predicate, ms = 5_000) =>
      new Promise((resolve) => {
        const deadline = setTimeout(() => done(false), ms);
        const done = (value) => {
          clearTimeout(deadline);
          waiter = undefined;
          resolve(value);
        };
        waiter = () => {
          if (predicate(seen, text, head)) done(true);
          else if (socket.destroyed) done(false);
        };
        waiter();
      }),
  };
}

const acked = (seen) => seen.ack;
const closingDone = (seen) => seen.closed;

/* Legacy sessions (2025-11-25) */

/** One HTTP request on its own connection; resolves with the status, headers and body (or `undefined` if the connection failed). */
function request(method, headers, body) {
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port: PORT, path: '/mcp', method, headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: text }));
      res.on('error', () => resolve(undefined));
    });
    req.on('error', () => resolve(undefined));
    req.end(body);
  });
}

const rpc = (id, method, params) => JSON.stringify(params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params });
const sessionHeaders = (sid, principal, extra = {}) => ({
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-session-id': sid,
  'mcp-protocol-version': '2025-11-25',
  'x-principal': principal,
  ...extra,
});

async function openSession(principal) {
  const reply = await request('POST', { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'x-principal': principal }, rpc(1, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'soak', version: '1' } }));
  const sid = reply?.headers['mcp-session-id'];
  if (reply?.status !== 200 || typeof sid !== 'string') {
    counts.errors++;
    console.error('initialize failed:', reply?.status, reply?.body);
    return undefined;
  }
  counts.sessionsOpened++;
  return sid;
}

/**
 * A legacy GET stream on a raw socket; `ids()` are the event ids of the frames received so far,
 * `primed()` the id of the priming event the stream opened with (an `id:` followed by `retry:`),
 * `lastSeen()` the last id of either, what a client resumes from.
 */
function openGet(sid, principal, lastEventId) {
  const c = connect();
  const extra = lastEventId === undefined ? '' : `Last-Event-ID: ${lastEventId}\r\n`;
  const ids = [];
  let primed;
  let lastSeen;
  let partial = '';
  c.socket.on('data', (chunk) => {
    partial += chunk;
    const lines = partial.split('\n');
    partial = lines.pop();
    for (const line of lines) {
      if (line.startsWith('id: ')) {
        lastSeen = Number(line.slice(4));
        ids.push(lastSeen);
      } else if (line.startsWith('retry: ') && primed === undefined) {
        primed = ids.pop();
      }
    }
  });
  c.socket.write(`GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nMcp-Session-Id: ${sid}\r\nMcp-Protocol-Version: 2025-11-25\r\nX-Principal: ${principal}\r\n${extra}\r\n`);
  return { ...c, ids: () => ids, primed: () => primed, lastSeen: () => lastSeen };
}

async function subscribe(sid, principal, uri) {
  const reply = await request('POST', sessionHeaders(sid, principal), rpc(2, 'resources/subscribe', { uri }));
  if (reply === undefined) return false;
  // Subscribed, or refused because the GET stream went away meanwhile: both are documented answers.
  if (reply.body === '{"jsonrpc":"2.0","id":2,"result":{}}') return true;
  if (reply.status === 200 && /"code":-32602/.test(reply.body)) return false;
  counts.errors++;
  console.error('unexpected subscribe answer:', reply.status, reply.body);
  return false;
}

const attachedHead = (_, __, head) => head.startsWith('HTTP/1.1 200');
const increasing = (ids) => ids.every((id, i) => i === 0 || id > ids[i - 1]);

let nextId = 1;
const scenarios = {
  async normal() {
    const c = connect();
    c.socket.write(listenRequest(nextId++, { toolsListChanged: true, resourceSubscriptions: [pick(SMALL), pick(SMALL)] }, { 'x-principal': `n${between(1, 500)}` }));
    if (await c.until(acked)) counts.acks++;
    await sleep(between(0, 300));
    c.socket.destroy();
  },
  async abrupt() {
    const c = connect();
    const request = listenRequest(nextId++, { toolsListChanged: true, resourceSubscriptions: [pick(SMALL)] }, { 'x-principal': `a${between(1, 500)}` });
    const cut = between(0, request.length + 200);
    c.socket.write(request.slice(0, Math.min(cut, request.length)));
    if (cut > request.length) await sleep(between(0, 20));
    c.socket.resetAndDestroy();
  },
  async midwrite() {
    const c = connect();
    c.socket.write(listenRequest(nextId++, { resourceSubscriptions: BIG }, { 'x-principal': `m${between(1, 200)}` }));
    if (!(await c.until(acked))) return c.socket.destroy();
    counts.acks++;
    // The ack alone names 256 KiB of URIs; then cut somewhere in the notifications.
    await c.until(() => false, between(5, 200));
    c.socket.resetAndDestroy();
  },
  async stalled() {
    const c = connect();
    c.socket.write(listenRequest(nextId++, { resourceSubscriptions: [...BIG, ...SMALL] }, { 'x-principal': `s${between(1, 100)}` }));
    if (!(await c.until(acked))) return c.socket.destroy();
    counts.acks++;
    c.socket.pause();
    // Either vanish while stalled, or stay stalled until the server drops us (lifetime + grace).
    if (Math.random() < 0.5) {
      await sleep(between(100, 2_000));
      c.socket.resetAndDestroy();
    } else {
      await Promise.race([c.closed, sleep(8_000)]);
      c.socket.destroy();
    }
  },
  async expiring() {
    const c = connect();
    c.socket.write(listenRequest(nextId++, { toolsListChanged: true }, { 'x-principal': `e${between(1, 500)}`, 'x-ttl': String(between(50, 300)) }));
    if (await c.until(closingDone, 3_000)) counts.closingFrames++;
    c.socket.destroy();
  },
  async lifetime() {
    // A burst of 6 for one principal with a cap of 4: the oldest are superseded with closing frames.
    const principal = `burst${between(1, 50)}`;
    const burst = Array.from({ length: 6 }, () => {
      const c = connect();
      c.socket.write(listenRequest(nextId++, { promptsListChanged: true }, { 'x-principal': principal }));
      return c;
    });
    await Promise.all(
      burst.map(async (c) => {
        if (await c.until(closingDone, between(200, 1_500))) counts.closingFrames++;
        c.socket.destroy();
      }),
    );
  },
  async garbage() {
    const c = connect();
    const bodies = [
      '{"jsonrpc":',
      '['.repeat(5000),
      '[]',
      '{"jsonrpc":"2.0","id":{},"method":"ping"}',
      '{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":"yes"}}}',
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'subscriptions/listen', params: { notifications: { resourceSubscriptions: Array.from({ length: 1001 }, (_, i) => `u${i}`) } } }),
      `{"pad":"${'x'.repeat(1100 * 1024)}"}`,
    ];
    const body = pick(bodies);
    c.socket.write(`POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nConnection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    if (await c.until((_, text, head) => /^HTTP\/1\.1 (4\d\d|200) /.test(head) && text.includes('"error"'), 3_000)) counts.refused++;
    else counts.errors++;
    c.socket.destroy();
  },
  async legacy() {
    const principal = `l${between(1, 300)}`;
    const sid = await openSession(principal);
    if (sid === undefined) return;
    const get = openGet(sid, principal);
    // While its GET stream is live a session cannot be evicted: any 404 until the cut is a bug.
    if (!(await get.until(attachedHead, 10_000))) {
      counts.legacySlow++;
      get.socket.destroy();
      return;
    }
    for (let i = between(1, 3); i > 0; i--) await subscribe(sid, principal, pick(SMALL));
    // Read a few pushes, then cut the connection abruptly (or stop reading first, then vanish).
    await get.until(() => get.ids().length >= between(1, 5), between(50, 500));
    if (Math.random() < 0.3) {
      get.socket.pause();
      await sleep(between(50, 300));
    }
    const seen = get.ids();
    const resumeFrom = get.lastSeen();
    if (get.primed() !== 0) {
      counts.errors++;
      console.error('a new session did not prime its GET stream with id 0:', get.primed());
    }
    get.socket.resetAndDestroy();
    // From here the session is idle until the reconnect reaches the server: past SESSION_IDLE_MS it
    // may be evicted (a 404 is then the documented answer, DESIGN L10); well before, never.
    let touched = Date.now();
    const gone = (reply) => reply?.status === 404 && Date.now() - touched > SESSION_IDLE_MS / 2;
    if (!increasing(seen)) {
      counts.errors++;
      console.error('event ids not increasing:', seen.slice(0, 20));
    }
    // Reconnect within the grace period with Last-Event-ID: the ids continue after it, no duplicate.
    await sleep(between(0, 300));
    // Like a client: the last id heard, the priming event's included (DESIGN L7).
    const last = resumeFrom;
    const again = openGet(sid, principal, last === undefined ? undefined : String(last));
    if (await again.until(() => again.ids().length >= 1, 5_000)) {
      counts.resumed++;
      const ids = again.ids();
      counts.replayedFrames += ids.length;
      if (last !== undefined && again.primed() !== last) {
        counts.errors++;
        console.error(`a reconnect with Last-Event-ID ${last} was primed with`, again.primed());
      }
      if ((last !== undefined && ids[0] <= last) || !increasing(ids)) {
        counts.errors++;
        console.error(`replay after Last-Event-ID ${last} repeated or reordered ids:`, ids.slice(0, 20));
      }
    }
    await sleep(between(0, 200));
    if (!again.socket.destroyed && (await again.until(attachedHead, 1))) touched = Date.now();
    again.socket.destroy();
    if (Math.random() < 0.5) {
      const del = await request('DELETE', { 'mcp-session-id': sid, 'x-principal': principal });
      if (del?.status === 204) counts.sessionsDeleted++;
      else if (gone(del)) counts.sessionsIdleBeforeDelete++;
      else if (del !== undefined) {
        counts.errors++;
        console.error(`DELETE ${Date.now() - touched} ms after the session was last active answered`, del.status, del.body);
      }
    } else {
      counts.sessionsAbandoned++; // left to the idle sweep
    }
  },
  async legacyBad() {
    const principal = `b${between(1, 100)}`;
    const sid = await openSession(principal);
    if (sid === undefined) return;
    const first = openGet(sid, principal);
    if (!(await first.until(attachedHead, 10_000))) {
      counts.legacySlow++;
      first.socket.destroy();
      return;
    }
    const checks = [
      [request('POST', sessionHeaders('0000-not-a-session', principal), rpc(3, 'ping')), (r) => r.status === 404],
      [request('GET', sessionHeaders(`${sid}x`, principal)), (r) => r.status === 404],
      [request('DELETE', { 'mcp-session-id': sid, 'x-principal': 'intruder' }), (r) => r.status === 403],
      [request('GET', sessionHeaders(sid, 'intruder', { 'last-event-id': '0' })), (r) => r.status === 403],
      [request('POST', sessionHeaders(sid, principal), rpc(4, 'resources/subscribe', { uri: 42 })), (r) => r.status === 200 && r.body.includes('-32602')],
      [request('POST', sessionHeaders(sid, principal), `[${rpc(5, 'resources/subscribe', { uri: 'file:///x' })}]`), (r) => r.status === 400],
      [request('POST', sessionHeaders(sid, principal), rpc(6, 'initialize', { protocolVersion: '2025-11-25' })), (r) => r.status === 200 && r.body.includes('-32600')],
      [request('POST', sessionHeaders(sid, principal), '{"jsonrpc":"2.0","id":7,"method":"resources/sub'), (r) => r.status === 400],
    ];
    for (const [pending, ok] of checks) {
      const reply = await pending;
      if (reply !== undefined && ok(reply)) counts.legacyRefused++;
      else {
        counts.errors++;
        console.error('unexpected legacy answer:', reply?.status, reply?.body);
      }
    }
    // A second GET replaces the first: the first ends cleanly (the chunked terminator; the
    // keep-alive connection may stay open).
    const second = openGet(sid, principal, 'not-a-number');
    if (!(await first.until((_, text) => text.endsWith('\r\n0\r\n\r\n'), 10_000))) {
      counts.errors++;
      console.error('a replaced GET stream did not end within 10 s');
    }
    first.socket.destroy();
    second.socket.resetAndDestroy();
    if (Math.random() < 0.5) {
      const del = await request('DELETE', { 'mcp-session-id': sid, 'x-principal': principal });
      if (del?.status === 204) counts.sessionsDeleted++;
    } else counts.sessionsAbandoned++;
  },
};
const weights = [
  ['normal', 30],
  ['abrupt', 25],
  ['midwrite', 10],
  ['stalled', 5],
  ['expiring', 10],
  ['lifetime', 5],
  ['garbage', 15],
  ['legacy', 20],
  ['legacyBad', 5],
];
const table = weights.flatMap(([name, weight]) => Array.from({ length: weight }, () => name));

let running = true;
async function worker() {
  while (running) {
    const name = pick(table);
    counts[name]++;
    try {
      await scenarios[name]();
    } catch (error) {
      counts.errors++;
      console.error(`scenario ${name} failed:`, error);
    }
  }
}

/* The run */

console.log(`soak: node ${process.version}, ${os.cpus()[0]?.model ?? 'cpu'} ×${os.cpus().length}, ${WORKERS} workers, ${DURATION_MS / 1000} s`);
if (typeof globalThis.gc !== 'function') console.log('(no --expose-gc: heap figures are without forced GC)');

async function quiesce(ms) {
  const deadline = Date.now() + ms;
  for (;;) {
    const { streams, slots, principals } = endpoint.stats;
    const { topics, subscriptions } = hub.size;
    if (streams + slots + principals + topics + subscriptions === 0 && telemetry.stop === telemetry.start) return true;
    if (Date.now() > deadline) return false;
    await sleep(20);
  }
}

// Warm-up: a few seconds of the same churn, then the baseline heap with nothing open.
const warmupMs = Math.min(5_000, DURATION_MS / 5);
let pool = Array.from({ length: WORKERS }, worker);
await sleep(warmupMs);
running = false;
await Promise.all(pool);
for (const socket of sockets) socket.destroy();
await quiesce(10_000);
gc();
const heapBefore = process.memoryUsage().heapUsed;
const startedAt = Date.now();
const startsBefore = telemetry.start;

running = true;
pool = Array.from({ length: WORKERS }, worker);
const progress = setInterval(() => {
  const { streams, slots, principals } = endpoint.stats;
  console.log(
    `  ${Math.round((Date.now() - startedAt) / 1000)} s: opened ${telemetry.start}, closed ${telemetry.stop}, live ${streams} (slots ${slots}, principals ${principals}), sessions ${endpoint.stats.sessions} (${store.created} opened, ${store.deleted} ended), hub topics ${hub.size.topics}, heap ${mib(process.memoryUsage().heapUsed)}`,
  );
}, 15_000);
await sleep(DURATION_MS);
running = false;
clearInterval(progress);
await Promise.all(pool);
publishing = false;
await publisher;
for (const socket of sockets) socket.destroy();
const quiet = await quiesce(15_000);
// The abandoned sessions: one idle timeout, then the final sweep evicts them all.
const deletedByClients = counts.sessionsDeleted;
await sleep(SESSION_IDLE_MS + 100);
await endpoint.pruneSessions();
const sessionsLeft = endpoint.stats.sessions;
gc();
const heapAfter = process.memoryUsage().heapUsed;

const { streams, slots, principals, sessionSubscriptions } = endpoint.stats;
const { topics, subscriptions } = hub.size;
const leaks = {
  streams,
  slots,
  principals,
  'hub topics': topics,
  'hub registrations': subscriptions,
  'start−stop': telemetry.start - telemetry.stop,
  sessions: sessionsLeft,
  'session subscriptions': sessionSubscriptions,
  'session records': store.size,
};
const leaked = Object.values(leaks).some((n) => n !== 0);
const growth = heapAfter - heapBefore;

console.log('\nscenarios run:', JSON.stringify(Object.fromEntries(weights.map(([name]) => [name, counts[name]]))));
console.log(`client view: ${counts.acks} acks read, ${counts.closingFrames} closing sequences read, ${counts.refused} bad requests refused, ${counts.errors} unexpected answers`);
console.log(`server: opened ${telemetry.start} streams (${telemetry.start - startsBefore} after warm-up), closed ${telemetry.stop}; by reason ${JSON.stringify(telemetry.reasons)}; ${telemetry.drop} notifications dropped for slow clients; ${published} published`);
console.log(
  `legacy: ${store.created} sessions opened (${counts.sessionsOpened} by clients), ${deletedByClients} deleted by their client, ${store.deleted - deletedByClients} evicted idle (${counts.sessionsAbandoned} abandoned, ${counts.sessionsIdleBeforeDelete} idle past the timeout before their DELETE); ` +
    `${counts.resumed} reconnects with Last-Event-ID (${counts.replayedFrames} frames read after them), ${counts.legacyRefused} hostile legacy requests refused as documented` +
    (counts.legacySlow > 0 ? `; ${counts.legacySlow} GETs not answered within 10 s (server overloaded)` : ''),
);
console.log(`leaked: ${Object.entries(leaks).map(([k, v]) => `${k} ${v}`).join(', ')}${quiet ? '' : '  (did not settle within 15 s)'}`);
console.log(`heap after GC: before ${mib(heapBefore)}, after ${mib(heapAfter)} (${growth >= 0 ? '+' : ''}${mib(growth)})`);

server.close();
server.closeAllConnections();
endpoint.close();
if (leaked || growth > MAX_HEAP_GROWTH || counts.errors > 0) {
  console.log(`\nFAIL: ${leaked ? 'something leaked' : growth > MAX_HEAP_GROWTH ? `heap grew more than ${mib(MAX_HEAP_GROWTH)}` : 'unexpected answers'}`);
  process.exit(1);
}
console.log('\nOK: nothing leaked');
process.exit(0);
