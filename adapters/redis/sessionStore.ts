import { type KeptSession, keptByNode, type SessionChanges, type SessionRecord, type SessionStore } from '../../lib/session.js';
import { checkMilliseconds, checkName, checkOptions, checkTarget, closeConnection, openConnection, type RedisConnection, type RedisTarget, sentOnce, whenReady } from './connection.js';

/** Options of {@link RedisSessionStore}. */
export interface RedisSessionStoreOptions {
  /** The Redis every node of the fleet shares: a `redis://` URL or ioredis options. Required. */
  readonly redis: RedisTarget;
  /**
   * Prefix of the session keys; the fleet's stores and event logs ({@link redisEventLogs}) must
   * share it. Defaults to `mcp-rx-streams:session`.
   */
  readonly prefix?: string;
  /**
   * How long Redis keeps a record after its last update, in milliseconds; defaults to 1 800 000
   * (30 min, the default `sessionIdleTimeout`). Give at least the endpoint's `sessionIdleTimeout`,
   * plus its `sessionPruneInterval` as a margin: a node holding a session's GET stream refreshes
   * the record once per prune interval.
   */
  readonly ttl?: number;
  /** How long a command may wait for Redis before it fails, in milliseconds; defaults to 2000. */
  readonly commandTimeout?: number;
  /** Longest pause between reconnection attempts, in milliseconds; defaults to 1000. */
  readonly maxReconnectDelay?: number;
}

/** The keys of session `id` under `prefix`: its record hash and its event log list (same hash slot). */
export function sessionKeys(prefix: string, id: string): { readonly record: string; readonly log: string } {
  const base = `${prefix}:{${id}}`;
  return { record: base, log: `${base}:log` };
}

// Applies changes to an existing record only, and refreshes the expiry of the record and its log.
// KEYS: record, log. ARGV: ttl, fields to delete (space-separated), then field/value pairs.
const UPDATE = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if #ARGV > 2 then redis.call('HSET', KEYS[1], unpack(ARGV, 3)) end
for field in string.gmatch(ARGV[2], '%S+') do redis.call('HDEL', KEYS[1], field) end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return 1`;

// Makes ARGV[2] the keeper if ARGV[1] is ('' = none), and forgets a GET stream recorded on ARGV[1]
// (it stopped or died). Leaves the expiry alone: a take-up is no activity of the client's.
// KEYS: record. ARGV: from, to.
const TAKE_UP = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if (redis.call('HGET', KEYS[1], 'keeper') or '') ~= ARGV[1] then return 0 end
if ARGV[2] == '' then redis.call('HDEL', KEYS[1], 'keeper') else redis.call('HSET', KEYS[1], 'keeper', ARGV[2]) end
if ARGV[1] ~= '' and redis.call('HGET', KEYS[1], 'streamNode') == ARGV[1] then redis.call('HDEL', KEYS[1], 'streamNode') end
return 1`;

/** How many keys a `SCAN` for a dead node's sessions asks for at a time. */
const SCAN_COUNT = 500;

/**
 * A {@link SessionStore} on Redis: legacy session records that any node of a fleet can read, so
 * that a session's POSTs and its GET stream can land on different nodes (DESIGN L1, L4, L8).
 *
 * Each record is one hash (`<prefix>:{<id>}`: principal, protocol version, subscriptions as a
 * JSON array, last activity, the node holding the GET stream, the node keeping its subscriptions
 * and the read scopes of its latest GET) whose expiry is set to `ttl` on
 * creation and on every update, so Redis evicts idle records by itself; {@link idleSince}
 * therefore returns an empty list (the endpoint still ends the idle sessions it holds, by their
 * `lastActivity`). The same hash holds the session's event-id counter (see
 * {@link redisEventLogs}), so ids never restart while the record lives; `delete` removes the
 * record and the session's event log together. {@link takeUp} (one script: exactly one of the
 * nodes that try wins) and {@link keptBy} (a `SCAN`, once per death of a node) let the fleet take
 * up the sessions of a node that stopped or died (docs/fleet.md, "What survives a node's death").
 *
 * Commands are not queued while Redis is unreachable: they fail at once (or after
 * `commandTimeout`), and the request that needed them gets a JSON-RPC `-32603`. Call
 * {@link ready} before serving.
 *
 * @example
 * const sessionStore = new RedisSessionStore({ redis: 'redis://10.0.0.5:6379', ttl: 1_860_000 });
 * const eventLog = redisEventLogs({ redis: 'redis://10.0.0.5:6379', ttl: 1_860_000 });
 * const sessionBus = new RedisSessionBus({ redis: 'redis://10.0.0.5:6379' });
 * await Promise.all([sessionStore.ready(), eventLog.ready(), sessionBus.ready()]);
 * const endpoint = new McpEndpoint({ hub, sessionStore, eventLog, sessionBus });
 * @param options see {@link RedisSessionStoreOptions}.
 * @throws InvalidOptionError naming `RedisSessionStore options` when `options` is not an object, else the option
 *   that is unknown, missing (`redis`) or has a value it cannot use (checked before connecting).
 * @see redisEventLogs
 * @see RedisSessionBus
 */
export class RedisSessionStore implements SessionStore {
  /** The key prefix. */
  readonly prefix: string;
  /** Milliseconds a record outlives its last update. */
  readonly ttl: number;
  readonly #connection: RedisConnection;
  #closing: Promise<void> | undefined;

  constructor(options: RedisSessionStoreOptions) {
    checkOptions<RedisSessionStoreOptions>('RedisSessionStore', options, ['prefix', 'ttl', 'commandTimeout', 'maxReconnectDelay']);
    const redis = checkTarget(options.redis);
    this.prefix = checkName('prefix', options.prefix, 'mcp-rx-streams:session');
    this.ttl = checkMilliseconds('ttl', options.ttl, 1_800_000);
    const commandTimeout = checkMilliseconds('commandTimeout', options.commandTimeout, 2000);
    const maxReconnectDelay = checkMilliseconds('maxReconnectDelay', options.maxReconnectDelay, 1000);
    this.#connection = openConnection(redis, 'sessions', 'commands', {
      // A command queued during an outage and run minutes later (a stale streamNode) would do harm.
      ...sentOnce(commandTimeout, maxReconnectDelay),
    });
  }

  /** Resolves once the connection is up (commands fail before that). */
  ready(): Promise<void> {
    return whenReady(this.#connection);
  }

  async create(record: SessionRecord): Promise<void> {
    const { record: key } = sessionKeys(this.prefix, record.id);
    const fields: string[] = [
      'principal', record.principal,
      'protocolVersion', record.protocolVersion,
      'subscriptions', JSON.stringify(record.subscriptions),
      'lastActivity', String(record.lastActivity),
    ];
    if (typeof record.streamNode === 'string') fields.push('streamNode', record.streamNode);
    if (typeof record.keeper === 'string') fields.push('keeper', record.keeper);
    if (record.scopes !== undefined) fields.push('scopes', JSON.stringify(record.scopes));
    const results = await this.#connection.multi().hset(key, ...fields).pexpire(key, this.ttl).exec();
    const failed = results?.find(([error]) => error !== null);
    if (failed !== undefined) throw failed[0];
  }

  async get(id: string): Promise<SessionRecord | undefined> {
    const hash = await this.#connection.hgetall(sessionKeys(this.prefix, id).record);
    // A hash without a principal is no record (e.g. an event-id counter alone).
    if (hash.principal === undefined || hash.protocolVersion === undefined) return undefined;
    return Object.freeze({
      id,
      principal: hash.principal,
      protocolVersion: hash.protocolVersion,
      subscriptions: Object.freeze(parseSubscriptions(hash.subscriptions)),
      lastActivity: Number(hash.lastActivity ?? 0),
      streamNode: hash.streamNode ?? null,
      ...(hash.keeper === undefined ? {} : { keeper: hash.keeper }),
      ...(hash.scopes === undefined ? {} : { scopes: Object.freeze(parseSubscriptions(hash.scopes)) }),
    });
  }

  async update(id: string, changes: SessionChanges): Promise<void> {
    const { record, log } = sessionKeys(this.prefix, id);
    const pairs: string[] = [];
    const deletions: string[] = [];
    if (changes.subscriptions !== undefined) pairs.push('subscriptions', JSON.stringify(changes.subscriptions));
    if (changes.lastActivity !== undefined) pairs.push('lastActivity', String(changes.lastActivity));
    if (changes.streamNode === null) deletions.push('streamNode');
    else if (changes.streamNode !== undefined) pairs.push('streamNode', changes.streamNode);
    if (changes.keeper === null) deletions.push('keeper');
    else if (changes.keeper !== undefined) pairs.push('keeper', changes.keeper);
    if (changes.scopes !== undefined) pairs.push('scopes', JSON.stringify(changes.scopes));
    await this.#connection.eval(UPDATE, 2, record, log, this.ttl, deletions.join(' '), ...pairs);
  }

  async delete(id: string): Promise<void> {
    const { record, log } = sessionKeys(this.prefix, id);
    await this.#connection.del(record, log);
  }

  /** Makes `to` the session's keeper if `from` is, in one script (one of the nodes that try wins); see `SessionStore.takeUp`. */
  async takeUp(id: string, from: string | null, to: string | null): Promise<boolean> {
    return (await this.#connection.eval(TAKE_UP, 1, sessionKeys(this.prefix, id).record, from ?? '', to ?? '')) === 1;
  }

  /**
   * The sessions `node` (or a worker of it, `node/…`) keeps, found by a `SCAN` of the session keys
   * (on every primary of a Redis Cluster): once per death of a node, so no index is kept for it.
   */
  async keptBy(node: string): Promise<KeptSession[]> {
    const pattern = `${escapeGlob(this.prefix)}:{*}`;
    const start = this.prefix.length + 2;
    const kept: KeptSession[] = [];
    const connection = this.#connection;
    for (const server of 'nodes' in connection ? connection.nodes('master') : [connection]) {
      let cursor = '0';
      do {
        const [next, keys] = await server.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT);
        cursor = next;
        const records = keys.filter((key) => key.endsWith('}'));
        const keepers = await Promise.all(records.map((key) => server.hget(key, 'keeper')));
        records.forEach((key, i) => {
          const keeper = keepers[i];
          if (typeof keeper === 'string' && keptByNode(keeper, node)) kept.push({ id: key.slice(start, -1), keeper });
        });
      } while (cursor !== '0');
    }
    return kept;
  }

  /** Always empty: Redis evicts a record `ttl` after its last update by itself. */
  idleSince(_cutoff: number): readonly string[] {
    return [];
  }

  /** Closes the connection (waiting for the replies still due); idempotent. */
  close(): Promise<void> {
    return (this.#closing ??= closeConnection(this.#connection));
  }
}

/** `text` with the glob characters of a `SCAN … MATCH` pattern escaped. */
function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}

function parseSubscriptions(json: string | undefined): string[] {
  if (json === undefined) return [];
  try {
    const value: unknown = JSON.parse(json);
    return Array.isArray(value) ? value.filter((uri): uri is string => typeof uri === 'string') : [];
  } catch {
    return [];
  }
}
