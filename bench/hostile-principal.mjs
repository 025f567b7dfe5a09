// What one principal can take from the others, measured over real sockets against a build of the
// library (issue "Hostile clients II", items 1 and 5). Two scenarios, each printed as a table:
//
//  1. slots: `maxStreams 2, maxListensPerPrincipal 1, keepAliveInterval 4000` (the red team's
//     setup). Principal "hog" opens a listen on 200 URIs and stops reading; changes are published
//     until frames wait in its queue; "hog" opens a second listen. Sampled every 100 ms for 6 s:
//     the slots in use and the status another principal's first listen gets.
//  2. reconnects: six official @modelcontextprotocol/sdk 1.x clients of one principal (anonymous
//     from one address, like six tabs of one user) against the reference server, each with its GET
//     stream; the GET requests the server receives in 10 s (six are the first streams; the rest
//     are reconnects).
//
// Usage: npm run build && node bench/hostile-principal.mjs [--build <dir with the built dist>]
// Compare two builds by running it once against each (e.g. a checkout of the previous commit).
import fs from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const args = process.argv.slice(2);
const buildAt = args.includes('--build') ? path.resolve(args[args.indexOf('--build') + 1]) : path.resolve(new URL('../dist', import.meta.url).pathname);
const load = (file) => import(pathToFileURL(path.join(buildAt, file)).href);
const { McpEndpoint, Hub, nodeHandler } = await load('index.js');
const { startReferenceServer } = await load('adapters/reference/server.js');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

console.log(`build: ${buildAt}\nnode ${process.version}, ${os.cpus().length} cores\n`);

/* 1. Slots held by a principal whose superseded stream's client is not reading. */
{
  const hub = new Hub();
  const endpoint = new McpEndpoint({
    hub,
    capabilities: { tools: true, resources: true },
    authenticate: (request) => ({ principal: `user:${request.header('x-principal')}`, scopes: new Set() }),
    maxStreams: 2,
    maxListensPerPrincipal: 1,
    keepAliveInterval: 4000,
    maxBodyBytes: 8 * 1024 * 1024,
  });
  const server = http.createServer(nodeHandler(endpoint));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = server.address().port;
  const uris = Array.from({ length: 200 }, (_, i) => `file:///${String(i).padStart(3, '0')}/${'s'.repeat(8 * 1024 - 16)}`);
  const listenBody = (id, notifications) => JSON.stringify({ jsonrpc: '2.0', id, method: 'subscriptions/listen', params: { notifications } });
  const headers = (principal, body) =>
    `Host: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nx-principal: ${principal}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n`;
  const stalled = async (id) => {
    const body = listenBody(id, { resourceSubscriptions: uris });
    const socket = net.connect(port, '127.0.0.1');
    socket.on('error', () => {});
    socket.write(`POST /mcp HTTP/1.1\r\n${headers('hog', body)}\r\n${body}`);
    await new Promise((resolve) => socket.once('data', resolve));
    socket.pause();
    return socket;
  };
  const politeStatus = () =>
    new Promise((resolve) => {
      const body = listenBody('polite', { toolsListChanged: true });
      const req = http.request(`http://127.0.0.1:${port}/mcp`, { method: 'POST', agent: false, headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'mcp-protocol-version': '2026-07-28', 'x-principal': 'polite' } }, (res) => {
        resolve(res.statusCode);
        res.destroy();
      });
      req.on('error', () => resolve('error'));
      req.end(body);
    });
  const first = await stalled('first');
  for (let round = 0; round < 5; round++) {
    for (const uri of uris) hub.notifyResourceUpdated(uri);
    await new Promise((resolve) => setImmediate(resolve));
  }
  const t0 = Date.now();
  const second = await stalled('second');
  console.log('1. slots held while the hog\'s superseded listen is stalled (maxStreams 2, cap 1, keep-alive 4000 ms)');
  console.log('| ms after the second listen | slots in use | another principal\'s first listen |');
  console.log('|---:|---:|---|');
  for (let at = 0; at <= 6000; at += 500) {
    await sleep(Math.max(0, t0 + at - Date.now()));
    const inUse = endpoint.slots.inUse;
    const status = await politeStatus();
    await sleep(20);
    console.log(`| ${at} | ${inUse} | ${status} |`);
  }
  first.destroy();
  second.destroy();
  endpoint.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

/* 2. Reconnects of six official 1.x clients of one principal. */
{
  const dir = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'mcp-rx-bench-principal-')));
  const files = Array.from({ length: 6 }, (_, i) => path.join(dir, `tab-${i}.txt`));
  for (const file of files) await fs.writeFile(file, 'version 0\n');
  const server = await startReferenceServer({ dir, port: 0, host: '127.0.0.1', debounceMs: 20 });
  let gets = 0;
  server.server.on('request', (req) => {
    if (req.method === 'GET') gets++;
  });
  const clients = [];
  const heard = files.map(() => 0);
  for (const [i, file] of files.entries()) {
    const client = new Client({ name: `tab-${i}`, version: '0.0.0' });
    client.onerror = () => {};
    client.fallbackNotificationHandler = async (notification) => {
      if (notification.method === 'notifications/resources/updated') heard[i]++;
    };
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
    while (server.endpoint.stats.sessions < i + 1) await sleep(5);
    await sleep(100);
    await client.subscribeResource({ uri: pathToFileURL(file).href }).catch(() => {});
    clients.push(client);
  }
  const start = gets;
  const t0 = Date.now();
  console.log('\n2. six official SDK 1.x clients of one principal, each with its GET stream and a subscription, for 10 s (a change to every file each second)');
  console.log('| s | GET requests so far (first streams: 6) | GET streams open | changes heard (of 6 per second) |');
  console.log('|---:|---:|---:|---:|');
  for (let second = 1; second <= 10; second++) {
    for (const file of files) await fs.writeFile(file, `version ${second}\n`);
    await sleep(Math.max(0, t0 + second * 1000 - Date.now()));
    console.log(`| ${second} | ${gets} | ${server.endpoint.stats.streams} | ${heard.reduce((a, b) => a + b, 0)} |`);
  }
  console.log(`\nreconnects in 10 s: ${gets - 6} (GET requests ${gets}, ${start} before the 10 s)`);
  for (const client of clients) await client.close().catch(() => {});
  await server.close();
  await fs.rm(dir, { recursive: true, force: true });
}
process.exit(0);
