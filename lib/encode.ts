import fastJson from 'fast-json-stringify';
import { FrameEncodingError } from './errors.js';
import type { EncodedMessage, EncodedSubscriptionId, Frame, MessageFrame } from './frame.js';
import { SUBSCRIPTION_ID_META_KEY, type JsonRpcId, type JsonRpcMessage } from './jsonrpc.js';

const ID_KEY_JSON = `${JSON.stringify(SUBSCRIPTION_ID_META_KEY)}:`;
// Every tagged message is built so that `_meta` is the last member of `params`/`result`, which is
// the last member of the message: its JSON therefore ends with `}}}` and the id goes just before.
const TAIL = '}}}';

/** `plain` and the tagged form `json` cut around the id's place, with the byte lengths of the three parts. */
function split(plain: string, json: string, metaIsEmpty: boolean): EncodedMessage {
  const head = json.slice(0, -TAIL.length) + (metaIsEmpty ? '' : ',') + ID_KEY_JSON;
  return { plain, head, tail: TAIL, plainBytes: Buffer.byteLength(plain, 'utf8'), headBytes: Buffer.byteLength(head, 'utf8'), tailBytes: TAIL.length };
}

function withoutKey(meta: unknown): Record<string, unknown> {
  if (meta === null || typeof meta !== 'object' || Array.isArray(meta)) return {};
  const { [SUBSCRIPTION_ID_META_KEY]: _dropped, ...rest } = meta as Record<string, unknown>;
  return rest;
}

/**
 * Encodes any JSON-RPC message once so that it can be tagged per stream by concatenation.
 *
 * The subscription id goes into `params._meta` (notifications, requests) or `result._meta`
 * (results); an error response has no `_meta` and is never tagged.
 *
 * @example
 * const enc = encodeMessage({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
 * enc.head + JSON.stringify(7) + enc.tail;
 * // {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7}}}
 * @param message the message; not modified.
 * @see messageJson
 */
export function encodeMessage(message: JsonRpcMessage): EncodedMessage {
  const plain = JSON.stringify(message);
  if ('error' in message) {
    const bytes = Buffer.byteLength(plain, 'utf8');
    return { plain, head: plain, tail: '', plainBytes: bytes, headBytes: bytes, tailBytes: 0 };
  }
  if ('result' in message) {
    const { _meta, ...rest } = message.result;
    const meta = withoutKey(_meta);
    const json = JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { ...rest, _meta: meta } });
    return split(plain, json, isEmpty(meta));
  }
  const { _meta, ...rest } = message.params ?? {};
  const meta = withoutKey(_meta);
  const shaped =
    'id' in message
      ? { jsonrpc: '2.0', id: message.id, method: message.method, params: { ...rest, _meta: meta } }
      : { jsonrpc: '2.0', method: message.method, params: { ...rest, _meta: meta } };
  return split(plain, JSON.stringify(shaped), isEmpty(meta));
}

function isEmpty(object: Record<string, unknown>): boolean {
  for (const _ in object) return false;
  return true;
}

// The hot shape: a payload-less `notifications/resources/updated` is published for every change
// of every subscribed resource. fast-json-stringify compiles its serializer once.
const resourceUpdatedTagged = fastJson({
  type: 'object',
  properties: {
    jsonrpc: { type: 'string' },
    method: { type: 'string' },
    params: {
      type: 'object',
      properties: { uri: { type: 'string' }, _meta: { type: 'object', properties: {}, additionalProperties: false } },
      required: ['uri', '_meta'],
      additionalProperties: false,
    },
  },
  required: ['jsonrpc', 'method', 'params'],
  additionalProperties: false,
});
const resourceUpdatedPlain = fastJson({
  type: 'object',
  properties: {
    jsonrpc: { type: 'string' },
    method: { type: 'string' },
    params: { type: 'object', properties: { uri: { type: 'string' } }, required: ['uri'], additionalProperties: false },
  },
  required: ['jsonrpc', 'method', 'params'],
  additionalProperties: false,
});
const EMPTY_META = Object.freeze({});

/** `notifications/resources/updated` for `uri`, encoded with the compiled fast-json-stringify serializer. */
export function encodeResourceUpdated(uri: string): EncodedMessage {
  const message = { jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri } } as const;
  const plain = resourceUpdatedPlain(message);
  const tagged = resourceUpdatedTagged({ ...message, params: { uri, _meta: EMPTY_META } });
  return split(plain, tagged, true);
}

/**
 * A subscription id encoded once for every frame of its stream (`tagSubscriptionId` makes one per
 * stream and puts it on the frames it tags, see `MessageFrame.encodedSubscriptionId`): its JSON, as
 * `messageJson` writes it, and that JSON's UTF-8 byte length.
 *
 * @example
 * encodeSubscriptionId('listen:1') // { id: 'listen:1', json: '"listen:1"', bytes: 10 }
 * @param id the listen request id: a string or a finite number.
 * @internal
 */
export function encodeSubscriptionId(id: JsonRpcId): EncodedSubscriptionId {
  // A finite number's JSON is its string form; a string id needs quoting and escaping.
  const json = typeof id === 'number' ? `${id}` : JSON.stringify(id);
  return { id, json, bytes: Buffer.byteLength(json, 'utf8') };
}

/** The frame's subscription id encoded: the one its stream made when it is for that id, else made now. */
function encodedIdOf(frame: MessageFrame, id: JsonRpcId): EncodedSubscriptionId {
  const encoded = frame.encodedSubscriptionId;
  return encoded !== undefined && encoded.id === id ? encoded : encodeSubscriptionId(id);
}

/**
 * The JSON of a message frame as it goes on the wire: tagged with the frame's `subscriptionId`
 * when it has one, reusing the frame's pre-encoded form when present.
 */
export function messageJson(frame: MessageFrame): string {
  const encoded = frame.encoded ?? encodeMessage(frame.message);
  const id = frame.subscriptionId;
  if (id === undefined || encoded.tail === '') return encoded.plain;
  return encoded.head + encodedIdOf(frame, id).json + encoded.tail;
}

/**
 * The message a frame stands for, as a new object with the subscription id in `_meta`
 * (for in-process consumers; the wire path never builds it).
 */
export function taggedMessage(frame: MessageFrame): JsonRpcMessage {
  return frame.subscriptionId === undefined ? frame.message : (JSON.parse(messageJson(frame)) as JsonRpcMessage);
}

// `event: message\n` + `data: ` + `\n\n`: what every message frame adds around its JSON; `id: ` + `\n`
// what an event id adds around itself.
const MESSAGE_FRAMING_BYTES = 15 + 6 + 2;
const ID_LINE_BYTES = 4 + 1;

/**
 * How many bytes `encodeFrame(frame)` takes as UTF-8, without building it for the frames of the
 * hot shape (a message encoded once, tagged or not, with or without an event id): a sum of sizes
 * measured once per message (`EncodedMessage`'s `plainBytes`, `headBytes`, `tailBytes`) and once
 * per stream (`EncodedSubscriptionId.bytes`), plus the event id's. What a queue of frames for a
 * slow client is bounded by, and what node:http's writer puts in an HTTP chunk's size line instead
 * of measuring the text it writes (issue 33: measuring it, `Buffer.byteLength`, flattened and read
 * every frame's text once more before the socket did; counting instead took 4–5 % off the CPU of a
 * publish turn to 2 000 listen streams, `bench/turn-cpu.mjs`).
 *
 * @example
 * encodedByteLength(KEEP_ALIVE) // 3
 * @param frame any frame.
 * @returns its size on the wire, in bytes: always `Buffer.byteLength(encodeFrame(frame))`.
 * @throws FrameEncodingError when the frame cannot be encoded (as `encodeFrame` would).
 */
export function encodedByteLength(frame: Frame): number {
  if (frame.type === 'message' && frame.encoded !== undefined) {
    const json = jsonByteLength(frame, frame.encoded);
    const eventId = frame.eventId;
    if (eventId === undefined) return MESSAGE_FRAMING_BYTES + json;
    return MESSAGE_FRAMING_BYTES + ID_LINE_BYTES + eventIdBytes(eventId) + json;
  }
  if (frame.type === 'comment' && frame.text === '') return KEEP_ALIVE_TEXT.length;
  return Buffer.byteLength(encodeFrame(frame), 'utf8');
}

/** The UTF-8 bytes of `messageJson(frame)`, from the sizes measured where its parts were encoded (measured now when they were not). */
function jsonByteLength(frame: MessageFrame, encoded: EncodedMessage): number {
  const id = frame.subscriptionId;
  if (id === undefined || encoded.tail === '') return encoded.plainBytes ?? Buffer.byteLength(encoded.plain, 'utf8');
  const head = encoded.headBytes ?? Buffer.byteLength(encoded.head, 'utf8');
  const tail = encoded.tailBytes ?? Buffer.byteLength(encoded.tail, 'utf8');
  return head + encodedIdOf(frame, id).bytes + tail;
}

/** The bytes of the keep-alive comment. */
export const KEEP_ALIVE_TEXT = ':\r\n';

const CR_OR_LF = /[\r\n]/;
const LINE_BREAK = /\r\n|\r|\n/;

/**
 * Encodes a frame as SSE text exactly as DESIGN M5/L7 require:
 * `event: message\n`, `id: N\n` when the frame has an event id, `data: <json>\n`, blank line;
 * a comment is `:` + text + `\r\n` (the keep-alive is `:\r\n`); a priming frame is
 * `id: N\nretry: R\ndata:\n\n` (DESIGN L7).
 *
 * @example
 * encodeFrame(KEEP_ALIVE) // ':\r\n'
 * @throws FrameEncodingError when an event id contains CR or LF.
 */
export function encodeFrame(frame: Frame): string {
  if (frame.type === 'comment') {
    if (frame.text === '') return KEEP_ALIVE_TEXT;
    return frame.text.split(LINE_BREAK).map((line) => `:${line}\r\n`).join('');
  }
  if (frame.type === 'prime') return encodePriming(frame.eventId, frame.retry);
  const eventId = frame.eventId;
  if (eventId === undefined) return `event: message\ndata: ${messageJson(frame)}\n\n`;
  eventIdBytes(eventId);
  // A legacy stream's frame: the part after its id is the same for every session a publish reaches.
  const encoded = frame.encoded;
  if (encoded !== undefined && frame.subscriptionId === undefined) return ID_EVENT_HEAD + eventId + plainDataTail(encoded);
  return `${ID_EVENT_HEAD}${eventId}\ndata: ${messageJson(frame)}\n\n`;
}

/** What a message frame with an event id starts with, up to the id. */
const ID_EVENT_HEAD = 'event: message\nid: ';

/**
 * The UTF-8 bytes of an event id, which must hold no CR or LF (the one pass over it checks both):
 * its length for an ASCII id, as every id an event log makes is.
 * @throws FrameEncodingError when it holds a CR or LF.
 */
function eventIdBytes(eventId: string): number {
  let ascii = true;
  for (let i = 0; i < eventId.length; i++) {
    const code = eventId.charCodeAt(i);
    if (code === 10 || code === 13) throw new FrameEncodingError('id', eventId);
    if (code > 0x7f) ascii = false;
  }
  return ascii ? eventId.length : Buffer.byteLength(eventId, 'utf8');
}

// The last message's `plainDataTail`, one entry deep (see there).
let tailOf: EncodedMessage | undefined = undefined;
let tailText = '';

/**
 * `\ndata: <plain JSON>\n\n`: what follows the id in every legacy frame of `encoded`, built once
 * per message rather than once per session. A publish reaches its sessions one after the other with
 * the same encoded message, so one remembered entry is enough (it keeps the last message's text
 * until the next one's): the frames of a turn in which several messages alternate are right too,
 * only built once per frame again. Built per frame around the JSON (a string of the encoder's
 * pieces), a frame was a deeper string, which V8 flattened again at every socket write (issue 33,
 * `bench/turn-cpu.mjs --era legacy --paced`: 0.93–0.97× the CPU per frame with this).
 */
function plainDataTail(encoded: EncodedMessage): string {
  if (tailOf !== encoded) {
    tailText = `\ndata: ${encoded.plain}\n\n`;
    tailOf = encoded;
  }
  return tailText;
}

function encodePriming(eventId: string | undefined, retry: number): string {
  if (!Number.isInteger(retry) || retry < 0) throw new FrameEncodingError('retry', String(retry));
  if (eventId === undefined) return `retry: ${retry}\ndata:\n\n`;
  if (CR_OR_LF.test(eventId)) throw new FrameEncodingError('id', eventId);
  return `id: ${eventId}\nretry: ${retry}\ndata:\n\n`;
}

/** A generic SSE event, for transports that send more than MCP messages. */
export interface SseEvent {
  /** Event type; no CR/LF. Omitted: the client's default `message`. */
  readonly event?: string;
  /** Event id; no CR/LF. */
  readonly id?: string;
  /** Payload; split on CR LF, CR or LF into one `data:` line each. */
  readonly data: string;
  /** Reconnection time, in milliseconds (a non-negative integer). */
  readonly retry?: number;
}

/**
 * Encodes a generic SSE event (lines end in `\n`): `event:`, `id:`, `retry:`, then one `data:`
 * line per line of `data`, then a blank line.
 *
 * @throws FrameEncodingError when `event` or `id` contains CR or LF.
 */
export function encodeSseEvent(event: SseEvent): string {
  let out = '';
  if (event.event !== undefined) {
    if (CR_OR_LF.test(event.event)) throw new FrameEncodingError('event', event.event);
    out += `event: ${event.event}\n`;
  }
  if (event.id !== undefined) {
    if (CR_OR_LF.test(event.id)) throw new FrameEncodingError('id', event.id);
    out += `id: ${event.id}\n`;
  }
  if (event.retry !== undefined) {
    if (!Number.isInteger(event.retry) || event.retry < 0) throw new FrameEncodingError('retry', String(event.retry));
    out += `retry: ${event.retry}\n`;
  }
  for (const line of event.data.split(LINE_BREAK)) out += `data: ${line}\n`;
  return out + '\n';
}

