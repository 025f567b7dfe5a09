// Issue "hostile clients", class 3, and "Hostile clients II" item 5: fairness between principals
// on every path. Listens pass the per-principal listen cap (DESIGN M8: the principal's oldest
// listen is superseded); legacy GET streams are one per session and bounded by the principal's
// sessions (maxSessionsPerPrincipal: its least recently used session is ended), never by the
// listen cap, so that many sessions of one principal keep their streams without a reconnect loop
// and one client can neither hold every slot nor lock others out of sessions.
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

test('listens and GET streams are counted apart: GET streams never supersede a listen or another session\'s GET; a listen supersedes only its principal\'s oldest listen', async () => {
  await collecting<StopEvent>(channels.stop, async (stops) => {
    const server = await startEndpoint({ authenticate: byHeader, maxListensPerPrincipal: 2 });
    try {
      const other = await SseConnection.open(server.url, listenBody('other', { toolsListChanged: true }), { ...LISTEN_HEADERS, ...as('b') });
      const oldest = await SseConnection.open(server.url, listenBody('oldest', { toolsListChanged: true }), { ...LISTEN_HEADERS, ...as('a') });
      await oldest.until((c) => c.messages.length === 1);
      // Four sessions of `a`, each with its GET stream: more than its listen cap, and nothing is superseded.
      const gets: GetStream[] = [];
      for (let i = 0; i < 4; i++) {
        const s = await initialize(server.url, { headers: as('a') });
        gets.push(GetStream.open(server.url, s.sessionId, { headers: as('a') }));
      }
      await eventually(() => server.endpoint.stats.streams === 6, 3000, 'two listens and four GET streams');
      assert.equal(oldest.ended, false, 'a GET stream never supersedes a listen');
      assert.ok(gets.every((get) => !get.ended), 'nor another session\'s GET stream');
      assert.equal(server.endpoint.principals.count('user:a'), 1, 'only listens count under the listen cap');
      // Two more listens of `a`: its oldest listen (only) is superseded with its closing frames.
      const second = await SseConnection.open(server.url, listenBody('second', { toolsListChanged: true }), { ...LISTEN_HEADERS, ...as('a') });
      const third = await SseConnection.open(server.url, listenBody('third', { toolsListChanged: true }), { ...LISTEN_HEADERS, ...as('a') });
      await oldest.until((c) => c.ended, 3000, 'the oldest listen to be superseded');
      assert.equal(oldest.messages.at(-2)?.method, 'notifications/cancelled');
      assert.equal(oldest.messages.at(-2)?.params.reason, 'superseded');
      assert.ok(stops.some((stop) => stop.reason === 'superseded'));
      await third.until((c) => c.messages.length === 1);
      assert.equal(second.ended, false);
      assert.ok(gets.every((get) => !get.ended), 'the GET streams are untouched');
      assert.equal(other.ended, false, 'the other principal is never touched');
      assert.equal(server.endpoint.principals.count('user:a'), 2);
      assert.equal(server.endpoint.principals.count('user:b'), 1);
      // Every change reaches every GET stream of `a`.
      server.hub.notifyToolsChanged();
      for (const get of gets) await get.until((g) => g.text.includes('tools/list_changed'), 3000, 'the change on each GET stream');
      for (const connection of [other, second, third]) connection.destroy();
      for (const get of gets) get.destroy();
      await eventually(() => server.endpoint.stats.slots === 0 && server.endpoint.stats.principals === 0, 3000, 'everything released');
    } finally {
      await server.close();
    }
  });
});

test('--max-sessions-per-principal 2 --max-streams 8: a principal that opens ten sessions with GET streams leaves slots for another principal\'s listen', async () => {
  const server = await startEndpoint({ authenticate: byHeader, maxStreams: 8, maxSessionsPerPrincipal: 2 });
  try {
    const gets: GetStream[] = [];
    for (let i = 0; i < 10; i++) {
      const s = await initialize(server.url, { headers: as('hog') });
      gets.push(GetStream.open(server.url, s.sessionId, { headers: as('hog') }));
      await eventually(() => server.endpoint.stats.streams === Math.min(i + 1, 2), 3000, `GET ${i}`);
      assert.ok(server.endpoint.stats.slots <= 2, `GET ${i}: the hog holds at most its two sessions' slots, holds ${server.endpoint.stats.slots}`);
    }
    assert.equal(gets.filter((get) => get.ended).length, 8, 'the least recently used sessions ended with their streams');
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
