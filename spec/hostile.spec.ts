// Hostile input on the modern POST path (issue 7): generated and hand-written requests, each
// answered with the documented HTTP status and JSON-RPC error (or a clean close) — never a crash,
// never an HTTP 500, never a stream left open.
//
// Every case carries the answer its *input class* calls for (DESIGN M1–M4, M9, M12 and the
// endpoint's documented statuses), derived here from how the input was built, never from what the
// endpoint said. Most cases run in-process through `endpoint.handle(...)`; a few hundred go over a
// real loopback socket through `nodeHandler`; a corpus covers what a generator reaches badly
// (100 000-deep nesting, 1001 URIs, 100 KiB URIs, CR/LF in header values on a raw socket).
import { strict as assert } from 'node:assert';
import { isUtf8 } from 'node:buffer';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import fc from 'fast-check';
import { check, nonObject, nonString, request } from './helpers/property.js';
import { NEVER, VirtualTimeScheduler } from 'rxjs';
import { test } from 'uvu';
import { nodeHandler } from '../adapters/http/node.js';
import { encodeFrame } from '../lib/encode.js';
import { localhostHosts } from '../adapters/http/hostCheck.js';
import { McpEndpoint } from '../adapters/http/endpoint.js';
import type { EndpointRequest } from '../lib/context.js';
import type { EndpointResponse } from '../adapters/http/responses.js';
import type { Frame } from '../lib/frame.js';
import { Hub } from '../lib/hub.js';
import type { JsonRpcId } from '../lib/jsonrpc.js';

/* ----------------------------------------------------------------------------------------------
 * The cases and the answers their classes call for
 * ------------------------------------------------------------------------------------------- */

/** What the documentation says a request of some class gets. */
type Expected =
  /** A JSON-RPC error response with this HTTP status. `message`, when given, is exact. */
  | { readonly kind: 'error'; readonly status: number; readonly id: JsonRpcId | null; readonly code: number; readonly message?: string }
  /** `ping` answered: 200 `{"jsonrpc":"2.0","id":…,"result":{}}`. */
  | { readonly kind: 'result'; readonly id: JsonRpcId }
  /** A notification (no id): 202, empty body. */
  | { readonly kind: 'accepted' }
  /** An SSE stream whose first frame is exactly `ack`. */
  | { readonly kind: 'stream'; readonly ack: string };

interface Case {
  /** The input class, for failure messages. */
  readonly label: string;
  readonly method: string;
  /** Lower-case header names. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string | Uint8Array;
  /** In-process: hand the body over as an async iterable of chunks of these sizes (as node:http does). */
  readonly chunks?: readonly number[];
  readonly expect: Expected;
}

const LIMIT = 32_768;
const SUB_KEY = 'io.modelcontextprotocol/subscriptionId';
const BASE_HEADERS = Object.freeze({
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2026-07-28',
});

const InvalidRequest = -32600;
const ParseError = -32700;
const MethodNotFound = -32601;
const InvalidParams = -32602;

/** A JSON-RPC id MCP accepts: a string or a finite number (JSON-RPC 2.0 + MCP: no null ids). */
const isId = (value: unknown): value is JsonRpcId => typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value));

const ID_TOO_LONG = 'id must be a string of at most 1024 bytes or a number';

const error = (status: number, id: JsonRpcId | null, code: number, message?: string): Expected =>
  message === undefined ? { kind: 'error', status, id, code } : { kind: 'error', status, id, code, message };


const listenText = (idText: string, paramsText: string | undefined): string =>
  request({ jsonrpc: '"2.0"', id: idText, method: '"subscriptions/listen"', ...(paramsText === undefined ? {} : { params: paramsText }) });

/** The acknowledgment's exact bytes: the honoured fields in the fixed order, then the tag (M2, M5). */
function ackBytes(id: JsonRpcId, notifications: Record<string, unknown>): string {
  const message = { jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications, _meta: { [SUB_KEY]: id } } };
  return `event: message\ndata: ${JSON.stringify(message)}\n\n`;
}

/** The honoured part of a valid filter on a server advertising tools, prompts and resources, not tasks (M2, M4). */
function honoured(filter: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const flag of ['toolsListChanged', 'promptsListChanged', 'resourcesListChanged']) if (filter[flag] === true) out[flag] = true;
  const uris = filter.resourceSubscriptions as string[] | undefined;
  if (uris !== undefined && uris.length > 0) out.resourceSubscriptions = [...new Set(uris)];
  return out;
}

/* ----------------------------------------------------------------------------------------------
 * Arbitraries
 * ------------------------------------------------------------------------------------------- */

const anyString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.constantFrom('', '\r\n', 'a\rb', '\u0000', '\ud800', '\udfff\ud800', '__proto__', 'constructor', 'toString', '\u2028\u2029'),
);
const validId: fc.Arbitrary<JsonRpcId> = fc.oneof(
  anyString,
  // Up to MAX_REQUEST_ID_BYTES (1 KiB of UTF-8): longer ids are their own case (`longIds`).
  fc.string({ minLength: 1000, maxLength: 1024 }),
  fc.integer(),
  fc.maxSafeInteger(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);
/** Raw id texts of every JSON type, including numbers that overflow to Infinity. */
const idText: fc.Arbitrary<string> = fc.oneof(
  validId.map((id) => JSON.stringify(id)),
  fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify(value)),
  fc.bigInt().map(String),
  fc.constantFrom('null', 'true', 'false', '{}', '[]', '[1]', '{"id":1}', '1e400', '-1e400', '1E+2', '-0', '0.1e-400', '123456789012345678901234567890'),
);
/** Any JSON value except the one given, as text. */
const jsonTextExcept = (...excluded: unknown[]) =>
  fc.jsonValue({ maxDepth: 2 }).filter((value) => !excluded.some((x) => Object.is(x, value))).map((value) => JSON.stringify(value));
const nonBoolean = fc.jsonValue({ maxDepth: 2 }).filter((value) => typeof value !== 'boolean');
const nonArray = fc.jsonValue({ maxDepth: 2 }).filter((value) => !Array.isArray(value));
const uri = fc.oneof(anyString, fc.webUrl(), fc.constantFrom('file:///a', 'file:///a', 'file:///private/x'));
const KNOWN_FIELDS = ['toolsListChanged', 'promptsListChanged', 'resourcesListChanged', 'resourceSubscriptions', 'taskIds'];
/** A valid filter: known fields of the right type plus unknown fields of any value (left out of the ack). */
const validFilter: fc.Arbitrary<Record<string, unknown>> = fc
  .tuple(
    fc.record(
      {
        toolsListChanged: fc.boolean(),
        promptsListChanged: fc.boolean(),
        resourcesListChanged: fc.boolean(),
        resourceSubscriptions: fc.array(uri, { maxLength: 12 }),
        taskIds: fc.array(anyString, { maxLength: 3 }),
      },
      { requiredKeys: [] },
    ),
    fc.dictionary(
      anyString.filter((key) => !KNOWN_FIELDS.includes(key)),
      fc.jsonValue({ maxDepth: 2 }),
      { maxKeys: 3 },
    ),
  )
  .map(([known, unknown]) => ({ ...unknown, ...known }));
const notListenOrPing = (method: string) => method !== 'subscriptions/listen' && method !== 'ping';
const ACCEPT_OK = ['text/event-stream', 'application/json, text/event-stream', 'TEXT/Event-Stream;q=0.5', ' text/event-stream ; charset=utf-8', 'application/json;q=0.9,text/event-stream;q=1'];
const acceptRefused: fc.Arbitrary<string | undefined> = fc.oneof(
  fc.constant(undefined),
  fc.constantFrom('application/json', 'text/event-stream;q=0', 'text/event-stream; q=0.000', 'text/html', '', 'text/event-streams', 'text/event-stream-x', 'event-stream'),
  fc.string({ maxLength: 30 }).filter((value) => !/event-stream/i.test(value)),
  // CR/LF inside the media type (only an in-process caller can send it; node:http refuses it earlier).
  fc.constantFrom('text/event-\r\nstream', 'text/event\nstream', 'text/\revent-stream'),
);

const withAccept = (accept: string | undefined): Record<string, string> => {
  const { accept: _omitted, ...rest } = BASE_HEADERS;
  return accept === undefined ? rest : { ...rest, accept };
};

const cases = {
  /** Bytes that cannot begin any JSON text (no whitespace, value or BOM first): -32700, saying whether they are not UTF-8 or not JSON. */
  garbage: fc
    .tuple(fc.constantFrom(0x00, 0x01, 0x08, 0x23, 0x27, 0x2b, 0x3c, 0x5d, 0x78, 0x7d, 0xff, 0xc3), fc.uint8Array({ maxLength: 300 }))
    .map(([first, rest]): Case => {
      const body = Uint8Array.of(first, ...rest);
      const message = isUtf8(body) ? 'parse error: the body is not valid JSON' : 'parse error: the body is not valid UTF-8';
      return { label: 'garbage bytes', method: 'POST', headers: BASE_HEADERS, body, expect: error(400, null, ParseError, message) };
    }),

  /**
   * Arbitrary bytes: bytes that are not UTF-8 or not JSON are -32700, JSON that is not an object is
   * -32600 (node's `isUtf8` is the oracle of UTF-8, JSON.parse of JSON).
   */
  bytes: fc
    .uint8Array({ maxLength: 200 })
    .map((bytes): Case | undefined => {
      if (!isUtf8(bytes)) return { label: 'arbitrary bytes (not UTF-8)', method: 'POST', headers: BASE_HEADERS, body: bytes, expect: error(400, null, ParseError) };
      let value: unknown;
      try {
        value = JSON.parse(new TextDecoder('utf-8', { ignoreBOM: true }).decode(bytes));
      } catch {
        return { label: 'arbitrary bytes', method: 'POST', headers: BASE_HEADERS, body: bytes, expect: error(400, null, ParseError) };
      }
      if (value !== null && typeof value === 'object' && !Array.isArray(value)) return undefined;
      return { label: 'arbitrary bytes (a JSON non-object)', method: 'POST', headers: BASE_HEADERS, body: bytes, expect: error(400, null, InvalidRequest) };
    })
    .filter((c): c is Case => c !== undefined),

  /** A request cut short anywhere (an object's strict prefix is never JSON): -32700. */
  truncated: fc
    .tuple(validId, validFilter)
    .chain(([id, filter]) => {
      const text = listenText(JSON.stringify(id), JSON.stringify({ notifications: filter }));
      return fc.integer({ min: 0, max: text.length - 1 }).map((cut): Case => ({
        label: 'truncated JSON',
        method: 'POST',
        headers: BASE_HEADERS,
        body: text.slice(0, cut),
        expect: error(400, null, ParseError),
      }));
    }),

  /** Deep nesting: unclosed is -32700, a nested array is a batch (-32600), nested objects lack jsonrpc (-32600), nesting inside params is harmless. */
  nested: fc
    .tuple(fc.integer({ min: 1, max: 3000 }), fc.constantFrom('open', 'arrays', 'objects', 'in-ping', 'in-listen'), validId)
    .map(([depth, shape, id]): Case => {
      const arrays = '['.repeat(depth) + ']'.repeat(depth);
      const base = { method: 'POST', headers: BASE_HEADERS, label: `nested ${shape} ×${depth}` };
      switch (shape) {
        case 'open':
          return { ...base, body: '['.repeat(depth), expect: error(400, null, ParseError) };
        case 'arrays':
          return { ...base, body: arrays, expect: error(400, null, InvalidRequest) };
        case 'objects':
          return { ...base, body: '{"a":'.repeat(depth) + '1' + '}'.repeat(depth), expect: error(400, null, InvalidRequest) };
        case 'in-ping':
          return { ...base, body: request({ jsonrpc: '"2.0"', id: JSON.stringify(id), method: '"ping"', params: `{"deep":${arrays}}` }), expect: { kind: 'result', id } };
        default:
          return {
            ...base,
            body: listenText(JSON.stringify(id), `{"notifications":{"toolsListChanged":true,"deep":${arrays}},"_meta":${'{"m":'.repeat(depth)}1${'}'.repeat(depth)}}`),
            expect: { kind: 'stream', ack: ackBytes(id, { toolsListChanged: true }) },
          };
      }
    }),

  /** JSON-RPC batches are refused whole: 400, -32600, id null. */
  batch: fc
    .array(
      fc.tuple(validId, validFilter).map(([id, filter]) => listenText(JSON.stringify(id), JSON.stringify({ notifications: filter }))),
      { maxLength: 4 },
    )
    .map((members): Case => ({
      label: 'batch',
      method: 'POST',
      headers: BASE_HEADERS,
      body: `[${members.join(',')}]`,
      expect: error(400, null, InvalidRequest, 'JSON-RPC batches are not supported; send one request per POST'),
    })),

  /** `jsonrpc` absent or anything but "2.0": 400, -32600, the (valid) id echoed. */
  jsonrpc: fc
    .tuple(fc.option(fc.oneof(jsonTextExcept('2.0'), fc.constantFrom('"2"', '"2.00"', '2.0', '"2.0 "', '" 2.0"', '"1.0"', '"２.0"')), { nil: undefined }), validId, fc.constantFrom('"ping"', '"subscriptions/listen"'))
    .map(([jsonrpc, id, method]): Case => ({
      label: 'wrong jsonrpc',
      method: 'POST',
      headers: BASE_HEADERS,
      body: request({ ...(jsonrpc === undefined ? {} : { jsonrpc }), id: JSON.stringify(id), method, params: '{"notifications":{}}' }),
      expect: error(400, id, InvalidRequest, 'jsonrpc must be "2.0"'),
    })),

  /** Ids of every JSON type on `ping`: a string or finite number is echoed in the result, anything else is 400 -32600 id null. */
  ids: idText.map((text): Case => {
    const id: unknown = JSON.parse(text);
    return {
      label: `id ${text.slice(0, 40)}`,
      method: 'POST',
      headers: BASE_HEADERS,
      body: request({ jsonrpc: '"2.0"', id: text, method: '"ping"' }),
      expect: !isId(id)
        ? error(400, null, InvalidRequest, 'id must be a string or a number')
        : typeof id === 'string' && Buffer.byteLength(id, 'utf8') > 1024
          ? error(400, null, InvalidRequest, ID_TOO_LONG)
          : { kind: 'result', id },
    };
  }),

  /** String ids past 1 KiB of UTF-8 on any method, listen included: 400, -32600 naming the id, id null, no stream. */
  longIds: fc
    .tuple(
      fc.oneof(fc.string({ minLength: 1025, maxLength: 4000 }), fc.string({ unit: 'grapheme', minLength: 400, maxLength: 1200 }).filter((id) => Buffer.byteLength(id, 'utf8') > 1024)),
      fc.constantFrom('"ping"', '"subscriptions/listen"'),
    )
    .map(([id, method]): Case => ({
      label: `id of ${Buffer.byteLength(id, 'utf8')} bytes`,
      method: 'POST',
      headers: BASE_HEADERS,
      body: request({ jsonrpc: '"2.0"', id: JSON.stringify(id), method, params: '{"notifications":{"toolsListChanged":true}}' }),
      expect: error(400, null, InvalidRequest, ID_TOO_LONG),
    })),

  /** `method` absent or not a string: 400, -32600, id echoed. */
  methodType: fc
    .tuple(fc.option(jsonTextExcept().filter((text) => !text.startsWith('"')), { nil: undefined }), validId)
    .map(([method, id]): Case => ({
      label: 'method not a string',
      method: 'POST',
      headers: BASE_HEADERS,
      body: request({ jsonrpc: '"2.0"', id: JSON.stringify(id), ...(method === undefined ? {} : { method }) }),
      expect: error(400, id, InvalidRequest, 'method must be a string'),
    })),

  /** `params` present but not an object (null, array, scalar): 200, -32602, id echoed. */
  paramsType: fc.tuple(nonObject, validId, fc.constantFrom('"ping"', '"subscriptions/listen"')).map(([params, id, method]): Case => ({
    label: 'params not an object',
    method: 'POST',
    headers: BASE_HEADERS,
    body: request({ jsonrpc: '"2.0"', id: JSON.stringify(id), method, params: JSON.stringify(params) }),
    expect: error(200, id, InvalidParams, 'params must be an object'),
  })),

  /** Exactly one listen filter field of a wrong type (or `notifications` itself): 200, -32602 naming the field (M3). */
  filterType: fc
    .tuple(
      validId,
      validFilter,
      fc.oneof(
        fc.tuple(fc.constantFrom('toolsListChanged', 'promptsListChanged', 'resourcesListChanged'), nonBoolean).map(([field, value]) => ({
          field,
          value,
          message: `params.notifications.${field} must be a boolean`,
        })),
        fc.tuple(fc.constantFrom('resourceSubscriptions', 'taskIds'), nonArray).map(([field, value]) => ({
          field,
          value,
          message: `params.notifications.${field} must be an array of ${field === 'taskIds' ? 'task id' : 'URI'} strings`,
        })),
        fc
          .tuple(fc.constantFrom('resourceSubscriptions', 'taskIds'), fc.array(anyString, { maxLength: 5 }), nonString, fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 3 }))
          .map(([field, before, bad, after]) => ({
            field,
            value: [...before, bad, ...after],
            message: `params.notifications.${field}[${before.length}] must be a string`,
          })),
        // An entry past its byte bound (8 KiB for a URI, 1 KiB for a task id) is refused naming it.
        fc
          .tuple(fc.constantFrom('resourceSubscriptions', 'taskIds'), fc.array(anyString, { maxLength: 5 }), fc.integer({ min: 1, max: 3000 }))
          .map(([field, before, extra]) => {
            const max = field === 'taskIds' ? 1024 : 8192;
            return {
              field,
              value: [...before, 'x'.repeat(max + extra), 'file:///fine'],
              message: `params.notifications.${field}[${before.length}] must be a ${field === 'taskIds' ? 'task id' : 'URI'} of at most ${max} bytes`,
            };
          }),
        fc.tuple(fc.constantFrom('resourceSubscriptions', 'taskIds'), fc.integer({ min: 1001, max: 1100 })).map(([field, n]) => ({
          field,
          value: Array.from({ length: n }, (_, i) => `file:///${i}`),
          message: `params.notifications.${field} must list at most 1000 ${field === 'taskIds' ? 'task id' : 'URI'}s, got ${n}`,
        })),
      ),
    )
    .map(([id, filter, wrong]): Case => ({
      label: `filter field ${wrong.field}`,
      method: 'POST',
      headers: BASE_HEADERS,
      body: listenText(JSON.stringify(id), JSON.stringify({ notifications: { ...filter, [wrong.field]: wrong.value } })),
      expect: error(200, id, InvalidParams, wrong.message),
    })),

  /** `params.notifications` absent or not an object, or no params at all: 200, -32602 (M3). */
  notificationsType: fc.tuple(validId, fc.option(nonObject, { nil: undefined }), fc.boolean()).map(([id, notifications, withParams]): Case => ({
    label: 'notifications not an object',
    method: 'POST',
    headers: BASE_HEADERS,
    body: listenText(JSON.stringify(id), withParams ? JSON.stringify(notifications === undefined ? {} : { notifications }) : undefined),
    expect: error(
      200,
      id,
      InvalidParams,
      withParams ? 'subscriptions/listen requires params.notifications to be an object' : 'subscriptions/listen requires params to be an object',
    ),
  })),

  /** A well-formed listen: a stream whose first frame is the honoured filter, id verbatim (M2, M4, M5). */
  listen: fc.tuple(validId, validFilter, fc.constantFrom(...ACCEPT_OK), fc.option(fc.jsonValue({ maxDepth: 2 }), { nil: undefined })).map(([id, filter, accept, meta]): Case => ({
    label: 'valid listen',
    method: 'POST',
    headers: withAccept(accept),
    body: listenText(JSON.stringify(id), JSON.stringify({ notifications: filter, ...(meta === undefined ? {} : { _meta: meta }) })),
    expect: { kind: 'stream', ack: ackBytes(id, honoured(filter)) },
  })),

  /** A listen without text/event-stream in Accept: 406, -32600, even with a broken filter (M1 before M3). */
  accept: fc.tuple(validId, fc.oneof(validFilter, nonObject), acceptRefused).map(([id, filter, accept]): Case => ({
    label: `Accept ${JSON.stringify(accept)}`,
    method: 'POST',
    headers: withAccept(accept),
    body: listenText(JSON.stringify(id), JSON.stringify({ notifications: filter })),
    expect: error(406, id, InvalidRequest, 'subscriptions/listen requires Accept: text/event-stream'),
  })),

  /** An unknown method: 404, -32601 with the id; as a notification (no id), any method — listen too — is 202 and opens nothing. */
  unknownMethod: fc
    .tuple(anyString.filter(notListenOrPing), fc.option(validId, { nil: undefined }), fc.boolean())
    .map(([method, id, listenNotification]): Case => {
      const name = id === undefined && listenNotification ? 'subscriptions/listen' : method;
      return {
        label: `method ${JSON.stringify(name).slice(0, 40)}`,
        method: 'POST',
        headers: BASE_HEADERS,
        body: request({ jsonrpc: '"2.0"', ...(id === undefined ? {} : { id: JSON.stringify(id) }), method: JSON.stringify(name), params: '{"notifications":{"toolsListChanged":true}}' }),
        expect: id === undefined ? { kind: 'accepted' } : error(404, id, MethodNotFound, `method not found: ${name}`),
      };
    }),

  /** Anything but POST: 405 with Allow: POST, before the body is read. */
  httpMethod: fc
    .tuple(
      fc.oneof(fc.constantFrom('PUT', 'PATCH', 'OPTIONS', 'PROPFIND'), fc.stringMatching(/^[A-Z]{1,10}$/).filter((m) => !['POST', 'GET', 'HEAD', 'DELETE'].includes(m))),
      fc.uint8Array({ maxLength: 100 }),
    )
    .map(([method, body]): Case => ({
      label: `HTTP ${method}`,
      method,
      headers: BASE_HEADERS,
      body,
      // The message and Allow list grow with the legacy era (GET, DELETE); POST is always allowed.
      expect: error(405, null, InvalidRequest),
    })),

  /** A body over maxBodyBytes, whatever it holds and however it is framed: 413, -32600. */
  oversized: fc
    .tuple(fc.integer({ min: LIMIT + 1, max: LIMIT + 4000 }), fc.constantFrom('honest', 'absent', 'lying'), fc.constantFrom('listen', 'garbage', 'multibyte'), fc.integer({ min: 1, max: 5000 }))
    .map(([size, length, content, chunk]): Case => {
      const filler = content === 'garbage' ? 'x' : content === 'multibyte' ? 'é' : ' ';
      const listen = listenText('1', '{"notifications":{"toolsListChanged":true}}');
      const text = content === 'listen' ? listen + filler.repeat(size - listen.length) : filler.repeat(Math.ceil(size / Buffer.byteLength(filler)));
      const bytes = Buffer.from(text);
      const headers: Record<string, string> = { ...BASE_HEADERS };
      if (length === 'honest') headers['content-length'] = String(bytes.byteLength);
      if (length === 'lying') headers['content-length'] = '10';
      const chunks = Array.from({ length: Math.ceil(bytes.byteLength / chunk) }, () => chunk);
      return { label: `oversized ${content} (${length} length)`, method: 'POST', headers, body: bytes, chunks, expect: error(413, null, InvalidRequest, `request body exceeds ${LIMIT} bytes`) };
    }),
};

/** Every class, in proportion. */
const anyCase: fc.Arbitrary<Case> = fc.oneof(...Object.values(cases));

/* ----------------------------------------------------------------------------------------------
 * Running a case
 * ------------------------------------------------------------------------------------------- */

interface Fixture {
  readonly hub: Hub;
  readonly endpoint: McpEndpoint;
}

function fixture(maxBodyBytes = LIMIT, extra: Partial<ConstructorParameters<typeof McpEndpoint>[0]> = {}): Fixture {
  const hub = new Hub();
  const endpoint = new McpEndpoint({
    hub,
    capabilities: { tools: true, prompts: true, resources: true },
    maxBodyBytes,
    methods: { ping: () => ({}) },
    ...extra,
  });
  return { hub, endpoint };
}

async function* chunked(bytes: Uint8Array, sizes: readonly number[]): AsyncGenerator<Uint8Array> {
  let offset = 0;
  for (const size of sizes) {
    if (offset >= bytes.byteLength) return;
    yield bytes.subarray(offset, offset + size);
    offset += size;
  }
}

function toRequest(c: Case): EndpointRequest {
  const bytes = typeof c.body === 'string' ? Buffer.from(c.body) : c.body;
  return {
    method: c.method,
    header: (name) => c.headers[name],
    remoteAddress: '127.0.0.1',
    body: c.chunks !== undefined ? chunked(bytes, c.chunks) : c.body,
  };
}

const describeCase = (c: Case) => `${c.label}: ${Buffer.from(typeof c.body === 'string' ? c.body : c.body).toString('utf8').slice(0, 200)}`;

/** Checks a JSON answer's status and body against what the class calls for. */
function checkJson(c: Case, status: number, body: string, headers: Record<string, string | string[] | undefined>): void {
  const where = describeCase(c);
  assert.notEqual(status, 500, `HTTP 500 for ${where}`);
  const expect = c.expect;
  switch (expect.kind) {
    case 'error': {
      assert.equal(status, expect.status, `status for ${where}\n${body}`);
      const parsed = JSON.parse(body);
      assert.equal(parsed.jsonrpc, '2.0');
      // JSON texts compare ids: a number stays a number, -0 and 0 are the same id on the wire.
      assert.equal(JSON.stringify(parsed.id), JSON.stringify(expect.id), `id for ${where}`);
      assert.equal(parsed.error.code, expect.code, `code for ${where}\n${body}`);
      if (expect.message !== undefined) assert.equal(parsed.error.message, expect.message, `message for ${where}`);
      if (expect.status === 405) {
        assert.ok(String(headers.allow).split(/,\s*/).includes('POST'), `Allow: ${headers.allow}`);
        assert.match(parsed.error.message, new RegExp(`^method ${c.method} is not allowed`));
      }
      assert.match(String(headers['content-type']), /^application\/json/);
      return;
    }
    case 'result':
      assert.equal(status, 200, `status for ${where}\n${body}`);
      assert.equal(body, `{"jsonrpc":"2.0","id":${JSON.stringify(expect.id)},"result":{}}`, where);
      return;
    case 'accepted':
      assert.equal(status, 202, `status for ${where}\n${body}`);
      assert.equal(body, '', where);
      return;
    case 'stream':
      assert.fail(`expected a stream for ${where}, got ${status} ${body}`);
  }
}

const headerRecord = (headers: Readonly<Record<string, string>>) =>
  Object.fromEntries(Object.entries(headers).map(([key, value]) => [key.toLowerCase(), value]));

function assertIdle({ endpoint, hub }: Fixture, where: string): void {
  const { streams, slots, principals } = endpoint.stats;
  assert.deepEqual({ streams, slots, principals }, { streams: 0, slots: 0, principals: 0 }, `endpoint holds something after ${where}`);
  assert.deepEqual(hub.size, { topics: 0, subscriptions: 0 }, `hub holds something after ${where}`);
}

async function runInProcess(f: Fixture, c: Case): Promise<void> {
  const response: EndpointResponse = await f.endpoint.handle(toRequest(c));
  if (response.kind === 'stream') {
    const where = describeCase(c);
    assert.equal(c.expect.kind, 'stream', `unexpected stream for ${where}`);
    assert.equal(response.status, 200);
    const frames: Frame[] = [];
    const subscription = response.open(NEVER).subscribe({ next: (frame) => frames.push(frame), error: (e) => assert.fail(e) });
    assert.equal(f.endpoint.stats.streams, 1);
    assert.ok(frames.length >= 1, `no acknowledgment for ${where}`);
    assert.equal(encodeFrame(frames[0]!), (c.expect as { ack: string }).ack, `ack for ${where}`);
    subscription.unsubscribe();
  } else {
    checkJson(c, response.status, response.kind === 'json' ? response.body : '', headerRecord(response.headers));
  }
  assertIdle(f, describeCase(c));
}

/* ----------------------------------------------------------------------------------------------
 * Generated cases
 * ------------------------------------------------------------------------------------------- */

const SEED = Number(process.env.HOSTILE_SEED ?? 0x1ce) | 0;


test('12 000 generated requests in-process: each gets its class’s status and error, nothing stays open', async () => {
  const f = fixture();
  let runs = 0;
  // Per class so that every class gets its share whatever the others' shrinking costs.
  for (const [name, arbitrary] of Object.entries(cases)) {
    await check(
      arbitrary,
      async (c) => {
        runs++;
        await runInProcess(f, c);
      },
      750,
      SEED + name.length,
    );
  }
  assert.ok(runs >= 12_000, `${runs} runs`);
});

/** A server on loopback whose handler counts the requests it is handed. */
async function startServer(f: Fixture): Promise<{ port: number; handled: () => number; close: () => Promise<void> }> {
  const handle = nodeHandler(f.endpoint);
  let handled = 0;
  const server = http.createServer((req, res) => {
    handled++;
    handle(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    handled: () => handled,
    close: () =>
      new Promise<void>((resolve) => {
        f.endpoint.close();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Only cases an HTTP/1.1 client can send: a method node:http parses, header values without control characters. */
function sendable(c: Case): boolean {
  if (!['POST', 'PUT', 'PATCH', 'OPTIONS', 'PROPFIND'].includes(c.method)) return false;
  if (c.headers['content-length'] === '10') return false;
  return Object.values(c.headers).every((value) => /^[\t\x20-\x7e]*$/.test(value));
}

function overSocket(port: number, agent: http.Agent, c: Case): Promise<void> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...c.headers };
    if (headers['content-length'] === undefined) headers['transfer-encoding'] = 'chunked';
    const req = http.request({ host: '127.0.0.1', port, path: '/mcp', method: c.method, headers, agent }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      if (c.expect.kind === 'stream') {
        const ack = c.expect.ack;
        try {
          assert.equal(res.statusCode, 200, describeCase(c));
          assert.equal(res.headers['content-type'], 'text/event-stream');
        } catch (failure) {
          res.destroy();
          return reject(failure);
        }
        res.on('data', (chunk: string) => {
          text += chunk;
          if (text.length < ack.length) return;
          res.destroy();
          try {
            assert.equal(text.slice(0, ack.length), ack, describeCase(c));
            resolve();
          } catch (failure) {
            reject(failure);
          }
        });
        res.on('close', () => reject(new Error(`stream closed before its ack for ${describeCase(c)}: ${text}`)));
        return;
      }
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        try {
          checkJson(c, res.statusCode!, text, res.headers);
          resolve();
        } catch (failure) {
          reject(failure);
        }
      });
    });
    req.on('error', (e) => reject(new Error(`${e.message} for ${describeCase(c)}`)));
    req.end(typeof c.body === 'string' ? c.body : Buffer.from(c.body));
  });
}

async function eventuallyIdle(f: Fixture, where: string): Promise<void> {
  const deadline = Date.now() + 2000;
  while (f.endpoint.stats.streams !== 0 || f.endpoint.stats.slots !== 0) {
    if (Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  assertIdle(f, where);
}

test('400 generated requests over a loopback socket (node:http): the same answers, nothing stays open', async () => {
  const f = fixture();
  const server = await startServer(f);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  let runs = 0;
  try {
    await check(
      anyCase.filter(sendable),
      async (c) => {
        runs++;
        await overSocket(server.port, agent, c);
        await eventuallyIdle(f, describeCase(c));
      },
      400,
      SEED,
    );
    assert.equal(server.handled(), runs, 'every request reached the endpoint');
  } finally {
    agent.destroy();
    await server.close();
  }
});

/* ----------------------------------------------------------------------------------------------
 * The corpus
 * ------------------------------------------------------------------------------------------- */

const corpus = (): Case[] => {
  const huge = 'u'.repeat(100 * 1024);
  const uris1000 = Array.from({ length: 1000 }, (_, i) => `file:///r/${i}`);
  const listenOf = (notifications: unknown, id = 1) => listenText(JSON.stringify(id), JSON.stringify({ notifications }));
  const post = (label: string, body: string, expect: Expected, headers: Record<string, string> = BASE_HEADERS): Case => ({ label, method: 'POST', headers, body, expect });
  return [
    post('100 000 unclosed [', '['.repeat(100_000), error(400, null, ParseError)),
    post('100 000 nested arrays', '['.repeat(100_000) + ']'.repeat(100_000), error(400, null, InvalidRequest)),
    post('100 000 nested objects', '{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000), error(400, null, InvalidRequest)),
    post('100 000-deep unknown filter field', listenText('1', `{"notifications":{"toolsListChanged":true,"x":${'['.repeat(100_000)}${']'.repeat(100_000)}}}`), {
      kind: 'stream',
      ack: ackBytes(1, { toolsListChanged: true }),
    }),
    post('empty body', '', error(400, null, ParseError)),
    post('BOM then a request', '\ufeff' + listenOf({ toolsListChanged: true }), error(400, null, ParseError)),
    post('whitespace around a request', ' \r\n\t' + listenOf({ toolsListChanged: true }) + '\n ', { kind: 'stream', ack: ackBytes(1, { toolsListChanged: true }) }),
    post('a JSON-RPC response, not a request', '{"jsonrpc":"2.0","id":1,"result":{}}', error(400, 1, InvalidRequest, 'method must be a string')),
    post('duplicate keys: the last method wins', '{"jsonrpc":"2.0","id":1,"method":"ping","method":"nope"}', error(404, 1, MethodNotFound)),
    post('__proto__ in notifications sets nothing', listenText('1', '{"notifications":{"__proto__":{"toolsListChanged":true}}}'), { kind: 'stream', ack: ackBytes(1, {}) }),
    post('__proto__ as a method', '{"jsonrpc":"2.0","id":1,"method":"__proto__"}', error(404, 1, MethodNotFound)),
    post('hasOwnProperty as a method', '{"jsonrpc":"2.0","id":1,"method":"hasOwnProperty"}', error(404, 1, MethodNotFound)),
    post('id 1e400 overflows', '{"jsonrpc":"2.0","id":1e400,"method":"subscriptions/listen","params":{"notifications":{}}}', error(400, null, InvalidRequest)),
    post('id 2^64 is a finite number', '{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping"}', { kind: 'result', id: 18446744073709551616 }),
    post('id null', '{"jsonrpc":"2.0","id":null,"method":"ping"}', error(400, null, InvalidRequest)),
    post('1001 URIs', listenOf({ resourceSubscriptions: [...uris1000, 'file:///one-too-many'] }), error(200, 1, InvalidParams, 'params.notifications.resourceSubscriptions must list at most 1000 URIs, got 1001')),
    post('1001 task ids on a server without tasks', listenOf({ taskIds: uris1000.concat('t') }), error(200, 1, InvalidParams, 'params.notifications.taskIds must list at most 1000 task ids, got 1001')),
    post('1000 URIs, the last a duplicate', listenOf({ resourceSubscriptions: [...uris1000.slice(0, 999), 'file:///r/0'] }), {
      kind: 'stream',
      ack: ackBytes(1, { resourceSubscriptions: uris1000.slice(0, 999) }),
    }),
    post('URIs of 100 KiB', listenOf({ resourceSubscriptions: [huge, huge + '2'] }), error(200, 1, InvalidParams, 'params.notifications.resourceSubscriptions[0] must be a URI of at most 8192 bytes')),
    post('URIs of 8 KiB', listenOf({ resourceSubscriptions: [huge.slice(0, 8192), huge.slice(0, 8191) + '2'] }), { kind: 'stream', ack: ackBytes(1, { resourceSubscriptions: [huge.slice(0, 8192), huge.slice(0, 8191) + '2'] }) }),
    post('URIs with CR, LF and NUL', listenOf({ resourceSubscriptions: ['a\r\nevent: x\r\n\r\ndata: y', '\u0000'] }), {
      kind: 'stream',
      ack: ackBytes(1, { resourceSubscriptions: ['a\r\nevent: x\r\n\r\ndata: y', '\u0000'] }),
    }),
    post('lone surrogates in a URI and the id', listenText('"\\ud800"', '{"notifications":{"resourceSubscriptions":["\\udfff"]}}'), {
      kind: 'stream',
      ack: ackBytes('\ud800', { resourceSubscriptions: ['\udfff'] }),
    }),
    post('eleven 100 KiB URIs are over 1 MiB', listenOf({ resourceSubscriptions: Array.from({ length: 11 }, (_, i) => huge + i) }), error(413, null, InvalidRequest, 'request body exceeds 1048576 bytes')),
  ];
};

test('corpus in-process: deep nesting, 1001 URIs, 100 KiB URIs, odd ids and methods', async () => {
  const f = fixture(1_048_576);
  for (const c of corpus()) await runInProcess(f, c);
});

test('corpus over a loopback socket', async () => {
  const f = fixture(1_048_576);
  const server = await startServer(f);
  const agent = new http.Agent({ keepAlive: false });
  try {
    for (const c of corpus().filter(sendable)) {
      await overSocket(server.port, agent, c);
      await eventuallyIdle(f, describeCase(c));
    }
  } finally {
    agent.destroy();
    await server.close();
  }
});

/** Sends raw bytes and resolves with everything received until the server closes the connection. */
function raw(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(text));
    socket.end(bytes, 'latin1');
  });
}

test('CR/LF and control characters in header values on a raw socket: 400 and a clean close, the endpoint never sees them', async () => {
  const f = fixture();
  const server = await startServer(f);
  const body = listenText('1', '{"notifications":{"toolsListChanged":true}}');
  const head = (extra: string) =>
    `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${extra}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  try {
    const injections = [
      'Accept: text/event-stream\r\nX-A: a\rb\r\n', // bare CR inside a value
      'Accept: text/event-stream\r\nX-A: a\nb\r\n', // bare LF inside a value
      'Accept: text/event-stream\nX-A: b\r\n', // a bare LF ending a header line
      'Accept: text/\r\n event-stream\r\n', // obsolete line folding
      'Accept: text/event-stream\r\nX-A: a\u0000b\r\n', // NUL
      'Accept: text/event-stream\r\nX-A: \u007f\r\n', // DEL
      'Accept: text/event-stream\r\nContent-Length: 3\r\n', // a second, conflicting Content-Length
      'Accept: text/event-stream\r\nTransfer-Encoding: chunked\r\n', // Transfer-Encoding with Content-Length (smuggling)
      'Accept: text/event-stream\r\nX A: b\r\n', // a space in a header name
    ];
    for (const extra of injections) {
      const answer = await raw(server.port, head(extra));
      assert.equal(answer, 'HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n', JSON.stringify(extra));
    }
    assert.equal(server.handled(), 0, 'no malformed request reached the endpoint');
    assertIdle(f, 'header injections');
    // The server is still serving.
    const ok = await raw(server.port, head('Accept: application/json\r\nConnection: close\r\n'));
    assert.match(ok, /^HTTP\/1\.1 406 /);
  } finally {
    await server.close();
  }
});

/* ----------------------------------------------------------------------------------------------
 * DNS rebinding (allowedHosts / allowedOrigins) and trickled bodies (bodyTimeout)
 * ------------------------------------------------------------------------------------------- */

const ALLOWED_HOSTS = ['localhost', 'localhost:3000', '127.0.0.1:1', '[::1]:8080', 'LocalHost', '127.0.0.1'];
const FOREIGN_HOSTS = ['evil.example', 'localhost.evil.example', '127.0.0.1.nip.io', 'localhost:80:80', 'evil.example:3000', '[::2]', '0.0.0.0', 'localhost.', ''];
const ALLOWED_ORIGINS = ['http://localhost:3000', 'https://127.0.0.1', 'http://[::1]:1', 'HTTP://LOCALHOST'];
const FOREIGN_ORIGINS = ['null', 'http://evil.example', 'http://localhost.evil.example', 'file://', 'not a url', 'http://127.0.0.2:3000'];

test('DNS rebinding: a foreign Host or Origin gets 403 before anything else; local ones get the usual answer (3000 generated)', async () => {
  const f = fixture(LIMIT, { allowedHosts: localhostHosts, allowedOrigins: localhostHosts });
  const hostArb = fc.oneof(
    fc.constantFrom(...ALLOWED_HOSTS).map((host) => ({ host, foreign: false })),
    fc.oneof(fc.constantFrom(...FOREIGN_HOSTS), fc.domain().filter((d) => !['localhost'].includes(d)), fc.constant(undefined)).map((host) => ({ host, foreign: true })),
  );
  const originArb = fc.oneof(
    fc.constant({ origin: undefined as string | undefined, foreign: false }),
    fc.constantFrom(...ALLOWED_ORIGINS).map((origin) => ({ origin: origin as string | undefined, foreign: false })),
    fc.oneof(fc.constantFrom(...FOREIGN_ORIGINS), fc.webUrl({ withQueryParameters: false, withFragments: false })).map((origin) => ({ origin: origin as string | undefined, foreign: true })),
  );
  await check(
    fc.tuple(anyCase, hostArb, originArb),
    async ([c, host, origin]) => {
      const headers: Record<string, string> = { ...c.headers };
      if (host.host !== undefined) headers.host = host.host;
      if (origin.origin !== undefined) headers.origin = origin.origin;
      let foreignOrigin = origin.foreign;
      // A generated URL may happen to name a local host.
      if (origin.origin !== undefined && origin.foreign) {
        try {
          foreignOrigin = !['localhost', '127.0.0.1', '[::1]'].includes(new URL(origin.origin).hostname.toLowerCase());
        } catch {
          foreignOrigin = true;
        }
      }
      const refused = host.foreign || foreignOrigin;
      await runInProcess(f, { ...c, label: `${c.label}, Host ${host.host}, Origin ${origin.origin}`, headers, expect: refused ? error(403, null, InvalidRequest) : c.expect });
    },
    3000,
    SEED,
  );
});

test('DNS rebinding over a raw socket: 403 with the JSON-RPC error; a local Host and Origin pass', async () => {
  const f = fixture(LIMIT, { allowedHosts: localhostHosts, allowedOrigins: localhostHosts });
  const server = await startServer(f);
  const body = listenText('1', '{"notifications":{"toolsListChanged":true}}');
  const send = (host: string, origin?: string) =>
    raw(
      server.port,
      `POST /mcp HTTP/1.1\r\nHost: ${host}\r\n${origin === undefined ? '' : `Origin: ${origin}\r\n`}Content-Type: application/json\r\nAccept: application/json\r\nConnection: close\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
  try {
    for (const [host, origin] of [['evil.example', undefined], [`localhost:${server.port}`, 'http://evil.example'], ['attacker.test:80', 'http://localhost']] as const) {
      const answer = await send(host, origin);
      assert.match(answer, /^HTTP\/1\.1 403 /, `${host} ${origin}`);
      const parsed = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
      assert.equal(parsed.error.code, InvalidRequest);
      assert.equal(parsed.id, null);
    }
    // Local: the listen is answered as usual (here 406: this client does not accept SSE).
    assert.match(await send(`127.0.0.1:${server.port}`, `http://localhost:${server.port}`), /^HTTP\/1\.1 406 /);
    assert.equal(server.handled(), 4);
    assertIdle(f, 'rebinding');
  } finally {
    await server.close();
  }
});

test('bodyTimeout in virtual time: a body that stops arriving gets 408 with Connection: close, and is let go', async () => {
  const scheduler = new VirtualTimeScheduler();
  const f = fixture(LIMIT, { bodyTimeout: 5_000, scheduler });
  let released = false;
  const stuck: AsyncIterable<Uint8Array> = {
    [Symbol.asyncIterator]: () => {
      let sent = false;
      return {
        next: () => {
          if (sent) return new Promise<IteratorResult<Uint8Array>>(() => {});
          sent = true;
          return Promise.resolve({ done: false, value: Buffer.from('{"jsonrpc":"2.0",') });
        },
        return: () => {
          released = true;
          return Promise.resolve({ done: true, value: undefined });
        },
      };
    },
  };
  const answer = f.endpoint.handle({ method: 'POST', header: (name) => (BASE_HEADERS as Record<string, string>)[name], remoteAddress: '127.0.0.1', body: stuck });
  await new Promise((resolve) => setImmediate(resolve));
  scheduler.flush();
  const response = await answer;
  assert.equal(response.kind, 'json');
  if (response.kind !== 'json') return;
  assert.equal(response.status, 408);
  assert.equal(response.headers.Connection, 'close');
  assert.equal(JSON.parse(response.body).error.code, InvalidRequest);
  assert.ok(released, 'the body iterator was returned');
  assertIdle(f, 'a stuck body');
});

test('bodyTimeout over a raw socket: a client trickling bytes gets 408 and is disconnected; a slow but timely one is served', async () => {
  const f = fixture(LIMIT, { bodyTimeout: 300 });
  const server = await startServer(f);
  const body = listenText('1', '{"notifications":{"toolsListChanged":true}}');
  const trickle = (every: number) =>
    new Promise<{ text: string; ms: number }>((resolve, reject) => {
      const started = Date.now();
      const socket = net.connect(server.port, '127.0.0.1');
      let text = '';
      let sent = 0;
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => (text += chunk));
      socket.on('error', reject);
      socket.on('close', () => {
        clearInterval(timer);
        resolve({ text, ms: Date.now() - started });
      });
      socket.write(`POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: application/json\r\nConnection: close\r\nContent-Length: ${body.length}\r\n\r\n`);
      const timer = setInterval(() => {
        if (socket.destroyed) return clearInterval(timer);
        const piece = body.slice(sent, sent + Math.ceil(body.length / 8));
        sent += piece.length;
        if (piece.length > 0) socket.write(piece);
      }, every);
    });
  try {
    const slow = await trickle(100); // 8 pieces over ~800 ms: past the 300 ms limit
    assert.match(slow.text, /^HTTP\/1\.1 408 /);
    assert.match(slow.text, /\r\nconnection: close\r\n/i);
    assert.ok(slow.ms < 1500, `closed after ${slow.ms} ms`);
    const timely = await trickle(10); // ~80 ms
    assert.match(timely.text, /^HTTP\/1\.1 406 /, 'answered as usual (406: no SSE in Accept)');
    assertIdle(f, 'trickled bodies');
  } finally {
    await server.close();
  }
});

test.run();
