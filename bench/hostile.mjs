// Hostile clients, measured (issue "hostile clients", classes 1 and 2).
//
// 1. Stalled streams: what a client that stops reading costs the server. The server runs in a
//    child process (its RSS is its own), serving `dist/` (run `npm run build` first) with default
//    options. N clients on raw sockets each open one listen with the longest request id accepted
//    (1 KiB) over 1000 resource URIs and never read a byte; the server then publishes R rounds of
//    one change to each of the 1000 URIs (one round per event-loop turn). Reported: the server's
//    RSS and heap growth after a forced GC, total and per stream. Bounded means: at most the
//    stream's queue (maxStreamQueueBytes, 1 MiB by default) plus what the kernel's socket buffers
//    hold, whatever R is.
// 2. Time to release: C keep-alive connections each send one listen and P-1 more pipelined behind
//    it (queued responses, DESIGN "a slot is held only while its connection lives"), or legacy GET
//    streams likewise; then every connection is destroyed. Reported: milliseconds from the destroy
//    until the server holds no slot and no principal entry.
//
//   node --expose-gc bench/hostile.mjs                 both, N = 1 and 100, R = 20
//   node --expose-gc bench/hostile.mjs --rounds 50     more rounds (the growth must not follow)
import { fork } from 'node:child_process';
import net from 'node:net';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    server: { type: 'boolean', default: false },
    rounds: { type: 'string', default: '20' },
    streams: { type: 'string', default: '1,100' },
  },
});

/* ---------------------------------------------------------------------------------------------- */

async function serve() {
  const http = await import('node:http');
  const { McpEndpoint, Hub, nodeHandler } = await import('../dist/index.js');
  const hub = new Hub();
  // Principals by header, so that 100 streams from one address are not capped at 4 per principal.
  const endpoint = new McpEndpoint({
    hub,
    authenticate: (request) => ({ principal: request.header('x-principal') ?? 'anon', scopes: new Set() }),
    maxStreams: 10_000,
  });
  const server = http.createServer(nodeHandler(endpoint));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const uris = Array.from({ length: 1000 }, (_, i) => `file:///srv/data/${i}`);
  const measure = () => {
    globalThis.gc?.();
    globalThis.gc?.();
    const { rss, heapUsed } = process.memoryUsage();
    return { rss, heapUsed, stats: endpoint.stats };
  };
  process.on('message', async (message) => {
    if (message.cmd === 'measure') process.send({ reply: message.cmd, ...measure() });
    if (message.cmd === 'publish') {
      for (let round = 0; round < message.rounds; round++) {
        for (const uri of uris) hub.notifyResourceUpdated(uri);
        await new Promise((resolve) => setImmediate(resolve));
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
      process.send({ reply: message.cmd, ...measure() });
    }
    if (message.cmd === 'stats') process.send({ reply: message.cmd, stats: endpoint.stats });
  });
  process.send({ reply: 'ready', port: server.address().port });
}

function child() {
  const proc = fork(fileURLToPath(import.meta.url), ['--server'], { execArgv: ['--expose-gc'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const waiting = [];
  proc.on('message', (message) => {
    const index = waiting.findIndex((w) => w.reply === message.reply);
    if (index >= 0) waiting.splice(index, 1)[0].resolve(message);
  });
  const ask = (cmd, extra = {}) =>
    new Promise((resolve) => {
      waiting.push({ reply: cmd, resolve });
      proc.send({ cmd, ...extra });
    });
  const ready = new Promise((resolve) => waiting.push({ reply: 'ready', resolve }));
  return { proc, ask, ready };
}

async function until(ask, predicate, ms, what) {
  const deadline = Date.now() + ms;
  for (;;) {
    const { stats } = await ask('stats');
    if (predicate(stats)) return stats;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(stats)}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function listenRequest(id, principal, small = false) {
  const notifications = small ? { toolsListChanged: true } : { resourceSubscriptions: Array.from({ length: 1000 }, (_, i) => `file:///srv/data/${i}`) };
  const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'subscriptions/listen', params: { notifications } });
  return (
    `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\n` +
    `MCP-Protocol-Version: 2026-07-28\r\nX-Principal: ${principal}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}

const mb = (bytes) => (bytes / 1048576).toFixed(1);

async function stalled(streams, rounds) {
  const { proc, ask, ready } = child();
  const { port } = await ready;
  const before = await ask('measure');
  const sockets = [];
  for (let i = 0; i < streams; i++) {
    const socket = net.connect(port, '127.0.0.1');
    socket.on('error', () => {});
    // Never read: the kernel's receive buffer fills, then the server's send buffer, then the queue.
    socket.pause();
    socket.write(listenRequest('i'.repeat(1024), `p${i}`));
    sockets.push(socket);
  }
  await until(ask, (stats) => stats.streams === streams, 30_000, `${streams} streams`);
  const opened = await ask('measure');
  const after = await ask('publish', { rounds });
  const stats = after.stats;
  for (const socket of sockets) socket.destroy();
  await until(ask, (s) => s.slots === 0, 10_000, 'release');
  proc.kill();
  const growth = after.rss - opened.rss;
  return {
    streams,
    rounds,
    rssBefore: before.rss,
    rssOpened: opened.rss,
    rssAfter: after.rss,
    growth,
    heapGrowth: after.heapUsed - opened.heapUsed,
    perStream: growth / streams,
    stats,
  };
}

async function release(small, connections, perConnection) {
  const { proc, ask, ready } = child();
  const { port } = await ready;
  const sockets = [];
  for (let c = 0; c < connections; c++) {
    const socket = net.connect(port, '127.0.0.1');
    socket.on('error', () => {});
    socket.on('data', () => {});
    let text = '';
    for (let i = 0; i < perConnection; i++) text += listenRequest(c * perConnection + i, `p${c}-${i}`, small);
    socket.write(text);
    sockets.push(socket);
  }
  // node:http stops reading a connection while its queued responses hold more than its buffers
  // take, so not every pipelined request is read: wait until the count settles.
  let held = -1;
  for (let stable = 0; stable < 30; ) {
    const { stats } = await ask('stats');
    stable = stats.slots === held ? stable + 1 : 0;
    held = stats.slots;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const total = held;
  const started = performance.now();
  for (const socket of sockets) socket.destroy();
  await until(ask, (stats) => stats.slots === 0 && stats.principals === 0, 60_000, 'every slot released');
  const ms = performance.now() - started;
  proc.kill();
  return { connections, perConnection, total, ms };

}

async function main() {
  const rounds = Number(values.rounds);
  console.log(`# hostile clients: node ${process.version}, ${os.cpus()[0]?.model ?? 'cpu'} × ${os.cpus().length}, load ${os.loadavg()[0].toFixed(2)}`);
  console.log('\n## 1. Stalled streams (1 KiB id, 1000 URIs, never read), server RSS after GC\n');
  console.log('| streams | rounds published | RSS with streams open | RSS after publishing | growth | per stream | heap growth |');
  console.log('|---:|---:|---:|---:|---:|---:|---:|');
  for (const n of values.streams.split(',').map(Number)) {
    const r = await stalled(n, rounds);
    console.log(`| ${r.streams} | ${r.rounds} × 1000 | ${mb(r.rssOpened)} MB | ${mb(r.rssAfter)} MB | ${mb(r.growth)} MB | ${mb(r.perStream)} MB | ${mb(r.heapGrowth)} MB |`);
  }
  console.log('\n## 2. Time to release slots when pipelining connections end\n');
  console.log('keepAliveInterval: 15 000 ms (the default).\n');
  console.log('| listen body | connections | listens sent per connection (1 live, the rest queued) | slots held | released after |');
  console.log('|---|---:|---:|---:|---:|');
  // Small bodies: every pipelined request is read, and the connection's end is seen at once.
  // Large ones (1000 URIs, 20 KB each): node:http pauses the socket after a few, and the end is
  // found by the probe that follows the live stream's next keep-alive.
  for (const [small, c, p] of [[true, 10, 100], [true, 100, 9], [false, 10, 100], [false, 100, 10]]) {
    const r = await release(small, c, p);
    console.log(`| ${small ? 'tools only (~150 B)' : '1000 URIs (~20 KB)'} | ${r.connections} | ${r.perConnection} | ${r.total} | ${r.ms.toFixed(1)} ms |`);
  }
}

if (values.server) await serve();
else await main();
