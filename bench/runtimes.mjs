// What a stalled client costs the server on each runtime webHandler/nodeHandler runs on (issue 16
// item 8): Node (nodeHandler on node:http, the baseline), Bun (webHandler in Bun.serve) and Deno
// (webHandler in Deno.serve), each the COMPILED library from dist/ in its own child process
// (spec/fixtures/servers/<runtime>-server.mjs; Bun and Deno are the npm devDependencies).
//
// Method. Per runtime, a fresh server process; one listen subscribed to K resource URIs of about
// `uriBytes` bytes each (so a frame is about that size), opened over a raw TCP socket that reads the
// acknowledgment and then never reads again (socket.pause(): the kernel's receive buffer fills,
// then the server's send buffer, then the runtime's). Then N notifications are published inside the
// server, cycling over the K URIs, `batch` per event-loop turn so the runtime writes in between.
// The server's RSS (after garbage collection: Bun.gc(true), --expose-gc on Node and Deno) is taken
// with the listen open and idle (before), after N/10 and after N notifications (stalled), and after
// the client is cut (the slot must come back). A bounded server shows the same figure at N/10 and N.
// The library's own queue (queueTotals(): bytes and frames held for slow consumers, notifications
// coalesced) and the drop events are printed beside it. Loopback kernel buffers are not process
// memory and are not counted. The same run with a client that reads everything, in another fresh
// process, is the reference: what publishing N notifications costs the runtime's allocator anyway.
//
//   npm run build && node bench/runtimes.mjs [--n 100000] [--uris 1000] [--uri-bytes 1000] [--batch 100] [--runtimes node,bun,deno] [--clients stalled,reading]
import net from 'node:net';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { runtimeVersion, startRuntimeServer } from '../spec/fixtures/servers/launch.mjs';

const { values } = parseArgs({
  options: {
    n: { type: 'string', default: '100000' },
    uris: { type: 'string', default: '1000' },
    'uri-bytes': { type: 'string', default: '1000' },
    batch: { type: 'string', default: '100' },
    runtimes: { type: 'string', default: 'node,bun,deno' },
    clients: { type: 'string', default: 'stalled,reading' },
  },
});
const N = Number(values.n);
const URIS = Number(values.uris);
const URI_BYTES = Number(values['uri-bytes']);
const BATCH = Number(values.batch);
const RUNTIMES = values.runtimes.split(',');
const CLIENTS = values.clients.split(',');

const PREFIX = `file:///stall/${'x'.repeat(Math.max(0, URI_BYTES - 24))}/`;

const uri = (i) => PREFIX + i;

/**
 * Opens the listen over a raw socket and reads up to the end of the ack; then a stalled client stops
 * reading for good, a reading one reads (and discards) everything.
 */
function openListen(url, stalled = true) {
  const { port } = new URL(url);
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'subscriptions/listen',
    params: { notifications: { resourceSubscriptions: Array.from({ length: URIS }, (_, i) => uri(i)) } },
  });
  const socket = net.connect(Number(port), '127.0.0.1');
  socket.write(
    `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n` +
      `MCP-Protocol-Version: 2026-07-28\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  return new Promise((resolve, reject) => {
    let raw = Buffer.alloc(0);
    const timer = setTimeout(() => reject(new Error(`no ack within 20 s; got ${raw.toString('latin1', 0, 300)}`)), 20_000);
    socket.on('error', reject);
    socket.on('data', function onData(chunk) {
      raw = Buffer.concat([raw, chunk]);
      const text = raw.toString('latin1');
      if (/^HTTP\/1\.1 (?!200)/.test(text)) {
        clearTimeout(timer);
        reject(new Error(`listen refused: ${text.slice(0, 300)}`));
      } else if (/notifications\/subscriptions\/acknowledged.*\n\n/s.test(responseBody(text))) {
        clearTimeout(timer);
        socket.off('data', onData);
        if (stalled) socket.pause();
        else socket.on('data', () => {});
        resolve(socket);
      }
    });
  });
}

/** The response body received so far, chunked transfer encoding (when used) taken off. */
function responseBody(text) {
  const headEnd = text.indexOf('\r\n\r\n');
  if (headEnd < 0) return '';
  const rest = text.slice(headEnd + 4);
  if (!/^transfer-encoding: *chunked/im.test(text.slice(0, headEnd))) return rest;
  let out = '';
  for (let at = 0; ; ) {
    const lineEnd = rest.indexOf('\r\n', at);
    if (lineEnd < 0) return out;
    const size = parseInt(rest.slice(at, lineEnd), 16);
    out += rest.slice(lineEnd + 2, Math.min(rest.length, lineEnd + 2 + size));
    if (lineEnd + 2 + size + 2 > rest.length) return out;
    at = lineEnd + 2 + size + 2;
  }
}

const mb = (bytes) => (bytes / 1048576).toFixed(1);

async function measure(runtime, stalled) {
  const server = await startRuntimeServer(runtime, { maxBodyBytes: 4 * 1048576, keepAliveInterval: 60_000 });
  try {
    // Warm up the paths once (a listen, a few notifications, a cut), so "before" is not startup.
    const warm = await openListen(server.url);
    await server.control('publish', { prefix: PREFIX, uris: URIS, count: 100, batch: 10 });
    warm.destroy();
    await until(server, (s) => s.streams === 0);

    const socket = await openListen(server.url, stalled);
    const before = await server.control('memory');
    const rows = [['listen open, idle', before]];
    let published = 0;
    const started = process.hrtime.bigint();
    for (const target of [N / 10, N]) {
      while (published < target) {
        const count = Math.min(10_000, target - published);
        await server.control('publish', { prefix: PREFIX, uris: URIS, from: published, count, batch: BATCH });
        published += count;
      }
      rows.push([`${stalled ? 'stalled' : 'reading'}, ${published} published`, await server.control('memory')]);
    }
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    socket.destroy();
    const stats = await until(server, (s) => s.streams === 0 && s.slots === 0);
    rows.push(['client cut', await server.control('memory')]);
    return { runtime, version: runtimeVersion(runtime), rows, seconds, stats, gc: before.gc };
  } finally {
    await server.stop();
  }
}

async function until(server, predicate, ms = 10_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const stats = await server.control('stats');
    if (predicate(stats)) return stats;
    if (Date.now() > deadline) throw new Error(`${server.runtime}: timed out; stats ${JSON.stringify(stats)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

console.log(`# stalled client on each runtime: ${os.cpus()[0]?.model ?? 'cpu'} x${os.cpus().length}, ${os.platform()} ${os.release()}, driver node ${process.version}`);
console.log(`# one listen on ${URIS} URIs of ~${URI_BYTES} B, never read after its ack; ${N} notifications, ${BATCH} per turn\n`);
for (const runtime of RUNTIMES) for (const stalled of CLIENTS.map((client) => client === 'stalled')) {
  const result = await measure(runtime, stalled);
  const base = result.rows[0][1].rss;
  console.log(`${runtime} (${result.version})${result.gc ? '' : ' [no gc available]'}, ${stalled ? 'a stalled client' : 'a reading client (reference)'}: published in ${result.seconds.toFixed(1)} s; after the cut ${JSON.stringify(result.stats)}`);
  console.log('  state                          RSS MiB  Δ MiB   heap MiB  external MiB  queued KiB  frames  coalesced  drops');
  for (const [label, m] of result.rows) {
    console.log(
      `  ${label.padEnd(30)} ${mb(m.rss).padStart(7)} ${(m.rss >= base ? '+' : '') + mb(m.rss - base)}`.padEnd(49) +
        `${mb(m.heapUsed).padStart(8)} ${mb(m.external).padStart(13)} ${(m.queue.bytes / 1024).toFixed(0).padStart(11)} ${String(m.queue.frames).padStart(7)} ${String(m.queue.coalesced).padStart(10)} ${String(m.drops).padStart(6)}`,
    );
  }
  console.log();
}
