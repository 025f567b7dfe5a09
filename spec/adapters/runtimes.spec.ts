import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { suite } from 'uvu';
import { runtimeBinary, startRuntimeServer, type Runtime, type RuntimeServer } from '../fixtures/servers/launch.mjs';
import { ArrivingText, LISTEN_HEADERS, listenBody } from '../helpers/http.js';
import { call, frameText, GetStream, initialize, listChangedMessage, primingText, send, updatedMessage } from '../helpers/legacy.js';

// webHandler where the README says it runs: Bun (Bun.serve({ fetch })) and Deno (Deno.serve), each
// serving a bare McpEndpoint from the COMPILED library in dist/ in its own child process
// (spec/fixtures/servers/<runtime>-server.mjs; the binaries are the devDependencies
// @oven/bun-linux-x64 and @deno/linux-x64-glibc). Driven from here over loopback, bodies compared
// byte for byte. A runtime whose binary is missing fails here with the reason, it is not skipped.

const SUB_ID = 'io.modelcontextprotocol/subscriptionId';
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PROBE = path.join(ROOT, 'spec/fixtures/servers/node-handler-probe.mjs');
const frame = (message: unknown) => `event: message\ndata: ${JSON.stringify(message)}\n\n`;
const ack = (id: unknown, notifications: unknown) =>
  frame({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications, _meta: { [SUB_ID]: id } } });
const tagged = (id: unknown, method: string, params: Record<string, unknown> = {}) => frame({ jsonrpc: '2.0', method, params: { ...params, _meta: { [SUB_ID]: id } } });
const closing = (id: unknown, reason: string) =>
  tagged(id, 'notifications/cancelled', { requestId: id, reason }) + frame({ jsonrpc: '2.0', id, result: { resultType: 'complete', _meta: { [SUB_ID]: id } } });

/** A listen response read as text, exactly as it arrives, from a chosen local address. */
class Listen extends ArrivingText {
  private constructor(
    readonly req: http.ClientRequest,
    readonly res: http.IncomingMessage,
  ) {
    super();
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      this.text += chunk;
      this.wake();
    });
    const end = () => {
      this.ended = true;
      this.wake();
    };
    res.on('end', end);
    res.on('close', end);
    res.on('error', end);
  }

  static open(url: string, body: string, localAddress = '127.0.0.1'): Promise<Listen> {
    return new Promise((resolve, reject) => {
      const req = http.request(url, { method: 'POST', headers: { ...LISTEN_HEADERS }, agent: false, localAddress }, (res) => resolve(new Listen(req, res)));
      req.on('error', reject);
      req.end(body);
    });
  }

  /** Cuts the connection abruptly (no FIN handshake from the client's side first). */
  destroy(): void {
    this.req.destroy();
    this.res.destroy();
  }
}

async function statsUntil(server: RuntimeServer, predicate: (stats: Record<string, number>) => boolean, what: string, ms = 5000): Promise<Record<string, number>> {
  const deadline = Date.now() + ms;
  for (;;) {
    const stats = await server.control('stats');
    if (predicate(stats)) return stats;
    if (Date.now() > deadline) throw new Error(`${server.runtime}: timed out waiting for ${what}; stats ${JSON.stringify(stats)}\nstderr:\n${server.stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

for (const runtime of ['bun', 'deno'] as const satisfies readonly Runtime[]) {
  const test = suite(runtime);
  // Started by the first test that needs it (not in a before hook, whose failure uvu does not
  // print): a missing binary or a fixture that cannot start fails every test with the reason.
  let starting: Promise<RuntimeServer> | undefined;
  // One listen per principal, so a second listen from the same address is a server-side close
  // (supersede) of the first; a client on 127.0.0.2 is another principal.
  const started = () => (starting ??= startRuntimeServer(runtime, { maxListensPerPrincipal: 1, sessionGracePeriod: 10_000 }));

  test.after(async () => {
    await starting?.then((server) => server.stop(), () => {});
  });

  test(`${runtime}: a listen gets its ack and notifications byte for byte, is superseded with the closing frames, and a cut client releases its slot`, async () => {
    const server = await started();
    const a = await Listen.open(server.url, listenBody(1, { toolsListChanged: true, resourceSubscriptions: ['file:///a'] }));
    assert.equal(a.res.statusCode, 200);
    assert.equal(a.res.headers['content-type'], 'text/event-stream');
    assert.equal(a.res.headers['cache-control'], 'no-cache, no-transform');
    assert.equal(a.res.headers['x-accel-buffering'], 'no');
    const ackA = ack(1, { toolsListChanged: true, resourceSubscriptions: ['file:///a'] });
    await a.until((s) => s.text.length >= ackA.length, 5000, 'the ack');
    assert.equal(a.text, ackA);

    await server.control('updated', { uri: ['file:///a', 'file:///not-asked'] });
    await server.control('tools');
    const notified = ackA + tagged(1, 'notifications/resources/updated', { uri: 'file:///a' }) + tagged(1, 'notifications/tools/list_changed');
    await a.until((s) => s.text.length >= notified.length, 5000, 'two notifications');
    assert.equal(a.text, notified);
    assert.deepEqual(await server.control('stats'), { streams: 1, slots: 1, principals: 1, sessions: 0, sessionSubscriptions: 0 });

    // Another address is another principal: its listen leaves A alone.
    const c = await Listen.open(server.url, listenBody('c', { toolsListChanged: true }), '127.0.0.2');
    await c.until((s) => s.text === ack('c', { toolsListChanged: true }), 5000, "127.0.0.2's ack");
    assert.deepEqual(await server.control('stats'), { streams: 2, slots: 2, principals: 2, sessions: 0, sessionSubscriptions: 0 });

    // The same address again: over its cap of 1, A is closed server-side (M7/M8) and ends.
    const b = await Listen.open(server.url, listenBody('b', { toolsListChanged: true }));
    await b.until((s) => s.text === ack('b', { toolsListChanged: true }), 5000, "B's ack");
    await a.until((s) => s.ended, 5000, 'A to end');
    assert.equal(a.text, notified + closing(1, 'superseded'));
    assert.equal(c.text, ack('c', { toolsListChanged: true }), "127.0.0.2's stream was not touched");
    await statsUntil(server, (s) => s.streams === 2 && s.slots === 2, "A's slot released");

    // Client disconnects: nothing is sent, the slots come back.
    b.destroy();
    await statsUntil(server, (s) => s.streams === 1 && s.slots === 1 && s.principals === 1, "B's cut to release its slot");
    await server.control('tools');
    await c.until((s) => s.text.endsWith(tagged('c', 'notifications/tools/list_changed')), 5000, "C's notification after B left");
    c.destroy();
    await statsUntil(server, (s) => s.streams === 0 && s.slots === 0 && s.principals === 0, "C's cut to release its slot");
    // A client that goes away is not an error: the body is closed, not errored (Deno logs a body that errors).
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.doesNotMatch(server.stderr, /AbortError|cancelled/, `${runtime} logged a client disconnect`);
  });

  test(`${runtime}: a legacy session: priming, subscribe, ids, a cut, Last-Event-ID replay then live frames, DELETE`, async () => {
    const server = await started();
    const init = await initialize(server.url);
    assert.equal(init.status, 200);
    assert.match(init.sessionId, /^[0-9a-f-]{16,}$/i);
    assert.equal(init.json.result.capabilities.resources.subscribe, true);
    const sid = init.sessionId;

    const first = GetStream.open(server.url, sid);
    const head = await first.response;
    assert.equal(head.statusCode, 200);
    assert.equal(head.headers['content-type'], 'text/event-stream');
    await first.until((s) => s.text === primingText(0), 5000, 'the priming event');
    const subscribed = await call(server.url, sid, 2, 'resources/subscribe', { uri: 'file:///a' });
    assert.equal(subscribed.body, JSON.stringify({ jsonrpc: '2.0', id: 2, result: {} }));

    for (let i = 0; i < 2; i++) await server.control('updated', { uri: 'file:///a' });
    await server.control('tools');
    await first.untilId(3, 5000);
    assert.equal(
      first.text,
      primingText(0) + frameText(1, updatedMessage('file:///a')) + frameText(2, updatedMessage('file:///a')) + frameText(3, listChangedMessage('tools')),
    );

    // A cut: the server notices, the session's subscriptions keep feeding its replay buffer.
    first.destroy();
    await statsUntil(server, (s) => s.streams === 0 && s.slots === 0, 'the cut to be noticed');
    await server.control('updated', { uri: 'file:///a' });

    const second = GetStream.open(server.url, sid, { lastEventId: '2' });
    await second.untilId(4, 5000);
    await server.control('updated', { uri: 'file:///a' });
    await second.untilId(5, 5000);
    assert.equal(
      second.text,
      primingText(2) + frameText(3, listChangedMessage('tools')) + frameText(4, updatedMessage('file:///a')) + frameText(5, updatedMessage('file:///a')),
      'replayed frames with their original ids, then live ones: no gap, no duplicate',
    );

    const deleted = await send(server.url, 'DELETE', { 'mcp-session-id': sid });
    assert.equal(deleted.status, 204);
    await second.untilEnded(5000);
    assert.ok(second.endedCleanly, 'DELETE ends the GET stream cleanly');
    await statsUntil(server, (s) => s.sessions === 0 && s.streams === 0 && s.sessionSubscriptions === 0, 'the session to be released');
  });

  test(`${runtime}: nodeHandler on its node:http writes the same bytes (its socket is not the wire: every frame through res.write)`, () => {
    const args = runtime === 'bun' ? [PROBE] : ['run', '--quiet', '--no-lock', '--allow-net=127.0.0.1', '--allow-read', '--allow-env', '--allow-sys', PROBE];
    const run = spawnSync(runtimeBinary(runtime), args, { cwd: ROOT, encoding: 'utf8', timeout: 30_000, env: { ...process.env, DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' } });
    assert.equal(run.status, 0, run.stderr);
    assert.equal(JSON.parse(run.stdout), ack(7, { toolsListChanged: true }) + tagged(7, 'notifications/tools/list_changed') + closing(7, 'shutdown'));
  });

  test.run();
}
