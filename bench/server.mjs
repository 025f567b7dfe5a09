// The server under test, one process per run: `node --expose-gc bench/server.mjs <peer>`, forked by
// bench/run.mjs and driven over the IPC channel (the same commands for every peer, so the publish
// trigger and the measurements are identical). It serves /mcp on 127.0.0.1:<random port> with the
// peer's handler (POST for listen; POST, GET and DELETE for the legacy peers) and answers:
//   mem                      heap/RSS after two full GCs (needs --expose-gc)
//   registry                 what the peer holds (streams, topics, slots), our drop count and
//                            the notifications our queues coalesced (undefined for other peers)
//   cpu                      process.cpuUsage() in µs (user + system) and the hrtime
//   bytes                    bytes written so far on the open sockets (socket.bytesWritten)
//   publishPaced {k, batch, uris}
//                            publish k notifications rotating over the first `uris` URIs,
//                            `batch` per event-loop turn (1: one per
//                            turn, nothing for an adapter to batch), waiting whenever a socket
//                            has more than its high-water mark buffered (`writableNeedDrain`):
//                            "as fast as the server accepts"
//   publishOne               publish one notification; reply with the hrtime (ns) just before it
//   publishMarker            publish one tools/list_changed; reply with the hrtime (ns) just before it
//   publishTurnCpu {marker}  publish one notification (tools/list_changed with `marker`) and reply,
//                            once its event-loop turn is over (setImmediate: the per-turn writes of
//                            process.nextTick included), with the CPU time (user + system, µs) of
//                            that turn and the hrtime before the publish (bench/turn-cpu.mjs)
//   profile {start, name}    with env BENCH_PROFILE=DIR: start, or stop and write
//                            DIR/<name>-<pid>.cpuprofile, a CPU profile (node:inspector) of what
//                            ran in between
//   publishRate {k, ms, markerEvery, uris}  publish k (rotating over the URIs) over ~ms at a
//                            steady rate, no gate; every
//                            markerEvery-th is tools/list_changed; reply with the marker times
//   storm {k}                k tools/list_changed in one event-loop turn (a registry registering
//                            k tools in a loop); reply with the hrtime before and after the turn
//   sampleStart {everyMs} / sampleStop
//                            sample heapUsed+external and RSS every everyMs (no forced GC, so
//                            the heap line saw-tooths with the young generation) until stopped;
//                            sampleStop replies with [{t (hrtime ns), heap, rss}]
// Times are process.hrtime (CLOCK_MONOTONIC, the same clock in every process on the box).
import http from 'node:http';
import { URI, uris } from './peers/common.mjs';

const peerName = process.argv[2];
const peer = await (await import(`./peers/${peerName}.mjs`)).create();
const now = () => Number(process.hrtime.bigint());

const sockets = new Set();
const server = http.createServer((req, res) => {
  if (req.url === '/mcp') return peer.handler(req, res);
  res.writeHead(404).end();
});
server.keepAliveTimeout = 0;
server.headersTimeout = 0;
server.requestTimeout = 0;
server.maxConnections = Infinity;
server.on('connection', (socket) => {
  sockets.add(socket);
  socket.on('close', () => {
    sockets.delete(socket);
    bytesOfClosed += socket.bytesWritten;
  });
});
server.listen(0, '127.0.0.1', () => process.send({ ready: true, port: server.address().port }));

function mem() {
  global.gc?.();
  global.gc?.();
  const m = process.memoryUsage();
  return { heapUsed: m.heapUsed, rss: m.rss, external: m.external, arrayBuffers: m.arrayBuffers };
}

let sampler;
function sampleStart({ everyMs }) {
  const series = [];
  const take = () => {
    const m = process.memoryUsage();
    series.push({ t: now(), heap: m.heapUsed + m.external, rss: m.rss });
  };
  take();
  clearInterval(sampler?.timer);
  sampler = { series, timer: setInterval(take, everyMs) };
}
function sampleStop() {
  if (sampler === undefined) return [];
  clearInterval(sampler.timer);
  const { series } = sampler;
  sampler = undefined;
  return series;
}

let bytesOfClosed = 0;
function bytesWritten() {
  let total = bytesOfClosed;
  for (const socket of sockets) total += socket.bytesWritten;
  return total;
}

function firstBackedUp() {
  for (const socket of sockets) if (socket.writableNeedDrain && !socket.destroyed) return socket;
  return undefined;
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

async function publishPaced({ k, batch, uris: count = 1 }) {
  const URIS = uris(count);
  const t0 = now();
  let waits = 0;
  for (let sent = 0; sent < k; ) {
    const end = Math.min(k, sent + batch);
    for (; sent < end; sent++) peer.publish(URIS[sent % URIS.length]);
    await turn();
    for (let socket = firstBackedUp(); socket !== undefined; socket = firstBackedUp()) {
      waits++;
      await new Promise((resolve) => {
        const done = () => {
          socket.off('drain', done);
          socket.off('close', done);
          resolve();
        };
        socket.on('drain', done);
        socket.on('close', done);
      });
    }
  }
  return { t0, t1: now(), waits };
}

let inspector;
async function profile({ start, name = 'pass' }) {
  const dir = process.env.BENCH_PROFILE;
  if (dir === undefined) return {};
  const { Session } = await import('node:inspector/promises');
  if (start) {
    inspector = new Session();
    inspector.connect();
    await inspector.post('Profiler.enable');
    await inspector.post('Profiler.start');
    return {};
  }
  const { profile: taken } = await inspector.post('Profiler.stop');
  inspector.disconnect();
  const { writeFile } = await import('node:fs/promises');
  await writeFile(`${dir}/${name}-${process.pid}.cpuprofile`, JSON.stringify(taken));
  return {};
}

async function publishRate({ k, ms, markerEvery, uris: count = 1 }) {
  const URIS = uris(count);
  const markers = [];
  const ticks = Math.max(1, Math.round(ms / 2));
  const perTick = k / ticks;
  const start = now();
  let sent = 0;
  for (let tick = 1; sent < k; tick++) {
    const target = Math.min(k, Math.round(tick * perTick));
    for (; sent < target; sent++) {
      if (markerEvery > 0 && (sent + 1) % markerEvery === 0) {
        markers.push(now());
        peer.publishMarker();
      } else {
        peer.publish(URIS[sent % URIS.length]);
      }
    }
    const due = start + tick * 2e6;
    const wait = (due - now()) / 1e6;
    await new Promise((resolve) => (wait > 1 ? setTimeout(resolve, wait) : setImmediate(resolve)));
  }
  return { t0: start, t1: now(), markers };
}

process.on('message', async ({ id, cmd, args }) => {
  let result;
  try {
    switch (cmd) {
      case 'mem':
        result = mem();
        break;
      case 'registry':
        result = { ...peer.registry(), drops: peer.drops?.() ?? 0, coalesced: peer.coalesced?.(), sockets: sockets.size };
        break;
      case 'publishPaced':
        result = await publishPaced(args);
        break;
      case 'publishOne': {
        const t = now();
        peer.publish(URI);
        result = { t };
        break;
      }
      case 'publishTurnCpu': {
        const t = now();
        const before = process.cpuUsage();
        if (args.marker) peer.publishMarker();
        else peer.publish(URI);
        await turn();
        const { user, system } = process.cpuUsage(before);
        result = { t, us: user + system };
        break;
      }
      case 'publishMarker': {
        const t = now();
        peer.publishMarker();
        result = { t };
        break;
      }
      case 'profile':
        result = await profile(args);
        break;
      case 'publishRate':
        result = await publishRate(args);
        break;
      case 'cpu': {
        const { user, system } = process.cpuUsage();
        result = { us: user + system, t: now() };
        break;
      }
      case 'bytes':
        result = bytesWritten();
        break;
      case 'storm': {
        const t0 = now();
        for (let i = 0; i < args.k; i++) peer.publishMarker();
        result = { t0, t1: now() };
        break;
      }
      case 'sampleStart':
        sampleStart(args);
        result = {};
        break;
      case 'sampleStop':
        result = sampleStop();
        break;
      case 'exit':
        await peer.close?.();
        process.send({ id, result: {} }, () => process.exit(0));
        return;
      default:
        throw new Error(`unknown command ${cmd}`);
    }
    process.send({ id, result });
  } catch (error) {
    process.send({ id, error: String(error?.stack ?? error) });
  }
});
process.on('disconnect', () => process.exit(0));
