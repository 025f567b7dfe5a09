// A fleet of two nodes on a highly available Redis (a Sentinel-managed primary, a Redis Cluster)
// and the failover both HA specs put it through: every Redis part of the library on each node
// (RedisBus, RedisPrincipalCap, RedisLease, RedisSessionStore, redisEventLogs, RedisSessionBus)
// under a real McpEndpoint on loopback, listen streams and a legacy session read as they arrive,
// changes published on both nodes every 20 ms while the primary is SIGKILLed.
import { strict as assert } from 'node:assert';
import type { IncomingMessage } from 'node:http';
import { RedisBus } from '../../adapters/redis/bus.js';
import type { RedisTarget } from '../../adapters/redis/connection.js';
import { redisEventLogs, type RedisEventLogs } from '../../adapters/redis/eventLog.js';
import { RedisLease } from '../../adapters/redis/lease.js';
import { RedisPrincipalCap } from '../../adapters/redis/principals.js';
import { RedisSessionBus } from '../../adapters/redis/sessionBus.js';
import { RedisSessionStore } from '../../adapters/redis/sessionStore.js';
import type { EndpointRequest } from '../../lib/context.js';
import { Hub } from '../../lib/hub.js';
import { channels } from '../../lib/telemetry.js';
import { eventually, LISTEN_HEADERS, listenBody, SseConnection, startEndpoint, type TestServer } from './http.js';
import { call, GetStream, initialize, sleep } from './legacy.js';

/** One node: an endpoint on loopback and every Redis part it runs on. */
export interface HaNode {
  readonly nodeId: string;
  readonly server: TestServer;
  readonly bus: RedisBus;
  readonly principals: RedisPrincipalCap;
  readonly lease: RedisLease;
  readonly sessionStore: RedisSessionStore;
  readonly eventLog: RedisEventLogs;
  readonly sessionBus: RedisSessionBus;
  close(): Promise<void>;
}

/** Live listens per principal across the fleet in these specs. */
export const CAP = 3;
const byHeader = (request: EndpointRequest) => ({ principal: request.header('x-principal') ?? 'anon', scopes: new Set<string>() });

/**
 * Starts node `nodeId` on `redis`, its keys and channels under `prefix`. The parts keep their
 * defaults (reconnection backoff, timeouts, the cap's 10 s heartbeat) except the bus's
 * `checkInterval` (200 ms), so that the numbers the specs measure are those of a default setup.
 */
export async function startHaNode(nodeId: string, redis: RedisTarget, prefix: string): Promise<HaNode> {
  const bus = new RedisBus({ redis, nodeId, channel: `${prefix}:hub`, checkInterval: 200 });
  const principals = new RedisPrincipalCap({ redis, nodeId, prefix: `${prefix}:cap`, maxPerPrincipal: CAP });
  const lease = new RedisLease({ redis, nodeId, key: `${prefix}:lease`, ttl: 3000 });
  const sessionStore = new RedisSessionStore({ redis, prefix: `${prefix}:session` });
  const eventLog = redisEventLogs({ redis, prefix: `${prefix}:session` });
  const sessionBus = new RedisSessionBus({ redis, nodeId, channel: `${prefix}:sessions` });
  const closeParts = () => Promise.all([bus.close(), principals.close(), lease.close(), sessionStore.close(), eventLog.close(), sessionBus.close()]);
  try {
    await Promise.all([bus.ready(), sessionStore.ready(), eventLog.ready(), sessionBus.ready()]);
  } catch (error) {
    await closeParts();
    throw error;
  }
  const server = await startEndpoint({ hub: new Hub({ bus }), principals, sessionStore, eventLog, sessionBus, authenticate: byHeader, subscribeStreamWait: 0 });
  return {
    nodeId,
    server,
    bus,
    principals,
    lease,
    sessionStore,
    eventLog,
    sessionBus,
    close: async () => {
      await server.close();
      server.hub.close();
      await closeParts();
    },
  };
}

/** What arrives on a response, frame by frame, with the time each frame arrived. */
export class Arrivals {
  readonly frames: { readonly at: number; readonly text: string }[] = [];
  #pending = '';

  constructor(res: IncomingMessage) {
    res.on('data', (chunk: string) => {
      const at = Date.now();
      this.#pending += chunk;
      let end: number;
      while ((end = this.#pending.indexOf('\n\n')) >= 0) {
        this.frames.push({ at, text: this.#pending.slice(0, end) });
        this.#pending = this.#pending.slice(end + 2);
      }
    });
  }

  /** The URIs of the `resources/updated` frames, in arrival order, with their times. */
  updates(): { readonly at: number; readonly uri: string }[] {
    return this.frames.flatMap(({ at, text }) => {
      const uri = /"method":"notifications\/resources\/updated","params":\{"uri":"([^"]+)"/.exec(text)?.[1];
      return uri === undefined ? [] : [{ at, uri }];
    });
  }

  /** The ids of the legacy frames (`id: N` lines of `event: message` frames), in arrival order. */
  ids(): number[] {
    return this.frames.flatMap(({ text }) => {
      const id = /^event: message\nid: (\d+)$/m.exec(text)?.[1];
      return id === undefined ? [] : [Number(id)];
    });
  }
}

/** How a failover went, as measured by {@link failoverScenario}. */
export interface FailoverReport {
  /** Changes published in all (one URI each, half on each node). */
  readonly published: number;
  /** Changes published between the kill and the moment the new primary was named. */
  readonly publishedDuringFailover: number;
  /** Milliseconds from the SIGKILL to the new primary being named (Sentinels) or serving the slot (Cluster). */
  readonly failoverMs: number;
  /**
   * Per listen stream, for the changes published on the other node (those that cross Redis): the
   * longest time without one arriving, and the longest delay between a publish and its arrival, in
   * milliseconds. (A node's own changes reach its streams at once, Redis or not.)
   */
  readonly longestSilenceMs: readonly number[];
  readonly longestDelayMs: readonly number[];
  /** Per listen stream: frames of a change heard a second time (0: exactly once). */
  readonly duplicates: readonly number[];
  /** Legacy session: its frames (one per change) written live, and the changes that got none (their append failed while Redis changed hands). */
  readonly legacyFrames: number;
  readonly legacyMissed: number;
  /** The bus counters of both nodes. */
  readonly queued: number;
  readonly busDuplicates: number;
  readonly resyncs: number;
  /** Errors reported on channels.error meanwhile (`source`: the session's failed appends, a record not updated). */
  readonly reportedErrors: number;
}

const TICK = 20;
const uriOf = (i: number) => `file:///srv/ha/c${i}.txt`;
const LEGACY = 'file:///srv/ha/legacy.txt';
const LATER = 'file:///srv/ha/later.txt';

/**
 * The failover both HA specs run on nodes `a` and `b`:
 * 1. a listen stream on each node (principal `p`, subscribed to the URIs of every change), and a
 *    legacy session initialized on A with its GET stream on A, subscribed to one URI;
 * 2. a change every 20 ms, alternately on A and B: a URI of its own (the listen streams) and the
 *    session's URI (one frame each on the GET stream);
 * 3. after a second, `kill()` SIGKILLs the primary; `failedOver()` resolves once a replica has
 *    taken over; the changes go on for 1.5 s more;
 * then checks: every listen stream hears every change exactly once, neither bus resyncs; the
 * session's ids are consecutive, a subscribe POSTed on B reaches its GET on A through the session
 * bus, and a reconnect on B with Last-Event-ID replays the rest of the log and carries on with the
 * next id; the fleet-wide cap supersedes the oldest listen across nodes; one node holds the lease.
 */
export async function failoverScenario(
  a: HaNode,
  b: HaNode,
  kill: () => Promise<void>,
  failedOver: () => Promise<void>,
  /** What Redis holds of the principal's cap (its set with scores, its heartbeats), for a failing step's report. */
  inspect: (principal: string) => Promise<unknown> = async () => 'not inspected',
): Promise<FailoverReport> {
  const uris = Array.from({ length: 1000 }, (_, i) => uriOf(i + 1)); // a listen takes at most 1000 URIs
  const listen = async (node: HaNode, id: number, subscriptions: readonly string[]) => {
    const conn = await SseConnection.open(node.server.url, listenBody(id, { resourceSubscriptions: subscriptions }), { ...LISTEN_HEADERS, 'x-principal': 'p' });
    const arrivals = new Arrivals(conn.res);
    await conn.until((c) => c.text.includes('acknowledged'), 5000, `the ack of listen ${id}`);
    return { conn, arrivals };
  };
  const streams = [await listen(a, 1, uris), await listen(b, 2, uris)];

  const { sessionId } = await initialize(a.server.url);
  let get = GetStream.open(a.server.url, sessionId);
  const legacy = new Arrivals(await get.response);
  await eventually(() => a.server.endpoint.stats.streams === 2, 5000, 'the GET stream on A');
  assert.equal((await call(a.server.url, sessionId, 2, 'resources/subscribe', { uri: LEGACY })).status, 200);

  let reportedErrors = 0;
  const onError = () => void reportedErrors++;
  channels.error.subscribe(onError);

  let published = 0;
  let killedAt = 0;
  let failedOverAt = 0;
  let publishedAtKill = 0;
  let publishedAtFailover = 0;
  // Change i (from 1) is published on A when i is odd, on B when it is even, at publishedAt[i].
  const publishedAt: number[] = [];
  const ticker = setInterval(() => {
    const hub = (published % 2 === 0 ? a : b).server.hub;
    published++;
    publishedAt[published] = Date.now();
    hub.notifyResourceUpdated(uriOf(published));
    hub.notifyResourceUpdated(LEGACY);
  }, TICK);
  try {
    await sleep(1000);
    publishedAtKill = published;
    killedAt = Date.now();
    await kill();
    await failedOver();
    failedOverAt = Date.now();
    publishedAtFailover = published;
    await sleep(1500);
  } finally {
    clearInterval(ticker);
  }
  assert.ok(published < uris.length, `published ${published} changes: more than the ${uris.length} URIs listened to`);
  const heard = (i: number) => streams[i]!.arrivals.updates().length;
  try {
    await eventually(() => heard(0) >= published && heard(1) >= published, 15_000, `every stream to hear the ${published} changes`);
  } catch (error) {
    const missing = streams.map(({ arrivals }) => {
      const got = new Set(arrivals.updates().map((update) => update.uri));
      return uris.slice(0, published).filter((uri) => !got.has(uri)).map((uri) => /c(\d+)/.exec(uri)![1]);
    });
    throw new Error(`${(error as Error).message}; missing on A: ${missing[0]!.join(' ')}; on B: ${missing[1]!.join(' ')} (killed after ${publishedAtKill}, failed over after ${publishedAtFailover}); bus stats ${JSON.stringify([a.bus.stats, b.bus.stats])}`);
  }
  await sleep(300);
  channels.error.unsubscribe(onError);

  const report = {
    published,
    publishedDuringFailover: publishedAtFailover - publishedAtKill,
    failoverMs: failedOverAt - killedAt,
    longestSilenceMs: streams.map(({ arrivals }, node) => longestSilence(remote(arrivals, node).map(({ at }) => at))),
    longestDelayMs: streams.map(({ arrivals }, node) => Math.max(...remote(arrivals, node).map(({ at, i }) => at - publishedAt[i]!))),
    duplicates: streams.map(({ arrivals }) => arrivals.updates().length - new Set(arrivals.updates().map((update) => update.uri)).size),
    legacyFrames: legacy.ids().length,
    legacyMissed: published - legacy.ids().length,
    queued: a.bus.stats.queued + b.bus.stats.queued,
    busDuplicates: a.bus.stats.duplicates + b.bus.stats.duplicates,
    resyncs: a.bus.stats.resyncs + b.bus.stats.resyncs,
    reportedErrors,
  };

  // Every change exactly once on every stream, in the order each node published them.
  for (const [i, { arrivals }] of streams.entries()) {
    const got = arrivals.updates().map((update) => update.uri);
    assert.deepEqual(new Set(got), new Set(uris.slice(0, published)), `stream ${i + 1} heard every change`);
  }
  assert.deepEqual(report.duplicates, [0, 0], 'no change twice: a resent append is skipped by its seq');
  assert.equal(report.resyncs, 0, 'no resync: the stream the buses read survived the failover');

  // The session: consecutive ids on its GET stream, whatever the failover cost it.
  const live = legacy.ids();
  assert.ok(live.length > 0, 'the GET stream heard the changes before the kill');
  assert.deepEqual(live, live.map((_, i) => live[0]! + i), `consecutive ids on the GET stream: ${live.join(' ')}`);
  if (report.legacyMissed > 0) assert.ok(report.reportedErrors > 0, 'the appends that failed were reported on channels.error');

  // Each step after the failover says, when it fails, where the fleet stood.
  const errors: string[] = [];
  const onStepError = (event: unknown) => errors.push(String(((event as { error?: Error }).error)?.stack ?? (event as { error?: unknown }).error));
  channels.error.subscribe(onStepError);
  const step = async <T>(what: string, work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      const state = (node: HaNode) => ({ endpoint: node.server.endpoint.stats, bus: node.bus.stats, cap: node.principals.stats, sessionBus: node.sessionBus.stats, lease: node.lease.held });
      const redis = await inspect('p').catch((failure: unknown) => `could not inspect: ${String(failure)}`);
      throw new Error(`${what}: ${(error as Error).message.slice(0, 2000)}\nA: ${JSON.stringify(state(a))}\nB: ${JSON.stringify(state(b))}\ncap in Redis: ${JSON.stringify(redis)}\nGET (status ${get.res?.statusCode}, ended ${get.ended}): ${JSON.stringify(get.text.slice(-600))}\nerrors: ${errors.slice(-5).join(' | ')}`);
    }
  };

  // After the failover: a subscribe POSTed on B reaches the GET on A (session bus), a change
  // published on B reaches it through the bus, with the next id.
  const last = live.at(-1)!;
  await step('a subscribe POSTed on B, heard on A', async () => {
    const subscriptions = a.server.endpoint.stats.sessionSubscriptions;
    assert.deepEqual((await call(b.server.url, sessionId, 3, 'resources/subscribe', { uri: LATER })).json, { jsonrpc: '2.0', id: 3, result: {} });
    await eventually(() => a.server.endpoint.stats.sessionSubscriptions === subscriptions + 1, 5000, 'the subscribe POSTed on B to reach the GET stream on A');
    b.server.hub.notifyResourceUpdated(LATER);
    await get.untilId(last + 1, 5000);
    assert.equal(get.frames.at(-1)!.message.params.uri, LATER);
  });

  // A reconnect on B with an older Last-Event-ID replays the rest of the log from Redis, then
  // carries on live with the next id.
  const from = last - 5;
  await step('a reconnect on B with Last-Event-ID', async () => {
    get.destroy();
    await eventually(() => a.server.endpoint.stats.streams === 1, 5000, 'A to notice the cut');
    get = GetStream.open(b.server.url, sessionId, { lastEventId: String(from) });
    await get.untilId(last + 1, 5000);
    // A lets go of the session's subscriptions when it hears B's claim (before that, a change would be logged twice).
    await eventually(() => a.server.endpoint.stats.sessionSubscriptions === 0 && b.server.endpoint.stats.sessionSubscriptions > 0, 5000, 'the handover to B');
    a.server.hub.notifyResourceUpdated(LATER);
    await get.untilId(last + 2, 5000);
    assert.deepEqual(get.ids, Array.from({ length: last + 2 - from }, (_, i) => from + 1 + i), 'the replay and the live frame after it, gapless');
    get.destroy();
  });

  // The cap, fleet-wide on the new primary: with listens 1 (A) and 2 (B) live, a third on B fits
  // and a fourth supersedes the oldest, on A.
  const [third, fourth] = await step('the cap across nodes', async () => {
    // The count converges after the failover: A's heartbeat records again what the promoted
    // replica had not received (listen 1), then confirms it; only then is listen 1 the oldest the
    // fleet knows (before, a fourth listen would supersede listen 2, the oldest Redis held).
    const confirmed = a.principals.stats.confirmedBeats;
    await eventually(() => a.principals.stats.confirmedBeats > confirmed, 12_000, "A's cap heartbeat to find listen 1 recorded");
    const recorded = b.principals.stats.recorded;
    const third = await listen(b, 3, [LATER]);
    await eventually(() => b.principals.stats.recorded === recorded + 1, 5000, 'the third listen to be recorded');
    const fourth = await listen(b, 4, [LATER]);
    await streams[0]!.conn.until((c) => c.text.includes('"reason":"superseded"'), 5000, 'the oldest listen, on A, to be superseded');
    for (const conn of [streams[1]!.conn, third.conn, fourth.conn]) assert.equal(conn.ended, false);
    return [third, fourth];
  });

  // The lease: exactly one node holds it.
  await step('the lease', () => eventually(() => a.lease.held !== b.lease.held, 8000, 'one node to hold the lease'));
  channels.error.unsubscribe(onStepError);

  for (const { conn } of [...streams, third, fourth]) conn.destroy();
  return report;
}

/** The changes that stream `node` (0: on A, 1: on B) heard from the other node, with their numbers. */
function remote(arrivals: Arrivals, node: number): { readonly at: number; readonly i: number }[] {
  return arrivals
    .updates()
    .map(({ at, uri }) => ({ at, i: Number(/c(\d+)\.txt$/.exec(uri)![1]) }))
    .filter(({ i }) => i % 2 === node);
}

/** The longest interval between two consecutive times, in milliseconds. */
function longestSilence(times: readonly number[]): number {
  let longest = 0;
  for (let i = 1; i < times.length; i++) longest = Math.max(longest, times[i]! - times[i - 1]!);
  return longest;
}
