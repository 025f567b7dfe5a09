import { BehaviorSubject, distinctUntilChanged, type Observable, type Subscription, timer } from 'rxjs';
import { isCloseReason } from '../../lib/frame.js';
import type { SessionBus, SessionCommand } from '../../lib/session.js';
import { reportError } from '../../lib/telemetry.js';
import { checkMilliseconds, checkName, checkNodeId, checkOptions, checkTarget, closeConnection, keyBeside, openConnection, type RedisConnection, type RedisTarget, sentOnce, whenReady, subscribeChannels, subscriberOptions } from './connection.js';
import { tryParseJson } from '../../lib/jsonrpc.js';

/** Options of {@link RedisSessionBus}. */
export interface RedisSessionBusOptions {
  /** The Redis every node of the fleet shares: a `redis://` URL or ioredis options. Required. */
  readonly redis: RedisTarget;
  /** The pub/sub channel the fleet's session buses share; defaults to `mcp-rx-streams:sessions`. */
  readonly channel?: string;
  /** This node's id, unique in the fleet (no whitespace), recorded as a session's `streamNode`; defaults to a random UUID. */
  readonly nodeId?: string;
  /** Longest pause between reconnection attempts, in milliseconds; defaults to 1000. */
  readonly maxReconnectDelay?: number;
  /** How long a publish may wait for Redis's acknowledgment before it fails, in milliseconds; defaults to 2000. */
  readonly publishTimeout?: number;
  /**
   * How long a node counts as alive after its last heartbeat, in milliseconds; defaults to 10 000
   * (as `RedisPrincipalCap`'s). Every node beats every third of it; one node of the fleet notices a
   * node whose last heartbeat is older (`left`) and takes up the legacy sessions it kept. Give every
   * node the same value: a node judges the others' heartbeats by its own.
   */
  readonly heartbeatTtl?: number;
}

// KEYS: the nodes' sorted set (score: each node's last heartbeat, Redis server time in ms). ARGV:
// this node's id, heartbeatTtl. Records this node's heartbeat and removes the nodes whose last one
// is older than the ttl, returning them: each dead node to the one node whose beat removed it.
const BEAT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now, ARGV[1])
local dead = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. (now - tonumber(ARGV[2])))
if #dead > 0 then redis.call('ZREM', KEYS[1], unpack(dead)) end
return dead`;

// KEYS: the nodes' sorted set. ARGV: this node's id, heartbeatTtl. This node leaves the set (it
// stops: nobody is to take its sessions up as a dead node's, nor count on it to take theirs); the
// nodes alive now.
const LEAVE = `
redis.call('ZREM', KEYS[1], ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('ZRANGEBYSCORE', KEYS[1], now - tonumber(ARGV[2]), '+inf')`;

/** Counters of a {@link RedisSessionBus} since it was created. */
export interface RedisSessionBusStats {
  /** Commands Redis acknowledged. */
  readonly published: number;
  /** Commands that could not be handed to Redis (offline, error, timeout): their publish rejected. */
  readonly failed: number;
  /** Commands from other nodes delivered to this node. */
  readonly received: number;
  /** Messages on the channel that were not a well-formed command, ignored. */
  readonly malformed: number;
  /** Nodes whose heartbeat expired, noticed by this node (each handed to it as `left`). */
  readonly departed: number;
}

/**
 * A {@link SessionBus} on Redis pub/sub: the {@link SessionCommand}s with which the nodes of a
 * fleet hand a legacy session's GET stream to each other (`claimed`), reach the node holding it
 * with a subscribe or unsubscribe POST served elsewhere, forget an ended session, and hand over
 * the sessions of a node that stops (`orphaned`, `kept`).
 *
 * Every node also beats a heartbeat: every `heartbeatTtl / 3` one script records it in the sorted
 * set `{<channel>}:nodes` (score: Redis server time) and removes the nodes whose last heartbeat is
 * older than `heartbeatTtl`; each node so found dead is handed to the node that removed it, and to
 * no other, as `left` (with the session id `''`), for it to take up the sessions the dead node kept.
 * {@link leave} takes a stopping node out at once and says how many others are alive.
 *
 * A command is sent as `<nodeId> <JSON [sessionId, command]>` on one channel; every node's
 * subscriber hands the commands of *other* nodes to the endpoint (a node skips its own).
 * `publish` resolves once Redis has acknowledged the command and rejects when it could not be
 * handed over (Redis unreachable, an error, no acknowledgment within `publishTimeout`): nothing
 * is queued or resent, so a POST that needed it gets a JSON-RPC `-32603` rather than a silent
 * success. Pub/sub keeps nothing: a node that is reconnecting misses the commands sent
 * meanwhile (a stale stream it still holds ends at the next `claimed`, or its client's next GET).
 *
 * `connected$` tells whether this node hears the fleet (its subscriber connection is up), e.g.
 * for a node to serve local changes itself while it cannot.
 *
 * @example
 * const sessionBus = new RedisSessionBus({ redis: 'redis://10.0.0.5:6379', nodeId: 'node-a' });
 * await sessionBus.ready();
 * const endpoint = new McpEndpoint({ hub, sessionStore, eventLog, sessionBus });
 * // on shutdown, after await endpoint.close() (it hands the node's sessions over through the bus):
 * await sessionBus.close();
 * @param options see {@link RedisSessionBusOptions}.
 * @throws InvalidOptionError naming `RedisSessionBus options` when `options` is not an object, else the option
 *   that is unknown, missing (`redis`) or has a value it cannot use (checked before connecting).
 * @see RedisSessionStore
 */
export class RedisSessionBus implements SessionBus {
  readonly nodeId: string;
  /** The pub/sub channel. */
  readonly channel: string;
  /** `true` while the subscriber connection is up; emits the current value on subscribe, then each change; completes on `close()`. */
  readonly connected$: Observable<boolean>;
  readonly #publisher: RedisConnection;
  readonly #subscriber: RedisConnection;
  readonly #prefix: string;
  readonly #deliverers = new Set<(sessionId: string, command: SessionCommand) => void>();
  readonly #subscribed: Promise<unknown>;
  readonly #nodes: string;
  readonly #heartbeatTtl: number;
  readonly #heartbeat: Subscription;
  #stats = { published: 0, failed: 0, received: 0, malformed: 0, departed: 0 };
  #closing: Promise<void> | undefined;

  constructor(options: RedisSessionBusOptions) {
    checkOptions<RedisSessionBusOptions>('RedisSessionBus', options, ['channel', 'nodeId', 'maxReconnectDelay', 'publishTimeout', 'heartbeatTtl']);
    const redis = checkTarget(options.redis);
    this.nodeId = checkNodeId(options.nodeId);
    this.channel = checkName('channel', options.channel, 'mcp-rx-streams:sessions');
    const maxReconnectDelay = checkMilliseconds('maxReconnectDelay', options.maxReconnectDelay, 1000);
    const publishTimeout = checkMilliseconds('publishTimeout', options.publishTimeout, 2000);
    this.#heartbeatTtl = checkMilliseconds('heartbeatTtl', options.heartbeatTtl, 10_000, 30);
    this.#nodes = keyBeside('channel', this.channel, ':nodes');
    this.#prefix = `${this.nodeId} `;
    this.connected$ = this.#connected.pipe(distinctUntilChanged());
    this.#publisher = openConnection(redis, 'sessionBus', 'publisher', {
      ...sentOnce(publishTimeout, maxReconnectDelay),
    });
    this.#subscriber = openConnection(redis, 'sessionBus', 'subscriber', subscriberOptions(maxReconnectDelay));
    this.#publisher.on('ready', () => this.#beat());
    this.#subscriber.on('ready', () => this.#connected.next(true));
    this.#subscriber.on('close', () => this.#connected.next(false));
    this.#subscriber.on('message', (channel: string, message: string) => {
      if (channel === this.channel) this.#receive(message);
    });
    this.#subscribed = subscribeChannels(this.#subscriber, [this.channel]);
    this.#subscribed.catch(() => undefined);
    const beat = Math.max(10, Math.floor(this.#heartbeatTtl / 3));
    this.#heartbeat = timer(0, beat).subscribe(() => this.#beat());
  }

  // Whether the subscriber connection is up: what connected$ and connected read.
  readonly #connected = new BehaviorSubject(false);

  /** Whether the subscriber connection is up now. */
  get connected(): boolean {
    return this.#connected.value;
  }

  /** A snapshot of the counters; see {@link RedisSessionBusStats}. */
  get stats(): RedisSessionBusStats {
    return { ...this.#stats };
  }

  /** Resolves once both connections are up and the channel is subscribed. */
  async ready(): Promise<void> {
    await this.#subscribed;
    await whenReady(this.#publisher);
  }

  /** Sends `command` about `sessionId` to every other node; resolves once Redis acknowledged it. */
  async publish(sessionId: string, command: SessionCommand): Promise<void> {
    if (this.#closing !== undefined) throw new Error('the session bus is closed');
    try {
      await this.#publisher.publish(this.channel, this.#prefix + JSON.stringify([sessionId, command]));
    } catch (error) {
      this.#stats.failed++;
      throw error;
    }
    this.#stats.published++;
  }

  /** Starts handing other nodes' commands to `deliver`; returns the function that stops it. */
  connect(deliver: (sessionId: string, command: SessionCommand) => void): () => void {
    const entry = (sessionId: string, command: SessionCommand) => deliver(sessionId, command);
    this.#deliverers.add(entry);
    return () => void this.#deliverers.delete(entry);
  }

  /**
   * This node stops and hands its sessions over (see `SessionBus.leave`): its heartbeat stops and
   * leaves the fleet's set at once; how many other nodes are alive now (a heartbeat within
   * `heartbeatTtl`) to take them up.
   */
  async leave(): Promise<number> {
    this.#heartbeat.unsubscribe();
    const alive = (await this.#publisher.eval(LEAVE, 1, this.#nodes, this.nodeId, this.#heartbeatTtl)) as string[];
    return alive.filter((node) => node !== this.nodeId).length;
  }

  /**
   * Closes both connections (waiting for the acknowledgments still due) and stops the heartbeat;
   * `connected$` completes. Idempotent. Without a {@link leave} first (an endpoint's close says it
   * when it hands sessions over), the node's last heartbeat is left to expire: the node that notices
   * it then takes up the sessions this one kept, as a dead node's.
   */
  close(): Promise<void> {
    this.#heartbeat.unsubscribe();
    return (this.#closing ??= Promise.all([closeConnection(this.#publisher), closeConnection(this.#subscriber)]).then(() => {
      this.#connected.next(false);
      this.#connected.complete();
    }));
  }

  /** One heartbeat; each node found dead is handed to this node's deliverers as `left`. */
  #beat(): void {
    if (this.#closing !== undefined || this.#publisher.status !== 'ready') return;
    (this.#publisher.eval(BEAT, 1, this.#nodes, this.nodeId, this.#heartbeatTtl) as Promise<string[]>).then(
      (dead) => {
        for (const node of dead) {
          this.#stats.departed++;
          this.#deliver('', { kind: 'left', node });
        }
      },
      () => undefined,
    );
  }

  #deliver(sessionId: string, command: SessionCommand): void {
    for (const deliver of this.#deliverers) {
      try {
        deliver(sessionId, command);
      } catch (error) {
        reportError('source', error);
      }
    }
  }

  #receive(message: string): void {
    if (message.startsWith(this.#prefix)) return;
    const space = message.indexOf(' ');
    const parsed = space > 0 ? parseCommand(message.slice(space + 1)) : undefined;
    if (parsed === undefined) {
      this.#stats.malformed++;
      return;
    }
    this.#stats.received++;
    this.#deliver(parsed[0], parsed[1]);
  }
}

function parseCommand(json: string): [string, SessionCommand] | undefined {
  const value = tryParseJson(json);
  if (!Array.isArray(value) || value.length !== 2 || typeof value[0] !== 'string') return undefined;
  const command = value[1] as { kind?: unknown; node?: unknown; uri?: unknown; principal?: unknown; reason?: unknown; died?: unknown } | null;
  if (command === null || typeof command !== 'object') return undefined;
  switch (command.kind) {
    case 'claimed':
      return typeof command.node === 'string' ? [value[0], { kind: 'claimed', node: command.node }] : undefined;
    case 'subscribe':
    case 'unsubscribe':
      return typeof command.uri === 'string' ? [value[0], { kind: command.kind, uri: command.uri }] : undefined;
    case 'ended':
      return [value[0], { kind: 'ended' }];
    case 'kept':
      return typeof command.node === 'string' ? [value[0], { kind: 'kept', node: command.node }] : undefined;
    case 'orphaned':
      return typeof command.node === 'string' && typeof command.died === 'boolean' ? [value[0], { kind: 'orphaned', node: command.node, died: command.died }] : undefined;
    case 'revoke':
      return typeof command.principal === 'string' && isCloseReason(command.reason) ? [value[0], { kind: 'revoke', principal: command.principal, reason: command.reason }] : undefined;
    default:
      return undefined;
  }
}
