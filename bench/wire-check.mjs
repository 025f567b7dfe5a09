// Checks that the ceiling peers put on the wire exactly the bytes of their baselines (issue 22): the
// ceilings build each HTTP chunk themselves and write it on the socket (peers/chunk.mjs), and a
// ceiling that wrote fewer or other bytes would not be the same work. For each pair (baseline ↔
// ceiling for listen, legacy-baseline ↔ legacy-ceiling), in this process: a node:http server on a
// loopback port, one raw-socket client as the load generator opens it (a listen POST; or
// initialize, GET /mcp, resources/subscribe), 120 publishes rotating over 3 URIs and 5
// tools/list_changed (the legacy event ids cross 9 → 10 and 99 → 100, the chunk size lines change
// length), then every byte the client received, compared with the `Date:` header taken out.
//
//   node bench/wire-check.mjs        exit 0 when every pair is byte-identical, 1 (with the first
//                                    difference) otherwise
import http from 'node:http';
import net from 'node:net';
import { uris } from './peers/common.mjs';

const PAIRS = [
  ['baseline', 'ceiling', false],
  ['legacy-baseline', 'legacy-ceiling', true],
];
const PUBLISHES = 120;
const MARKERS = 5;
const URIS = uris(3);

async function capture(peerName, legacy) {
  const peer = await (await import(`./peers/${peerName}.mjs`)).create();
  const server = http.createServer((req, res) => peer.handler(req, res));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  try {
    let head;
    let sessionId;
    if (legacy) {
      const init = await post(port, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'wire-check', version: '1' } } });
      sessionId = init.sessionId;
      head = `GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: text/event-stream\r\nMcp-Session-Id: ${sessionId}\r\nMcp-Protocol-Version: 2025-11-25\r\n\r\n`;
    } else {
      const body = JSON.stringify({ jsonrpc: '2.0', id: 'listen:7', method: 'subscriptions/listen', params: { notifications: { resourceSubscriptions: URIS, toolsListChanged: true } } });
      head = `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    }
    const chunks = [];
    const socket = net.connect({ port, host: '127.0.0.1' });
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.write(head);
    const received = () => Buffer.concat(chunks).toString('latin1');
    await until(() => received().includes(legacy ? '\r\n\r\n' : 'acknowledged'), `${peerName}: no ${legacy ? 'head' : 'ack'}`);
    if (legacy) {
      for (const uri of URIS) await post(port, { jsonrpc: '2.0', id: `s:${uri}`, method: 'resources/subscribe', params: { uri } }, sessionId);
    }
    for (let i = 0; i < PUBLISHES; i++) {
      peer.publish(URIS[i % URIS.length]);
      if (i % 7 === 0) await new Promise((resolve) => setImmediate(resolve)); // some turns hold several frames
    }
    for (let i = 0; i < MARKERS; i++) peer.publishMarker();
    const frames = PUBLISHES + MARKERS + (legacy ? 0 : 1);
    await until(() => received().split('data:').length - 1 >= frames, `${peerName}: fewer than ${frames} frames`);
    socket.destroy();
    return received().replace(/\r\nDate: [^\r]*/, '');
  } finally {
    peer.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

function post(port, message, sessionId) {
  const body = JSON.stringify(message);
  const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'Content-Length': Buffer.byteLength(body) };
  if (sessionId !== undefined) Object.assign(headers, { 'Mcp-Session-Id': sessionId, 'Mcp-Protocol-Version': '2025-11-25' });
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/mcp', method: 'POST', headers, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, sessionId: res.headers['mcp-session-id'] }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function until(condition, what) {
  for (let i = 0; i < 200; i++) {
    if (condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`${what} after 2 s`);
}

let failed = false;
for (const [basePeer, ceilingPeer, legacy] of PAIRS) {
  const [a, b] = [await capture(basePeer, legacy), await capture(ceilingPeer, legacy)];
  if (a === b) {
    console.log(`${basePeer} = ${ceilingPeer}: ${a.length} bytes identical (head without Date:, ${PUBLISHES + MARKERS} frames${legacy ? ' with event ids' : ' and the ack'})`);
    continue;
  }
  failed = true;
  let at = 0;
  while (at < a.length && a[at] === b[at]) at++;
  console.error(`${basePeer} ≠ ${ceilingPeer}: ${a.length} vs ${b.length} bytes, first difference at byte ${at}:`);
  console.error(`  ${basePeer}: ${JSON.stringify(a.slice(Math.max(0, at - 40), at + 40))}`);
  console.error(`  ${ceilingPeer}: ${JSON.stringify(b.slice(Math.max(0, at - 40), at + 40))}`);
}
process.exit(failed ? 1 : 0);
