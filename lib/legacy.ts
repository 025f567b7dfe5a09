import { randomUUID } from 'node:crypto';
import {
  defer,
  EMPTY,
  finalize,
  firstValueFrom,
  from,
  race,
  type Observable,
  type SchedulerLike,
  Subject,
  Subscriber,
  Subscription,
  timer,
  noop,
} from 'rxjs';
import { sessionPipeline } from '../operators/sessionPipeline.js';
import { linkStages, type Downstream } from '../operators/stage.js';
import { EventIdStage } from '../operators/withEventIds.js';
import type { AuthInfo } from './auth.js';
import { encodeResourceUpdated } from './encode.js';
import type { RequestContext } from './endpoint.js';
import { InvalidOptionError } from './errors.js';
import { MAX_URI_BYTES, type ServerCapabilities } from './filter.js';
import { type Frame, mayReceive, type MessageFrame } from './frame.js';
import { HttpError } from './httpError.js';
import { type Hub, NotificationMethod } from './hub.js';
import { ErrorCode, exceedsBytes, JsonRpcError } from './jsonrpc.js';
import { milliseconds, positiveInteger } from './options.js';
import { type EventLog } from './replayBuffer.js';
import type { ResourceProvider } from './resources.js';
import type { SessionBus, SessionCommand, SessionRecord, SessionStore } from './session.js';
import type { Admission, PrincipalCap } from './principals.js';
import type { StreamSlots } from './slots.js';
import { channels, reportError } from './telemetry.js';

/** The legacy protocol revisions a session can be initialized with, newest first. */
export const LEGACY_PROTOCOL_VERSIONS: readonly string[] = Object.freeze(['2025-11-25', '2025-06-18']);

/** Options of the legacy era (DESIGN L1–L10); every duration is in milliseconds. */
export interface SessionOptions {
  /** A session with no request and no live GET stream for this long is evicted. Default 1 800 000 (30 min). */
  readonly sessionIdleTimeout: number;
  /**
   * After a session's GET stream drops, its subscriptions keep feeding the replay buffer for this
   * long, so a reconnect with `Last-Event-ID` gets what changed meanwhile. Default 60 000 (60 s).
   */
  readonly sessionGracePeriod: number;
  /** How often the prune sweep looks for idle sessions nobody touches. Default 60 000 (1 min). */
  readonly sessionPruneInterval: number;
  /** How many of a session's most recent frames are kept for `Last-Event-ID` replay. Default 100. */
  readonly replayBufferSize: number;
  /** Whether `DELETE /mcp` ends a session (204); when false it answers 405 `Allow: POST, GET`. Default true. */
  readonly allowClientSessionDelete: boolean;
  /** How long a `resources/subscribe` without a live GET stream waits for one before `-32602`; 0 = not at all. Default 1000. */
  readonly subscribeStreamWait: number;
  /**
   * The most sessions this node holds; an `initialize` beyond it gets HTTP 503 and `-32000`, so a
   * flood of `initialize` cannot exhaust memory. Default 10 000.
   */
  readonly maxSessions: number;
  /**
   * The most resource URIs one session may subscribe to (like the 1000 URIs of a listen filter);
   * one more answers `-32602` until it unsubscribes from one. Default 1000.
   */
  readonly maxSubscriptionsPerSession: number;
  /**
   * The most sessions one principal holds on this node; an `initialize` beyond it ends that
   * principal's least recently used session (its GET stream ends cleanly, its record is removed),
   * never another principal's. Default 100.
   */
  readonly maxSessionsPerPrincipal: number;
  /**
   * Milliseconds a client should wait before reconnecting its GET stream: sent as the SSE `retry:`
   * field of the priming event every GET stream opens with (DESIGN L7). Default 1000.
   */
  readonly reconnectDelay: number;
}

/** The legacy options used where none are given. */
export const DEFAULT_SESSION_OPTIONS: Readonly<SessionOptions> = Object.freeze({
  sessionIdleTimeout: 1_800_000,
  sessionGracePeriod: 60_000,
  sessionPruneInterval: 60_000,
  replayBufferSize: 100,
  allowClientSessionDelete: true,
  subscribeStreamWait: 1_000,
  maxSessions: 10_000,
  maxSubscriptionsPerSession: 1_000,
  maxSessionsPerPrincipal: 100,
  reconnectDelay: 1_000,
});

/**
 * Completes legacy options with their defaults and refuses values the library cannot use.
 * @throws InvalidOptionError naming the option.
 */
export function resolveSessionOptions(input: Partial<SessionOptions> = {}): Readonly<SessionOptions> {
  const pick = <K extends keyof SessionOptions>(key: K): unknown => input[key] ?? DEFAULT_SESSION_OPTIONS[key];
  const allow = pick('allowClientSessionDelete');
  if (typeof allow !== 'boolean') throw new InvalidOptionError('allowClientSessionDelete', 'a boolean', allow);
  const wait = pick('subscribeStreamWait');
  return Object.freeze({
    sessionIdleTimeout: milliseconds('sessionIdleTimeout', pick('sessionIdleTimeout')),
    sessionGracePeriod: milliseconds('sessionGracePeriod', pick('sessionGracePeriod')),
    sessionPruneInterval: milliseconds('sessionPruneInterval', pick('sessionPruneInterval')),
    replayBufferSize: positiveInteger('replayBufferSize', pick('replayBufferSize')),
    allowClientSessionDelete: allow,
    subscribeStreamWait: wait === 0 ? 0 : milliseconds('subscribeStreamWait', wait),
    maxSessions: positiveInteger('maxSessions', pick('maxSessions')),
    maxSubscriptionsPerSession: positiveInteger('maxSubscriptionsPerSession', pick('maxSubscriptionsPerSession')),
    maxSessionsPerPrincipal: positiveInteger('maxSessionsPerPrincipal', pick('maxSessionsPerPrincipal')),
    reconnectDelay: milliseconds('reconnectDelay', pick('reconnectDelay')),
  });
}

/** What the server says about itself in the `initialize` result. */
export interface ServerInfo {
  readonly name: string;
  readonly version: string;
  readonly [member: string]: unknown;
}

/** Everything the legacy sessions are built from (the endpoint's options, resolved). */
export interface LegacySessionsInit {
  readonly hub: Hub;
  readonly store: SessionStore;
  readonly providers: readonly ResourceProvider[];
  readonly options: Readonly<SessionOptions>;
  readonly capabilities: ServerCapabilities;
  /** Extra members merged into the advertised capabilities (e.g. `logging`, `completions`). */
  readonly extraCapabilities: Readonly<Record<string, unknown>>;
  readonly serverInfo: ServerInfo;
  readonly instructions: string | undefined;
  readonly keepAliveInterval: number;
  /** A GET stream ends (cleanly: the client reconnects and is authorized again) after this many milliseconds. */
  readonly maxStreamLifetime: number;
  readonly maxQueue: number;
  /** The byte budget of a GET stream's queue for a client that is not reading (`listenMaxQueueBytes`). */
  readonly maxQueueBytes: number;
  readonly slots: StreamSlots;
  /** The per-principal cap GET streams are admitted through, shared with listen streams (DESIGN M8). */
  readonly principals: PrincipalCap;
  readonly scheduler: SchedulerLike;
  /** The event log of a session (its ids and replay buffer): a `ReplayBuffer` in process, a shared log in a fleet. */
  readonly eventLog: (sessionId: string) => EventLog;
  /** Relays session commands between the nodes of a fleet; absent in a single process. */
  readonly bus: SessionBus | undefined;
}

/** Counts of what the legacy sessions hold on this node (for leak checks and metrics). */
export interface SessionStats {
  /** Sessions known on this node (live or within their grace period). */
  readonly sessions: number;
  /** Open GET streams. */
  readonly streams: number;
  /** Live resource subscriptions (change sources subscribed). */
  readonly subscriptions: number;
}

const RESTORE_CONCURRENCY = 8;
const NO_SCOPES: ReadonlySet<string> = new Set();
const STREAM_REQUIRED = 'open the GET SSE stream before subscribing to resources';

/** A GET stream of a session: where its live frames go, and how the server ends it. */
interface StreamHandle {
  readonly feed: Subject<Frame>;
  readonly ended: Subject<void>;
  /** Its place in the principal's cap: given back as soon as the stream is ended. */
  readonly admission: Admission;
}

/** A subscribe in progress: told why it was cancelled when something overtakes it. */
interface PendingSubscribe {
  reason: string | undefined;
}

/** A session as this node holds it: the record plus what cannot be persisted. */
export class LiveSession {
  readonly id: string;
  readonly principal: string;
  readonly protocolVersion: string;
  /** The persisted subscription list, kept in step with the store. */
  uris: string[];
  lastActivity: number;
  readonly log: EventLog;
  stream: StreamHandle | undefined;
  /** The request context of the live GET stream (whose principal remote subscribes run as). */
  streamContext: RequestContext | undefined;
  readonly live = new Map<string, Subscription>();
  readonly pending = new Map<string, PendingSubscribe>();
  listChanged: Subscription | undefined;
  grace: Subscription | undefined;
  ended = false;
  /** Emits when a GET stream attaches or the session ends. */
  readonly changed = new Subject<void>();
  /**
   * The read scopes of the principal as of its latest GET stream (empty until one opens): a
   * notification published with a scope outside them is never stamped nor written.
   */
  scopes: ReadonlySet<string> = NO_SCOPES;

  // The session's feed: every frame stamped with its next event id and kept for replay (withEventIds),
  // then written to the live stream if any. With an asynchronous log frames still come out in push
  // order; a frame the log failed to take is reported on `channels.error` and not written.
  readonly #stamp: Downstream<MessageFrame>;

  constructor(record: SessionRecord, log: EventLog) {
    this.id = record.id;
    this.principal = record.principal;
    this.protocolVersion = record.protocolVersion;
    this.uris = [...record.subscriptions];
    this.lastActivity = record.lastActivity;
    this.log = log;
    this.#stamp = linkStages([new EventIdStage(log, (error) => reportError('source', error))], {
      push: (frame: Frame) => this.stream?.feed.next(frame),
      end: noop,
      fail: (error: unknown) => reportError('source', error),
    });
  }

  /** Stamps `frame` with the session's next event id, keeps it for replay, writes it to the live stream if any. */
  push(frame: MessageFrame): void {
    if (frame.scope !== undefined && !mayReceive(frame, this.scopes)) return;
    this.#stamp.push(frame);
  }
}

/**
 * The legacy era of an endpoint (DESIGN L1–L10): sessions, their GET SSE stream with event ids
 * and replay, and `resources/subscribe`. The endpoint routes to it; it is not used on its own.
 * @internal
 */
export class LegacySessions {
  readonly #init: LegacySessionsInit;
  readonly #sessions = new Map<string, LiveSession>();
  // The sessions of each principal on this node, for maxSessionsPerPrincipal.
  readonly #byPrincipal = new Map<string, Set<LiveSession>>();
  #prune: Subscription | undefined;
  #closed = false;

  readonly #disconnect: (() => void) | undefined;

  constructor(init: LegacySessionsInit) {
    this.#init = init;
    this.#disconnect = init.bus?.connect((id, command) => this.#command(id, command));
  }

  get stats(): SessionStats {
    let streams = 0;
    let subscriptions = 0;
    for (const session of this.#sessions.values()) {
      if (session.stream !== undefined) streams++;
      subscriptions += session.live.size + (session.listChanged === undefined ? 0 : 1);
    }
    return { sessions: this.#sessions.size, streams, subscriptions };
  }

  /** Answers `initialize`: a new session and the result that advertises it (DESIGN L1). */
  async initialize(params: Readonly<Record<string, unknown>> | undefined, auth: AuthInfo): Promise<{ id: string; result: unknown }> {
    const requested = params?.protocolVersion;
    if (typeof requested !== 'string') {
      throw new JsonRpcError(ErrorCode.InvalidParams, 'initialize requires params.protocolVersion');
    }
    const protocolVersion = LEGACY_PROTOCOL_VERSIONS.includes(requested) ? requested : LEGACY_PROTOCOL_VERSIONS[0]!;
    // Fairness first: a principal at its own cap makes room among its own sessions, so that one
    // client cannot fill the server-wide cap and lock every other principal out.
    await this.#makeRoomFor(auth.principal);
    if (this.#sessions.size >= this.#init.options.maxSessions) {
      throw new HttpError(503, new JsonRpcError(ErrorCode.ServerBusy, 'server is at its session capacity (maxSessions); retry later'));
    }
    const record: SessionRecord = {
      id: randomUUID(),
      principal: auth.principal,
      protocolVersion,
      subscriptions: [],
      lastActivity: this.#init.scheduler.now(),
    };
    await this.#init.store.create(record);
    this.#adopt(record);
    const { capabilities, extraCapabilities, serverInfo, instructions } = this.#init;
    const advertised: Record<string, unknown> = { ...extraCapabilities };
    if (capabilities.tools) advertised.tools = { listChanged: true };
    if (capabilities.prompts) advertised.prompts = { listChanged: true };
    if (capabilities.resources) advertised.resources = { subscribe: true, listChanged: true };
    const result: Record<string, unknown> = { protocolVersion, capabilities: advertised, serverInfo };
    if (instructions !== undefined) result.instructions = instructions;
    return { id: record.id, result };
  }

  /** Ends `principal`'s least recently used sessions until it holds fewer than `maxSessionsPerPrincipal`. */
  async #makeRoomFor(principal: string): Promise<void> {
    const cap = this.#init.options.maxSessionsPerPrincipal;
    const own = this.#byPrincipal.get(principal);
    while (own !== undefined && own.size >= cap) {
      let oldest: LiveSession | undefined;
      // Insertion order breaks ties: the earlier session of equal activity goes first.
      for (const session of own) if (oldest === undefined || session.lastActivity < oldest.lastActivity) oldest = session;
      own.delete(oldest!);
      await this.end(oldest!);
    }
  }

  /**
   * The session a request names, after checking it exists, is not idle past its timeout and
   * belongs to the caller; counts the request as activity (DESIGN L10).
   * @throws HttpError 404 for an unknown or evicted session, 403 for another principal's.
   */
  async resolve(id: string, auth: AuthInfo): Promise<LiveSession> {
    const now = this.#init.scheduler.now();
    let session = this.#sessions.get(id);
    if (session === undefined || session.stream === undefined) {
      // The record is the truth for a session whose stream is not here (another node sharing the
      // store may have served it since).
      const record = await this.#init.store.get(id);
      if (record === undefined) {
        if (session !== undefined) this.#forget(session);
        throw notFound();
      }
      session = this.#sessions.get(id) ?? this.#adopt(record);
      if (session.stream === undefined) {
        session.uris = [...record.subscriptions];
        session.lastActivity = record.lastActivity;
        if (record.streamNode !== undefined && record.streamNode !== null && record.streamNode !== this.#init.bus?.nodeId) {
          session.lastActivity = now; // a live stream elsewhere is activity
        }
      }
    }
    if (session.stream === undefined && now - session.lastActivity > this.#init.options.sessionIdleTimeout) {
      await this.end(session);
      throw notFound();
    }
    if (session.principal !== auth.principal) {
      throw new HttpError(403, new JsonRpcError(ErrorCode.InvalidRequest, 'this session belongs to another principal'));
    }
    await this.#touch(session, now);
    return session;
  }

  /**
   * Opens the session's GET stream (DESIGN L7–L9): replaces a live one, replays after
   * `lastEventId`, restores the persisted subscriptions at most 8 at a time.
   * @returns the stream's `open`/`abandon` pair, or `undefined` when the server is full or closed.
   */
  stream(
    session: LiveSession,
    lastEventId: string | undefined,
    context: RequestContext,
    shutdown$: Observable<void>,
  ): { open: (demand$: Observable<boolean>) => Observable<Frame>; abandon: () => void } | undefined {
    const slot = this.#closed || session.ended ? undefined : this.#init.slots.tryAcquire();
    if (slot === undefined) return undefined;
    const { scheduler, keepAliveInterval, maxQueue, maxQueueBytes, maxStreamLifetime } = this.#init;
    const open = (demand$: Observable<boolean>) =>
      defer(() => {
        const expiry = context.auth.expiresAt;
        // A credential already expired gets nothing, not even the replay.
        if (session.ended || this.#closed || (expiry !== undefined && expiry <= scheduler.now())) {
          slot.release();
          return EMPTY;
        }
        // The GET this one replaces leaves the principal's count before this one is admitted.
        this.#endStream(session);
        // DESIGN M8 for GET streams too: over the cap, the principal's oldest stream of either
        // kind is superseded (a GET one ends cleanly, and its client reconnects).
        const admission = this.#init.principals.admit(context.auth.principal);
        const handle: StreamHandle = { feed: new Subject<Frame>(), ended: new Subject<void>(), admission };
        session.stream = handle;
        session.streamContext = context;
        session.scopes = context.auth.scopes;
        session.changed.next();
        this.#claim(session);
        session.grace?.unsubscribe();
        session.grace = undefined;
        this.#watchListChanged(session);
        // Restore what is on the record but not live (after a grace period ran out, or on another node).
        const toRestore = { [Symbol.iterator]: () => session.uris.filter((uri) => !session.live.has(uri))[Symbol.iterator]() };
        return handle.feed.pipe(
          // Like a listen, a GET stream lives at most maxStreamLifetime: its client reconnects (with
          // Last-Event-ID) and its subscriptions are authorized again on restore.
          sessionPipeline({
            lastEventId,
            log: session.log,
            reconnectDelay: this.#init.options.reconnectDelay,
            keepAliveInterval,
            maxStreamLifetime,
            expiresAt: context.auth.expiresAt,
            supersede$: admission.superseded$,
            shutdown$,
            queue: { notifications: maxQueue, bytes: maxQueueBytes },
            demand$,
            onDrop,
            restore: {
              uris: toRestore,
              subscribe: (uri) => this.#restore(session, uri, context, handle),
              concurrency: RESTORE_CONCURRENCY,
              onError: (uri, error) => reportError('source', new RestoreError(uri, error)),
            },
            onClose: () => this.#endStream(session, handle),
            scheduler,
          }),
          finalize(() => {
            admission.release();
            slot.release();
            this.#detach(session, handle);
          }),
        );
      });
    return { open, abandon: () => slot.release() };
  }

  /** `resources/subscribe` (DESIGN L2–L5): `{}` or a JSON-RPC error, never an HTTP error. */
  async subscribe(session: LiveSession, params: Readonly<Record<string, unknown>> | undefined, context: RequestContext): Promise<object> {
    const uri = requireUri('resources/subscribe', params);
    if (session.stream === undefined && this.#init.bus !== undefined) {
      const record = await this.#init.store.get(session.id);
      const holder = record?.streamNode;
      if (holder !== undefined && holder !== null && holder !== this.#init.bus.nodeId) return this.#subscribeRemote(session, uri, context);
    }
    const wait = this.#init.options.subscribeStreamWait;
    if (session.stream === undefined && wait > 0 && !session.ended) {
      await firstValueFrom(race(session.changed, timer(wait, this.#init.scheduler)), { defaultValue: undefined });
    }
    const stream = session.stream;
    if (stream === undefined) throw new JsonRpcError(ErrorCode.InvalidParams, STREAM_REQUIRED);
    this.#checkCap(session, uri);
    const outcome = await this.#establish(session, uri, context, stream);
    if (outcome !== undefined) throw outcome.error;
    return {};
  }

  /** `resources/unsubscribe` (DESIGN L4): `{}`, also for a URI that was never subscribed. */
  async unsubscribe(session: LiveSession, params: Readonly<Record<string, unknown>> | undefined): Promise<object> {
    const uri = requireUri('resources/unsubscribe', params);
    const pending = session.pending.get(uri);
    if (pending !== undefined) {
      pending.reason = 'resources/unsubscribe arrived';
      session.pending.delete(uri);
    }
    session.live.get(uri)?.unsubscribe();
    session.live.delete(uri);
    if (session.uris.includes(uri)) {
      session.uris = session.uris.filter((kept) => kept !== uri);
      await this.#init.store.update(session.id, { subscriptions: session.uris });
    }
    if (session.stream === undefined) await this.#init.bus?.publish(session.id, { kind: 'unsubscribe', uri });
    return {};
  }

  /**
   * A subscribe served on this node for a session whose GET stream is on another: checked here
   * (the providers are the same on every node), persisted, and handed to the holder to establish.
   */
  async #subscribeRemote(session: LiveSession, uri: string, context: RequestContext): Promise<object> {
    this.#checkCap(session, uri);
    let provider: ResourceProvider | undefined;
    let readable = false;
    try {
      provider = await this.#provider(uri, context);
      readable = provider !== undefined && (await provider.canRead(uri, context));
    } catch (error) {
      reportError('source', error);
      throw new JsonRpcError(ErrorCode.InternalError, `failed to subscribe: ${uri}`);
    }
    if (provider === undefined) throw new JsonRpcError(ErrorCode.InvalidParams, `resource is not subscribable: ${uri}`);
    if (!readable) throw new JsonRpcError(ErrorCode.InvalidParams, `permission denied: ${uri}`);
    if (!session.uris.includes(uri)) {
      session.uris = [...session.uris, uri];
      await this.#init.store.update(session.id, { subscriptions: session.uris });
    }
    await this.#init.bus!.publish(session.id, { kind: 'subscribe', uri });
    return {};
  }

  #checkCap(session: LiveSession, uri: string): void {
    const cap = this.#init.options.maxSubscriptionsPerSession;
    if (!session.uris.includes(uri) && session.uris.length >= cap) {
      throw new JsonRpcError(ErrorCode.InvalidParams, `a session can hold at most ${cap} resource subscriptions; unsubscribe from one first`);
    }
  }

  async #provider(uri: string, context: RequestContext): Promise<ResourceProvider | undefined> {
    for (const candidate of this.#init.providers) if (await candidate.subscribable(uri, context)) return candidate;
    return undefined;
  }

  /** This node now holds the session's GET stream: recorded, and every other node lets go of it. */
  #claim(session: LiveSession): void {
    const bus = this.#init.bus;
    if (bus === undefined) return;
    const claimed = async () => {
      await this.#init.store.update(session.id, { streamNode: bus.nodeId });
      await bus.publish(session.id, { kind: 'claimed', node: bus.nodeId });
    };
    claimed().catch((error: unknown) => reportError('source', error));
  }

  /** A command from another node of the fleet. */
  #command(id: string, command: SessionCommand): void {
    const session = this.#sessions.get(id);
    if (session === undefined) return;
    switch (command.kind) {
      case 'claimed':
      case 'ended':
        // The stream (and with it the live subscriptions) is elsewhere now, or the session is gone:
        // forget it here; a later request reads the record again.
        this.#forget(session);
        return;
      case 'subscribe': {
        if (!session.uris.includes(command.uri)) session.uris = [...session.uris, command.uri];
        const stream = session.stream;
        const context = session.streamContext;
        if (stream === undefined || context === undefined) return;
        this.#restore(session, command.uri, context, stream).catch((error: unknown) => reportError('source', new RestoreError(command.uri, error)));
        return;
      }
      case 'unsubscribe': {
        session.uris = session.uris.filter((kept) => kept !== command.uri);
        const pending = session.pending.get(command.uri);
        if (pending !== undefined) pending.reason = 'resources/unsubscribe arrived';
        session.live.get(command.uri)?.unsubscribe();
        session.live.delete(command.uri);
        return;
      }
    }
  }

  /** Ends a session: its stream, its subscriptions and its record (DELETE, eviction). Idempotent. */
  async end(session: LiveSession): Promise<void> {
    if (!session.ended) this.#forget(session);
    await this.#init.store.delete(session.id);
    await this.#init.bus?.publish(session.id, { kind: 'ended' });
  }

  /** Ends every GET stream (server shutdown) and stops the prune sweep; sessions stay on record. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#stopPrune();
    this.#disconnect?.();
    for (const session of this.#sessions.values()) {
      this.#endStream(session);
      this.#sleep(session);
    }
  }

  /** One prune sweep now (it also runs every `sessionPruneInterval`): evicts idle sessions. */
  async prune(): Promise<void> {
    const { scheduler, store, options } = this.#init;
    const now = scheduler.now();
    const cutoff = now - options.sessionIdleTimeout;
    for (const session of [...this.#sessions.values()]) {
      if (session.stream !== undefined) {
        await this.#touch(session, now);
        continue;
      }
      // Another node sharing the store may have served the session since: judge by the record.
      const record = await store.get(session.id);
      if (record === undefined) {
        this.#forget(session);
        continue;
      }
      const holder = record.streamNode;
      if (holder !== undefined && holder !== null && holder !== this.#init.bus?.nodeId) continue;
      session.lastActivity = Math.max(session.lastActivity, record.lastActivity);
      if (session.lastActivity < cutoff) await this.end(session);
    }
    for (const id of await store.idleSince(cutoff)) {
      if (!this.#sessions.has(id)) await store.delete(id);
    }
  }

  /** Ends what this node holds of a session (stream, subscriptions, timers); the record is left alone. */
  #forget(session: LiveSession): void {
    session.ended = true;
    session.changed.next();
    session.changed.complete();
    this.#sleep(session);
    this.#endStream(session);
    if (this.#sessions.get(session.id) === session) this.#sessions.delete(session.id);
    const own = this.#byPrincipal.get(session.principal);
    if (own !== undefined && own.delete(session) && own.size === 0) this.#byPrincipal.delete(session.principal);
    if (this.#sessions.size === 0) this.#stopPrune();
  }

  #adopt(record: SessionRecord): LiveSession {
    const session = new LiveSession(record, this.#init.eventLog(record.id));
    this.#sessions.set(session.id, session);
    let own = this.#byPrincipal.get(session.principal);
    if (own === undefined) this.#byPrincipal.set(session.principal, (own = new Set()));
    own.add(session);
    if (this.#prune === undefined && !this.#closed) {
      const every = this.#init.options.sessionPruneInterval;
      this.#prune = timer(every, every, this.#init.scheduler).subscribe(() => {
        this.prune().catch((error: unknown) => reportError('source', error));
      });
    }
    return session;
  }

  #stopPrune(): void {
    this.#prune?.unsubscribe();
    this.#prune = undefined;
  }

  async #touch(session: LiveSession, now: number): Promise<void> {
    session.lastActivity = now;
    await this.#init.store.update(session.id, { lastActivity: now });
  }

  /** Ends the session's stream (only `handle` when given): its pipeline writes what it holds and completes. */
  #endStream(session: LiveSession, handle: StreamHandle | undefined = session.stream): void {
    if (handle === undefined || session.stream !== handle) return;
    session.stream = undefined;
    handle.admission.release();
    handle.ended.next();
    handle.ended.complete();
    handle.feed.complete();
  }

  /** A stream's pipeline ended (any reason): the session waits for a reconnect for the grace period. */
  #detach(session: LiveSession, handle: StreamHandle): void {
    this.#endStream(session, handle);
    if (session.ended || this.#closed || session.stream !== undefined) return;
    session.streamContext = undefined;
    session.lastActivity = this.#init.scheduler.now();
    const changes = this.#init.bus === undefined ? { lastActivity: session.lastActivity } : { lastActivity: session.lastActivity, streamNode: null };
    Promise.resolve(this.#init.store.update(session.id, changes)).catch((error: unknown) => reportError('source', error));
    session.grace?.unsubscribe();
    session.grace = timer(this.#init.options.sessionGracePeriod, this.#init.scheduler).subscribe(() => {
      session.grace = undefined;
      if (session.stream === undefined) this.#sleep(session);
    });
  }

  /** Releases the session's live subscriptions (they stay on the record, restored on the next GET). */
  #sleep(session: LiveSession): void {
    session.grace?.unsubscribe();
    session.grace = undefined;
    session.listChanged?.unsubscribe();
    session.listChanged = undefined;
    for (const subscription of session.live.values()) subscription.unsubscribe();
    session.live.clear();
    for (const pending of session.pending.values()) pending.reason ??= 'the GET stream closed';
    session.pending.clear();
  }

  #watchListChanged(session: LiveSession): void {
    if (session.listChanged !== undefined) return;
    const { hub, capabilities } = this.#init;
    const kinds: ('tools' | 'prompts' | 'resources')[] = [];
    if (capabilities.tools) kinds.push('tools');
    if (capabilities.prompts) kinds.push('prompts');
    if (capabilities.resources) kinds.push('resources');
    if (kinds.length === 0) return;
    // One subscriber registered on each topic directly (per session, so kept small): topics never complete.
    const subscriber = new Subscriber<MessageFrame>({ next: (frame: MessageFrame) => session.push(frame), error: noop, complete: noop });
    for (const kind of kinds) hub.attach(kind, undefined, subscriber);
    session.listChanged = new Subscription(() => {
      for (const kind of kinds) hub.detach(kind, undefined, subscriber);
      subscriber.unsubscribe();
    });
  }

  async #restore(session: LiveSession, uri: string, context: RequestContext, stream: StreamHandle): Promise<void> {
    const outcome = await this.#establish(session, uri, context, stream);
    if (outcome === undefined) return;
    if (outcome.drop) {
      session.uris = session.uris.filter((kept) => kept !== uri);
      await this.#init.store.update(session.id, { subscriptions: session.uris });
      return;
    }
    throw outcome.error;
  }

  /**
   * Subscribes `uri`'s change source into the session's feed. Returns nothing on success, else the
   * error and whether the URI should leave the record (no longer subscribable or readable).
   */
  async #establish(
    session: LiveSession,
    uri: string,
    context: RequestContext,
    stream: StreamHandle,
  ): Promise<{ readonly error: JsonRpcError; readonly drop: boolean } | undefined> {
    const pending: PendingSubscribe = { reason: undefined };
    const overtaken = session.pending.get(uri);
    if (overtaken !== undefined) overtaken.reason = 'a newer resources/subscribe for the URI arrived';
    session.pending.set(uri, pending);
    const cancelled = () => {
      const reason = pending.reason ?? (session.stream !== stream ? 'the GET stream closed' : undefined);
      return reason === undefined
        ? undefined
        : { error: new JsonRpcError(ErrorCode.InvalidParams, `resources/subscribe for ${uri} was cancelled: ${reason}`), drop: false };
    };
    const failed = (error: unknown) => {
      reportError('source', error);
      return { error: new JsonRpcError(ErrorCode.InternalError, `failed to subscribe: ${uri}`), drop: false };
    };
    try {
      let provider: ResourceProvider | undefined;
      try {
        provider = await this.#provider(uri, context);
      } catch (error) {
        return cancelled() ?? failed(error);
      }
      const early = cancelled();
      if (early !== undefined) return early;
      if (provider === undefined) {
        return { error: new JsonRpcError(ErrorCode.InvalidParams, `resource is not subscribable: ${uri}`), drop: true };
      }
      let readable: boolean;
      try {
        readable = await provider.canRead(uri, context);
      } catch (error) {
        return cancelled() ?? failed(error);
      }
      const late = cancelled();
      if (late !== undefined) return late;
      if (!readable) return { error: new JsonRpcError(ErrorCode.InvalidParams, `permission denied: ${uri}`), drop: true };

      const frame = resourceUpdatedFrame(uri);
      let subscribing = true;
      let emittedEarly = false;
      let failure: { error: unknown } | undefined;
      let subscription: Subscription | undefined;
      const forget = () => {
        if (subscription !== undefined && session.live.get(uri) === subscription) session.live.delete(uri);
      };
      try {
        subscription = from(provider.changes(uri, context)).subscribe({
          // A value emitted while subscribing is written once the subscribe has succeeded.
          next: (value: unknown) => {
            // A scoped hub publish (hubResources) is heard only by principals holding its scope.
            if (!mayReceiveValue(value, context.auth.scopes)) return;
            if (subscribing) emittedEarly = true;
            else session.push(frame);
          },
          error: (error: unknown) => {
            if (subscribing) failure = { error };
            else reportError('source', error);
            forget();
          },
          complete: forget,
        });
      } catch (error) {
        failure = { error };
      }
      subscribing = false;
      if (failure !== undefined) {
        subscription?.unsubscribe();
        return failed(failure.error);
      }
      if (emittedEarly) session.push(frame);
      if (subscription === undefined || subscription.closed) {
        // A source that completed at once has nothing to say later: subscribed, and that is all.
      } else {
        session.live.get(uri)?.unsubscribe();
        session.live.set(uri, subscription);
      }
      if (!session.uris.includes(uri)) {
        session.uris = [...session.uris, uri];
        await this.#init.store.update(session.id, { subscriptions: session.uris });
      }
      return undefined;
    } finally {
      if (session.pending.get(uri) === pending) session.pending.delete(uri);
    }
  }
}

/** A persisted subscription that could not be restored on a GET (it stays on the record). */
export class RestoreError extends Error {
  override readonly name = 'RestoreError';
  constructor(
    readonly uri: string,
    override readonly cause: unknown,
  ) {
    super(`failed to restore the subscription to ${uri}; it is retried on the next GET`);
  }
}

function notFound(): HttpError {
  return new HttpError(404, new JsonRpcError(-32001, 'session not found: initialize a new session'));
}

function requireUri(method: string, params: Readonly<Record<string, unknown>> | undefined): string {
  const uri = params?.uri;
  if (typeof uri !== 'string') throw new JsonRpcError(ErrorCode.InvalidParams, `${method} requires params.uri`);
  if (exceedsBytes(uri, MAX_URI_BYTES)) throw new JsonRpcError(ErrorCode.InvalidParams, `${method} params.uri must be at most ${MAX_URI_BYTES} bytes`);
  return uri;
}

function resourceUpdatedFrame(uri: string): MessageFrame {
  return Object.freeze({
    type: 'message',
    message: Object.freeze({ jsonrpc: '2.0', method: NotificationMethod.resource, params: Object.freeze({ uri }) }),
    priority: 'notification',
    topic: 'resource',
    coalesceKey: `${NotificationMethod.resource} ${uri}`,
    encoded: encodeResourceUpdated(uri),
  });
}

/** A provider's change value: a scoped hub frame only for principals holding its scope; anything else for all. */
function mayReceiveValue(value: unknown, scopes: ReadonlySet<string>): boolean {
  const scope = (value as { scope?: unknown } | null)?.scope;
  return (value as { type?: unknown } | null)?.type !== 'message' || typeof scope !== 'string' || scopes.has(scope);
}

function onDrop(frame: MessageFrame, queueLength: number, queueBytes: number): void {
  if (channels.drop.hasSubscribers) channels.drop.publish({ queueLength, queueBytes, topic: frame.topic ?? 'resource' });
}
