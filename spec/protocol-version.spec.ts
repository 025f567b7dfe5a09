// An `MCP-Protocol-Version` header naming a revision the server does not speak gets HTTP 400 with
// a message naming the revisions it does speak, before anything else (session, method) is judged.
// MCP 2025-06-18, transports: "If the server receives a request with an invalid or unsupported
// MCP-Protocol-Version, it MUST respond with 400 Bad Request."
// A session's own requests and the known revisions keep working (the control cases below).
import { strict as assert } from 'node:assert';
import { test } from 'uvu';
import { LEGACY_PROTOCOL_VERSIONS } from '../lib/protocol.js';
import { MODERN_PROTOCOL_VERSION } from '../lib/protocol.js';
import { listenBody, LISTEN_HEADERS, post, SseConnection, startEndpoint } from './helpers/http.js';
import { initialize, send, sessionHeaders } from './helpers/legacy.js';

const SUPPORTED = [MODERN_PROTOCOL_VERSION, ...LEGACY_PROTOCOL_VERSIONS];
const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

function assertNamesSupported(body: string): void {
  for (const version of SUPPORTED) assert.ok(body.includes(version), `the answer does not name ${version}: ${body}`);
  assert.ok(!/Mcp-Session-Id/i.test(body), `the answer talks about sessions instead of the version: ${body}`);
}

test('subscriptions/listen with MCP-Protocol-Version 1999-01-01: HTTP 400 naming every supported revision', async () => {
  const server = await startEndpoint();
  try {
    const reply = await post(server.url, listenBody(1, { toolsListChanged: true }), { ...LISTEN_HEADERS, 'mcp-protocol-version': '1999-01-01' });
    assert.equal(reply.status, 400, reply.body);
    assert.ok(reply.body.includes('1999-01-01'), reply.body);
    assertNamesSupported(reply.body);
    // MCP 2026-07-28: -32022 UnsupportedProtocolVersion with data { supported, requested }.
    const error = JSON.parse(reply.body).error;
    assert.equal(error.code, -32022);
    assert.deepEqual(error.data, { supported: SUPPORTED, requested: '1999-01-01' });
    assert.equal(server.endpoint.stats.streams, 0);
  } finally {
    await server.close();
  }
});

test('any method, with or without a session, with an unsupported revision: HTTP 400 naming the supported ones', async () => {
  const server = await startEndpoint();
  try {
    const plain = await post(server.url, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }), { ...JSON_HEADERS, 'mcp-protocol-version': '2030-01-01' });
    assert.equal(plain.status, 400, plain.body);
    assertNamesSupported(plain.body);

    const { sessionId } = await initialize(server.url);
    const inSession = await send(server.url, 'POST', sessionHeaders(sessionId, { 'mcp-protocol-version': 'not-a-date' }), JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'ping' }));
    assert.equal(inSession.status, 400, inSession.body);
    assertNamesSupported(inSession.body);
  } finally {
    await server.close();
  }
});

test('the supported revisions are not refused (control)', async () => {
  const server = await startEndpoint();
  try {
    const listen = await SseConnection.open(server.url, listenBody(4, { toolsListChanged: true }), { ...LISTEN_HEADERS, 'mcp-protocol-version': MODERN_PROTOCOL_VERSION });
    await listen.until((c) => c.text.includes('acknowledged'), 3000, 'the ack');
    listen.destroy();
    for (const version of LEGACY_PROTOCOL_VERSIONS) {
      const { sessionId, status } = await initialize(server.url, { protocolVersion: version });
      assert.equal(status, 200);
      const ping = await send(server.url, 'POST', sessionHeaders(sessionId, { 'mcp-protocol-version': version }), JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'ping' }));
      assert.equal(ping.status, 200, `${version}: ${ping.body}`);
    }
  } finally {
    await server.close();
  }
});

test.run();
