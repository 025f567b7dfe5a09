// The load generator, in its own process (forked by bench/run.mjs): raw loopback TCP clients that
// POST `subscriptions/listen` exactly as the official client does (2026-07-28 headers and `_meta`
// envelope) and then only count. Parsing is minimal on purpose: a frame is one `data:` occurrence
// (searched with Buffer#indexOf, a pattern split across two reads is caught), a marker frame one
// `list_changed` occurrence; nothing is JSON-parsed. Commands over IPC:
//   open {port, n}           open n streams (256 in flight) and wait for every ack
//   reset                    zero every stream's frame and marker counts
//   expect {target, idleMs}  reply when every stream has `target` frames (after reset), or when
//                            no frame arrived for idleMs: {complete, t (hrtime ns of the last
//                            stream's last needed frame), received, min}
//   markers {from}           the hrtime at which every healthy stream had marker m, m = 1..
//   stall {index} / resume   stop / restart reading one stream (socket.pause / resume)
//   counts                   per-stream totals for the stalled stream and the others
//   destroy                  reset every socket (RST: an abrupt client death)
import net from 'node:net';
import { URI } from './peers/common.mjs';

const now = () => Number(process.hrtime.bigint());
const DATA = Buffer.from('data:');
const MARK = Buffer.from('list_changed');

function countIn(buffer, needle) {
  let n = 0;
  for (let i = buffer.indexOf(needle); i !== -1; i = buffer.indexOf(needle, i + needle.length)) n++;
  return n;
}

/** Occurrences of `needle` that straddle the boundary between `tail` and `head`. */
function straddling(tail, head, needle) {
  if (tail.length === 0) return 0;
  return countIn(Buffer.concat([tail, head.subarray(0, needle.length - 1)]), needle);
}

let conns = [];
let expectation;
let markerWatch;
let stalled = -1;
let lastFrameAt = 0;

function request(port, i) {
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
      notifications: { resourceSubscriptions: [URI], toolsListChanged: true },
    },
  });
  return (
    `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n` +
    `Accept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2026-07-28\r\n` +
    `Mcp-Method: subscriptions/listen\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}

function open(port, i) {
  return new Promise((resolve, reject) => {
    const conn = { i, socket: undefined, frames: 0, markers: 0, total: 0, tailD: Buffer.alloc(0), tailM: Buffer.alloc(0), ok: false };
    const socket = net.connect({ port, host: '127.0.0.1' });
    conn.socket = socket;
    socket.setNoDelay(true);
    socket.on('connect', () => socket.write(request(port, i)));
    socket.on('error', (error) => {
      if (!conn.ok) reject(error);
    });
    socket.on('data', (chunk) => {
      if (!conn.headed) {
        conn.headed = true;
        if (!chunk.subarray(0, 12).toString('latin1').startsWith('HTTP/1.1 200')) {
          socket.destroy();
          reject(new Error(`stream ${i}: ${chunk.subarray(0, 200).toString()}`));
          return;
        }
      }
      const d = countIn(chunk, DATA) + straddling(conn.tailD, chunk, DATA);
      const m = countIn(chunk, MARK) + straddling(conn.tailM, chunk, MARK);
      conn.tailD = chunk.subarray(Math.max(0, chunk.length - (DATA.length - 1)));
      conn.tailM = chunk.subarray(Math.max(0, chunk.length - (MARK.length - 1)));
      if (d === 0 && m === 0) return;
      conn.frames += d;
      conn.total += d;
      lastFrameAt = now();
      if (!conn.ok) {
        conn.ok = true;
        resolve(conn);
      }
      if (m > 0) onMarkers(conn, m);
      if (expectation !== undefined && conn.frames >= expectation.target && !conn.reached) {
        conn.reached = true;
        expectation.t = lastFrameAt;
        if (++expectation.reachedCount === conns.length) finishExpectation(true);
      }
    });
  });
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
  for (const conn of conns) {
    received += conn.frames;
    if (conn.frames < min) min = conn.frames;
  }
  e.reply({ complete, t: e.t, received, min, expected: e.target * conns.length });
}

async function openAll(port, n) {
  const t0 = now();
  conns = new Array(n);
  let next = 0;
  let failed = 0;
  const errors = [];
  const worker = async () => {
    while (next < n) {
      const i = next++;
      try {
        conns[i] = await open(port, i);
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
      case 'open':
        return reply(await openAll(args.port, args.n));
      case 'reset':
        for (const conn of conns) {
          conn.frames = 0;
          conn.markers = 0;
          conn.reached = false;
        }
        return reply({});
      case 'expect': {
        // Replies only when done; `armed` goes out at once so that the publisher starts after.
        for (const conn of conns) conn.reached = conn.frames >= args.target;
        const e = { target: args.target, reachedCount: conns.filter((c) => c.reached).length, t: 0, reply };
        expectation = e;
        lastFrameAt = now();
        e.timer = setInterval(() => {
          if (now() - lastFrameAt > args.idleMs * 1e6) finishExpectation(false);
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
        stalled = args.index;
        conns[stalled].socket.pause();
        return reply({});
      case 'resume':
        if (stalled >= 0) conns[stalled].socket.resume();
        return reply({});
      case 'counts': {
        let healthyMin = Infinity;
        for (const conn of conns) if (conn.i !== stalled && conn.total < healthyMin) healthyMin = conn.total;
        return reply({ stalled: stalled >= 0 ? conns[stalled].total : undefined, healthyMin, lastFrameAt });
      }
      case 'destroy':
        for (const conn of conns) conn.socket.resetAndDestroy();
        conns = [];
        stalled = -1;
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
