// Hostile input inside legacy sessions (issue 7, DESIGN L1–L10): generated and hand-written
// requests against a real session with a live GET stream, each answered with the documented HTTP
// status and JSON-RPC error — never an HTTP 500, never a crash, never a stream opened or lost — and
// `endpoint.stats` (streams, slots, sessions, sessionSubscriptions) and the hub back to what they
// were before the request.
//
// Every case carries the answer its *input class* calls for, derived from how the input was built,
// never from what the endpoint said. Most cases run in-process through `endpoint.handle(...)` on a
// virtual clock (no keep-alive, grace or prune timer ever fires); a few hundred go over a real
// loopback socket through `nodeHandler`; a corpus covers what generators reach badly (1 MiB session
// ids, 100 KiB URIs, 1001 subscriptions, CR/LF and UTF-8 in header values on a raw socket).
import { strict as assert } from 'node:assert';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import fc from 'fast-check';
import { check, nonObject, nonString, request } from './helpers/property.js';
import { NEVER, type Subscription, VirtualTimeScheduler } from 'rxjs';
import { test } from 'uvu';
import { nodeHandler } from '../adapters/http/node.js';
import { encodeFrame } from '../lib/encode.js';
import { McpEndpoint } from '../adapters/http/endpoint.js';
import type { EndpointRequest } from '../lib/context.js';
import type { EndpointResponse } from '../adapters/http/responses.js';
import type { McpEndpointOptions } from '../adapters/http/options.js';
import { Hub } from '../lib/hub.js';
import type { JsonRpcId } from '../lib/jsonrpc.js';
import { eventually } from './helpers/http.js';
import { frameText, GetStream, INIT_HEADERS, listChangedMessage, primingId, primingText, rpcBody, send, updatedMessage } from './helpers/legacy.js';

/* ----------------------------------------------------------------------------------------------
 * What a class of request gets
 * ------------------------------------------------------------------------------------------- */

type Expected =
  /** A JSON-RPC error response with this HTTP status; `message`, when given, is exact. */
  | { readonly kind: 'error'; readonly status: number; readonly id: JsonRpcId | null; readonly code: number; readonly message?: string }
  /** 200 `{"jsonrpc":"2.0","id":…,"result":{}}`. */
  | { readonly kind: 'result'; readonly id: JsonRpcId }
  /** A notification: 202, empty body. */
  | { readonly kind: 'accepted' };

/** What a case does around its request, and what it checks after. */
type Effect =
  /** Nothing may change: same stats, same hub, no frame on the GET stream. */
  | { readonly kind: 'none' }
  /** A successful `resources/subscribe` of `uri`: one more live subscription, then a publish reaches the GET stream once; cleaned up by an unsubscribe. */
  | { readonly kind: 'subscribed'; readonly uri: string }
  /** A successful `initialize`: a new session advertised with `protocolVersion`; ended by DELETE. */
  | { readonly kind: 'initialized'; readonly protocolVersion: string };

interface Case {
  readonly label: string;
  readonly method: string;
  /** Lower-case header names; `SID` in a value stands for the home session's id. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  readonly expect: Expected;
  readonly effect: Effect;
}

const SID = '\u0000SID\u0000';
const InvalidRequest = -32600;
const ParseError = -32700;
const MethodNotFound = -32601;
const InvalidParams = -32602;
const SessionNotFound = -32001;
const NOT_FOUND = 'session not found: initialize a new session';
const LIMIT = 1_048_576;

const IN_SESSION = Object.freeze({ ...INIT_HEADERS, 'mcp-session-id': SID, 'mcp-protocol-version': '2025-11-25' });
const NO_SESSION = Object.freeze({ ...INIT_HEADERS });

const error = (status: number, id: JsonRpcId | null, code: number, message?: string): Expected =>
  message === undefined ? { kind: 'error', status, id, code } : { kind: 'error', status, id, code, message };
const NONE: Effect = Object.freeze({ kind: 'none' });


/* ----------------------------------------------------------------------------------------------
 * Arbitraries
 * ------------------------------------------------------------------------------------------- */

const anyString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.constantFrom('', '\r\n', 'a\rb', '\u0000', '\ud800', '\udfff\ud800', '__proto__', 'constructor', 'toString', '\u2028\u2029', 'event: message\n\ndata: x'),
);
const validId: fc.Arbitrary<JsonRpcId> = fc.oneof(anyString, fc.integer(), fc.maxSafeInteger(), fc.double({ noNaN: true, noDefaultInfinity: true }));
/** A URI longer than MAX_URI_BYTES (8 KiB of UTF-8). */
const uriTooLong = (u: string): boolean => Buffer.byteLength(u, 'utf8') > 8192;
/** URIs of every shape, a few of 100 KiB. */
const uri = fc.oneof(
  { weight: 8, arbitrary: anyString },
  { weight: 4, arbitrary: fc.webUrl() },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 9 }).map((i) => `file:///${'u'.repeat(100 * 1024)}/${i}`) },
);
const extraParams = fc.dictionary(anyString.filter((key) => key !== 'uri'), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 });
const SUBSCRIBE_METHODS = ['resources/subscribe', 'resources/unsubscribe'] as const;

const cases = {
  /**
   * A session id that names no session, on POST, GET or DELETE: 404 `-32001`, id null, before the
   * body is read and before Accept is looked at (DESIGN L10). Mutations of the real id included.
   */
  sessionId: fc
    .tuple(
      fc.oneof(
        anyString.map((value) => ({ value, mutation: undefined as string | undefined })),
        fc.constantFrom('upper', 'prefix', 'suffix', 'spaces', 'braces', 'unicode', 'crlf', 'nul').map((mutation) => ({ value: '', mutation })),
        fc.integer({ min: 1024, max: 40_000 }).map((n) => ({ value: 'x'.repeat(n), mutation: undefined })),
      ),
      fc.constantFrom('POST', 'GET', 'DELETE'),
      fc.oneof(fc.constant(rpcBody(1, 'resources/subscribe', { uri: 'file:///a' })), fc.string({ maxLength: 50 })),
      fc.constantFrom('text/event-stream', 'application/json'),
    )
    .map(([{ value, mutation }, method, body, accept]): Case => ({
      label: `session id ${mutation ?? JSON.stringify(value.slice(0, 30))} on ${method}`,
      method,
      headers: { ...IN_SESSION, accept, 'mcp-session-id': mutation === undefined ? value : `${mutation}${SID}` },
      body,
      expect: error(404, null, SessionNotFound, NOT_FOUND),
      effect: NONE,
    })),

  /** `params` present but not an object on subscribe/unsubscribe/initialize/ping: 200 `-32602` "params must be an object". */
  paramsType: fc.tuple(nonObject, validId, fc.constantFrom(...SUBSCRIBE_METHODS, 'initialize', 'ping', 'resources/read')).map(([params, id, method]): Case => ({
    label: `${method} params ${JSON.stringify(params)?.slice(0, 30)}`,
    method: 'POST',
    headers: IN_SESSION,
    body: request({ jsonrpc: '"2.0"', id: JSON.stringify(id), method: JSON.stringify(method), params: JSON.stringify(params) }),
    expect: error(200, id, InvalidParams, 'params must be an object'),
    effect: NONE,
  })),

  /** `params.uri` absent or not a string: 200 `-32602` "<method> requires params.uri" (DESIGN L3), with or without params. */
  uriType: fc
    .tuple(fc.constantFrom(...SUBSCRIBE_METHODS), validId, fc.option(nonString, { nil: undefined }), extraParams, fc.boolean())
    .map(([method, id, bad, extra, withParams]): Case => ({
      label: `${method} uri ${JSON.stringify(bad)?.slice(0, 30)}`,
      method: 'POST',
      headers: IN_SESSION,
      body: rpcBody(id, method, withParams ? { ...extra, ...(bad === undefined ? {} : { uri: bad }) } : undefined),
      expect: error(200, id, InvalidParams, `${method} requires params.uri`),
      effect: NONE,
    })),

  /** A well-formed subscribe to any string URI (default provider: every URI): `{}`, then its changes reach the GET stream once each (L4, L6). */
  // A URI past MAX_URI_BYTES is refused with -32602 naming the field, and nothing is subscribed.
  subscribe: fc.tuple(uri, validId, extraParams).map(([u, id, extra]): Case => ({
    label: `subscribe ${JSON.stringify(u).slice(0, 40)}`,
    method: 'POST',
    headers: IN_SESSION,
    body: rpcBody(id, 'resources/subscribe', { ...extra, uri: u }),
    expect: uriTooLong(u) ? error(200, id, InvalidParams, 'resources/subscribe params.uri must be at most 8192 bytes') : { kind: 'result', id },
    effect: uriTooLong(u) ? NONE : { kind: 'subscribed', uri: u },
  })),

  /** Unsubscribe of a URI never subscribed: `{}` (L4); one past MAX_URI_BYTES: -32602. */
  unsubscribe: fc.tuple(uri, validId).map(([u, id]): Case => ({
    label: `unsubscribe ${JSON.stringify(u).slice(0, 40)}`,
    method: 'POST',
    headers: IN_SESSION,
    body: rpcBody(id, 'resources/unsubscribe', { uri: u }),
    expect: uriTooLong(u) ? error(200, id, InvalidParams, 'resources/unsubscribe params.uri must be at most 8192 bytes') : { kind: 'result', id },
    effect: NONE,
  })),

  /** `initialize` outside a session with params of every shape: no protocolVersion string → `-32602`, no session; a string → a session (unknown → newest, L1). */
  initialize: fc
    .tuple(
      validId,
      fc.oneof(
        fc.record({ protocolVersion: nonString }, { requiredKeys: [] }),
        fc.record({ protocolVersion: fc.oneof(anyString, fc.constantFrom('2025-03-26', '2025-06-18', '2025-11-25', '2026-07-28', '2024-11-05')) }),
      ),
      fc.dictionary(anyString.filter((key) => key !== 'protocolVersion'), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
    )
    .map(([id, version, extra]): Case => {
      const asked = (version as { protocolVersion?: unknown }).protocolVersion;
      const ok = typeof asked === 'string';
      return {
        label: `initialize ${JSON.stringify(asked)?.slice(0, 30)}`,
        method: 'POST',
        headers: NO_SESSION,
        body: rpcBody(id, 'initialize', { ...extra, ...version }),
        expect: ok ? { kind: 'result', id } : error(200, id, InvalidParams, 'initialize requires params.protocolVersion'),
        effect: ok ? { kind: 'initialized', protocolVersion: ['2025-03-26', '2025-06-18', '2025-11-25'].includes(asked as string) ? (asked as string) : '2025-11-25' } : NONE,
      };
    }),

  /** `initialize` inside a session: `-32600` "this session is already initialized", whatever its params (an object). */
  reinitialize: fc.tuple(validId, fc.dictionary(anyString, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 })).map(([id, params]): Case => ({
    label: 'initialize in a session',
    method: 'POST',
    headers: IN_SESSION,
    body: rpcBody(id, 'initialize', params),
    expect: error(200, id, InvalidRequest, 'this session is already initialized'),
    effect: NONE,
  })),

  /** A notification (no id) in a session, any method — subscribe and initialize included: 202, nothing done. */
  notification: fc
    .tuple(fc.oneof(anyString, fc.constantFrom('resources/subscribe', 'initialize', 'subscriptions/listen', 'notifications/initialized')), uri, fc.boolean())
    .map(([method, u, inSession]): Case => ({
      label: `notification ${JSON.stringify(method).slice(0, 30)}`,
      method: 'POST',
      headers: inSession ? IN_SESSION : NO_SESSION,
      body: JSON.stringify({ jsonrpc: '2.0', method, params: { uri: u, protocolVersion: '2025-11-25' } }),
      expect: { kind: 'accepted' },
      effect: NONE,
    })),

  /** Batches, in a session or with initialize outside one: 400 `-32600`, id null, all refused. */
  batch: fc
    .tuple(
      fc.array(
        fc.tuple(validId, fc.constantFrom('initialize', 'resources/subscribe', 'ping'), uri).map(([id, method, u]) => rpcBody(id, method, { uri: u, protocolVersion: '2025-11-25' })),
        { maxLength: 4 },
      ),
      fc.boolean(),
    )
    .map(([members, inSession]): Case => ({
      label: `batch of ${members.length}`,
      method: 'POST',
      headers: inSession ? IN_SESSION : NO_SESSION,
      body: `[${members.join(',')}]`,
      expect: error(400, null, InvalidRequest, 'JSON-RPC batches are not supported; send one request per POST'),
      effect: NONE,
    })),

  /** Unknown methods in a session: 200 (Streamable HTTP) `-32601`; listen → `-32601` pointing at resources/subscribe (M12); ping answers. */
  methods: fc.tuple(fc.oneof(anyString, fc.constantFrom('subscriptions/listen', 'ping', '__proto__', 'hasOwnProperty')), validId).map(([name, id]): Case => {
    const expect =
      name === 'ping'
        ? ({ kind: 'result', id } as const)
        : name === 'initialize'
          ? error(200, id, InvalidRequest, 'this session is already initialized')
          : name === 'subscriptions/listen'
            ? error(200, id, MethodNotFound, 'method not found: subscriptions/listen (legacy sessions use resources/subscribe)')
            : name === 'resources/subscribe' || name === 'resources/unsubscribe'
              ? error(200, id, InvalidParams, `${name} requires params.uri`)
              : error(200, id, MethodNotFound, `method not found: ${name}`);
    return { label: `method ${JSON.stringify(name).slice(0, 30)}`, method: 'POST', headers: IN_SESSION, body: rpcBody(id, name), expect, effect: NONE };
  }),

  /** Envelope errors in a session: wrong jsonrpc, ids that are not ids, methods that are not strings: 400 `-32600`. */
  envelope: fc
    .oneof(
      fc.tuple(fc.jsonValue({ maxDepth: 1 }).filter((v) => v !== '2.0'), validId).map(([jsonrpc, id]) => ({
        body: request({ jsonrpc: JSON.stringify(jsonrpc), id: JSON.stringify(id), method: '"resources/subscribe"', params: '{"uri":"file:///a"}' }),
        expect: error(400, id, InvalidRequest, 'jsonrpc must be "2.0"'),
      })),
      fc.constantFrom('null', 'true', '{}', '[]', '[1]', '1e400', '-1e400').map((idText) => ({
        body: request({ jsonrpc: '"2.0"', id: idText, method: '"resources/subscribe"', params: '{"uri":"file:///a"}' }),
        expect: error(400, null, InvalidRequest, 'id must be a string or a number'),
      })),
      fc.tuple(fc.jsonValue({ maxDepth: 1 }).filter((v) => typeof v !== 'string'), validId).map(([method, id]) => ({
        body: request({ jsonrpc: '"2.0"', id: JSON.stringify(id), method: JSON.stringify(method) }),
        expect: error(400, id, InvalidRequest, 'method must be a string'),
      })),
    )
    .map(({ body, expect }): Case => ({ label: 'envelope', method: 'POST', headers: IN_SESSION, body, expect, effect: NONE })),

  /** Bytes that are not JSON, or a request cut short, in a session: 400 `-32700`. */
  garbage: fc
    .oneof(
      fc.string({ maxLength: 200 }).filter((text) => {
        try {
          JSON.parse(text);
          return false;
        } catch {
          return true;
        }
      }),
      fc.tuple(validId, uri.filter((u) => u.length < 1000)).chain(([id, u]) => {
        const text = rpcBody(id, 'resources/subscribe', { uri: u });
        return fc.integer({ min: 0, max: text.length - 1 }).map((cut) => text.slice(0, cut));
      }),
    )
    .map((body): Case => ({ label: 'not JSON', method: 'POST', headers: IN_SESSION, body, expect: error(400, null, ParseError, 'parse error: the body is not valid JSON'), effect: NONE })),

  /** Other HTTP methods with a valid session: 405 with `Allow: POST, GET, DELETE`, before anything else. */
  httpMethod: fc
    .stringMatching(/^[A-Z]{1,10}$/)
    .filter((m) => !['POST', 'GET', 'DELETE', 'HEAD'].includes(m))
    .map((method): Case => ({ label: `HTTP ${method}`, method, headers: IN_SESSION, body: '', expect: error(405, null, InvalidRequest, `method ${method} is not allowed; use POST, GET, DELETE`), effect: NONE })),

  /** A GET in the session whose Accept excludes text/event-stream: 406; the live stream is not replaced. */
  accept: fc
    .oneof(fc.constantFrom('application/json', 'text/event-stream;q=0', '*/*', 'text/html', '', 'text/event-streams'), fc.string({ maxLength: 30 }).filter((v) => !/event-stream/i.test(v)))
    .map((accept): Case => ({
      label: `GET Accept ${JSON.stringify(accept)}`,
      method: 'GET',
      headers: { ...IN_SESSION, accept },
      body: '',
      expect: error(406, null, InvalidRequest, 'the GET stream requires Accept: text/event-stream'),
      effect: NONE,
    })),

  /** A body over maxBodyBytes in a session: 413. */
  oversized: fc.integer({ min: LIMIT + 1, max: LIMIT + 5000 }).map((size): Case => {
    const head = rpcBody(1, 'resources/subscribe', { uri: 'file:///a' });
    return { label: `oversized ${size}`, method: 'POST', headers: IN_SESSION, body: head + ' '.repeat(size - head.length), expect: error(413, null, InvalidRequest, `request body exceeds ${LIMIT} bytes`), effect: NONE };
  }),
};

const anyCase: fc.Arbitrary<Case> = fc.oneof(...Object.values(cases));

/* ----------------------------------------------------------------------------------------------
 * A session with a live GET stream, in process
 * ------------------------------------------------------------------------------------------- */

interface Home {
  readonly hub: Hub;
  readonly endpoint: McpEndpoint;
  readonly sid: string;
  /** The GET stream's frames, encoded. */
  readonly frames: string[];
  /** The id the next frame on the GET stream will carry. */
  nextEventId: number;
  readonly state: { failure: unknown; completed: boolean };
  readonly baseline: { readonly stats: McpEndpoint['stats']; readonly hub: Hub['size'] };
  readonly subscription: Subscription;
}

function inProcess(method: string, headers: Readonly<Record<string, string>>, body: string | undefined, remoteAddress = '127.0.0.1'): EndpointRequest {
  return { method, header: (name) => headers[name], remoteAddress, body };
}

function endpointOptions(extra: Partial<McpEndpointOptions> = {}): McpEndpointOptions {
  return {
    hub: new Hub(),
    capabilities: { tools: true, prompts: true, resources: true },
    methods: { ping: () => ({}) },
    subscribeStreamWait: 0,
    ...extra,
  };
}

async function initializeInProcess(endpoint: McpEndpoint): Promise<string> {
  const body = rpcBody(1, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'hostile', version: '1' } });
  const response = await endpoint.handle(inProcess('POST', NO_SESSION, body));
  assert.equal(response.kind, 'json');
  const sid = response.headers['Mcp-Session-Id'];
  assert.ok(sid !== undefined);
  return sid;
}

async function home(): Promise<Home> {
  const options = endpointOptions({ scheduler: new VirtualTimeScheduler() });
  const endpoint = new McpEndpoint(options);
  const sid = await initializeInProcess(endpoint);
  const response = await endpoint.handle(inProcess('GET', { ...IN_SESSION, 'mcp-session-id': sid }, undefined));
  assert.equal(response.kind, 'stream');
  if (response.kind !== 'stream') throw new Error('unreachable');
  const frames: string[] = [];
  const state = { failure: undefined as unknown, completed: false };
  const subscription = response.open(NEVER).subscribe({
    next: (frame) => frames.push(encodeFrame(frame)),
    error: (failure: unknown) => (state.failure = failure),
    complete: () => (state.completed = true),
  });
  // DESIGN L7: the stream opens with its priming event; the cases below count the frames after it.
  assert.equal(frames.shift(), primingText(0), 'the priming event of a new session');
  return { hub: options.hub, endpoint, sid, frames, nextEventId: 1, state, baseline: { stats: endpoint.stats, hub: options.hub.size }, subscription };
}

/** The home session is as it was: stream open, nothing extra held, nothing extra on the wire. */
function assertHomeIntact(h: Home, where: string): void {
  assert.equal(h.state.failure, undefined, `the GET stream failed after ${where}`);
  assert.equal(h.state.completed, false, `the GET stream ended after ${where}`);
  assert.deepEqual(h.endpoint.stats, h.baseline.stats, `endpoint.stats after ${where}`);
  assert.deepEqual(h.hub.size, h.baseline.hub, `hub after ${where}`);
  assert.equal(h.frames.length, h.nextEventId - 1, `unexpected frames on the GET stream after ${where}`);
}

const resolveSid = (headers: Readonly<Record<string, string>>, sid: string) =>
  Object.fromEntries(
    Object.entries(headers).map(([key, value]) => {
      if (key !== 'mcp-session-id' || !value.endsWith(SID)) return [key, value];
      const real = value.slice(0, -SID.length);
      switch (real) {
        case '':
          return [key, sid];
        case 'upper':
          return [key, sid.toUpperCase()];
        case 'prefix':
          return [key, sid.slice(0, -1)];
        case 'suffix':
          return [key, `${sid}0`];
        case 'spaces':
          return [key, ` ${sid} `];
        case 'braces':
          return [key, `{${sid}}`];
        case 'unicode':
          return [key, sid.replace(/[0-9]/, '\u0660')];
        case 'crlf':
          return [key, `${sid}\r\n`];
        case 'nul':
          return [key, `${sid}\u0000`];
        default:
          throw new Error(`unknown mutation ${real}`);
      }
    }),
  ) as Record<string, string>;

const describeCase = (c: Case) => `${c.label} [${c.method}] ${c.body.slice(0, 160)}`;

/** Checks a JSON (or empty) answer against what the class calls for. */
function checkAnswer(c: Case, status: number, body: string, headers: Record<string, string | string[] | undefined>): void {
  const where = describeCase(c);
  assert.notEqual(status, 500, `HTTP 500 for ${where}`);
  const expect = c.expect;
  switch (expect.kind) {
    case 'error': {
      assert.equal(status, expect.status, `status for ${where}\n${body}`);
      const parsed = JSON.parse(body);
      assert.equal(parsed.jsonrpc, '2.0');
      assert.equal(JSON.stringify(parsed.id), JSON.stringify(expect.id), `id for ${where}`);
      assert.equal(parsed.error.code, expect.code, `code for ${where}\n${body}`);
      if (expect.message !== undefined) assert.equal(parsed.error.message, expect.message, `message for ${where}`);
      if (expect.status === 405) assert.equal(headers.allow, 'POST, GET, DELETE');
      assert.match(String(headers['content-type']), /^application\/json/);
      assert.equal(headers['mcp-session-id'], undefined, `no session for ${where}`);
      return;
    }
    case 'result':
      assert.equal(status, 200, `status for ${where}\n${body}`);
      if (c.effect.kind === 'initialized') {
        const parsed = JSON.parse(body);
        assert.equal(JSON.stringify(parsed.id), JSON.stringify(expect.id));
        assert.equal(parsed.result.protocolVersion, c.effect.protocolVersion, where);
        assert.deepEqual(parsed.result.capabilities.resources, { subscribe: true, listChanged: true });
        assert.match(String(headers['mcp-session-id']), /^[0-9a-f-]{36}$/);
        return;
      }
      assert.equal(body, `{"jsonrpc":"2.0","id":${JSON.stringify(expect.id)},"result":{}}`, where);
      return;
    case 'accepted':
      assert.equal(status, 202, `status for ${where}\n${body}`);
      assert.equal(body, '', where);
      return;
  }
}

const lower = (headers: Readonly<Record<string, string>>) => Object.fromEntries(Object.entries(headers).map(([key, value]) => [key.toLowerCase(), value]));

async function runInProcess(h: Home, c: Case): Promise<void> {
  const headers = resolveSid(c.headers, h.sid);
  const response: EndpointResponse = await h.endpoint.handle(inProcess(c.method, headers, c.method === 'GET' ? undefined : c.body));
  if (response.kind === 'stream') {
    response.abandon();
    assert.fail(`a stream for ${describeCase(c)}`);
  }
  checkAnswer(c, response.status, response.kind === 'json' ? response.body : '', lower(response.headers));
  await after(h, c, response.kind === 'json' ? response.headers['Mcp-Session-Id'] : undefined, (m, hs, b) => h.endpoint.handle(inProcess(m, hs, b)).then(statusOf));
}

const statusOf = (response: EndpointResponse) => ({ status: response.status, body: response.kind === 'json' ? response.body : '' });

/** Checks the case's effect, undoes it, and checks the home session is as it was. */
async function after(
  h: Home,
  c: Case,
  newSession: string | undefined,
  send: (method: string, headers: Record<string, string>, body?: string) => Promise<{ status: number; body: string }>,
  untilFrame: (frame: string) => Promise<void> = async () => {},
): Promise<void> {
  const where = describeCase(c);
  const session = { ...IN_SESSION, 'mcp-session-id': h.sid };
  switch (c.effect.kind) {
    case 'subscribed': {
      const { uri } = c.effect;
      assert.equal(h.endpoint.stats.sessionSubscriptions, h.baseline.stats.sessionSubscriptions + 1, `one live subscription after ${where}`);
      h.hub.notifyResourceUpdated(uri);
      h.hub.notifyResourceUpdated(`${uri}/not-this-one`);
      await untilFrame(frameText(h.nextEventId, updatedMessage(uri)));
      assert.equal(h.frames.length, h.nextEventId, `one frame after ${where}`);
      assert.equal(h.frames.at(-1), frameText(h.nextEventId, updatedMessage(uri)), `the frame after ${where}`);
      h.nextEventId++;
      const off = await send('POST', session, rpcBody('off', 'resources/unsubscribe', { uri }));
      assert.equal(off.body, '{"jsonrpc":"2.0","id":"off","result":{}}');
      h.hub.notifyResourceUpdated(uri);
      break;
    }
    case 'initialized': {
      assert.ok(newSession !== undefined);
      assert.equal(h.endpoint.stats.sessions, h.baseline.stats.sessions + 1);
      const del = await send('DELETE', { 'mcp-session-id': newSession });
      assert.equal(del.status, 204, `DELETE of the session made by ${where}`);
      break;
    }
    case 'none':
      break;
  }
  assertHomeIntact(h, where);
}

/* ----------------------------------------------------------------------------------------------
 * Generated cases
 * ------------------------------------------------------------------------------------------- */

const SEED = Number(process.env.HOSTILE_SEED ?? 0x1e6) | 0;


test('4 000 generated requests in-process inside a live session: each gets its class’s answer, the session and its stream are untouched', async () => {
  const h = await home();
  let runs = 0;
  for (const [name, arbitrary] of Object.entries(cases)) {
    await check(
      arbitrary,
      async (c) => {
        runs++;
        await runInProcess(h, c);
      },
      name === 'oversized' ? 60 : 300,
      SEED + name.length,
    );
  }
  assert.ok(runs >= 4000, `${runs} runs`);
  h.subscription.unsubscribe();
  const del = await h.endpoint.handle(inProcess('DELETE', { 'mcp-session-id': h.sid }, undefined));
  assert.equal(del.status, 204);
  assert.deepEqual(h.endpoint.stats, { streams: 0, slots: 0, principals: 0, sessions: 0, sessionSubscriptions: 0 });
  assert.deepEqual(h.hub.size, { topics: 0, subscriptions: 0 });
});

/* Last-Event-ID of every shape: a model of DESIGN L7 */

const lastEventIdArb: fc.Arbitrary<string | undefined> = fc.oneof(
  fc.constant(undefined),
  fc.nat({ max: 60 }).map(String),
  fc.integer({ min: -1000, max: -1 }).map(String),
  fc.constantFrom('', '0', '00', '007', '-0', '+1', ' 1', '1 ', '1.5', '1e1', '1e400', '-1e400', '0x10', 'NaN', 'Infinity', '\u0661', '１', '99999999999999999999999', '18446744073709551617'),
  fc.constantFrom('9'.repeat(10 * 1024), 'x'.repeat(10 * 1024), '0'.repeat(10 * 1024) + '5'),
  anyString,
);

/** What a GET with `Last-Event-ID: value` replays when ids 1..last were stamped and `capacity` are kept (DESIGN L7). */
function replayed(value: string | undefined, last: number, capacity: number): number[] {
  if (value === undefined) return [];
  const oldest = Math.max(1, last - capacity + 1);
  const first = /^[0-9]+$/.test(value) ? Math.max(Number(value) + 1, oldest) : oldest;
  const ids: number[] = [];
  for (let id = first; id <= last; id++) ids.push(id);
  return ids;
}

/** A fresh session on `endpoint` that saw `before` frames on a first GET, then `during` more after its client left. */
async function sessionWithHistory(endpoint: McpEndpoint, hub: Hub, before: number, during: number): Promise<string> {
  const sid = await initializeInProcess(endpoint);
  const first = await endpoint.handle(inProcess('GET', { ...IN_SESSION, 'mcp-session-id': sid }, undefined));
  if (first.kind !== 'stream') throw new Error(`GET: ${first.status}`);
  const subscription = first.open(NEVER).subscribe();
  // One change per turn (identical notifications in one turn are one frame): awaiting a resolved
  // promise lets the turn end.
  for (let i = 0; i < before; i++) {
    hub.notifyToolsChanged();
    await null;
  }
  subscription.unsubscribe();
  // Within the grace period (virtual time never advances): the list-change subscription still feeds the buffer.
  for (let i = 0; i < during; i++) {
    hub.notifyToolsChanged();
    await null;
  }
  return sid;
}

test('Last-Event-ID of every shape (1 000 generated, in-process): exactly the frames L7 says, then live frames with no gap or duplicate', async () => {
  const capacity = 16;
  const options = endpointOptions({ scheduler: new VirtualTimeScheduler(), replayBufferSize: capacity });
  const endpoint = new McpEndpoint(options);
  const hub = options.hub;
  const tools = listChangedMessage('tools');
  await check(
    fc.tuple(fc.nat({ max: 30 }), fc.nat({ max: 20 }), lastEventIdArb),
    async ([before, during, value]) => {
      const sid = await sessionWithHistory(endpoint, hub, before, during);
      const headers: Record<string, string> = { ...IN_SESSION, 'mcp-session-id': sid };
      if (value !== undefined) headers['last-event-id'] = value;
      const response = await endpoint.handle(inProcess('GET', headers, undefined));
      assert.equal(response.kind, 'stream', `GET with Last-Event-ID ${JSON.stringify(value)}`);
      if (response.kind !== 'stream') return;
      const frames: string[] = [];
      let failure: unknown;
      let completed = false;
      response.open(NEVER).subscribe({ next: (frame) => frames.push(encodeFrame(frame)), error: (e: unknown) => (failure = e), complete: () => (completed = true) });
      const last = before + during;
      const expected = replayed(value, last, capacity);
      // The priming id is the one the client can resume from without a gap (DESIGN L7).
      assert.equal(frames.shift(), primingText(primingId(value, last)), `the priming event for Last-Event-ID ${JSON.stringify(value)?.slice(0, 40)}`);
      assert.deepEqual(frames, expected.map((id) => frameText(id, tools)), `Last-Event-ID ${JSON.stringify(value)?.slice(0, 40)} after ${last} frames`);
      hub.notifyToolsChanged();
      assert.equal(frames.at(-1), frameText(last + 1, tools), 'the next live frame');
      assert.equal(frames.length, expected.length + 1);
      assert.equal(failure, undefined);
      const del = await endpoint.handle(inProcess('DELETE', { 'mcp-session-id': sid }, undefined));
      assert.equal(del.status, 204);
      assert.ok(completed, 'DELETE ends the GET stream');
      assert.deepEqual(endpoint.stats, { streams: 0, slots: 0, principals: 0, sessions: 0, sessionSubscriptions: 0 });
      assert.deepEqual(hub.size, { topics: 0, subscriptions: 0 });
    },
    1000,
    SEED,
  );
});

/* ----------------------------------------------------------------------------------------------
 * Over a loopback socket
 * ------------------------------------------------------------------------------------------- */

interface SocketHome {
  readonly url: string;
  readonly port: number;
  readonly endpoint: McpEndpoint;
  readonly hub: Hub;
  readonly sid: string;
  readonly get: GetStream;
  readonly handled: number;
  close(): Promise<void>;
}

async function socketHome(extra: Partial<McpEndpointOptions> = {}): Promise<SocketHome> {
  const options = endpointOptions(extra);
  const endpoint = new McpEndpoint(options);
  const handle = nodeHandler(endpoint);
  const counter = { handled: 0 };
  const server = http.createServer((req, res) => {
    counter.handled++;
    handle(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}/mcp`;
  const init = await send(url, 'POST', { ...INIT_HEADERS }, rpcBody(1, 'initialize', { protocolVersion: '2025-11-25' }));
  const sid = init.headers['mcp-session-id'] as string;
  const get = GetStream.open(url, sid);
  await eventually(() => endpoint.stats.streams === 1, 3000, 'the home GET stream');
  return {
    url,
    port,
    endpoint,
    hub: options.hub,
    sid,
    get,
    get handled() {
      return counter.handled;
    },
    close: () =>
      new Promise<void>((resolve) => {
        get.destroy();
        endpoint.close();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Only what an HTTP/1.1 client can send: a method node:http parses, header values of visible ASCII, a head under 16 KiB. */
function sendable(c: Case): boolean {
  if (!['POST', 'GET', 'DELETE', 'PUT', 'PATCH', 'OPTIONS', 'PROPFIND'].includes(c.method)) return false;
  // Node trims the spaces around a header value; control characters and non-ASCII it refuses to send.
  const values = Object.values(resolveSid(c.headers, '0123abcd-0000-4000-8000-000000000000'));
  return values.every((value) => /^([\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?)?$/.test(value)) && values.join('').length < 8000;
}

function overSocket(s: SocketHome, agent: http.Agent, c: Case): Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const headers = resolveSid(c.headers, s.sid);
    const req = http.request({ host: '127.0.0.1', port: s.port, path: '/mcp', method: c.method, headers, agent }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, body: text, headers: res.headers }));
    });
    req.on('error', (e) => reject(new Error(`${e.message} for ${describeCase(c)}`)));
    // node:http frames no body for GET, DELETE and OPTIONS (no chunked encoding by default): send none.
    req.end(['GET', 'DELETE', 'OPTIONS'].includes(c.method) ? undefined : c.body);
  });
}

test('400 generated requests over a loopback socket (node:http) inside a live session: the same answers, the GET stream untouched', async () => {
  const s = await socketHome();
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const h: Home = {
    hub: s.hub,
    endpoint: s.endpoint,
    sid: s.sid,
    frames: [],
    nextEventId: 1,
    state: { failure: undefined, completed: false },
    baseline: { stats: s.endpoint.stats, hub: s.hub.size },
    subscription: { unsubscribe() {} } as Subscription,
  };
  const frames = () => s.get.withoutKeepAlives.split(/(?<=\n\n)/).filter(Boolean);
  let runs = 0;
  try {
    await check(
      anyCase.filter(sendable),
      async (c) => {
        runs++;
        const answer = await overSocket(s, agent, c);
        checkAnswer(c, answer.status, answer.body, answer.headers);
        await after(
          h,
          c,
          answer.headers['mcp-session-id'] as string | undefined,
          async (method, headers, body) => {
            const reply = await send(s.url, method, headers, body);
            return { status: reply.status, body: reply.body };
          },
          async (frame) => {
            // Not GetStream.untilId: its frame pattern (`.`) stops at U+2028, which JSON leaves raw in a URI.
            await s.get.until((x) => x.text.includes(frame)).catch((e: Error) => {
              throw new Error(`${e.message.slice(0, 60)}… the stream's tail:\n${s.get.text.slice(-600)}`);
            });
            h.frames.splice(0, h.frames.length, ...frames());
          },
        );
        assert.equal(s.get.ended, false, 'the home GET stream is still open');
        h.frames.splice(0, h.frames.length, ...frames());
      },
      400,
      SEED,
    );
    assert.ok(runs >= 400);
  } finally {
    agent.destroy();
    await s.close();
  }
});

test('Last-Event-ID over a loopback socket (100 generated): the replay is exact on the wire', async () => {
  const capacity = 16;
  const options = endpointOptions({ replayBufferSize: capacity });
  const endpoint = new McpEndpoint(options);
  const hub = options.hub;
  const server = http.createServer(nodeHandler(endpoint));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  const tools = listChangedMessage('tools');
  const headerSafe = (value: string | undefined) => value === undefined || (/^[\x21-\x7e]*$/.test(value) && value.length < 12_000);
  try {
    await check(
      fc.tuple(fc.nat({ max: 30 }), fc.nat({ max: 20 }), lastEventIdArb.filter(headerSafe)),
      async ([before, during, value]) => {
        const sid = await sessionWithHistory(endpoint, hub, before, during);
        const get = GetStream.open(url, sid, value === undefined ? {} : { lastEventId: value });
        await eventually(() => endpoint.stats.streams === 1, 3000, 'the GET stream');
        hub.notifyPromptsChanged(); // the sentinel
        const last = before + during;
        await get.untilId(last + 1);
        const expected = replayed(value, last, capacity).map((id) => frameText(id, tools)).join('') + frameText(last + 1, listChangedMessage('prompts'));
        assert.equal(get.withoutKeepAlives, expected, `Last-Event-ID ${JSON.stringify(value)?.slice(0, 40)}`);
        assert.equal((await send(url, 'DELETE', { 'mcp-session-id': sid })).status, 204);
        await get.untilEnded();
        assert.ok(get.endedCleanly);
        await eventually(() => endpoint.stats.slots === 0, 3000, 'the slot');
        assert.deepEqual(endpoint.stats, { streams: 0, slots: 0, principals: 0, sessions: 0, sessionSubscriptions: 0 });
      },
      100,
      SEED,
    );
  } finally {
    endpoint.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

/* ----------------------------------------------------------------------------------------------
 * The corpus
 * ------------------------------------------------------------------------------------------- */

test('corpus: a 1 MiB session id, a 100 KiB URI, CR/LF/U+2028 in a URI — exact answers and frames', async () => {
  const h = await home();
  const huge = `file:///${'h'.repeat(100 * 1024)}`;
  const hostile = 'file:///a\r\nid: 999\r\n\r\nevent: message\ndata: {"jsonrpc":"2.0","method":"x"}\u2028\u0000';
  for (const [label, c] of [
    ['1 MiB session id', { method: 'POST', headers: { ...IN_SESSION, 'mcp-session-id': 's'.repeat(1 << 20) }, body: rpcBody(1, 'ping'), expect: error(404, null, SessionNotFound, NOT_FOUND), effect: NONE }],
    ['a 100 KiB URI', { method: 'POST', headers: IN_SESSION, body: rpcBody(2, 'resources/subscribe', { uri: huge }), expect: error(200, 2, InvalidParams, 'resources/subscribe params.uri must be at most 8192 bytes'), effect: NONE }],
    ['an 8 KiB URI', { method: 'POST', headers: IN_SESSION, body: rpcBody(5, 'resources/subscribe', { uri: huge.slice(0, 8192) }), expect: { kind: 'result', id: 5 }, effect: { kind: 'subscribed', uri: huge.slice(0, 8192) } }],
    ['SSE framing in a URI', { method: 'POST', headers: IN_SESSION, body: rpcBody(3, 'resources/subscribe', { uri: hostile }), expect: { kind: 'result', id: 3 }, effect: { kind: 'subscribed', uri: hostile } }],
    ['lone surrogates in a URI', { method: 'POST', headers: IN_SESSION, body: '{"jsonrpc":"2.0","id":4,"method":"resources/subscribe","params":{"uri":"\\ud800x\\udfff"}}', expect: { kind: 'result', id: 4 }, effect: { kind: 'subscribed', uri: '\ud800x\udfff' } }],
  ] as [string, Omit<Case, 'label'>][]) {
    await runInProcess(h, { label, ...c });
  }
  // The SSE frame of the hostile URI is one frame: JSON escapes CR, LF, U+2028 and NUL.
  const framed = h.frames.find((frame) => frame.includes('id: 999'));
  assert.ok(framed !== undefined);
  assert.equal(framed.split('\n\n').length, 2, 'one frame, one blank line');
  assert.ok(!/[\r\u0000]/.test(framed), 'JSON escapes CR and NUL (U+2028 stays raw: SSE lines end at CR or LF only)');
  h.subscription.unsubscribe();
});

// A per-session subscription cap, like the 1000 URIs of a listen filter. Without
// it one session holds as many subscriptions (and as many 1 MiB URIs) as it cares to send.
test('1000 subscriptions in a row are answered {}; the 1001st subscription of a session is refused with -32602 and nothing is added', async () => {
  const options = endpointOptions({ scheduler: new VirtualTimeScheduler() });
  const endpoint = new McpEndpoint(options);
  const sid = await initializeInProcess(endpoint);
  const get = await endpoint.handle(inProcess('GET', { ...IN_SESSION, 'mcp-session-id': sid }, undefined));
  if (get.kind !== 'stream') throw new Error('no stream');
  const subscription = get.open(NEVER).subscribe();
  const session = { ...IN_SESSION, 'mcp-session-id': sid };
  for (let i = 0; i < 1000; i++) await endpoint.handle(inProcess('POST', session, rpcBody(i, 'resources/subscribe', { uri: `file:///r/${i}` })));
  const refused = statusOf(await endpoint.handle(inProcess('POST', session, rpcBody(1000, 'resources/subscribe', { uri: 'file:///r/1000' }))));
  assert.equal(refused.status, 200);
  assert.equal(JSON.parse(refused.body).error.code, InvalidParams);
  assert.match(JSON.parse(refused.body).error.message, /at most 1000/);
  assert.equal(endpoint.stats.sessionSubscriptions, 1001);
  // Re-subscribing to a URI already held still works at the cap.
  assert.equal(statusOf(await endpoint.handle(inProcess('POST', session, rpcBody('again', 'resources/subscribe', { uri: 'file:///r/0' })))).body, '{"jsonrpc":"2.0","id":"again","result":{}}');
  subscription.unsubscribe();
});

/** Sends raw bytes and resolves with everything received until the server closes the connection. */
function raw(port: number, bytes: Buffer | string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(text));
    socket.end(bytes);
  });
}

test('Mcp-Session-Id and Last-Event-ID with CR, LF, NUL, UTF-8 bytes or 20 KiB on a raw socket: 400/431 before the endpoint, or 404; the live stream untouched', async () => {
  const s = await socketHome();
  try {
    const handledBefore = s.handled;
    const head = (method: string, sessionLine: string, extra = '') =>
      `${method} /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nContent-Type: application/json\r\nConnection: close\r\n${sessionLine}${extra}Content-Length: 0\r\n\r\n`;
    // Refused by node's parser: the endpoint never sees them.
    const refused = [
      `Mcp-Session-Id: ${s.sid}\rX\r\n`,
      `Mcp-Session-Id: ${s.sid}\nX: y\r\n`,
      `Mcp-Session-Id: ${s.sid}\u0000\r\n`,
      `Mcp-Session-Id: ${s.sid}\r\nLast-Event-ID: 1\r2\r\n`,
      `Mcp-Session-Id: ${s.sid}\r\nLast-Event-ID: 1\n\r\n`,
      `Mcp-Session\u0000Id: ${s.sid}\r\n`,
    ];
    for (const line of refused) {
      for (const method of ['GET', 'POST', 'DELETE']) {
        const answer = await raw(s.port, head(method, line));
        assert.equal(answer, 'HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n', JSON.stringify(line));
      }
    }
    const big = await raw(s.port, head('GET', `Mcp-Session-Id: ${'x'.repeat(20 * 1024)}\r\n`));
    assert.match(big, /^HTTP\/1\.1 431 /);
    assert.equal(s.handled, handledBefore, 'no malformed request reached the endpoint');
    // UTF-8 bytes (obs-text) pass the parser and name no session: 404 from the endpoint.
    for (const method of ['GET', 'POST', 'DELETE']) {
      const answer = await raw(s.port, Buffer.from(head(method, `Mcp-Session-Id: ${s.sid.slice(0, -1)}é\r\n`), 'utf8'));
      assert.match(answer, /^HTTP\/1\.1 404 /, method);
      assert.ok(answer.endsWith(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: SessionNotFound, message: NOT_FOUND } })));
    }
    // A Last-Event-ID of UTF-8 bytes is non-numeric: the whole buffer (nothing yet), and the stream replaces the home one.
    assert.equal(s.get.ended, false);
    assert.deepEqual(s.endpoint.stats, { streams: 1, slots: 1, principals: 0, sessions: 1, sessionSubscriptions: 1 });
  } finally {
    await s.close();
  }
});

test.run();
