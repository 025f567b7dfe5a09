import { test } from 'uvu';
import { endlessSyncSource } from '../helpers/syncSource.js';
import * as assert from 'uvu/assert';
import { map, Observable, take } from 'rxjs';
import { tagSubscriptionId } from '../../operators/tagSubscriptionId.js';
import { encodeFrame, encodeMessage, encodeResourceUpdated, encodeSubscriptionId, messageJson } from '../../lib/encode.js';
import { InvalidOptionError } from '../../lib/errors.js';
import { KEEP_ALIVE, controlFrame, notificationFrame } from '../../lib/frame.js';
import type { Frame, MessageFrame } from '../../lib/frame.js';
import type { JsonRpcId } from '../../lib/jsonrpc.js';
import { testScheduler } from '../helpers/marbles.js';

const toolsChanged = notificationFrame({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }, 'tools');
const listenResult = controlFrame({ jsonrpc: '2.0', id: 7, result: { resultType: 'complete' } }, 'max_lifetime');

/** The frame as the pipeline would write it, after tagging with `id`. */
function tagged(frame: Frame, id: JsonRpcId): Frame {
  let out: Frame | undefined;
  new Observable<Frame>((subscriber) => subscriber.next(frame)).pipe(tagSubscriptionId(id)).subscribe((f) => (out = f));
  if (out === undefined) throw new Error('no frame came out');
  return out;
}

function wireJson(frame: Frame, id: JsonRpcId): string {
  const out = tagged(frame, id);
  if (out.type !== 'message') throw new Error('expected a message frame');
  return messageJson(out);
}

/** A frame with its encoded subscription id as the plain fields of one (the stream's stage carries them). */
function plainId(frame: Frame): Frame {
  if (frame.type !== 'message' || frame.encodedSubscriptionId === undefined) return frame;
  const { id, json, bytes } = frame.encodedSubscriptionId;
  return { ...frame, encodedSubscriptionId: { id, json, bytes } };
}

test('marks every message frame and leaves keep-alives untouched', () => {
  testScheduler().run(({ cold, expectObservable }) => {
    const source = cold<Frame>('a-k-r|', { a: toolsChanged, k: KEEP_ALIVE, r: listenResult });
    // With the id, the stream's encoding of it, made once (encodeSubscriptionId).
    const id = encodeSubscriptionId('listen-1');
    expectObservable(source.pipe(tagSubscriptionId('listen-1'), map(plainId))).toBe('a-k-r|', {
      a: { ...toolsChanged, subscriptionId: 'listen-1', encodedSubscriptionId: id },
      k: KEEP_ALIVE,
      r: { ...listenResult, subscriptionId: 'listen-1', encodedSubscriptionId: id },
    });
  });
});

test('a number id is written as a number', () => {
  assert.is(
    wireJson(toolsChanged, 7),
    '{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7}}}',
  );
});

test('a string id is written as a string, even when it looks like a number', () => {
  assert.is(
    wireJson(toolsChanged, '7'),
    '{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"7"}}}',
  );
  const parsed = JSON.parse(wireJson(toolsChanged, 'a"b')) as { params: { _meta: Record<string, unknown> } };
  assert.is(parsed.params._meta['io.modelcontextprotocol/subscriptionId'], 'a"b');
});

test('keeps the params and the existing _meta keys of a notification', () => {
  const progress = notificationFrame({
    jsonrpc: '2.0',
    method: 'notifications/resources/updated',
    params: { uri: 'file:///a', _meta: { 'example.com/trace': 'abc' } },
  });
  assert.equal(JSON.parse(wireJson(progress, 12)), {
    jsonrpc: '2.0',
    method: 'notifications/resources/updated',
    params: { uri: 'file:///a', _meta: { 'example.com/trace': 'abc', 'io.modelcontextprotocol/subscriptionId': 12 } },
  });
});

test('a result gets the id in result._meta', () => {
  assert.is(
    wireJson(listenResult, 7),
    '{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":7}}}',
  );
  const withMeta = controlFrame({ jsonrpc: '2.0', id: 'x', result: { resultType: 'complete', _meta: { k: 1 } } });
  assert.equal(JSON.parse(wireJson(withMeta, 'x')), {
    jsonrpc: '2.0',
    id: 'x',
    result: { resultType: 'complete', _meta: { k: 1, 'io.modelcontextprotocol/subscriptionId': 'x' } },
  });
});

test('tags a frame encoded once at publish time without encoding it again', () => {
  const published: MessageFrame = { ...notificationFrame({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'file:///a' } }), encoded: encodeResourceUpdated('file:///a') };
  const out = tagged(published, 3);
  assert.is((out as MessageFrame).encoded, published.encoded);
  assert.is((out as MessageFrame).message, published.message);
  assert.is(
    encodeFrame(out),
    'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a","_meta":{"io.modelcontextprotocol/subscriptionId":3}}}\n\n',
  );
});

test('the keep-alive is still written as the three bytes :\\r\\n', () => {
  assert.is(tagged(KEEP_ALIVE, 7), KEEP_ALIVE);
  assert.is(encodeFrame(tagged(KEEP_ALIVE, 7)), ':\r\n');
});

test('does not modify the published frame, which other streams share', () => {
  const shared = Object.freeze({ ...toolsChanged, encoded: encodeMessage(toolsChanged.message) });
  tagged(shared, 1);
  assert.is(shared.subscriptionId, undefined);
});

test('throws InvalidOptionError at call time for an id that is not a string or finite number', () => {
  for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, null, undefined, true, {}, [1]]) {
    assert.throws(
      () => tagSubscriptionId(bad as unknown as JsonRpcId),
      (error: unknown) => error instanceof InvalidOptionError && error.message.startsWith('tagSubscriptionId id must be'),
      `accepted ${String(bad)}`,
    );
  }
  tagSubscriptionId(0);
  tagSubscriptionId('');
});

test('stops a synchronous source when unsubscribed', () => {
  const { source, emitted } = endlessSyncSource<Frame>(() => toolsChanged);
  const got: Frame[] = [];
  source.pipe(tagSubscriptionId(7), take(3)).subscribe((frame) => got.push(frame));
  assert.is(got.length, 3);
  assert.ok(emitted() <= 3, `the source kept emitting after unsubscription: ${emitted()} frames`);
});

test.run();
