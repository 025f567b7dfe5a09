// The load generator, in its own process (forked by bench/run.mjs): raw loopback TCP clients that
// POST `subscriptions/listen` exactly as the official client does (2026-07-28 headers and `_meta`
// envelope) and then only count. Parsing is minimal on purpose: a frame is one `data:` occurrence
// (searched with Buffer#indexOf, a pattern split across two reads is caught), a marker frame one
// `list_changed` occurrence; nothing is JSON-parsed. Commands over IPC:
//   open {port, n, legacy, localAddress, base, uris}
//                            open n streams (256 in flight) and wait for every ack; with
//                            `legacy`, n 2025-11-25 sessions instead, each as the SDK 1.x client
//                            does it: POST initialize, POST notifications/initialized, GET /mcp
//                            (raw socket, counted like a listen stream once its 200 head is in),
//                            POST resources/subscribe; ready when the subscribe answered a result.
//                            The POSTs go through a keep-alive http.Agent (setup, not measured).
//                            Sockets bind `localAddress` (default 127.0.0.1: one loopback source
//                            address per load-generator process, see bench/harness.mjs) and the
//                            request ids count from `base` (unique across processes). Every
//                            stream subscribes to the first `uris` URIs of peers/common.mjs.
//   subscribeMore {port, uris}
//                            every legacy session opened also subscribes to URIs up to `uris`
//   reset                    zero every stream's frame, marker and byte counts
//   expect {target, idleMs, firstIdleMs}
//                            reply when every stream has `target` frames (after reset), or when
//                            no frame arrived for idleMs (firstIdleMs before the first one):
//                            {complete, t (hrtime ns of the last stream's last needed frame),
//                            received, min, max, expected, bytes (received since reset, HTTP
//                            chunk framing included), tLast (hrtime ns of the last frame any
//                            stream received)}
//   markers {from}           the hrtime at which every healthy stream had marker m, m = 1..
//   stall {index} / resume   stop / restart reading one stream (socket.pause / resume)
//   counts                   per-stream totals for the stalled stream and the others (frames
//                            since open, markers since watchMarkers)
//   destroy                  reset every socket (RST: an abrupt client death)
//   cpu                      process.cpuUsage() in µs (user + system): is the load generator the
//                            bottleneck of a pass?
//   churn {port, legacy, rate, seconds, inflight, localAddress, base}
//                            (bench/capacity.mjs) `rate` short streams per second for `seconds`,
//                            each on its own socket from `localAddress`: a listen opened and
//                            closed once its ack arrived, or (legacy) a session initialized, its
//                            GET stream opened and closed, then DELETEd. At most `inflight` at a
//                            time (a cycle due while that many run is skipped and counted).
//                            Replies {started, admitted, refused (an HTTP status other than 200,
//                            by status), errors (socket errors, timeouts; the first few), skipped,
//                            seconds, openMs p50/p99 (request to ack or GET head)}
//   open {…, closeIdle: true} also closes the keep-alive POST sockets once every stream is open, so
//                            that the server holds the streams' connections alone
import http from 'node:http';
import net from 'node:net';
import { uris } from './peers/common.mjs';

const LEGACY_VERSION = '2025-11-25';
const OPEN_TIMEOUT_MS = 60_000;

const now = () => Number(process.hrtime.bigint());
const DATA = Buffer.from('data:');
const MARK = Buffer.from('list_changed');

function countIn(buffer, needle) {
  let n = 0;
  for (let i = buffer.indexOf(needle); i !== -1; i = buffer.indexOf(needle, i + needle.length)) n++;
  return n;
}

/**
 * Occurrences of `needle` that begin in `tail` (the previous read's last `tailLength` bytes) and
 * end in `head`: compared in place (this runs once per read, so nothing is allocated; for the frame
 * boundaries the first byte compared nearly always differs).
 */
function straddling(tail, tailLength, head, needle) {
  const size = needle.length;
  let n = 0;
  for (let k = Math.min(size - 1, tailLength); k >= 1; k--) {
    if (head.length < size - k) continue;
    let j = 0;
    const from = tailLength - k;
    while (j < k && tail[from + j] === needle[j]) j++;
    if (j < k) continue;
    while (j < size && head[j - k] === needle[j]) j++;
    if (j === size) n++;
  }
  return n;
}

let conns = [];
let expectation;
let markerWatch;
let stalled = -1; // the stalled stream's global index (conn.i), -1 for none
let stalledConn;
let lastFrameAt = 0;
let localAddress = '127.0.0.1';
let URIS = uris(1); // what every stream subscribes to, set by `open`

function request(port, i) {
  // `i` is the stream's index across every load-generator process (unique request ids).
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: `listen:${i}`,
    method: 'subscriptions/listen',
    params: {
      _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1.0.0' },
        'io.modelcontextprotocol/clientCapabilities': {},
      },
      notifications: { resourceSubscriptions: URIS, toolsListChanged: true },
    },
  });
  return (
    `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n` +
    `Accept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2026-07-28\r\n` +
    `Mcp-Method: subscriptions/listen\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}

/**
 * One counted stream on a raw socket: writes `head` and counts frames. A listen stream is ready at
 * its first frame (the ack); a legacy GET stream (`onHead` given) once its `200` head arrived, when
 * `onHead` decides (it resolves the conn, or rejects).
 */
// Reads go through net's `onread` into one shared buffer (each read is handled synchronously
// before the next): no stream machinery and no Buffer per read, so that the load generator's cost
// per frame stays well below the server's, above all in the 1-per-turn pattern where every frame
// is a read of its own. A read's last bytes are kept per stream for the straddle check.
const READ_BUFFER = Buffer.allocUnsafe(256 * 1024);
const TAIL = Math.max(DATA.length, MARK.length) - 1;

function stream(port, i, head, onHead) {
  return new Promise((resolve, reject) => {
    const conn = { i, socket: undefined, frames: 0, markers: 0, total: 0, bytes: 0, lastAt: 0, tail: Buffer.alloc(TAIL), tailLength: 0, ok: false };
    const socket = net.connect({
      port,
      host: '127.0.0.1',
      localAddress,
      onread: {
        buffer: READ_BUFFER,
        callback: (nread, buffer) => {
          onChunk(buffer.subarray(0, nread));
        },
      },
    });
    conn.socket = socket;
    socket.setNoDelay(true);
    socket.on('connect', () => socket.write(head));
    socket.on('error', (error) => {
      if (!conn.ok) reject(error);
    });
    const onChunk = (chunk) => {
      conn.bytes += chunk.length;
      if (!conn.headed) {
        conn.headed = true;
        if (!chunk.subarray(0, 12).toString('latin1').startsWith('HTTP/1.1 200')) {
          socket.destroy();
          reject(new Error(`stream ${i}: ${chunk.subarray(0, 200).toString()}`));
          return;
        }
        if (onHead !== undefined) {
          onHead(conn).then(
            () => {
              conn.ok = true;
              resolve(conn);
            },
            (error) => {
              socket.destroy();
              reject(error);
            },
          );
        }
      }
      const d = countIn(chunk, DATA) + straddling(conn.tail, conn.tailLength, chunk, DATA);
      const m = countIn(chunk, MARK) + straddling(conn.tail, conn.tailLength, chunk, MARK);
      conn.tailLength = chunk.copy(conn.tail, 0, Math.max(0, chunk.length - TAIL));
      if (d === 0 && m === 0) return;
      conn.frames += d;
      conn.total += d;
      lastFrameAt = now();
      conn.lastAt = lastFrameAt;
      if (expectation !== undefined) expectation.gotAny = true;
      if (!conn.ok && onHead === undefined) {
        conn.ok = true;
        resolve(conn);
      }
      if (m > 0) onMarkers(conn, m);
      if (expectation !== undefined && conn.frames >= expectation.target && !conn.reached) {
        conn.reached = true;
        expectation.t = lastFrameAt;
        if (++expectation.reachedCount === conns.length) finishExpectation(true);
      }
    };
  });
}

const open = (port, i) => stream(port, i, request(port, i));

let agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

/** One POST of a JSON-RPC message over the keep-alive agent: status, session header, body text. */
function post(port, message, sessionId) {
  return send(agent, localAddress, port, 'POST', message, sessionId);
}

/** One request on `through` (an http.Agent) from `address`: a JSON-RPC message POSTed, or a DELETE. */
function send(through, address, port, method, message, sessionId) {
  const body = message === undefined ? '' : JSON.stringify(message);
  const headers = {
    ...(message === undefined ? {} : { 'Content-Type': 'application/json' }),
    Accept: 'application/json, text/event-stream',
    'Content-Length': Buffer.byteLength(body),
  };
  if (sessionId !== undefined) {
    headers['Mcp-Session-Id'] = sessionId;
    headers['Mcp-Protocol-Version'] = LEGACY_VERSION;
  }
  return new Promise((resolve, reject) => {
    const req = http.request({ agent: through, host: '127.0.0.1', localAddress: address, port, path: '/mcp', method, headers }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode, sessionId: res.headers['mcp-session-id'], text: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A 2025-11-25 session with its GET stream subscribed to URIS, opened as the SDK 1.x client does. */
async function openLegacy(port, i) {
  const init = await post(port, {
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: LEGACY_VERSION, capabilities: {}, clientInfo: { name: 'bench', version: '1.0.0' } },
  });
  if (init.status !== 200 || init.sessionId === undefined) throw new Error(`initialize ${i}: ${init.status} ${init.text.slice(0, 200)}`);
  const sessionId = init.sessionId;
  const initialized = await post(port, { jsonrpc: '2.0', method: 'notifications/initialized' }, sessionId);
  if (initialized.status !== 202) throw new Error(`notifications/initialized ${i}: ${initialized.status}`);
  const head =
    `GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: text/event-stream\r\n` +
    `Mcp-Session-Id: ${sessionId}\r\nMcp-Protocol-Version: ${LEGACY_VERSION}\r\n\r\n`;
  return stream(port, i, head, async (conn) => {
    conn.sessionId = sessionId;
    await subscribe(port, conn, URIS);
  });
}

/** `resources/subscribe` for each of `list` on the session of `conn`, one after the other. */
async function subscribe(port, conn, list) {
  for (const uri of list) {
    const r = await post(port, { jsonrpc: '2.0', id: `s:${uri}`, method: 'resources/subscribe', params: { uri } }, conn.sessionId);
    if (r.status !== 200 || !r.text.includes('"result":{}')) throw new Error(`resources/subscribe ${conn.i} ${uri}: ${r.status} ${r.text.slice(0, 200)}`);
  }
}

/** Every open legacy session also subscribes to `list` (256 sessions at a time). */
async function subscribeAll(port, list) {
  let next = 0;
  const errors = [];
  const worker = async () => {
    while (next < conns.length) {
      const conn = conns[next++];
      try {
        await withTimeout(subscribe(port, conn, list), OPEN_TIMEOUT_MS, `subscribe ${conn.i}`);
      } catch (error) {
        if (errors.length < 3) errors.push(String(error.message ?? error));
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(256, conns.length) }, worker));
  return { errors };
}

function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms))),
  ]).finally(() => clearTimeout(timer));
}

/**
 * Short streams opened and closed at a steady rate while the long ones stay open (the `churn`
 * command, see the header): what a server admits, refuses and fails under churn.
 */
async function churn({ port, legacy = false, rate, seconds, inflight = 100, localAddress: address = '127.0.0.1', base = 0 }) {
  const through = new http.Agent({ keepAlive: true, maxSockets: 32 });
  const counts = { started: 0, admitted: 0, refused: 0, refusedBy: {}, errors: 0, errorSamples: [], skipped: 0 };
  const openMs = [];
  const refuse = (status) => {
    counts.refused++;
    counts.refusedBy[status] = (counts.refusedBy[status] ?? 0) + 1;
  };
  const failed = (error) => {
    counts.errors++;
    if (counts.errorSamples.length < 3) counts.errorSamples.push(String(error?.message ?? error));
  };
  // One socket: writes `head`, settles with the status of the response and, for a 200, once
  // `ready(text so far)` says so; the socket is destroyed then (the client goes away).
  const shortStream = (head, ready) =>
    new Promise((resolve, reject) => {
      let text = '';
      let status;
      const socket = net.connect({ port, host: '127.0.0.1', localAddress: address });
      const timer = setTimeout(() => finish(new Error('no answer in 10 s')), 10_000);
      const finish = (error) => {
        clearTimeout(timer);
        socket.destroy();
        if (error) reject(error);
        else resolve(status);
      };
      socket.on('connect', () => socket.write(head));
      socket.on('error', finish);
      socket.on('close', () => finish(new Error(`closed before an answer (${text.slice(0, 40)})`)));
      socket.on('data', (chunk) => {
        text += chunk.toString('latin1');
        if (status === undefined && text.includes('\r\n')) status = Number(text.slice(9, 12));
        if (status !== undefined && (status !== 200 || ready(text))) finish();
      });
    });
  const cycle = async (i) => {
    const t0 = now();
    try {
      if (!legacy) {
        const status = await shortStream(request(port, i), (text) => text.includes('data:'));
        if (status !== 200) return refuse(status);
        counts.admitted++;
        openMs.push((now() - t0) / 1e6);
        return;
      }
      const init = await send(through, address, port, 'POST', {
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: LEGACY_VERSION, capabilities: {}, clientInfo: { name: 'bench-churn', version: '1.0.0' } },
      });
      if (init.status !== 200 || init.sessionId === undefined) return refuse(init.status);
      const head = `GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: text/event-stream\r\nMcp-Session-Id: ${init.sessionId}\r\nMcp-Protocol-Version: ${LEGACY_VERSION}\r\n\r\n`;
      const status = await shortStream(head, () => true);
      if (status !== 200) return refuse(status);
      counts.admitted++;
      openMs.push((now() - t0) / 1e6);
      await send(through, address, port, 'DELETE', undefined, init.sessionId);
    } catch (error) {
      failed(error);
    }
  };
  const t0 = now();
  let active = 0;
  await new Promise((resolve) => {
    let due = 0;
    let over = false;
    const total = Math.round(rate * seconds);
    const timer = setInterval(() => {
      const elapsed = (now() - t0) / 1e9;
      const target = Math.min(total, Math.floor(elapsed * rate));
      for (; due < target; due++) {
        if (active >= inflight) {
          counts.skipped++;
          continue;
        }
        active++;
        counts.started++;
        cycle(base + due).finally(() => {
          active--;
          if (over && active === 0) resolve();
        });
      }
      if (due >= total) {
        clearInterval(timer);
        over = true;
        if (active === 0) resolve();
      }
    }, 10);
  });
  through.destroy();
  openMs.sort((a, b) => a - b);
  const q = (p) => (openMs.length === 0 ? NaN : openMs[Math.min(openMs.length - 1, Math.ceil(p * openMs.length) - 1)]);
  return { ...counts, seconds: (now() - t0) / 1e9, openMsP50: q(0.5), openMsP99: q(0.99) };
}

function onMarkers(conn, m) {
  const before = conn.markers;
  conn.markers += m;
  if (markerWatch === undefined || conn.i === stalled) return;
  for (let k = before + 1; k <= conn.markers; k++) {
    const reached = (markerWatch.reached[k] = (markerWatch.reached[k] ?? 0) + 1);
    if (reached === markerWatch.healthy) markerWatch.times[k] = lastFrameAt;
  }
}

function finishExpectation(complete) {
  const e = expectation;
  if (e === undefined) return;
  expectation = undefined;
  clearInterval(e.timer);
  let received = 0;
  let min = Infinity;
  let max = 0;
  let bytes = 0;
  let tLast = 0;
  for (const conn of conns) {
    received += conn.frames;
    bytes += conn.bytes;
    if (conn.frames < min) min = conn.frames;
    if (conn.frames > max) max = conn.frames;
    if (conn.lastAt > tLast) tLast = conn.lastAt;
  }
  e.reply({ complete, t: e.t, received, min, max, bytes, tLast, expected: e.target * conns.length });
}

async function openAll(port, n, legacy, base) {
  const t0 = now();
  conns = new Array(n);
  let next = 0;
  let failed = 0;
  const errors = [];
  const worker = async () => {
    while (next < n) {
      const i = next++;
      try {
        conns[i] = await withTimeout(legacy ? openLegacy(port, base + i) : open(port, base + i), OPEN_TIMEOUT_MS, `stream ${base + i}`);
      } catch (error) {
        failed++;
        if (errors.length < 3) errors.push(String(error.message ?? error));
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(256, n) }, worker));
  conns = conns.filter(Boolean);
  return { opened: conns.length, failed, errors, ms: (now() - t0) / 1e6 };
}

process.on('message', async ({ id, cmd, args }) => {
  const reply = (result) => process.send({ id, result });
  try {
    switch (cmd) {
      case 'open': {
        localAddress = args.localAddress ?? '127.0.0.1';
        URIS = uris(args.uris ?? 1);
        const opened = await openAll(args.port, args.n, args.legacy === true, args.base ?? 0);
        if (args.closeIdle) {
          agent.destroy();
          agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
        }
        return reply(opened);
      }
      case 'churn':
        return reply(await churn(args));
      case 'subscribeMore': {
        // Legacy sessions opened with the first URI subscribe to the next ones too.
        const more = uris(args.uris).slice(URIS.length);
        URIS = uris(args.uris);
        return reply(await subscribeAll(args.port, more));
      }
      case 'reset':
        for (const conn of conns) {
          conn.frames = 0;
          conn.markers = 0;
          conn.bytes = 0;
          conn.lastAt = 0;
          conn.reached = false;
        }
        return reply({});
      case 'expect': {
        // Replies only when done; `armed` goes out at once so that the publisher starts after.
        for (const conn of conns) conn.reached = conn.frames >= args.target;
        const e = { target: args.target, reachedCount: conns.filter((c) => c.reached).length, t: 0, gotAny: false, reply };
        expectation = e;
        lastFrameAt = now();
        const firstIdleMs = args.firstIdleMs ?? args.idleMs;
        e.timer = setInterval(() => {
          if (now() - lastFrameAt > (e.gotAny ? args.idleMs : firstIdleMs) * 1e6) finishExpectation(false);
        }, 100);
        process.send({ id, armed: true });
        if (e.reachedCount === conns.length) finishExpectation(true);
        return;
      }
      case 'watchMarkers':
        for (const conn of conns) conn.markers = 0;
        markerWatch = { healthy: conns.length - (stalled >= 0 ? 1 : 0), reached: [], times: [] };
        return reply({});
      case 'markers': {
        const times = markerWatch?.times ?? [];
        markerWatch = undefined;
        return reply({ times });
      }
      case 'stall':
        // `index` is this process's own (conns[index]).
        stalledConn = conns[args.index];
        stalled = stalledConn.i;
        stalledConn.socket.pause();
        return reply({});
      case 'resume':
        stalledConn?.socket.resume();
        return reply({});
      case 'counts': {
        let healthyMin = Infinity;
        let healthyMarkersMin = Infinity;
        for (const conn of conns) {
          if (conn.i === stalled) continue;
          if (conn.total < healthyMin) healthyMin = conn.total;
          if (conn.markers < healthyMarkersMin) healthyMarkersMin = conn.markers;
        }
        return reply({ stalled: stalledConn?.total, healthyMin, healthyMarkersMin, lastFrameAt });
      }
      case 'cpu': {
        const { user, system } = process.cpuUsage();
        return reply({ us: user + system });
      }
      case 'destroy':
        for (const conn of conns) conn.socket.resetAndDestroy();
        conns = [];
        stalled = -1;
        stalledConn = undefined;
        return reply({});
      case 'exit':
        for (const conn of conns) conn.socket.destroy();
        process.send({ id, result: {} }, () => process.exit(0));
        return;
      default:
        throw new Error(`unknown command ${cmd}`);
    }
  } catch (error) {
    process.send({ id, error: String(error?.stack ?? error) });
  }
});
process.on('disconnect', () => process.exit(0));
process.send({ ready: true });
