import { randomBytes, randomUUID } from 'node:crypto';
import { Subject, type Observable } from 'rxjs';
import { type HubBus, HubBusTargets, type HubEvent } from '../../lib/hub.js';
import { reportError } from '../../lib/telemetry.js';
import { backoff, checkCount, checkMilliseconds, checkName, checkNodeId, checkOptions, checkTarget, closeConnection, dropConnection, isHandover, keyBeside, openConnection, type RedisConnection, type RedisTarget, sentOnce, whenReady } from './connection.js';
import { tryParseJson } from '../../lib/jsonrpc.js';
import { reportResync, reportUnrelayed, type ResyncEvent } from './telemetry.js';

/** Options of {@link RedisBus}. */
export interface RedisBusOptions {
  /** The Redis every node of the fleet shares: a `redis://` URL or ioredis options. Required. */
  readonly redis: RedisTarget;
  /**
   * The Redis stream the fleet's hubs share; defaults to `mcp-rx-streams:hub`. Its epoch is kept
   * next to it, in the same Redis Cluster slot: under `{<channel>}:epoch`, or `<channel>:epoch`
   * when the channel has a hash tag of its own (`app:{hub}`).
   */
  readonly channel?: string;
  /** This node's id, unique in the fleet (no whitespace); defaults to a random UUID. */
  readonly nodeId?: string;
  /** Longest pause between reconnection attempts, in milliseconds; defaults to 1000. */
  readonly maxReconnectDelay?: number;
  /**
   * How long a publish may wait for Redis's acknowledgment before it goes back to the outbox (and
   * is sent again), in milliseconds; defaults to 2000.
   */
  readonly publishTimeout?: number;
  /**
   * About how many events the stream keeps (`XADD … MAXLEN ~ maxLength`); defaults to 10 000. A
   * node that falls further behind than this (paused, cut off) resyncs its streams instead of
   * catching up event by event.
   */
  readonly maxLength?: number;
  /**
   * How many events this node keeps while Redis is unreachable, to send when it comes back;
   * defaults to 10 000. When it is full the oldest is dropped (counted `unrelayed`, reported on
   * `redisChannels.unrelayed` with reason `overflow`), and the other nodes resync.
   */
  readonly maxOutbox?: number;
  /**
   * How often an idle node checks that Redis still holds the stream it reads (the epoch), in
   * milliseconds; defaults to 1000. Bounds how late a node notices that Redis lost its data
   * (`FLUSHALL`, a restart without persistence) when nothing is published.
   */
  readonly checkInterval?: number;
}

/** Counters of a {@link RedisBus} since it was created. */
export interface RedisBusStats {
  /** Local events Redis acknowledged (appended to the stream). */
  readonly relayed: number;
  /** Local events that waited in the outbox (Redis unreachable or not acknowledging), sent or dropped since. */
  readonly queued: number;
  /** Local events that never reached Redis: dropped from a full outbox, or not serializable. Other nodes resync for the former. */
  readonly unrelayed: number;
  /** Events from other nodes delivered to this node's hub. */
  readonly received: number;
  /** Events from other nodes read a second time (an append resent after a lost acknowledgment), skipped. */
  readonly duplicates: number;
  /** Times this node told its streams to re-read (see {@link RedisBus}): it could not prove it saw every event. */
  readonly resyncs: number;
  /** Stream entries that were not a well-formed event, ignored. */
  readonly malformed: number;
}

const EVENT_TOPICS = new Set(['tools', 'prompts', 'resources', 'resource', 'task']);

// One read: the epoch (created when missing), the oldest entry's id, and up to ARGV[2] entries
// after ARGV[1]. Atomic, so "the oldest entry is newer than my last one" is exact for this read.
const READ = `
redis.call('SET', KEYS[2], ARGV[3], 'NX')
local epoch = redis.call('GET', KEYS[2])
local oldest = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)
local newest = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local entries = {}
if ARGV[1] ~= '$' then entries = redis.call('XRANGE', KEYS[1], '(' .. ARGV[1], '+', 'COUNT', ARGV[2]) end
return {epoch, oldest[1] and oldest[1][1] or false, newest[1] and newest[1][1] or false, entries}`;

type ReadReply = [epoch: string, oldest: string | null, newest: string | null, entries: [id: string, fields: string[]][]];

// Appends a batch of entries in one step, in order: ARGV[1] = maxLength, then the `m` fields.
const APPEND = `
for i = 2, #ARGV do redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'm', ARGV[i]) end
return #ARGV - 1`;

/** Entries per append at most: one script call holds Redis for no more than about a millisecond. */
const APPEND_BATCH = 500;


/** One local event on its way to the stream: its sequence number and its entry's `m` field. */
interface Pending {
  readonly seq: number;
  readonly topic: HubEvent['topic'];
  readonly message: string;
  /** Whether it waited because Redis could not take it (counted once in `queued`, however many attempts it takes). */
  queued: boolean;
}

/**
 * A {@link HubBus} on a Redis stream: `notify*` on any node reaches the matching streams of every
 * node exactly once, across Redis outages and pauses of a node; a node that cannot prove it saw
 * every event tells its streams to re-read.
 *
 * The hub serves its own streams first and then calls `publish`, which never waits: the event is
 * appended to one stream (`XADD <channel> MAXLEN ~ maxLength`) with one field, `m: <origin> <seq>
 * <JSON>`, where `origin` is this node's id plus a per-process run id and `seq` counts its events.
 * A node has one append in flight at a time, a script that adds every event waiting since the
 * previous one returned, so that its events reach the stream in `seq` order whatever happens to
 * a single append (a Redis Cluster may retry or redirect each command on its own). Every
 * node reads the stream on a connection of its own, from the last id it processed (a blocking
 * `XREAD` to wait, a short script to read), skips its own entries (its streams had them first)
 * and entries whose `seq` it has already seen from that origin (an append resent because its
 * acknowledgment was lost), and hands the rest to its hub, in stream order.
 *
 * While Redis is unreachable, or does not acknowledge within `publishTimeout`, events wait in a
 * bounded outbox (`maxOutbox`) and are appended, in order, when it comes back. A node that was
 * cut off or paused reads what it missed when it comes back, in order. Where that cannot be
 * proven, the node calls {@link Hub.resync} (every live stream hears `list_changed` /
 * `resources/updated` for what it listens to, once), counts it in `stats.resyncs`, and reports it
 * on `resync$` and `redisChannels.resync`:
 * - `trimmed`: entries after its last id were trimmed away (it fell more than `maxLength` behind);
 * - `sequence`: an origin's `seq` skipped numbers (that node's outbox overflowed);
 * - `epoch`: Redis lost its data (`FLUSHALL`, restart without persistence): the random epoch key
 *   the nodes create next to the stream changed or vanished. Noticed at the next read, at most
 *   `checkInterval` later.
 *
 * @example
 * const bus = new RedisBus({ redis: 'redis://10.0.0.5:6379' });
 * const hub = new Hub({ bus });
 * await bus.ready();              // optional: cross-node delivery is live from here on
 * hub.notifyToolsChanged();       // this node's streams at once, the other nodes' via Redis
 * // on shutdown:
 * hub.close();
 * await bus.close();
 * @param options see {@link RedisBusOptions}.
 * @throws InvalidOptionError naming `RedisBus options` when `options` is not an object, else the option
 *   that is unknown, missing (`redis`) or has a value it cannot use (checked before connecting).
 * @see Hub
 */
export class RedisBus implements HubBus {
  /** This node's id. */
  readonly nodeId: string;
  /** The Redis stream. */
  readonly channel: string;
  /** Each resync, as it happens; completes on `close()`. */
  readonly resync$: Observable<ResyncEvent>;
  readonly #publisher: RedisConnection;
  readonly #reader: RedisConnection;
  readonly #epochKey: string;
  readonly #origin: string;
  /** `<origin> `: how this node's own entries start. */
  readonly #prefix: string;
  readonly #maxLength: string;
  readonly #maxOutbox: number;
  /** Entries per read: at most 1000, at most `maxLength`. */
  readonly #batch: number;
  readonly #checkInterval: number;
  readonly #retryDelay: number;
  readonly #hubs = new HubBusTargets();
  readonly #resyncs = new Subject<ResyncEvent>();
  readonly #started: Promise<void>;
  #onStarted: () => void = () => undefined;
  /** The highest `seq` seen per origin since the last resync. */
  readonly #seen = new Map<string, number>();
  /** Events waiting for their append, in seq order. */
  #outbox: Pending[] = [];
  /** The append in flight, if any. */
  #sending: readonly Pending[] | undefined;
  /** Redis failed the last append: wait for the retry (or a reconnection) before the next. */
  #held = false;
  #seq = 0;
  #last = '$';
  #epoch: string | undefined;
  #retry: NodeJS.Timeout | undefined;
  #stats = { relayed: 0, queued: 0, unrelayed: 0, received: 0, duplicates: 0, resyncs: 0, malformed: 0 };
  #closing: Promise<void> | undefined;

  constructor(options: RedisBusOptions) {
    checkOptions<RedisBusOptions>('RedisBus', options, ['channel', 'nodeId', 'maxReconnectDelay', 'publishTimeout', 'maxLength', 'maxOutbox', 'checkInterval']);
    const redis = checkTarget(options.redis);
    this.nodeId = checkNodeId(options.nodeId);
    this.channel = checkName('channel', options.channel, 'mcp-rx-streams:hub');
    const maxReconnectDelay = checkMilliseconds('maxReconnectDelay', options.maxReconnectDelay, 1000);
    const publishTimeout = checkMilliseconds('publishTimeout', options.publishTimeout, 2000);
    const maxLength = checkCount('maxLength', options.maxLength, 10_000);
    this.#maxLength = String(maxLength);
    this.#batch = Math.min(1000, maxLength);
    this.#maxOutbox = checkCount('maxOutbox', options.maxOutbox, 10_000);
    this.#checkInterval = checkMilliseconds('checkInterval', options.checkInterval, 1000);
    this.#retryDelay = maxReconnectDelay;
    this.#epochKey = keyBeside('channel', this.channel, ':epoch');
    this.#origin = `${this.nodeId}/${randomBytes(6).toString('base64url')}`;
    this.#prefix = `${this.#origin} `;
    this.resync$ = this.#resyncs.asObservable();
    this.#publisher = openConnection(redis, 'bus', 'publisher', {
      // Nothing queued or resent by ioredis: the outbox does it, in order, with the seq that lets
      // readers skip an append that had in fact succeeded.
      ...sentOnce(publishTimeout, maxReconnectDelay),
    });
    this.#publisher.defineCommand('mcpRxHubAppend', { numberOfKeys: 1, lua: APPEND });
    this.#publisher.on('ready', () => {
      this.#held = false;
      this.#pump();
    });
    this.#reader = openConnection(redis, 'bus', 'reader', {
      // Reads are idempotent: queued while offline and resent after a reconnection.
      maxRetriesPerRequest: null,
      retryStrategy: backoff(maxReconnectDelay),
    });
    this.#reader.defineCommand('mcpRxHubRead', { numberOfKeys: 2, lua: READ });
    this.#started = new Promise((resolve) => (this.#onStarted = resolve));
    void this.#loop();
  }

  /** A snapshot of the counters; see {@link RedisBusStats}. */
  get stats(): RedisBusStats {
    return { ...this.#stats };
  }

  /**
   * Resolves once this node has found its place in the stream and the publisher is connected:
   * events published on other nodes from then on reach this node. Needed only where a test or a
   * startup sequence must not miss the first events; the hub works before it (queueing what it
   * cannot append yet).
   */
  async ready(): Promise<void> {
    await this.#started;
    await whenReady(this.#publisher);
  }

  /** Relays an event this node's hub has already delivered locally; never waits, never throws. */
  publish(event: HubEvent): void {
    if (this.#closing !== undefined) return;
    let json: string;
    try {
      json = JSON.stringify(event);
    } catch {
      // A task status that cannot be serialized (a cycle, a BigInt) reached local streams only.
      return this.#unrelayed(event.topic, 'error');
    }
    const pending: Pending = { seq: ++this.#seq, topic: event.topic, message: `${this.#prefix}${this.#seq} ${json}`, queued: false };
    this.#outbox.push(pending);
    if (this.#publisher.status !== 'ready' || this.#held) this.#waiting([pending]);
    else this.#pump();
  }

  /** Starts handing other nodes' events to `deliver`, and gaps to `resync`; returns the function that stops it. */
  connect(deliver: (event: HubEvent) => void, resync?: () => void): () => void {
    return this.#hubs.connect(deliver, resync);
  }

  /** Closes both connections (waiting for the acknowledgments still due); idempotent. What is still in the outbox is lost. */
  close(): Promise<void> {
    return (this.#closing ??= (async () => {
      clearTimeout(this.#retry);
      this.#resyncs.complete();
      // The reader is blocked in XREAD: it is dropped, not asked to quit.
      dropConnection(this.#reader);
      await closeConnection(this.#publisher);
    })());
  }

  /** Sends the next append, unless one is in flight or Redis cannot take it now. */
  #pump(): void {
    if (this.#closing !== undefined || this.#sending !== undefined || this.#held || this.#outbox.length === 0) return;
    if (this.#publisher.status !== 'ready') return this.#waiting(this.#outbox);
    const batch = this.#outbox.splice(0, APPEND_BATCH);
    this.#sending = batch;
    const publisher = this.#publisher as RedisConnection & { mcpRxHubAppend(stream: string, maxLength: string, ...messages: string[]): Promise<number> };
    publisher.mcpRxHubAppend(this.channel, this.#maxLength, ...batch.map((pending) => pending.message)).then(
      () => {
        this.#sending = undefined;
        this.#stats.relayed += batch.length;
        this.#pump();
      },
      () => {
        this.#sending = undefined;
        if (this.#closing !== undefined) return;
        // Back in front of the newer ones: sent again, in order (if it was in fact appended, the
        // readers skip the repeat by its seq).
        this.#outbox.unshift(...batch);
        this.#waiting(this.#outbox);
        // Connected but refused (an error reply, a timeout, a Cluster's slot changing hands): try
        // again later; a reconnection sends at once.
        this.#held = true;
        this.#retry ??= setTimeout(() => {
          this.#retry = undefined;
          this.#held = false;
          this.#pump();
        }, this.#retryDelay);
      },
    );
  }

  /**
   * Counts `pendings` as queued (once each) and keeps the outbox within `maxOutbox` while Redis
   * cannot take it: the oldest goes first, and the readers, seeing its seq missing, resync.
   */
  #waiting(pendings: readonly Pending[]): void {
    for (const pending of pendings) {
      if (pending.queued) continue;
      pending.queued = true;
      this.#stats.queued++;
    }
    while (this.#outbox.length > this.#maxOutbox) this.#unrelayed(this.#outbox.shift()!.topic, 'overflow');
  }

  #unrelayed(topic: HubEvent['topic'], reason: 'overflow' | 'error'): void {
    reportUnrelayed({ topic, reason, unrelayed: ++this.#stats.unrelayed });
  }

  /**
   * Reads the stream until closed. Mostly a blocking `XREAD COUNT batch`: a reply with fewer than
   * `batch` entries proves nothing after the last id was trimmed (trimming keeps at least
   * `maxLength` entries, all newer than anything it removed, and `batch <= maxLength`), so its
   * entries are delivered as they are. A full reply, an idle `checkInterval`, and at least every
   * `checkInterval` under load, go through the read script instead, which also checks the epoch
   * and the oldest id atomically with the read.
   */
  async #loop(): Promise<void> {
    let check = true;
    let checked = 0;
    while (this.#closing === undefined) {
      try {
        if (check || this.#last === '$' || Date.now() - checked >= this.#checkInterval) {
          check = await this.#read();
          checked = Date.now();
          continue;
        }
        const reply = (await this.#reader.xread('COUNT', this.#batch, 'BLOCK', this.#checkInterval, 'STREAMS', this.channel, this.#last)) as
          | [stream: string, entries: [id: string, fields: string[]][]][]
          | null;
        if (this.#closing !== undefined) return;
        const entries = reply?.[0]?.[1] ?? [];
        if (reply === null || entries.length >= this.#batch) {
          check = true;
          continue;
        }
        this.#deliverAll(entries);
      } catch (error) {
        check = true;
        if (this.#closing !== undefined) return;
        // Redis refused the read (a lost connection just resends it after the reconnection; a
        // failover is no news either): say so, and wait a little rather than spin.
        if (this.#reader.status === 'ready' && !isHandover(error)) reportError('hub', error);
        await new Promise((resolve) => setTimeout(resolve, Math.min(this.#retryDelay, 100)));
      }
    }
  }

  #deliverAll(entries: readonly [id: string, fields: string[]][]): void {
    let resynced = false;
    for (const [id, fields] of entries) {
      this.#last = id;
      resynced = this.#receive(fields, resynced) || resynced;
    }
  }

  /** One read; returns whether more entries may be waiting. */
  async #read(): Promise<boolean> {
    const reader = this.#reader as RedisConnection & { mcpRxHubRead(stream: string, epochKey: string, last: string, count: number, candidate: string): Promise<ReadReply> };
    const [epoch, oldest, newest, entries] = await reader.mcpRxHubRead(this.channel, this.#epochKey, this.#last, this.#batch, randomUUID());
    if (this.#closing !== undefined) return false;
    if (this.#epoch === undefined || this.#last === '$') {
      // The first read: start after the newest entry; what came before this node is not its business.
      this.#epoch = epoch;
      this.#last = newest ?? '0-0';
      this.#onStarted();
      return false;
    }
    if (epoch !== this.#epoch) {
      // Redis lost its data: whatever is in the stream now came after the loss; read all of it.
      this.#epoch = epoch;
      this.#last = '0-0';
      this.#resync('epoch');
      return true;
    }
    if (this.#last !== '0-0' && (oldest === null || compareIds(oldest, this.#last) > 0)) {
      // The entry after ours may have been trimmed: re-read everything, then carry on with what is left.
      this.#last = '0-0';
      this.#resync('trimmed');
      return true;
    }
    this.#deliverAll(entries);
    return entries.length === this.#batch;
  }

  /** Delivers one entry; returns whether it caused a resync. */
  #receive(fields: string[], resynced: boolean): boolean {
    // One field, `m`: `<origin> <seq> <event JSON>` (one string to parse instead of three pairs).
    const message = fields.length === 2 && fields[0] === 'm' ? fields[1]! : '';
    if (message.startsWith(this.#prefix)) return false;
    const space = message.indexOf(' ');
    const second = space > 0 ? message.indexOf(' ', space + 1) : -1;
    const origin = message.slice(0, space);
    const seq = second > 0 ? Number(message.slice(space + 1, second)) : NaN;
    const event = second > 0 && Number.isSafeInteger(seq) && seq > 0 ? parseEvent(message.slice(second + 1)) : undefined;
    if (event === undefined) {
      this.#stats.malformed++;
      return false;
    }
    const previous = this.#seen.get(origin);
    if (previous !== undefined && seq <= previous) {
      this.#stats.duplicates++;
      return false;
    }
    this.#seen.set(origin, seq);
    let gap = false;
    if (previous !== undefined && seq > previous + 1 && !resynced) {
      gap = true;
      this.#resync('sequence');
    }
    this.#stats.received++;
    this.#hubs.deliver(event);
    return gap;
  }

  #resync(reason: ResyncEvent['reason']): void {
    // Every origin starts afresh: what it sends next is not a gap, the resync covered it.
    this.#seen.clear();
    const event: ResyncEvent = { reason, resyncs: ++this.#stats.resyncs };
    this.#hubs.resync();
    reportResync(event);
    this.#resyncs.next(event);
  }
}

/** Compares two stream ids (`<ms>-<seq>`) numerically. */
function compareIds(a: string, b: string): number {
  const [am, as] = a.split('-');
  const [bm, bs] = b.split('-');
  return Number(am) - Number(bm) || Number(as) - Number(bs);
}

function parseEvent(json: string): HubEvent | undefined {
  const value = tryParseJson(json);
  if (value === null || typeof value !== 'object') return undefined;
  const event = value as { topic?: unknown; uri?: unknown; task?: { taskId?: unknown } | null; scope?: unknown };
  if (typeof event.topic !== 'string' || !EVENT_TOPICS.has(event.topic)) return undefined;
  if (event.topic === 'resource' && typeof event.uri !== 'string') return undefined;
  if (event.topic === 'task' && (event.task === null || typeof event.task !== 'object' || typeof event.task.taskId !== 'string')) return undefined;
  if (event.scope !== undefined && typeof event.scope !== 'string') return undefined;
  return value as HubEvent;
}
