// Issue "hostile clients", class 3: fairness between principals on every path. GET streams pass
// the per-principal cap (DESIGN M8: the principal's oldest stream of either kind is superseded),
// and a principal holds at most maxSessionsPerPrincipal sessions (its least recently used one is
// ended), so that one client can neither hold every slot nor lock others out of sessions.
import { strict as assert } from 'node:assert';
import { test } from 'uvu';
import type { AuthInfo } from '../lib/auth.js';
import type { EndpointRequest } from '../lib/context.js';
import { channels, type StopEvent } from '../lib/telemetry.js';
import { eventually, LISTEN_HEADERS, listenBody, SseConnection, startEndpoint } from './helpers/http.js';
import { call, GetStream, initialize } from './helpers/legacy.js';
import { collecting } from './helpers/telemetry.js';

/** The principal from `x-principal`. */
const byHeader = (request: EndpointRequest): AuthInfo => ({ principal: `user:${request.header('x-principal') ?? 'anon'}`, scopes: new Set() });
const as = (principal: string) => ({ 'x-principal': principal });

test('M8 for GET streams: a principal over its cap loses its oldest stream of either kind; a GET one ends cleanly; other principals are untouched', async () => {
  await collecting<StopEvent>(channels.stop, async (stops) => {
    const server = await startEndpoint({ authenticate: byHeader, maxListensPerPrincipal: 2 });
    try {
      const other = await SseConnection.open(server.url, listenBody('other', { toolsListChanged: true }), { ...LISTEN_HEADERS, ...as('b') });
      const listen = await SseConnection.open(server.url, listenBody('oldest', { toolsListChanged: true }), { ...LISTEN_HEADERS, ...as('a') });
      await listen.until((c) => c.messages.length === 1);
      const s1 = await initialize(server.url, { headers: as('a') });
      const s2 = await initialize(server.url, { headers: as('a') });
      const get1 = GetStream.open(server.url, s1.sessionId, { headers: as('a') });
      await eventually(() => server.endpoint.stats.streams === 3, 3000, 'the first GET');
      // The third stream of `a`: its oldest (the listen) is superseded with its closing frames.
      const get2 = GetStream.open(server.url, s2.sessionId, { headers: as('a') });
      await listen.until((c) => c.ended, 3000, 'the oldest listen to be superseded');
      assert.equal(listen.messages.at(-2)?.method, 'notifications/cancelled');
      assert.equal(listen.messages.at(-2)?.params.reason, 'superseded');
      assert.ok(stops.some((stop) => stop.reason === 'superseded'));
      // A third session's GET: now the oldest of `a` is get1, which ends cleanly (its client reconnects).
      const s3 = await initialize(server.url, { headers: as('a') });
      await eventually(() => server.endpoint.stats.streams === 3, 3000, 'two GETs of a and the listen of b');
      const get3 = GetStream.open(server.url, s3.sessionId, { headers: as('a') });
      await get1.untilEnded();
      assert.ok(get1.endedCleanly, 'the superseded GET stream ends cleanly');
      await eventually(() => server.endpoint.stats.streams === 3 && server.endpoint.stats.principals === 2, 3000, 'a holds its cap, b its stream');
      assert.equal(server.endpoint.principals.count('user:a'), 2);
      assert.equal(server.endpoint.principals.count('user:b'), 1);
      assert.equal(other.ended, false, 'the other principal is never touched');
      // The superseded session is still there: its next GET (a reconnect) works and supersedes in turn.
      assert.equal((await call(server.url, s1.sessionId, 1, 'ping', undefined, as('a'))).status, 200);
      other.destroy();
      get2.destroy();
      get3.destroy();
      await eventually(() => server.endpoint.stats.slots === 0 && server.endpoint.stats.principals === 0, 3000, 'everything released');
    } finally {
      await server.close();
    }
  });
});

test('one principal holding every slot with GET streams is impossible: another principal still gets its first listen', async () => {
  const server = await startEndpoint({ authenticate: byHeader, maxStreams: 8, maxListensPerPrincipal: 4 });
  try {
    const gets: GetStream[] = [];
    for (let i = 0; i < 8; i++) {
      const s = await initialize(server.url, { headers: as('hog') });
      gets.push(GetStream.open(server.url, s.sessionId, { headers: as('hog') }));
      await eventually(() => server.endpoint.principals.count('user:hog') === Math.min(i + 1, 4), 3000, `GET ${i}`);
    }
    await eventually(() => server.endpoint.stats.slots <= 4, 3000, 'the superseded GET streams to give back their slots');
    const listen = await SseConnection.open(server.url, listenBody(1, { toolsListChanged: true }), { ...LISTEN_HEADERS, ...as('polite') });
    assert.equal(listen.status, 200, 'not 503');
    await listen.until((c) => c.messages.length === 1);
    listen.destroy();
    for (const get of gets) get.destroy();
  } finally {
    await server.close();
  }
});

test('maxSessionsPerPrincipal: beyond it the principal\'s least recently used session ends (GET stream ends cleanly, record gone, 404), never another principal\'s', async () => {
  const server = await startEndpoint({ authenticate: byHeader, maxSessionsPerPrincipal: 3, maxSessions: 10 });
  try {
    const other = await initialize(server.url, { headers: as('b') });
    const mine = [];
    for (let i = 0; i < 3; i++) mine.push((await initialize(server.url, { headers: as('a') })).sessionId);
    const lruStream = GetStream.open(server.url, mine[0]!, { headers: as('a') });
    await eventually(() => server.endpoint.stats.streams === 1, 3000, 'the GET of the first session');
    // Touch the second and third sessions later than the first: the first stays least recently used.
    await call(server.url, mine[1]!, 1, 'ping', undefined, as('a'));
    await call(server.url, mine[2]!, 1, 'ping', undefined, as('a'));
    // Wait: the GET of the first counts as activity when it opened; requests after it are later.
    const fourth = await initialize(server.url, { headers: as('a') });
    assert.equal(fourth.status, 200);
    await lruStream.untilEnded();
    assert.ok(lruStream.endedCleanly, "the ended session's GET stream ends cleanly");
    assert.equal((await call(server.url, mine[0]!, 2, 'ping', undefined, as('a'))).status, 404, 'its record is removed');
    assert.equal((await call(server.url, mine[1]!, 2, 'ping', undefined, as('a'))).status, 200);
    assert.equal((await call(server.url, other.sessionId, 2, 'ping', undefined, as('b'))).status, 200, "another principal's session stays");
    assert.equal(server.endpoint.stats.sessions, 4, 'b, and three of a');
    // A flood from one principal never fills the server-wide cap: b and c can still initialize.
    for (let i = 0; i < 50; i++) assert.equal((await initialize(server.url, { headers: as('flood') })).status, 200);
    assert.equal((await initialize(server.url, { headers: as('c') })).status, 200, 'another principal still gets a session');
    assert.equal(server.endpoint.stats.sessions, 8, 'b, three of a, three of flood, c');
    // maxSessions stays the server-wide guard.
    assert.equal((await initialize(server.url, { headers: as('d') })).status, 200);
    assert.equal((await initialize(server.url, { headers: as('e') })).status, 200);
    assert.equal((await initialize(server.url, { headers: as('f') })).status, 503);
  } finally {
    await server.close();
  }
});

test.run();
