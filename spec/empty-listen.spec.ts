// Issue 24, item 4: emptyListen. A listen whose acknowledged filter is empty holds its stream by
// default (DESIGN M2); with `emptyListen: 'complete'` it gets the empty acknowledgment and the
// listen result at once, byte for byte, its response ends and it keeps no slot; telemetry says
// `empty_filter`. A listen that honoured something is not affected.
import { strict as assert } from 'node:assert';
import { test } from 'uvu';
import { McpEndpoint } from '../adapters/http/endpoint.js';
import { InvalidOptionError } from '../lib/errors.js';
import { Hub } from '../lib/hub.js';
import { channels, type StartEvent, type StopEvent } from '../lib/telemetry.js';
import { eventually, LISTEN_HEADERS, listenBody, SseConnection, startEndpoint } from './helpers/http.js';
import { collecting } from './helpers/telemetry.js';

const ACK_EMPTY = (id: number) =>
  `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{},"_meta":{"io.modelcontextprotocol/subscriptionId":${id}}}}\n\n`;
const RESULT = (id: number) => `event: message\ndata: {"jsonrpc":"2.0","id":${id},"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":${id}}}}\n\n`;

test('default (hold): a listen that honoured nothing stays open with its empty acknowledgment, holding its slot', async () => {
  const server = await startEndpoint({ capabilities: { tools: true } });
  try {
    // promptsListChanged is not advertised: nothing is honoured.
    const listen = await SseConnection.open(server.url, listenBody(5, { promptsListChanged: true }), { ...LISTEN_HEADERS });
    await listen.until((c) => c.text.length >= ACK_EMPTY(5).length);
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(listen.text, ACK_EMPTY(5));
    assert.equal(listen.ended, false);
    assert.equal(server.endpoint.stats.slots, 1);
    listen.destroy();
  } finally {
    await server.close();
  }
});

test("emptyListen 'complete': the empty acknowledgment and the result, byte for byte, then the end; no slot kept; stop reason empty_filter", async () => {
  await collecting<StartEvent>(channels.start, async (starts) => {
    await collecting<StopEvent>(channels.stop, async (stops) => {
      const server = await startEndpoint({ capabilities: { tools: true }, emptyListen: 'complete' });
      try {
        const listen = await SseConnection.open(server.url, listenBody(5, { promptsListChanged: true, unknownField: true }), { ...LISTEN_HEADERS });
        await listen.until((c) => c.ended, 3000, 'the response to end');
        assert.equal(listen.status, 200);
        assert.equal(listen.res.headers['content-type'], 'text/event-stream');
        assert.equal(listen.text, ACK_EMPTY(5) + RESULT(5));
        assert.equal(server.endpoint.stats.slots, 0);
        assert.equal(server.endpoint.stats.streams, 0);
        assert.equal(server.endpoint.stats.principals, 0);
        assert.deepEqual(starts.map((start) => start.filters), [[]]);
        assert.deepEqual(stops.map((stop) => [stop.reason, stop.filters]), [['empty_filter', []]]);
      } finally {
        await server.close();
      }
    });
  });
});

test("emptyListen 'complete': every URI refused is an empty filter too; a filter that honours something opens a stream as always", async () => {
  const server = await startEndpoint({ capabilities: { tools: true, resources: true }, emptyListen: 'complete', canRead: () => false });
  try {
    const refused = await SseConnection.open(server.url, listenBody(6, { resourceSubscriptions: ['file:///secret'] }), { ...LISTEN_HEADERS });
    await refused.until((c) => c.ended, 3000, 'the refused listen to end');
    assert.equal(refused.text, ACK_EMPTY(6) + RESULT(6));
    const honoured = await SseConnection.open(server.url, listenBody(7, { toolsListChanged: true, resourceSubscriptions: ['file:///secret'] }), { ...LISTEN_HEADERS });
    await honoured.until((c) => c.messages.length === 1);
    assert.deepEqual(honoured.messages[0]?.params.notifications, { toolsListChanged: true });
    server.hub.notifyToolsChanged();
    await honoured.until((c) => c.messages.length === 2);
    assert.equal(honoured.ended, false);
    assert.equal(server.endpoint.stats.slots, 1);
    honoured.destroy();
    await eventually(() => server.endpoint.stats.slots === 0, 3000, 'the slot back');
  } finally {
    await server.close();
  }
});

test('emptyListen must be "hold" or "complete"', () => {
  for (const emptyListen of ['close', true, 1, null]) {
    assert.throws(
      () => new McpEndpoint({ hub: new Hub(), emptyListen: emptyListen as never }),
      (error: unknown) => error instanceof InvalidOptionError && /^emptyListen must be "hold" or "complete", got /.test(error.message),
    );
  }
});

test.run();
