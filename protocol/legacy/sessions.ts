import { randomUUID } from 'node:crypto';
import { firstValueFrom, Observable, race, type Subscription, timer } from 'rxjs';
import { type AuthInfo, NO_SCOPES } from '../../lib/auth.js';
import type { EndpointRequest, RequestContext } from '../../lib/context.js';
import type { CloseReason } from '../../lib/frame.js';
import { Refusal } from '../../lib/refusal.js';
import { ErrorCode, JsonRpcError } from '../../lib/jsonrpc.js';
import type { SessionCommand, SessionRecord } from '../../lib/session.js';
import { channels, reportError, type SessionEndReason, type StopReason } from '../../lib/telemetry.js';
import { agreedLegacyVersion, initializeResult } from '../discover.js';
import { sessionFilterInfo, type SessionInfo, type StreamsOptions } from '../inspect.js';
import { capacityRefusal, shutdownRefusal } from '../answer.js';
import { type GetStreamParts, keepForGrace, legacyListFilters, openGetStream, type StreamOwner } from './getStream.js';
import { endStream, ListChanges, type ListTopic, LiveSession } from './liveSession.js';
import { sessionToDisplace } from './sessionCap.js';
import type { LegacySessionsInit } from './sessionOptions.js';
import { restore, RestoreError, type StreamWaits, subscribe, unsubscribe } from './subscribe.js';

/**
 * How long a stopping node keeps the sessions it hands over live, waiting for another node to say
 * it took them up (`kept`), in milliseconds: a take-up is a record update and a subscribe, a few
 * milliseconds in a fleet; a node that says nothing by then is not coming.
 */
const HANDOVER_WAIT = 2_000;

/** How many subscriptions a node taking a session up establishes at a time (as a restore, DESIGN L8). */
const TAKE_UP_CONCURRENCY = 8;

/** Counts of what the legacy sessions hold on this node (for leak checks and metrics). */
export interface SessionStats {
  /** Sessions known on this node (live or within their grace period). */
  readonly sessions: number;
  /** Open GET streams. */
  readonly streams: number;
  /** Live resource subscriptions (change sources subscribed). */
  readonly subscriptions: number;
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
  #closing: Promise<void> | undefined;
  // The subscribes waiting for a GET stream, by session id (see StreamWaits).
  readonly #waits = new Map<string, Set<() => void>>();
  // The sessions a stopping node handed over, each until another node keeps it (or it ends here).
  readonly #handing = new Map<string, () => void>();
  // The sessions whose record, as last read here, placed their GET stream on another node.
  readonly #streamElsewhere = new Set<string>();

  readonly #disconnect: (() => void) | undefined;
  readonly #owner: StreamOwner;
  readonly #lists: ListChanges;

  constructor(init: LegacySessionsInit) {
    this.#init = init;
    const { capabilities } = init;
    const listTopics: ListTopic[] = [];
    if (capabilities.tools) listTopics.push('tools');
    if (capabilities.prompts) listTopics.push('prompts');
    if (capabilities.resources) listTopics.push('resources');
    this.#lists = new ListChanges(init.hub, Object.freeze(listTopics), this.#sessions);
    this.#owner = {
      init,
      lists: this.#lists,
      isClosed: () => this.#closed,
      opening: new Map(),
      attached: (session) => this.#wake(session.id),
      movedHere: (session) => this.#movedHere(session),
    };
    this.#disconnect = init.bus?.connect((id, command) => this.#command(id, command));
    this.#waitsView = { current: (id) => this.#sessions.get(id), changed: (id) => this.#changed(id) };
  }

  readonly #waitsView: StreamWaits;

  /** Emits each time something happens to session `id` here: a GET stream attached, a command about it arrived. */
  #changed(id: string): Observable<void> {
    return new Observable<void>((subscriber) => {
      let waiting = this.#waits.get(id);
      if (waiting === undefined) this.#waits.set(id, (waiting = new Set()));
      const wake = () => subscriber.next();
      waiting.add(wake);
      return () => {
        waiting.delete(wake);
        if (waiting.size === 0 && this.#waits.get(id) === waiting) this.#waits.delete(id);
      };
    });
  }

  /**
   * A GET stream opened here for `session`: true when its record still placed the stream on another
   * node, which never said the stream ended there (a node clears it as its stream drops). That node
   * may have died with it, unnoticed yet (its heartbeat has not expired, so nobody took the session
   * up): the changes since reached no log, and the stream sends the re-read signal once its
   * subscriptions are live. (If the other node merely had not noticed its client leave, it logged
   * everything, and the re-read is one more notification than needed.)
   */
  #movedHere(session: LiveSession): boolean {
    return this.#streamElsewhere.delete(session.id);
  }

  #wake(id: string): void {
    const waiting = this.#waits.get(id);
    if (waiting !== undefined) for (const wake of [...waiting]) wake();
  }

  get stats(): SessionStats {
    let streams = 0;
    let subscriptions = 0;
    for (const session of this.#sessions.values()) {
      if (session.stream !== undefined) streams++;
      subscriptions += session.live.size + (session.listening ? 1 : 0);
    }
    return { sessions: this.#sessions.size, streams, subscriptions };
  }

  /**
   * Answers `initialize`: a new session and the result that advertises it (DESIGN L1).
   * @throws Refusal `busy` at `maxSessions` (with its retry time) or once closed (shutting down).
   */
  async initialize(params: Readonly<Record<string, unknown>> | undefined, auth: AuthInfo): Promise<{ id: string; result: unknown }> {
    const protocolVersion = agreedLegacyVersion(params);
    if (this.#closed) throw shutdownRefusal();
    // Fairness first: a principal at its own cap makes room among its own sessions, so that one
    // client cannot fill the server-wide cap and lock every other principal out.
    await this.#makeRoomFor(auth.principal);
    if (this.#sessions.size >= this.#init.options.maxSessions) throw capacityRefusal('session', this.#init.capacityRetryAfter);
    const record: SessionRecord = {
      id: randomUUID(),
      principal: this.#principal(auth.principal),
      protocolVersion,
      subscriptions: [],
      lastActivity: this.#init.scheduler.now(),
    };
    await this.#init.store.create(record);
    this.#adopt(record);
    if (channels.sessionCreated.hasSubscribers) channels.sessionCreated.publish({ protocolVersion });
    const { capabilities, extraCapabilities, serverInfo, instructions } = this.#init;
    return { id: record.id, result: initializeResult(protocolVersion, capabilities, extraCapabilities, serverInfo, instructions) };
  }

  /**
   * `principal` as the sessions of that principal on this node already hold it: one string for all
   * of them, not one per `initialize` (an anonymous principal is built from the request's address).
   */
  #principal(principal: string): string {
    const own = this.#byPrincipal.get(principal);
    if (own === undefined) return principal;
    for (const session of own) return session.principal;
    return principal;
  }

  /** Ends `principal`'s least recently used sessions until it holds fewer than `maxSessionsPerPrincipal`. */
  async #makeRoomFor(principal: string): Promise<void> {
    const cap = this.#init.options.maxSessionsPerPrincipal;
    const own = this.#byPrincipal.get(principal);
    for (let oldest; (oldest = sessionToDisplace(own, cap, lastActivityOf)) !== undefined; ) {
      own!.delete(oldest);
      await this.end(oldest, 'displaced');
    }
  }

  /**
   * The session a request names, after checking it exists, is not idle past its timeout and
   * belongs to the caller; counts the request as activity (DESIGN L10).
   * @throws Refusal `unknown-session` for an unknown or evicted session, `forbidden` for another principal's.
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
        session.uris = record.subscriptions;
        session.lastActivity = record.lastActivity;
        const elsewhere = this.#init.placement.heldElsewhere(record);
        if (elsewhere) session.lastActivity = now; // a live stream elsewhere is activity
        // A GET here now takes over a stream the record still places on another node: see #movedHere.
        if (elsewhere) this.#streamElsewhere.add(id);
        else this.#streamElsewhere.delete(id);
      }
    }
    if (session.stream === undefined && now - session.lastActivity > this.#init.options.sessionIdleTimeout) {
      await this.end(session, 'idle');
      throw notFound();
    }
    if (session.principal !== auth.principal) {
      throw new Refusal('forbidden', new JsonRpcError(ErrorCode.InvalidRequest, 'this session belongs to another principal'));
    }
    await this.#touch(session, now);
    return session;
  }

  /**
   * Opens the session's GET stream (DESIGN L7–L9): replaces a live one, replays after
   * `lastEventId`, restores the persisted subscriptions at most 8 at a time.
   * @returns the stream's `open`/`abandon` pair, or `undefined` when the server is full or closed
   *   (a Promise of them when the slots are shared with other processes: `SharedSlots`).
   */
  stream(
    session: LiveSession,
    lastEventId: string | undefined,
    context: RequestContext,
    shutdown$: Observable<void>,
  ): GetStreamParts | undefined | Promise<GetStreamParts | undefined> {
    return openGetStream(this.#owner, session, lastEventId, context, shutdown$);
  }

  /** `resources/subscribe` (DESIGN L2–L5): `{}` or a JSON-RPC error, never an HTTP error. */
  subscribe(session: LiveSession, params: Readonly<Record<string, unknown>> | undefined, context: RequestContext): Promise<object> {
    return subscribe(this.#init, this.#waitsView, session, params, context);
  }

  /** `resources/unsubscribe` (DESIGN L4): `{}`, also for a URI that was never subscribed. */
  unsubscribe(session: LiveSession, params: Readonly<Record<string, unknown>> | undefined): Promise<object> {
    return unsubscribe(this.#init, session, params);
  }

  /** A command from another node of the fleet. */
  #command(id: string, command: SessionCommand): void {
    switch (command.kind) {
      case 'revoke':
        void this.#revokeHere(command.principal, command.reason).then(({ failure }) => {
          if (failure !== undefined) reportError('source', failure.cause);
        });
        return;
      case 'orphaned':
        this.#takeUp(id, command.node, command.died).catch((error: unknown) => reportError('source', error));
        return;
      case 'left':
        this.#takeUpFrom(command.node).catch((error: unknown) => reportError('source', error));
        return;
    }
    this.#heard(id, command);
    this.#wake(id);
  }

  /** A command about one session this node may hold. */
  #heard(id: string, command: SessionCommand & { kind: 'claimed' | 'ended' | 'kept' | 'subscribe' | 'unsubscribe' }): void {
    const session = this.#sessions.get(id);
    if (session === undefined) return;
    switch (command.kind) {
      case 'claimed':
      case 'ended':
        // The stream (and with it the live subscriptions) is elsewhere now, or the session is gone:
        // forget it here; a later request reads the record again.
        this.#forget(session, command.kind === 'claimed' ? 'replaced' : 'session_ended');
        return;
      case 'kept':
        // Another node took the session up (this one stopped, or both tried): a node holding its
        // GET stream keeps it (the taker lets go at that stream's claim).
        if (session.stream === undefined) this.#forget(session, 'replaced');
        return;
      case 'subscribe': {
        session.add(command.uri);
        const stream = session.stream;
        if (stream?.context === undefined) return;
        restore(this.#init, session, command.uri, stream, stream.context).catch((error: unknown) => reportError('source', new RestoreError(command.uri, error)));
        return;
      }
      case 'unsubscribe': {
        session.unsubscribeUri(command.uri);
        return;
      }
    }
  }

  /**
   * Takes session `id` up from `from`, its keeper that stops (`died` false: it keeps the session live
   * until this node says `kept`) or died (true): when this node wins it ({@link Placement.takeUp}),
   * it subscribes the record's URIs (with the read scopes of the session's latest GET) and its list
   * changes into the session's log, like a grace period here (`keepForGrace`), until a GET claims
   * the session anywhere. After a death it first logs the re-read signal: changes made between the
   * death and now reached no log.
   */
  async #takeUp(id: string, from: string, died: boolean): Promise<void> {
    const { placement, store, access } = this.#init;
    if (this.#closed || this.#sessions.get(id)?.stream !== undefined || from === placement.nodeId) return;
    if (!(await placement.takeUp(id, from))) return;
    const record = await store.get(id);
    if (record === undefined) return;
    if (this.#closed) {
      // Stopping since: offered to the others again (a reaper takes it up if nobody does).
      void placement.handOver([id]);
      return;
    }
    const session = this.#sessions.get(id) ?? this.#adopt(record);
    if (session.stream !== undefined || session.ended) return;
    session.uris = record.subscriptions;
    session.lastActivity = this.#init.scheduler.now();
    session.scopes = record.scopes === undefined || record.scopes.length === 0 ? NO_SCOPES : new Set(record.scopes);
    keepForGrace(this.#owner, session);
    const context = keeperContext(record);
    const moved = () => (session.ended || session.stream !== undefined ? 'the session moved' : undefined);
    const uris = record.subscriptions;
    for (let i = 0; i < uris.length && moved() === undefined; i += TAKE_UP_CONCURRENCY) {
      await Promise.all(
        uris.slice(i, i + TAKE_UP_CONCURRENCY).map(async (uri) => {
          const outcome = await session.establish(uri, context, access, moved);
          if (outcome !== undefined && !outcome.drop && moved() === undefined) reportError('source', new RestoreError(uri, outcome.error));
        }),
      );
    }
    if (moved() !== undefined) return;
    placement.kept(id);
    if (died) session.reread(this.#lists);
  }

  /** Node `node` of the fleet died (a `left`, from this node's bus): its sessions are taken up here. */
  async #takeUpFrom(node: string): Promise<void> {
    if (this.#closed) return;
    const kept = await this.#init.placement.keptBy(node);
    await Promise.all(kept.map(({ id, keeper }) => this.#takeUp(id, keeper, true).catch((error: unknown) => reportError('source', error))));
  }

  /**
   * Ends a session: its stream, its subscriptions and its record (DELETE, eviction, revoke).
   * Idempotent.
   * @param reason why, for `channels.sessionEnded`; defaults to `deleted` (its client's `DELETE`).
   * @param streamReason why its GET stream stops, for `channels.stop`; defaults to `session_ended`.
   */
  async end(session: LiveSession, reason: SessionEndReason = 'deleted', streamReason: StopReason = 'session_ended'): Promise<void> {
    if (!session.ended) {
      this.#forget(session, streamReason);
      if (channels.sessionEnded.hasSubscribers) channels.sessionEnded.publish({ protocolVersion: session.protocolVersion, reason });
    }
    await this.#init.store.delete(session.id);
    await this.#init.bus?.publish(session.id, { kind: 'ended' });
  }

  /**
   * Ends every session of `principal` on this node (`end` with reason `revoked`, their GET streams
   * stopping with `reason`) and tells the other nodes of a fleet to do the same with theirs.
   * @returns how many sessions this node ended, and what the session bus threw when it could not
   *   tell the fleet (`relayFailure`; this node's are ended by then).
   */
  async revoke(principal: string, reason: CloseReason): Promise<{ readonly sessions: number; readonly relayFailure?: { readonly cause: unknown } }> {
    const relayed = settle(() => this.#init.bus?.publish('', { kind: 'revoke', principal, reason }));
    const { sessions, failure } = await this.#revokeHere(principal, reason);
    const relayFailure = failure ?? (await relayed);
    return relayFailure === undefined ? { sessions } : { sessions, relayFailure };
  }

  /**
   * Ends this node's sessions of `principal`: at once what the node holds (streams, subscriptions),
   * then their records; `failure` when a record could not be removed (the store is unreachable).
   */
  async #revokeHere(principal: string, reason: CloseReason): Promise<{ readonly sessions: number; readonly failure?: { readonly cause: unknown } }> {
    // A channel is a session too (after its initialize), whose credential nothing would check again.
    const channels = this.#init.channels?.revoke(principal, reason) ?? 0;
    const own = this.#byPrincipal.get(principal);
    if (own === undefined) return { sessions: channels };
    const sessions = [...own];
    const removals = await Promise.all(sessions.map((session) => settle(() => this.end(session, 'revoked', reason))));
    const failure = removals.find((removal) => removal !== undefined);
    const count = sessions.length + channels;
    return failure === undefined ? { sessions: count } : { sessions: count, failure };
  }

  /**
   * Ends the session `id` held on this node as a revoke does (`closeStream`): its GET stream stops
   * with `reason`, its record is removed. False when this node holds no such session.
   */
  async endById(id: string, reason: CloseReason): Promise<boolean> {
    const session = this.#sessions.get(id);
    if (session === undefined || session.ended) return false;
    await this.end(session, 'revoked', reason);
    return true;
  }

  /** One entry per session held on this node, in the order they were adopted (see `McpEndpoint.streams`). */
  snapshot(options: StreamsOptions): SessionInfo[] {
    const lists = legacyListFilters(this.#lists.topics);
    const infos: SessionInfo[] = [];
    for (const session of this.#sessions.values()) {
      const stream = session.stream;
      const queue = stream?.queue;
      infos.push({
        era: 'legacy',
        id: session.id,
        principal: session.principal,
        protocolVersion: session.protocolVersion,
        lastActivity: session.lastActivity,
        streamOpen: stream !== undefined,
        openedAt: stream?.openedAt ?? null,
        filter: sessionFilterInfo(lists, session.uris, options),
        queuedFrames: queue?.queuedFrames ?? 0,
        queuedBytes: queue?.queuedBytes ?? 0,
        dropped: queue?.dropped ?? 0,
        coalesced: queue?.coalesced ?? 0,
      });
    }
    return infos;
  }

  /**
   * Ends every GET stream (server shutdown) and stops the prune sweep; sessions stay on record.
   * Where nodes share the sessions, the ones this node keeps live (a GET stream, a grace period, a
   * take-up) are handed over first: offered to the other nodes (`orphaned`), and kept live here
   * until one says it took them up (`kept`, or a GET claims them), so that no change between the
   * two is missed (one logged by both is heard twice). Those nobody takes within a few seconds are
   * released; their record still names this node, so the node that later notices it is gone takes
   * them up with the re-read signal.
   * @returns once every session is handed over or released (at once alone): stop the hub, the
   *   session bus and the store after it.
   */
  close(): Promise<void> {
    if (this.#closing !== undefined) return this.#closing;
    this.#closed = true;
    this.#stopPrune();
    for (const id of [...this.#waits.keys()]) this.#wake(id);
    const kept: LiveSession[] = [];
    for (const session of this.#sessions.values()) {
      endStream(session, session.stream, 'shutdown');
      if (this.#init.placement.shared && (session.listening || session.live.size > 0)) kept.push(session);
      else session.sleep(this.#lists);
    }
    return (this.#closing = this.#handOver(kept)
      .catch((error: unknown) => reportError('source', error))
      .finally(() => {
        this.#handing.clear();
        // What a log failed to take is not tried again once the node has let its sessions go.
        for (const session of this.#sessions.values()) session.dropUnlogged();
        this.#disconnect?.();
      }));
  }

  /** See {@link close}: `kept` are this node's live sessions, their streams ended. */
  async #handOver(kept: readonly LiveSession[]): Promise<void> {
    if (kept.length === 0) return;
    const { store, placement, scheduler } = this.#init;
    const now = scheduler.now();
    const taken = Promise.all(
      kept.map((session) => {
        session.grace?.unsubscribe();
        session.grace = undefined;
        return new Promise<void>((resolve) => this.#handing.set(session.id, resolve));
      }),
    );
    // Their streams ended while closing (no grace period here): the record no longer names a stream.
    await Promise.all(kept.map((session) => settle(() => store.update(session.id, placement.released(now)))));
    if (await placement.handOver(kept.map((session) => session.id))) {
      await firstValueFrom(race(taken, timer(HANDOVER_WAIT, scheduler)), { defaultValue: undefined });
    }
    for (const session of kept) if (!session.ended) session.sleep(this.#lists);
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
      if (this.#init.placement.heldElsewhere(record)) continue;
      session.lastActivity = Math.max(session.lastActivity, record.lastActivity);
      if (session.lastActivity < cutoff) await this.end(session, 'idle');
    }
    for (const id of await store.idleSince(cutoff)) {
      if (!this.#sessions.has(id)) await store.delete(id);
    }
  }

  /**
   * Ends what this node holds of a session (stream, subscriptions, timers); the record is left alone.
   * @param streamReason why its GET stream stops (`channels.stop`).
   */
  #forget(session: LiveSession, streamReason: StopReason = 'session_ended'): void {
    this.#handing.get(session.id)?.();
    this.#streamElsewhere.delete(session.id);
    session.finish();
    session.sleep(this.#lists);
    endStream(session, session.stream, streamReason);
    if (this.#sessions.get(session.id) === session) this.#sessions.delete(session.id);
    const own = this.#byPrincipal.get(session.principal);
    if (own !== undefined && own.delete(session) && own.size === 0) this.#byPrincipal.delete(session.principal);
    if (this.#sessions.size === 0) this.#stopPrune();
  }

  #adopt(record: SessionRecord): LiveSession {
    const session = new LiveSession(record, this.#init.eventLog(record.id), this.#init.scheduler);
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
}

/** Runs `work`; resolves with `{ cause }` if it threw or rejected, else with `undefined`. */
async function settle(work: () => unknown): Promise<{ readonly cause: unknown } | undefined> {
  try {
    await work();
    return undefined;
  } catch (cause) {
    return { cause };
  }
}

/** What a node taking a session up subscribes with: the session's principal and the read scopes of its latest GET; no request. */
function keeperContext(record: SessionRecord): RequestContext {
  const scopes = record.scopes === undefined || record.scopes.length === 0 ? NO_SCOPES : new Set(record.scopes);
  return { auth: { principal: record.principal, scopes }, request: NO_REQUEST, session: { id: record.id, protocolVersion: record.protocolVersion } };
}

/** The request of a take-up: there is none (a `canRead` or hook that reads headers finds none). */
const NO_REQUEST: EndpointRequest = Object.freeze({ method: 'GET', header: () => undefined, remoteAddress: undefined, body: undefined });

function notFound(): Refusal {
  return new Refusal('unknown-session', new JsonRpcError(ErrorCode.SessionNotFound, 'session not found: initialize a new session'));
}

const lastActivityOf = (session: LiveSession): number => session.lastActivity;
