// A credential that asks to be checked again (`AuthInfo.recheck`, what introspected tokens carry)
// ends its streams with their closing frames once it is no longer active, in virtual time on the
// endpoint's clock: a listen over HTTP, a legacy GET stream (its session ends as a revoke ends it),
// a listen over a message channel; one check per credential and interval, however many streams it
// opened; nothing checked once its streams are gone; a failing check keeps the streams.
import { strict as assert } from 'node:assert';
import { BehaviorSubject, VirtualTimeScheduler } from 'rxjs';
import { test } from 'uvu';
import { channelPair } from '../../adapters/channel/pair.js';
import { serveChannel } from '../../adapters/channel/session.js';
import { McpEndpoint } from '../../adapters/http/endpoint.js';
import type { EndpointResponse } from '../../adapters/http/responses.js';
import type { AuthInfo, CredentialRecheck } from '../../lib/auth.js';
import type { EndpointRequest } from '../../lib/context.js';
import { encodeFrame } from '../../lib/encode.js';
import type { Frame } from '../../lib/frame.js';
import { Hub } from '../../lib/hub.js';
import { channels, type ErrorEvent } from '../../lib/telemetry.js';
import { advanceInSteps } from '../helpers/wait.js';
import { Peer } from '../helpers/channel.js';
import { LISTEN_HEADERS, listenBody } from '../helpers/http.js';
import { INIT_HEADERS, rpcBody } from '../helpers/legacy.js';

/** A credential whose activity the test sets; counts the checks. */
class Credential implements CredentialRecheck {
  active$ = true;
  fail = false;
  calls = 0;
  constructor(readonly interval: number) {}
  async active(): Promise<boolean> {
    this.calls++;
    if (this.fail) throw new Error('the authorization server did not answer');
    return this.active$;
  }
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** An endpoint on a virtual clock whose callers carry the credential `x-credential` names. */
function setup(credentials: Record<string, Credential>) {
  const scheduler = new VirtualTimeScheduler();
  const hub = new Hub({ scheduler });
  const authenticate = (request: EndpointRequest): AuthInfo => {
    const name = request.header('x-credential') ?? 'a';
    return { principal: `sub:${name}`, scopes: new Set(), expiresAt: 1_000_000, recheck: credentials[name]! };
  };
  const endpoint = new McpEndpoint({ hub, scheduler, authenticate, keepAliveInterval: 60_000, maxStreamLifetime: 3_600_000, capabilities: { tools: true, resources: true } });
  const advance = advanceInSteps(scheduler);
  return { scheduler, hub, endpoint, advance };
}

/** Opens a listen as the credential `name`; its frames as they are written. */
async function listen(endpoint: McpEndpoint, id: number, name: string): Promise<{ frames: string[]; ended: () => boolean }> {
  const response = await endpoint.handle({ method: 'POST', header: (h) => (h === 'x-credential' ? name : (LISTEN_HEADERS as Record<string, string>)[h]), remoteAddress: '127.0.0.1', body: listenBody(id, { toolsListChanged: true }) });
  return subscribe(response);
}

function subscribe(response: EndpointResponse): { frames: string[]; ended: () => boolean } {
  assert.equal(response.kind, 'stream');
  if (response.kind !== 'stream') throw new Error('unreachable');
  const frames: string[] = [];
  let ended = false;
  response.open(new BehaviorSubject(true)).subscribe({ next: (frame: Frame) => frames.push(encodeFrame(frame)), complete: () => (ended = true) });
  return { frames, ended: () => ended };
}

const closing = (id: number, reason: string) => [
  `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":${id},"reason":"${reason}","_meta":{"io.modelcontextprotocol/subscriptionId":${id}}}}\n\n`,
  `event: message\ndata: {"jsonrpc":"2.0","id":${id},"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":${id}}}}\n\n`,
];

test('a listen over HTTP: checked every interval from its opening on the endpoint clock; inactive, it ends with its closing frames (revoked)', async () => {
  const a = new Credential(1_000);
  const { endpoint, advance } = setup({ a });
  const stream = await listen(endpoint, 7, 'a');
  await advance(999);
  assert.equal(a.calls, 0);
  await advance(1_000);
  assert.equal(a.calls, 1);
  assert.equal(stream.ended(), false);
  a.active$ = false;
  await advance(1_999);
  assert.equal(stream.ended(), false);
  await advance(2_000);
  assert.equal(a.calls, 2);
  assert.equal(stream.ended(), true);
  assert.deepEqual(stream.frames.slice(-2), closing(7, 'revoked'));
  assert.equal(endpoint.stats.streams, 0);
  assert.equal(endpoint.stats.slots, 0);
  // Nothing is checked for it any longer.
  await advance(10_000);
  assert.equal(a.calls, 2);
  endpoint.close();
});

test('one check per credential and interval, whatever its number of streams; another credential is checked apart; gone streams, no checks', async () => {
  const a = new Credential(1_000);
  const b = new Credential(500);
  const { endpoint, advance } = setup({ a, b });
  const a1 = await listen(endpoint, 1, 'a');
  const a2 = await listen(endpoint, 2, 'a');
  const b1 = await listen(endpoint, 3, 'b');
  await advance(3_000);
  assert.equal(a.calls, 3);
  assert.equal(b.calls, 6);
  b.active$ = false;
  await advance(3_500);
  assert.equal(b1.ended(), true);
  assert.deepEqual(b1.frames.slice(-2), closing(3, 'revoked'));
  assert.equal(a1.ended() || a2.ended(), false);
  // The streams of `a` close for another reason: its checks stop.
  await endpoint.closeStream('listen-0', 'shutdown');
  await endpoint.closeStream('listen-1', 'shutdown');
  const calls = a.calls;
  await advance(20_000);
  assert.equal(a.calls, calls);
  assert.equal(b.calls, 7);
  endpoint.close();
});

test('a check that fails keeps the streams (reported on channels.error) and is asked again at the next interval', async () => {
  const a = new Credential(1_000);
  const { endpoint, advance } = setup({ a });
  const errors: ErrorEvent[] = [];
  const onError = (message: unknown) => errors.push(message as ErrorEvent);
  channels.error.subscribe(onError);
  try {
    const stream = await listen(endpoint, 1, 'a');
    a.fail = true;
    await advance(2_000);
    assert.equal(a.calls, 2);
    assert.equal(stream.ended(), false);
    assert.deepEqual(errors.map((e) => [e.where, (e.error as Error).message]), [['endpoint', 'the authorization server did not answer'], ['endpoint', 'the authorization server did not answer']]);
    a.fail = false;
    a.active$ = false;
    await advance(3_000);
    assert.equal(stream.ended(), true);
  } finally {
    channels.error.unsubscribe(onError);
    endpoint.close();
  }
});

test('a legacy GET stream: inactive, its session ends as a revoke ends it (the stream ends, the id answers 404)', async () => {
  const a = new Credential(1_000);
  const { endpoint, advance } = setup({ a });
  const request = (method: string, headers: Record<string, string>, body?: string): EndpointRequest => ({ method, header: (h) => headers[h], remoteAddress: '127.0.0.1', body });
  const init = await endpoint.handle(request('POST', { ...INIT_HEADERS }, rpcBody(1, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } })));
  const sessionId = init.headers['Mcp-Session-Id']!;
  const inSession = { ...INIT_HEADERS, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' };
  const stream = subscribe(await endpoint.handle(request('GET', inSession)));
  await advance(1_000);
  assert.equal(stream.ended(), false);
  a.active$ = false;
  await advance(2_000);
  await nextTurn();
  assert.equal(stream.ended(), true);
  const after = await endpoint.handle(request('POST', inSession, rpcBody(2, 'resources/subscribe', { uri: 'file:///a' })));
  assert.equal(after.status, 404);
  assert.equal(endpoint.stats.sessions, 0);
  endpoint.close();
});

test('a listen over a message channel (the credential of the channel): the same closing frames on the channel', async () => {
  const a = new Credential(1_000);
  const { endpoint, advance } = setup({ a });
  const [client, server] = channelPair();
  const peer = new Peer(client);
  const session = serveChannel(endpoint, server, { auth: { principal: 'sub:a', scopes: new Set(), recheck: a } });
  peer.send({ jsonrpc: '2.0', id: 5, method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true } } });
  await peer.next((message) => message.method === 'notifications/subscriptions/acknowledged', 'the ack');
  a.active$ = false;
  await advance(1_000);
  const result = await peer.next((message) => message.id === 5 && message.result !== undefined, 'the listen result');
  assert.deepEqual(result, { jsonrpc: '2.0', id: 5, result: { resultType: 'complete', _meta: { 'io.modelcontextprotocol/subscriptionId': 5 } } });
  assert.ok(peer.received.some((message) => message.method === 'notifications/cancelled' && message.params.reason === 'revoked'));
  session.close();
  endpoint.close();
});

test.run();
