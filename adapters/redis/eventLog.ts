import { encodeMessage } from '../../lib/encode.js';
import type { MessageFrame, TopicKind } from '../../lib/frame.js';
import { type EventLog, loggedFrame, stamp } from '../../lib/replayBuffer.js';
import { checkCount, checkMilliseconds, checkName, checkOptions, checkTarget, closeConnection, openConnection, type RedisConnection, type RedisTarget, sentOnce, whenReady } from './connection.js';
import { sessionKeys } from './sessionStore.js';

/** Options of {@link redisEventLogs}. */
export interface RedisEventLogsOptions {
  /** The Redis every node of the fleet shares: a `redis://` URL or ioredis options. Required. */
  readonly redis: RedisTarget;
  /** How many of a session's most recent frames are kept for replay; defaults to 100 (as `replayBufferSize`). */
  readonly capacity?: number;
  /**
   * How long a session's log outlives its last append, in milliseconds; defaults to 1 800 000.
   * Give the same value as the {@link RedisSessionStore}'s `ttl`.
   */
  readonly ttl?: number;
  /** Prefix of the session keys: the same as the fleet's {@link RedisSessionStore}. Defaults to `mcp-rx-streams:session`. */
  readonly prefix?: string;
  /** How long an append or a read may wait for Redis before it fails, in milliseconds; defaults to 2000. */
  readonly commandTimeout?: number;
  /** Longest pause between reconnection attempts, in milliseconds; defaults to 1000. */
  readonly maxReconnectDelay?: number;
}

/** The event logs of a fleet's legacy sessions: call it with a session id (the endpoint's `eventLog` option). */
export interface RedisEventLogs {
  (sessionId: string): EventLog;
  /** Frames kept per session. */
  readonly capacity: number;
  /** Resolves once the connection is up (appends and reads fail before that). */
  ready(): Promise<void>;
  /** Closes the connection (waiting for the replies still due); idempotent. */
  close(): Promise<void>;
}

// Stamps and records one frame in one step, so the ids in the list are in order and gapless.
// KEYS: record hash (holds the counter), log list. ARGV: capacity, ttl, entry without its id.
// The expiry of both keys is raised to ttl, never lowered (the record's own ttl may be longer).
const APPEND = `
local id = redis.call('HINCRBY', KEYS[1], 'lastEventId', 1)
redis.call('RPUSH', KEYS[2], id .. ' ' .. ARGV[3])
redis.call('LTRIM', KEYS[2], -tonumber(ARGV[1]), -1)
local ttl = tonumber(ARGV[2])
for _, key in ipairs(KEYS) do
  if redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, ttl) end
end
return id`;

const DECIMAL = /^[0-9]+$/;

/**
 * Event logs of legacy sessions on Redis (DESIGN L7 across a fleet): per-session, strictly
 * increasing event ids and a replay buffer of the last `capacity` frames that every node reads,
 * so a GET with `Last-Event-ID` served by another node replays exactly what its client missed.
 *
 * An append runs one script: it increments the session's counter (a field of the session's
 * record hash, so ids never restart while the record lives), pushes `<id> <frame>` on the
 * session's list and trims it to `capacity`. The frame is stored as its plain JSON with its
 * topic and coalescing key; a replayed frame is rebuilt from them (`priority: 'notification'`,
 * `encoded.plain` as stored, written byte for byte as it was the first time). `after(n)` reads
 * the list and keeps the ids above `n` (`undefined`/`null` → none, non-numeric → all kept);
 * `newestId()` reads the counter, the id a GET stream primes its client with (DESIGN L7). Both
 * keys expire `ttl` after the last append (and with the record, see {@link RedisSessionStore}).
 *
 * Commands are not queued while Redis is unreachable: an append fails at once (the endpoint
 * reports it on `channels.error`, does not write that frame, and appends the change again later,
 * see docs/fleet.md), and so does a reconnect's read.
 *
 * @example
 * const eventLog = redisEventLogs({ redis: 'redis://10.0.0.5:6379', capacity: 100, ttl: 1_860_000 });
 * await eventLog.ready();
 * const endpoint = new McpEndpoint({ hub, sessionStore, eventLog, sessionBus });
 * // on shutdown, after endpoint.close():
 * await eventLog.close();
 * @param options see {@link RedisEventLogsOptions}.
 * @throws InvalidOptionError naming `redisEventLogs options` when `options` is not an object, else the option
 *   that is unknown, missing (`redis`) or has a value it cannot use (checked before connecting).
 * @returns a function of a session id giving that session's {@link EventLog}.
 * @see RedisSessionStore
 */
export function redisEventLogs(options: RedisEventLogsOptions): RedisEventLogs {
  checkOptions<RedisEventLogsOptions>('redisEventLogs', options, ['capacity', 'ttl', 'prefix', 'commandTimeout', 'maxReconnectDelay']);
  const redis = checkTarget(options.redis);
  const capacity = checkCount('capacity', options.capacity, 100);
  const ttl = checkMilliseconds('ttl', options.ttl, 1_800_000);
  const prefix = checkName('prefix', options.prefix, 'mcp-rx-streams:session');
  const commandTimeout = checkMilliseconds('commandTimeout', options.commandTimeout, 2000);
  const maxReconnectDelay = checkMilliseconds('maxReconnectDelay', options.maxReconnectDelay, 1000);
  const connection = openConnection(redis, 'eventLog', 'commands', {
    // An append resent after a lost reply could record a frame twice; one queued for minutes is stale.
    ...sentOnce(commandTimeout, maxReconnectDelay),
  });
  let closing: Promise<void> | undefined;
  const logs = (sessionId: string): EventLog => new RedisEventLog(connection, sessionKeys(prefix, sessionId), capacity, ttl);
  return Object.assign(logs, {
    capacity,
    ready: () => whenReady(connection),
    close: () => (closing ??= closeConnection(connection)),
  });
}

class RedisEventLog implements EventLog {
  constructor(
    private readonly connection: RedisConnection,
    private readonly keys: { readonly record: string; readonly log: string },
    private readonly capacity: number,
    private readonly ttl: number,
  ) {}

  async append(frame: MessageFrame): Promise<MessageFrame> {
    const plain = (frame.encoded ?? encodeMessage(frame.message)).plain;
    // JSON.stringify escapes line breaks: the first one in the entry ends the header.
    const entry = `${JSON.stringify([frame.topic ?? null, frame.coalesceKey ?? null])}\n${plain}`;
    const id = await this.connection.eval(APPEND, 2, this.keys.record, this.keys.log, this.capacity, this.ttl, entry);
    return stamp(frame, String(id));
  }

  /** The session's counter (a field of its record): the id of its newest frame, `'0'` before the first. */
  async newestId(): Promise<string> {
    return (await this.connection.hget(this.keys.record, 'lastEventId')) ?? '0';
  }

  async after(lastEventId: string | null | undefined): Promise<readonly MessageFrame[]> {
    if (lastEventId === undefined || lastEventId === null) return [];
    const entries = await this.connection.lrange(this.keys.log, 0, -1);
    const after = DECIMAL.test(lastEventId) ? BigInt(lastEventId) : -1n;
    const frames: MessageFrame[] = [];
    for (const entry of entries) {
      const frame = parseEntry(entry);
      if (frame !== undefined && BigInt(frame.eventId!) > after) frames.push(frame);
    }
    return frames;
  }
}

function parseEntry(entry: string): MessageFrame | undefined {
  const space = entry.indexOf(' ');
  const newline = entry.indexOf('\n', space);
  if (space <= 0 || newline < 0) return undefined;
  const eventId = entry.slice(0, space);
  if (!DECIMAL.test(eventId)) return undefined;
  try {
    const [topic, coalesceKey] = JSON.parse(entry.slice(space + 1, newline)) as [TopicKind | null, string | null];
    return loggedFrame(eventId, entry.slice(newline + 1), topic, coalesceKey);
  } catch {
    return undefined;
  }
}
