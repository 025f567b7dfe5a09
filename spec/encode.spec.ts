import { strict as assert } from 'node:assert';
import { test } from 'uvu';
import { encodedByteLength, encodeFrame, encodeMessage, encodeResourceUpdated, encodeSseEvent, encodeSubscriptionId, messageJson, taggedMessage } from '../lib/encode.js';
import { FrameEncodingError } from '../lib/errors.js';
import { controlFrame, KEEP_ALIVE, notificationFrame, type Frame, type MessageFrame } from '../lib/frame.js';
import { tagged } from '../operators/tagSubscriptionId.js';

const ack = controlFrame({
  jsonrpc: '2.0',
  method: 'notifications/subscriptions/acknowledged',
  params: { notifications: { toolsListChanged: true, resourceSubscriptions: ['file:///project/config.json'] } },
});

test('the acknowledgment frame matches the seed document byte for byte', () => {
  assert.equal(
    encodeFrame({ ...ack, subscriptionId: 7 }),
    'event: message\n' +
      'data: {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true,"resourceSubscriptions":["file:///project/config.json"]},"_meta":{"io.modelcontextprotocol/subscriptionId":7}}}\n' +
      '\n',
  );
});

test('a resources/updated frame matches the seed document byte for byte (fast-json-stringify path)', () => {
  const frame: MessageFrame = {
    ...notificationFrame({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'file:///project/config.json' } }),
    encoded: encodeResourceUpdated('file:///project/config.json'),
    subscriptionId: 7,
  };
  assert.equal(
    encodeFrame(frame),
    'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///project/config.json","_meta":{"io.modelcontextprotocol/subscriptionId":7}}}\n\n',
  );
});

test('the fast path and the generic path produce the same bytes, including escapes', () => {
  for (const uri of ['file:///a', 'file:///with "quotes"/and\\back', 'file:///ünï/😀', 'x\ny\r\u2028', '']) {
    const fast = encodeResourceUpdated(uri);
    const generic = encodeMessage({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri } });
    assert.deepEqual(fast, generic, uri);
  }
});

test('the subscription id is written verbatim: number stays number, string stays string', () => {
  const frame = notificationFrame({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
  assert.equal(messageJson({ ...frame, subscriptionId: 7 }), '{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7}}}');
  assert.equal(messageJson({ ...frame, subscriptionId: '7' }), '{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"7"}}}');
  assert.equal(messageJson({ ...frame, subscriptionId: 'a"b' }), '{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"a\\"b"}}}');
  assert.equal(messageJson(frame), '{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}');
});

test('the listen result carries the id in result._meta; existing _meta members are kept', () => {
  const result = controlFrame({ jsonrpc: '2.0', id: 'L-1', result: { resultType: 'complete' } });
  assert.equal(messageJson({ ...result, subscriptionId: 'L-1' }), '{"jsonrpc":"2.0","id":"L-1","result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":"L-1"}}}');
  const withMeta = controlFrame({ jsonrpc: '2.0', method: 'notifications/progress', params: { progress: 1, _meta: { trace: 'x' } } });
  assert.equal(
    messageJson({ ...withMeta, subscriptionId: 5 }),
    '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1,"_meta":{"trace":"x","io.modelcontextprotocol/subscriptionId":5}}}',
  );
  assert.deepEqual(taggedMessage({ ...withMeta, subscriptionId: 5 }), {
    jsonrpc: '2.0',
    method: 'notifications/progress',
    params: { progress: 1, _meta: { trace: 'x', 'io.modelcontextprotocol/subscriptionId': 5 } },
  });
});

test('an error response is never tagged', () => {
  const error = controlFrame({ jsonrpc: '2.0', id: 1, error: { code: -32602, message: 'bad' } });
  assert.equal(messageJson({ ...error, subscriptionId: 1 }), '{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}');
});

test('legacy frames carry their id line between event and data', () => {
  const frame = { ...notificationFrame({ jsonrpc: '2.0', method: 'notifications/resources/list_changed' }), eventId: '42' };
  assert.equal(encodeFrame(frame), 'event: message\nid: 42\ndata: {"jsonrpc":"2.0","method":"notifications/resources/list_changed"}\n\n');
});

test('legacy frames of messages that alternate (a turn of several publishes) each carry their own message', () => {
  const one = { ...notificationFrame({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'file:///a' } }, 'resource'), encoded: encodeResourceUpdated('file:///a') };
  const two = { ...notificationFrame({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }, 'tools'), encoded: encodeMessage({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }) };
  // Same text, another encoding object (a relayed frame): its own JSON, not the last one's.
  const same = { ...one, encoded: { plain: '{"uri":"file:///b"}', head: '', tail: '' } };
  const order = [one, one, two, one, same, same, two, two, one];
  order.forEach((frame, i) => {
    const eventId = String(i + 1);
    assert.equal(encodeFrame({ ...frame, eventId }), `event: message\nid: ${eventId}\ndata: ${frame.encoded.plain}\n\n`);
  });
  // A tagged frame with an event id keeps its tag.
  const taggedOne = { ...tagged(one, encodeSubscriptionId(3)), eventId: '9' };
  assert.equal(encodeFrame(taggedOne), `event: message\nid: 9\ndata: ${messageJson(taggedOne)}\n\n`);
  assert.match(encodeFrame(taggedOne), /"io.modelcontextprotocol\/subscriptionId":3/);
});

test('keep-alive is exactly ":\\r\\n"; comment text is split into comment lines', () => {
  assert.equal(encodeFrame(KEEP_ALIVE), ':\r\n');
  assert.equal(encodeFrame({ type: 'comment', text: ' a\r\nb\rc\nd' }), ': a\r\n:b\r\n:c\r\n:d\r\n');
});

test('CR or LF in an event id is refused', () => {
  for (const eventId of ['1\n2', '1\r', '\r\n', 'ü\n']) {
    const frame = { ...notificationFrame({ jsonrpc: '2.0', method: 'm' }), eventId };
    assert.throws(() => encodeFrame(frame), FrameEncodingError);
    assert.throws(() => encodedByteLength(frame), FrameEncodingError);
    const encoded = { ...frame, encoded: encodeMessage(frame.message) };
    assert.throws(() => encodeFrame(encoded), FrameEncodingError);
    assert.throws(() => encodedByteLength(encoded), FrameEncodingError);
  }
});

test('generic events split data on CRLF, CR and LF, and refuse CR/LF in event and id', () => {
  assert.equal(encodeSseEvent({ data: 'a\r\nb\rc\nd' }), 'data: a\ndata: b\ndata: c\ndata: d\n\n');
  assert.equal(encodeSseEvent({ event: 'message', id: '3', retry: 1000, data: '' }), 'event: message\nid: 3\nretry: 1000\ndata: \n\n');
  assert.throws(() => encodeSseEvent({ event: 'a\nb', data: '' }), FrameEncodingError);
  assert.throws(() => encodeSseEvent({ id: 'a\rb', data: '' }), FrameEncodingError);
  assert.throws(() => encodeSseEvent({ retry: -1, data: '' }), FrameEncodingError);
});

test('encodeSubscriptionId: the JSON messageJson writes for the id, and its UTF-8 byte length', () => {
  assert.deepEqual(encodeSubscriptionId(7), { id: 7, json: '7', bytes: 1 });
  assert.deepEqual(encodeSubscriptionId(-1.5e-7), { id: -1.5e-7, json: '-1.5e-7', bytes: 7 });
  assert.deepEqual(encodeSubscriptionId('listen:1'), { id: 'listen:1', json: '"listen:1"', bytes: 10 });
  assert.deepEqual(encodeSubscriptionId('é"\n'), { id: 'é"\n', json: '"é\\"\\n"', bytes: 8 });
});

test('encodedByteLength is the UTF-8 length of encodeFrame, counted from the sizes measured once (every shape, every id, with and without event ids)', () => {
  const uris = ['file:///a', 'file:///ünï/😀', 'file:///with "quotes"/and\\back', ''];
  const ids = [7, 0, -3.25, 'listen:1', 'é', '😀"\n', ''];
  const messages: MessageFrame[] = [
    ...uris.map((uri) => ({ ...notificationFrame({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri } }, 'resource'), encoded: encodeResourceUpdated(uri) })),
    { ...notificationFrame({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }, 'tools'), encoded: encodeMessage({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }) },
    { ...ack, encoded: encodeMessage(ack.message) },
    ack,
    controlFrame({ jsonrpc: '2.0', id: 'L-ü', result: { resultType: 'complete', _meta: { trace: 'ö' } } }),
    { ...controlFrame({ jsonrpc: '2.0', id: 1, error: { code: -32602, message: 'bäd' } }), encoded: encodeMessage({ jsonrpc: '2.0', id: 1, error: { code: -32602, message: 'bäd' } }) },
    // Encoded elsewhere, without sizes (a cluster worker's relayed frame, a replayed one).
    { ...notificationFrame({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'file:///ß' } }), encoded: { plain: '{"uri":"ß"}', head: '{"uri":"ß","_meta":{"io.modelcontextprotocol/subscriptionId":', tail: '}}' } },
  ];
  const frames: Frame[] = [KEEP_ALIVE, { type: 'comment', text: 'ü\nx' }, { type: 'prime', eventId: '12', retry: 1000 }, { type: 'prime', retry: 0 }];
  for (const message of messages) {
    frames.push(message, { ...message, eventId: '42' }, { ...message, eventId: 'ü9' });
    for (const id of ids) {
      const one = tagged(message, encodeSubscriptionId(id));
      frames.push(one, { ...one, eventId: '1000' }, { ...message, subscriptionId: id });
      // A tagged frame copied with another id: the id is encoded from the frame, not taken from the stream's.
      frames.push({ ...one, subscriptionId: id === 7 ? 8 : 7 });
    }
  }
  for (const frame of frames) assert.equal(encodedByteLength(frame), Buffer.byteLength(encodeFrame(frame)), JSON.stringify(frame));
  const withCrLf = { ...messages[0]!, eventId: '1\n2' };
  assert.throws(() => encodedByteLength(withCrLf), FrameEncodingError);
});

test.run();
