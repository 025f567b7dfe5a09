// Listen over stdio, ours against the official SDK 2.x, in the same run (issue 23).
//
// What is measured, for each server as a real child process that this process drives over its
// stdin/stdout, as a host does (newline-delimited JSON-RPC, read with this library's stdioChannel):
//   1. throughput: one listen on 1000 URIs, then ten listens on the same 1000 URIs; the server
//      publishes ROUNDS x 1000 resource changes inside itself (one round of 1000 per event-loop
//      turn) and the host reads everything. Delivered notifications per second (wall time from the
//      publish request to the last notification read) and the server's CPU time (user + system,
//      from /proc) per delivered notification.
//   2. a stalled host: one listen on 1000 URIs, the host stops reading stdout, 100 000 changes are
//      published; the server's RSS (from /proc, after it went idle) above its RSS before.
// Ours is spec/fixtures/servers/stdio-publisher.mjs (serveStdio on an McpEndpoint); the SDK's is
// bench/peers/sdk-v2-stdio.mjs (serveStdio of @modelcontextprotocol/server). Both run with
// --expose-gc. Figures on a shared 2-core machine are indicative; the ratios are the point.
//   node bench/stdio.mjs [--rounds 100] [--repeat 3]     (after npm run build)
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { stdioChannel } from '../dist/index.js';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '100' }, repeat: { type: 'string', default: '3' } } });
const ROUNDS = Number(values.rounds);
const REPEAT = Number(values.repeat);
const COUNT = 1000;
const PREFIX = 'file:///bench/doc-';
const ENVELOPE = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' } };
const SUB = 'io.modelcontextprotocol/subscriptionId';
const MIB = 1_048_576;

const servers = {
  ours: { script: fileURLToPath(new URL('../spec/fixtures/servers/stdio-publisher.mjs', import.meta.url)), publish: (rounds) => ({ method: 'publish', params: { prefix: PREFIX, count: COUNT, rounds } }), memory: { method: 'memory', params: {} } },
  'sdk-v2': { script: fileURLToPath(new URL('./peers/sdk-v2-stdio.mjs', import.meta.url)), publish: () => ({ method: 'tools/call', params: { name: 'publish', arguments: {} } }), memory: { method: 'tools/call', params: { name: 'memory', arguments: {} } } },
};

/** A server child and a host reading its stdout. */
function start(name, rounds) {
  const child = spawn(process.execPath, ['--expose-gc', servers[name].script], { stdio: ['pipe', 'pipe', 'ignore'], env: { ...process.env, PREFIX, COUNT: String(COUNT), ROUNDS: String(rounds), MAX_LISTENS: '16' } });
  const channel = stdioChannel({ input: child.stdout, output: child.stdin, maxMessageBytes: 64 * MIB });
  let notifications = 0;
  const waiting = new Map();
  let onNotification = () => {};
  channel.incoming.subscribe((line) => {
    const message = JSON.parse(Buffer.from(line).toString('utf8'));
    if (message.method === 'notifications/resources/updated') {
      notifications++;
      onNotification();
    } else if (message.id !== undefined && message.method === undefined) {
      waiting.get(message.id)?.(message);
      waiting.delete(message.id);
    } else if (message.method === 'notifications/subscriptions/acknowledged') {
      waiting.get(`ack:${message.params._meta[SUB]}`)?.(message);
    }
  });
  let next = 0;
  const send = (message) => channel.send(JSON.stringify({ jsonrpc: '2.0', ...message }));
  const request = (method, params) => {
    const id = next++;
    return new Promise((resolve) => {
      waiting.set(id, resolve);
      send({ id, method, params: { ...params, _meta: ENVELOPE } });
    });
  };
  const listen = (id) =>
    new Promise((resolve) => {
      waiting.set(`ack:${id}`, resolve);
      send({ id, method: 'subscriptions/listen', params: { _meta: ENVELOPE, notifications: { resourceSubscriptions: Array.from({ length: COUNT }, (_, i) => `${PREFIX}${i}`) } } });
    });
  return {
    child,
    request,
    listen,
    get notifications() {
      return notifications;
    },
    whenNotifications: (n) => new Promise((resolve) => (onNotification = () => notifications >= n && resolve())),
    cpuMs: () => {
      const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1].split(' ');
      return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
    },
    rss: () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))[1]) * 1024,
    stop: () => new Promise((resolve) => {
      child.once('exit', resolve);
      child.stdin.end();
      setTimeout(() => child.kill('SIGKILL'), 3000).unref();
    }),
  };
}

async function throughput(name, listens) {
  const rounds = listens === 1 ? ROUNDS : Math.max(1, Math.round(ROUNDS / 5));
  const host = start(name, rounds);
  await host.request('server/discover', {});
  for (let i = 0; i < listens; i++) await host.listen(`listen:${i}`);
  const expected = rounds * COUNT * listens;
  const cpu0 = host.cpuMs();
  const t0 = performance.now();
  const done = host.whenNotifications(expected);
  const { method, params } = servers[name].publish(rounds);
  await host.request(method, params);
  // Everything published, coalesced or not, has been read once the notifications stop.
  await Promise.race([done, quiet(host)]);
  const ms = performance.now() - t0;
  const cpu = host.cpuMs() - cpu0;
  const delivered = host.notifications;
  await host.stop();
  return { delivered, expected, perSecond: (delivered / ms) * 1000, cpuUsPerNotification: (cpu * 1000) / delivered };
}

/** Resolves once no notification arrived for 500 ms. */
async function quiet(host) {
  let last = -1;
  while (host.notifications !== last) {
    last = host.notifications;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

async function stalled(name) {
  const rounds = 100;
  const host = start(name, rounds);
  await host.request('server/discover', {});
  await host.listen('listen:0');
  await host.request(servers[name].memory.method, servers[name].memory.params);
  const before = host.rss();
  host.child.stdout.pause();
  const { method, params } = servers[name].publish(rounds);
  void host.request(method, params);
  // Wait until the server went idle (it published everything into a pipe nobody reads).
  let peak = before;
  let idle = 0;
  let last = host.cpuMs();
  while (idle < 3) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    peak = Math.max(peak, host.rss());
    const cpu = host.cpuMs();
    idle = cpu - last <= 10 ? idle + 1 : 0;
    last = cpu;
  }
  const after = host.rss();
  host.child.stdout.resume();
  await host.stop();
  return { before, after, peak, grew: after - before };
}

const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
const fmt = (n, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

console.log(`# bench/stdio.mjs — ${os.cpus()[0]?.model} x${os.cpus().length}, Node ${process.version}, ${ROUNDS} rounds of ${COUNT}, median of ${REPEAT}`);
const rows = [];
for (const listens of [1, 10]) {
  const results = { ours: [], 'sdk-v2': [] };
  for (let r = 0; r < REPEAT; r++) for (const name of r % 2 === 0 ? ['ours', 'sdk-v2'] : ['sdk-v2', 'ours']) results[name].push(await throughput(name, listens));
  const m = (name, key) => median(results[name].map((x) => x[key]));
  rows.push([`${listens} listen${listens === 1 ? '' : 's'} × 1000 URIs`, m('ours', 'perSecond'), m('sdk-v2', 'perSecond'), m('ours', 'cpuUsPerNotification'), m('sdk-v2', 'cpuUsPerNotification'), `${fmt(m('ours', 'delivered'))} / ${fmt(m('sdk-v2', 'delivered'))} of ${fmt(results.ours[0].expected)}`]);
}
console.log('\n| run | ours notif/s | SDK 2.x notif/s | ours ÷ SDK | ours CPU µs/notif | SDK CPU µs/notif | SDK ÷ ours (CPU) | delivered (ours / SDK) |');
console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
for (const [label, oursRate, sdkRate, oursCpu, sdkCpu, delivered] of rows) {
  console.log(`| ${label} | ${fmt(oursRate)} | ${fmt(sdkRate)} | ${fmt(oursRate / sdkRate, 2)} | ${fmt(oursCpu, 2)} | ${fmt(sdkCpu, 2)} | ${fmt(sdkCpu / oursCpu, 2)} | ${delivered} |`);
}
const stall = { ours: await stalled('ours'), 'sdk-v2': await stalled('sdk-v2') };
console.log('\n| stalled host, 100 000 changes, 1 listen × 1000 URIs | RSS before | RSS after (idle) | grew | peak |');
console.log('| --- | --- | --- | --- | --- |');
for (const [name, s] of Object.entries(stall)) console.log(`| ${name} | ${fmt(s.before / MIB, 1)} MiB | ${fmt(s.after / MIB, 1)} MiB | +${fmt(s.grew / MIB, 1)} MiB | ${fmt(s.peak / MIB, 1)} MiB |`);
console.log(`\nSDK ÷ ours, growth while stalled: ${fmt(stall['sdk-v2'].grew / Math.max(stall.ours.grew, 1), 1)}`);
