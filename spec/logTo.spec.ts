// logTo(logger) (issue 25, part 1): the library's diagnostics channels as log lines on a pino-shaped
// logger, one class of line per event, never a URI, id, token or principal; a throwing logger loses
// its line and nothing else.
import { strict as assert } from 'node:assert';
import { BehaviorSubject } from 'rxjs';
import { test } from 'uvu';
import { McpEndpoint } from '../adapters/http/endpoint.js';
import { logTo, type Logger } from '../adapters/logTo.js';
import { redisChannels } from '../adapters/redis/telemetry.js';
import type { EndpointRequest } from '../lib/context.js';
import { InvalidOptionError } from '../lib/errors.js';
import { Hub } from '../lib/hub.js';
import { hubResources } from '../lib/resources.js';
import { eventually, LISTEN_HEADERS, listenBody, post, SseConnection, withEndpoint } from './helpers/http.js';
import { GetStream, initialize, send, sessionHeaders } from './helpers/legacy.js';

type Line = [level: keyof Logger, fields: Record<string, unknown>, message: string];

function recorder(): { logger: Logger; lines: Line[] } {
  const lines: Line[] = [];
  const at = (level: keyof Logger) => (fields: object, message: string) => void lines.push([level, fields as Record<string, unknown>, message]);
  return { lines, logger: { error: at('error'), warn: at('warn'), info: at('info'), debug: at('debug') } };
}

const byHeader = (request: EndpointRequest) => ({ principal: `user:${request.header('x-principal') ?? 'anon'}`, scopes: new Set<string>() });
const events = (lines: Line[]) => lines.map(([level, fields]) => `${level} ${String(fields.event)}`);

test('streams of both eras opened and closed, sessions created and ended: info lines with era, reason, duration and counts only', async () => {
  const { logger, lines } = recorder();
  const stop = logTo(logger);
  try {
    await withEndpoint({ authenticate: byHeader }, async ({ url, endpoint }) => {
      const headers = { ...LISTEN_HEADERS, 'x-principal': 'secret-principal' };
      const listen = await SseConnection.open(url, listenBody(42, { toolsListChanged: true, resourceSubscriptions: ['file:///secret-uri'] }), headers);
      await listen.until((c) => c.messages.length === 1);
      await endpoint.revoke('user:secret-principal');
      await listen.until((c) => c.ended);
      const session = await initialize(url, { headers: { 'x-principal': 'secret-principal' } });
      const get = GetStream.open(url, session.sessionId, { headers: { 'x-principal': 'secret-principal' } });
      await get.response;
      await send(url, 'DELETE', sessionHeaders(session.sessionId, { 'x-principal': 'secret-principal' }));
      await get.until((g) => g.ended);
      await eventually(() => lines.length === 6, 3000, 'six lines');
      assert.deepEqual(events(lines), ['info stream_opened', 'info stream_closed', 'info session_created', 'info stream_opened', 'info stream_closed', 'info session_ended']);
      const [opened, closed, created, , legacyClosed, ended] = lines;
      assert.deepEqual(opened![1], { event: 'stream_opened', era: 'modern', filters: ['tools_list_changed', 'resource_subscriptions'], resourceSubscriptions: 1 });
      assert.equal(opened![2], 'stream opened');
      assert.deepEqual({ ...closed![1], durationMs: 0 }, { event: 'stream_closed', era: 'modern', reason: 'revoked', durationMs: 0, filters: ['tools_list_changed', 'resource_subscriptions'] });
      assert.ok(typeof closed![1].durationMs === 'number' && closed![1].durationMs >= 0);
      assert.equal(closed![2], 'stream closed: revoked');
      assert.deepEqual(created![1], { event: 'session_created', protocolVersion: '2025-11-25' });
      assert.deepEqual([legacyClosed![1].era, legacyClosed![1].reason], ['legacy', 'session_ended']);
      assert.deepEqual(ended![1], { event: 'session_ended', protocolVersion: '2025-11-25', reason: 'deleted' });
      const text = JSON.stringify(lines);
      assert.ok(!text.includes('secret') && !text.includes(session.sessionId) && !text.includes('42'), text);
    });
  } finally {
    stop();
  }
});

test('an authenticate hook that throws is an error line with the error; a failing provider a warn line', async () => {
  const { logger, lines } = recorder();
  const stop = logTo(logger);
  try {
    const failure = new Error('the token service is down');
    await withEndpoint({ authenticate: () => Promise.reject(failure) }, async ({ url }) => {
      const answer = await post(url, listenBody(1, { toolsListChanged: true }));
      assert.equal(answer.status, 200);
      assert.match(answer.body, /-32603/);
    });
    const hub = new Hub();
    const broken = { ...hubResources(hub), subscribable: () => { throw new Error('provider broke'); } };
    await withEndpoint({ hub, resourceProviders: [broken] }, async ({ url }) => {
      const conn = await SseConnection.open(url, listenBody(2, { resourceSubscriptions: ['file:///x'] }));
      await conn.until((c) => c.messages.length === 1);
      conn.destroy();
    });
    const errors = lines.filter(([, fields]) => fields.event === 'error');
    assert.deepEqual(errors.map(([level, fields]) => [level, fields.where]), [['error', 'endpoint'], ['warn', 'source']]);
    assert.equal(errors[0]![1].err, failure);
    assert.match(errors[0]![2], /authenticate/);
    assert.equal((errors[1]![1].err as Error).message, 'provider broke');
  } finally {
    stop();
  }
});

test('dropped notifications: a debug line each, and a warn line at most once per interval with the count since the last', async () => {
  const { logger, lines } = recorder();
  const stop = logTo(logger, { dropWarningInterval: 60_000 });
  const endpoint = new McpEndpoint({ hub: new Hub(), capabilities: { resources: true }, maxStreamQueue: 1 });
  try {
    const request: EndpointRequest = {
      method: 'POST',
      header: (name) => ({ 'content-type': 'application/json', accept: 'text/event-stream' } as Record<string, string>)[name],
      body: listenBody(1, { resourceSubscriptions: ['file:///a', 'file:///b', 'file:///c', 'file:///d'] }),
      remoteAddress: '127.0.0.1',
    };
    const response = await endpoint.handle(request);
    if (response.kind !== 'stream') throw new Error('no stream');
    // A stream closed while its client is not reading errors (StalledStreamError): the adapter would drop the connection.
    response.open(new BehaviorSubject(false)).subscribe({ error: () => undefined });
    for (const uri of ['file:///a', 'file:///b', 'file:///c', 'file:///d']) {
      endpoint.hub.notifyResourceUpdated(uri);
      await new Promise((resolve) => setImmediate(resolve));
    }
    const drops = lines.filter(([, fields]) => String(fields.event).startsWith('notification'));
    assert.deepEqual(events(drops), ['debug notification_dropped', 'warn notifications_dropped', 'debug notification_dropped', 'debug notification_dropped']);
    assert.deepEqual(drops[1]![1], { event: 'notifications_dropped', dropped: 1, topic: 'resource', queueLength: 1, queueBytes: drops[1]![1].queueBytes });
  } finally {
    stop();
    endpoint.close();
  }
});

test('Redis: resyncs and unrelayed events are warn lines, connection changes debug lines', () => {
  const { logger, lines } = recorder();
  const stop = logTo(logger);
  try {
    redisChannels.resync.publish({ reason: 'epoch', resyncs: 1 });
    redisChannels.unrelayed.publish({ topic: 'tools', reason: 'overflow', unrelayed: 3 });
    redisChannels.connection.publish({ component: 'bus', role: 'reader', status: 'lost' });
    assert.deepEqual(events(lines), ['warn redis_resync', 'warn redis_unrelayed', 'debug redis_connection']);
    assert.match(lines[0]![2], /^resynced \(epoch\): /);
  } finally {
    stop();
  }
});

test('a logger that throws loses its line, nothing else; the returned function stops logging; a logger without the four methods is refused', async () => {
  let calls = 0;
  const throwing: Logger = {
    error: () => void calls++,
    warn: () => void calls++,
    debug: () => void calls++,
    info: () => {
      calls++;
      throw new Error('disk full');
    },
  };
  const uncaught: unknown[] = [];
  const onUncaught = (error: unknown) => uncaught.push(error);
  process.on('uncaughtException', onUncaught);
  const stop = logTo(throwing);
  try {
    await withEndpoint({}, async ({ url }) => {
      const conn = await SseConnection.open(url, listenBody(1, { toolsListChanged: true }));
      await conn.until((c) => c.messages.length === 1);
      conn.destroy();
      await eventually(() => calls === 2, 3000, 'both lines');
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.deepEqual(uncaught, []);
    stop();
    stop();
    redisChannels.resync.publish({ reason: 'epoch', resyncs: 1 });
    assert.equal(calls, 2);
  } finally {
    process.off('uncaughtException', onUncaught);
    stop();
  }
  assert.throws(() => logTo({ info() {} } as never), InvalidOptionError);
  assert.throws(() => logTo(undefined as never), InvalidOptionError);
  assert.throws(() => logTo(throwing, { dropWarningInterval: -1 }), /dropWarningInterval must be a non-negative integer/);
});

test.run();
