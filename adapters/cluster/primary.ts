import { randomUUID } from 'node:crypto';
import cluster from 'node:cluster';
import { Subject, type Observable, type Subscription, timer } from 'rxjs';
import type { HubBus, HubEvent } from '../../lib/hub.js';
import { PrincipalRegistry, type PrincipalCap } from '../../lib/principals.js';
import { isThenable, ReplayBuffer, type EventLog } from '../../lib/replayBuffer.js';
import { type KeptSession, MemorySessionStore, type SessionBus, type SessionCommand, type SessionStore } from '../../lib/session.js';
import { reportError } from '../../lib/telemetry.js';
import { DEFAULT_STREAM_LIMITS } from '../../lib/options.js';
import { callback, implementing, milliseconds, options as validOptions, positiveInteger, string } from '../../lib/validate.js';
import { DEFAULT_SESSION_OPTIONS } from '../../protocol/legacy/sessionOptions.js';
import { ClusterError } from './link.js';
import { MachineCap, MachineSlots } from './machineCaps.js';
import { type MachineLease, MachineLeases } from './machineLeases.js';
import { MachineSessions, SessionCapacityError } from './machineSessions.js';
import { Member, type WorkerHandle } from './member.js';
import { batchOf, type CallName, type Calls, type PrimaryMessage, type WorkerMessage } from './protocol.js';

/** Options of {@link clusterPrimary}: the machine's limits, and the parts it shares beyond the machine (a fleet). */
export interface ClusterPrimaryOptions {
  /** Streams (listen and legacy GET) the whole machine serves at once; beyond it HTTP 503. Defaults to 1000. */
  readonly maxStreams?: number;
  /** Listen streams per principal on the whole machine before its oldest is superseded; defaults to 4 (the `principals` cap's own when given). */
  readonly maxListensPerPrincipal?: number;
  /** Legacy sessions the whole machine holds; an `initialize` beyond it gets HTTP 503. Defaults to 10 000. */
  readonly maxSessions?: number;
  /** Legacy sessions per principal on the whole machine; an `initialize` beyond it ends that principal's least recently used one. Defaults to 100. */
  readonly maxSessionsPerPrincipal?: number;
  /** Frames kept per legacy session for `Last-Event-ID` (the in-memory logs; `eventLog` has its own). Defaults to 100. */
  readonly replayBufferSize?: number;
  /** Milliseconds after which a legacy session no worker holds a GET stream of is ended; give the endpoints' `sessionIdleTimeout`. Defaults to 1 800 000. */
  readonly sessionIdleTimeout?: number;
  /** Milliseconds between two sweeps for such sessions; defaults to 60 000. */
  readonly sessionPruneInterval?: number;
  /** This machine's node id (no whitespace); the workers' are `<nodeId>/<worker id>`. Defaults to a random UUID. */
  readonly nodeId?: string;
  /** Relays hub events beyond the machine (a `RedisBus`); default none. */
  readonly bus?: HubBus;
  /** The per-principal cap the machine admits through (a `RedisPrincipalCap`); default a `PrincipalRegistry` of `maxListensPerPrincipal`. */
  readonly principals?: PrincipalCap;
  /** Where legacy session records live (a `RedisSessionStore`); default a `MemorySessionStore`. */
  readonly sessionStore?: SessionStore;
  /** The event log of a legacy session (`redisEventLogs`); default a `ReplayBuffer` of `replayBufferSize`. */
  readonly eventLog?: (sessionId: string) => EventLog;
  /** Relays session commands beyond the machine (a `RedisSessionBus`); default none. With it the idle sessions are left to the store's own expiry. */
  readonly sessionBus?: SessionBus;
  /** The machine's lease of a name among the fleet's machines (`(key) => new RedisLease({ redis, key })`); default: always held. */
  readonly lease?: (key: string) => MachineLease;
}

/** What {@link ClusterPrimary.events$} reports. */
export type ClusterEvent =
  | { readonly kind: 'joined'; readonly worker: number; readonly pid: number | undefined; readonly nodeId: string }
  | {
      readonly kind: 'left';
      readonly worker: number;
      readonly pid: number | undefined;
      readonly nodeId: string;
      readonly code: number | null;
      readonly signal: string | null;
      /** What the primary released for it at once: stream slots, listen admissions, sessions whose GET stream it held. */
      readonly released: { readonly slots: number; readonly streams: number; readonly sessions: number };
    }
  /** A lease went to a worker (`worker` undefined: nobody holds it). */
  | { readonly kind: 'lease'; readonly key: string; readonly worker: number | undefined; readonly nodeId: string | undefined };

/** Counts of what a {@link ClusterPrimary} holds and relayed. */
export interface ClusterPrimaryStats {
  /** Workers that said hello and have not exited. */
  readonly workers: number;
  /** Stream slots held on the machine, and its `maxStreams`. */
  readonly slots: number;
  readonly maxStreams: number;
  /** Legacy sessions the machine knows. */
  readonly sessions: number;
  /** Hub events received from workers (each relayed to every other worker). */
  readonly hubEvents: number;
  /** Event-log appends made for workers. */
  readonly appends: number;
  /** IPC messages received from workers (each a batch of one synchronous run). */
  readonly batches: number;
}

/** The primary of a machine's cluster (see {@link clusterPrimary}). */
export interface ClusterPrimary {
  readonly nodeId: string;
  /** Workers joining and leaving, leases moving; completes on `close()`. */
  readonly events$: Observable<ClusterEvent>;
  readonly stats: ClusterPrimaryStats;
  /** Stops serving the workers (they cannot work without it: stop them first) and lets the leases go; idempotent. */
  close(): void;
}

/** What the primary listens to: `node:cluster` (or a test's stand-in). @internal */
export interface ClusterSource {
  on(event: 'message', listener: (worker: WorkerHandle, message: unknown) => void): unknown;
  on(event: 'exit', listener: (worker: WorkerHandle, code: number | null, signal: string | null) => void): unknown;
  off(event: 'message' | 'exit', listener: (...args: never[]) => void): unknown;
}

const OPTION_NAMES: readonly (keyof ClusterPrimaryOptions)[] = [
  'maxStreams', 'maxListensPerPrincipal', 'maxSessions', 'maxSessionsPerPrincipal', 'replayBufferSize', 'sessionIdleTimeout', 'sessionPruneInterval',
  'nodeId', 'bus', 'principals', 'sessionStore', 'eventLog', 'sessionBus', 'lease',
];

let serving = false;

/**
 * Makes this `node:cluster` primary the keeper of what its workers share ({@link clusterWorker}):
 * the relay of hub events and session commands between them, the machine's stream slots and
 * per-principal cap, the legacy sessions' records, event logs and session caps, and leases. Call it
 * before `cluster.fork()`; it serves the workers that fork after, and a restarted one like any other.
 *
 * The primary is the relay and the store: a worker that dies loses nothing it holds. Its slots and
 * admissions are released at once, the sessions whose GET stream it held wait for their clients to
 * reconnect on another worker (replayed from the logs here), its leases go to the next worker.
 * When the primary dies, node:cluster ends every worker with it: everything in memory is lost, as
 * a single process loses it (with the fleet's parts on Redis, the sessions, logs and cap survive).
 *
 * Beyond the machine, give the fleet's parts (`bus`, `principals`, `sessionStore`, `eventLog`,
 * `sessionBus`, `lease`: `mcp-rx-streams/redis`): the primary is then the machine's one node of the
 * fleet, its workers reach the other machines through it.
 *
 * @example
 * if (cluster.isPrimary) {
 *   const primary = clusterPrimary({ maxStreams: 10_000 });
 *   primary.events$.subscribe((event) => console.error(event));
 *   for (let i = 0; i < availableParallelism(); i++) cluster.fork();
 *   cluster.on('exit', () => cluster.fork()); // a worker that dies is replaced
 * }
 * @param options see {@link ClusterPrimaryOptions}.
 * @throws InvalidOptionError naming `clusterPrimary options` (or the option) for options it cannot
 *   use; a `ClusterError` outside a cluster primary, or when one is serving already.
 * @see clusterWorker
 */
export function clusterPrimary(options?: ClusterPrimaryOptions): ClusterPrimary {
  const checked = checkPrimaryOptions(options);
  if (!cluster.isPrimary) throw new ClusterError('primary', 'clusterPrimary() runs in the node:cluster primary; a worker calls clusterWorker()');
  if (serving) throw new ClusterError('primary', 'a clusterPrimary() is serving already: close it first');
  serving = true;
  return new Primary(cluster as unknown as ClusterSource, checked, () => (serving = false));
}

/** {@link clusterPrimary}'s options, checked, with their defaults. @internal */
export interface PrimaryConfig {
  readonly maxStreams: number;
  readonly maxSessions: number;
  readonly maxSessionsPerPrincipal: number;
  readonly sessionIdleTimeout: number;
  readonly sessionPruneInterval: number;
  readonly nodeId: string;
  readonly bus: HubBus | undefined;
  readonly principals: PrincipalCap;
  readonly sessionStore: SessionStore;
  readonly eventLog: (sessionId: string) => EventLog;
  readonly sessionBus: SessionBus | undefined;
  readonly lease: ((key: string) => MachineLease) | undefined;
  /** The store is the machine's own (not given): the primary deletes its idle sessions. */
  readonly ownedStore: boolean;
}

/** @internal */
export function checkPrimaryOptions(options: ClusterPrimaryOptions | undefined): PrimaryConfig {
  const given = validOptions<keyof ClusterPrimaryOptions>('clusterPrimary options', options, OPTION_NAMES);
  const count = (name: keyof ClusterPrimaryOptions, fallback: number) => (given[name] === undefined ? fallback : positiveInteger(name, given[name]));
  const duration = (name: keyof ClusterPrimaryOptions, fallback: number) => (given[name] === undefined ? fallback : milliseconds(name, given[name]));
  const part = <T>(name: keyof ClusterPrimaryOptions, methods: readonly string[], what: string) =>
    given[name] === undefined ? undefined : implementing<T>(name, given[name], methods, what);
  const replayBufferSize = count('replayBufferSize', DEFAULT_SESSION_OPTIONS.replayBufferSize);
  const principals = part<PrincipalCap>('principals', ['admit', 'count'], 'a PrincipalCap (admit, count), e.g. a RedisPrincipalCap');
  const eventLog = given.eventLog === undefined ? undefined : callback<(sessionId: string) => EventLog>('eventLog', given.eventLog);
  const sessionStore = part<SessionStore>('sessionStore', ['create', 'get', 'update', 'delete', 'idleSince'], 'a SessionStore (create, get, update, delete, idleSince), e.g. a RedisSessionStore');
  return {
    maxStreams: count('maxStreams', DEFAULT_STREAM_LIMITS.maxStreams),
    maxSessions: count('maxSessions', DEFAULT_SESSION_OPTIONS.maxSessions),
    maxSessionsPerPrincipal: count('maxSessionsPerPrincipal', DEFAULT_SESSION_OPTIONS.maxSessionsPerPrincipal),
    sessionIdleTimeout: duration('sessionIdleTimeout', DEFAULT_SESSION_OPTIONS.sessionIdleTimeout),
    sessionPruneInterval: duration('sessionPruneInterval', DEFAULT_SESSION_OPTIONS.sessionPruneInterval),
    nodeId: given.nodeId === undefined ? randomUUID() : string('nodeId', given.nodeId, { pattern: /^\S+$/, what: 'a non-empty string without whitespace' }),
    bus: part<HubBus>('bus', ['publish', 'connect'], 'a HubBus (publish, connect), e.g. a RedisBus'),
    principals: principals ?? new PrincipalRegistry(count('maxListensPerPrincipal', DEFAULT_STREAM_LIMITS.maxListensPerPrincipal)),
    sessionStore: sessionStore ?? new MemorySessionStore(),
    eventLog: eventLog ?? (() => new ReplayBuffer(replayBufferSize)),
    sessionBus: part<SessionBus>('sessionBus', ['publish', 'connect'], 'a SessionBus (nodeId, publish, connect), e.g. a RedisSessionBus'),
    lease: given.lease === undefined ? undefined : callback<(key: string) => MachineLease>('lease', given.lease),
    ownedStore: sessionStore === undefined && given.sessionBus === undefined,
  };
}

/**
 * The primary: one {@link Member} per worker, the machine's parts, and the routing of every
 * worker message to them (see the files of each: machineCaps, machineSessions, machineLeases).
 * @internal
 */
export class Primary implements ClusterPrimary {
  readonly nodeId: string;
  readonly events$: Observable<ClusterEvent>;
  readonly #source: ClusterSource;
  readonly #config: PrimaryConfig;
  readonly #members = new Map<WorkerHandle, Member>();
  readonly #events = new Subject<ClusterEvent>();
  readonly #slots: MachineSlots;
  readonly #cap: MachineCap;
  readonly #sessions: MachineSessions;
  readonly #leases: MachineLeases;
  readonly #newestId: boolean;
  readonly #disconnects: (() => void)[] = [];
  // Workers that stop (they handed their sessions over): offered no session any more.
  readonly #leaving = new Set<Member>();
  // Sessions of a dead worker when no worker was left to take them up (and no fleet), by keeper.
  readonly #unkept = new Map<string, string>();
  readonly #sweep: Subscription;
  #stats = { hubEvents: 0, appends: 0, batches: 0 };
  #closed = false;

  constructor(
    source: ClusterSource,
    config: PrimaryConfig,
    private readonly onClose: () => void = () => undefined,
  ) {
    this.nodeId = config.nodeId;
    this.#source = source;
    this.#config = config;
    this.events$ = this.#events.asObservable();
    this.#slots = new MachineSlots(config.maxStreams);
    this.#cap = new MachineCap(config.principals);
    this.#sessions = new MachineSessions({
      store: config.sessionStore,
      eventLog: config.eventLog,
      maxSessions: config.maxSessions,
      maxSessionsPerPrincipal: config.maxSessionsPerPrincipal,
      sessionIdleTimeout: config.sessionIdleTimeout,
      owned: config.ownedStore,
      ended: (id) => this.#ended(id),
      alive: (nodeId) => [...this.#members.values()].some((member) => member.nodeId === nodeId),
      now: () => Date.now(),
    });
    this.#leases = new MachineLeases(config.lease, (key, holder) =>
      this.#events.next({ kind: 'lease', key, worker: holder?.worker.id, nodeId: holder?.nodeId }),
    );
    // Whether a GET stream can prime its client with the newest id (a log without it primes with retry: only).
    this.#newestId = typeof config.eventLog(`${config.nodeId}/probe`).newestId === 'function';
    if (config.bus !== undefined) this.#disconnects.push(config.bus.connect((event) => this.#hub(undefined, event), () => this.#all({ k: 'resync' })));
    if (config.sessionBus !== undefined) this.#disconnects.push(config.sessionBus.connect((sid, command) => this.#fleetSession(sid, command)));
    this.#sweep = timer(config.sessionPruneInterval, config.sessionPruneInterval).subscribe(() => this.#sessions.sweep());
    source.on('message', this.#message);
    source.on('exit', this.#exit);
  }

  get stats(): ClusterPrimaryStats {
    return {
      workers: this.#members.size,
      slots: this.#slots.inUse,
      maxStreams: this.#slots.capacity,
      sessions: this.#sessions.size,
      ...this.#stats,
    };
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#source.off('message', this.#message);
    this.#source.off('exit', this.#exit);
    this.#sweep.unsubscribe();
    for (const disconnect of this.#disconnects) disconnect();
    this.#leases.close();
    this.#events.complete();
    this.onClose();
  }

  readonly #message = (worker: WorkerHandle, value: unknown) => {
    const batch = batchOf<WorkerMessage>(value);
    if (batch === undefined) return;
    this.#stats.batches++;
    const member = this.#member(worker);
    for (const message of batch) {
      try {
        this.#handle(member, message);
      } catch (error) {
        reportError('source', error);
      }
    }
  };

  #member(worker: WorkerHandle): Member {
    let member = this.#members.get(worker);
    if (member === undefined) {
      member = new Member(worker, this.nodeId);
      this.#members.set(worker, member);
      this.#events.next({ kind: 'joined', worker: worker.id, pid: worker.process.pid, nodeId: member.nodeId });
      // Sessions of a dead worker nobody was left to take up: offered to the newcomer.
      const unkept = [...this.#unkept];
      this.#unkept.clear();
      for (const [sid, node] of unkept) member.send({ k: 'session', sid, c: { kind: 'orphaned', node, died: true } });
    }
    return member;
  }

  #handle(member: Member, message: WorkerMessage): void {
    switch (message.k) {
      case 'hub':
        return this.#hub(member, message.e);
      case 'call':
        return this.#call(member, message.id, message.op, message.a);
      case 'release':
        return this.#slots.release(member, message.slot);
      case 'admit':
        return this.#cap.admit(member, message.s, message.p);
      case 'unadmit':
        return this.#cap.unadmit(member, message.s);
      case 'lease':
        return message.join ? this.#leases.join(member, message.key) : this.#leases.leave(member, message.key);
      case 'leaseState':
        return this.#leases.save(member, message.key, message.s);
    }
  }

  /** A hub event from `from` (a worker; `undefined`: another machine): to every other worker, and beyond from a worker. */
  #hub(from: Member | undefined, event: HubEvent): void {
    for (const member of this.#members.values()) if (member !== from) member.send({ k: 'hub', e: event });
    if (from === undefined) return;
    this.#stats.hubEvents++;
    this.#config.bus?.publish(event);
  }

  #call(member: Member, id: number, op: CallName, args: readonly unknown[]): void {
    let answer: unknown;
    try {
      answer = this.#answer(member, op, args);
    } catch (error) {
      return member.send(failure(id, error));
    }
    if (!isThenable(answer)) return member.send({ k: 'reply', id, v: answer ?? null });
    answer.then(
      (value) => member.send({ k: 'reply', id, v: value ?? null }),
      (error: unknown) => member.send(failure(id, error)),
    );
  }

  #answer(member: Member, op: CallName, args: readonly unknown[]): unknown {
    const sessions = this.#sessions;
    switch (op) {
      case 'hello':
        return {
          nodeId: member.nodeId,
          maxStreams: this.#slots.capacity,
          maxListensPerPrincipal: this.#config.principals.maxPerPrincipal,
          newestId: this.#newestId,
        } satisfies Calls['hello'][1];
      case 'slot':
        return this.#slots.acquire(member, args[0] as number);
      case 'store.create':
        return sessions.create(args[0] as Calls['store.create'][0][0]);
      case 'store.get':
        return sessions.get(args[0] as string);
      case 'store.update':
        return sessions.update(args[0] as string, args[1] as Calls['store.update'][0][1]);
      case 'store.delete':
        return sessions.delete(args[0] as string);
      case 'store.takeUp':
        return sessions.takeUp(args[0] as string, args[1] as string | null, args[2] as string | null);
      case 'log.append': {
        const appends = args[1] as Calls['log.append'][0][1];
        this.#stats.appends += appends.length / 2;
        return sessions.append(args[0] as Calls['log.append'][0][0], appends);
      }
      case 'log.after':
        return sessions.after(args[0] as string, args[1] as string | null);
      case 'log.newest':
        return sessions.newestId(args[0] as string);
      case 'session.publish':
        return this.#publish(member, args[0] as string, args[1] as SessionCommand);
      case 'session.leave':
        return this.#leave(member);
      case 'revoke':
        return this.#cap.revoke(args[0] as string, args[1] as string);
    }
  }

  /** A session command of `from`: to every other worker, and beyond. */
  #publish(from: Member, sid: string, command: SessionCommand): void | Promise<void> {
    for (const member of this.#members.values()) if (member !== from) member.send({ k: 'session', sid, c: command });
    return this.#config.sessionBus?.publish(sid, command);
  }

  /**
   * Worker `member` stops and hands its sessions over: it is offered none from now on; the answer is
   * how many nodes may take them up: the workers that stay or, once none does (the machine stops),
   * the fleet's other nodes (the machine then leaves the fleet: `SessionBus.leave`).
   */
  async #leave(member: Member): Promise<number> {
    this.#leaving.add(member);
    let staying = 0;
    for (const other of this.#members.values()) if (!this.#leaving.has(other)) staying++;
    const fleet = this.#config.sessionBus;
    if (staying > 0 || fleet === undefined) return staying;
    return fleet.leave === undefined ? 1 : await fleet.leave();
  }

  /** Sessions a worker kept when it died (or that a dead fleet node kept): offered to the workers that stay, who race to take them up. */
  #orphan(kept: readonly KeptSession[]): void {
    const staying = [...this.#members.values()].filter((member) => !this.#leaving.has(member));
    for (const { id: sid, keeper: node } of kept) {
      const c: SessionCommand = { kind: 'orphaned', node, died: true };
      if (staying.length > 0) for (const member of staying) member.send({ k: 'session', sid, c });
      else if (this.#config.sessionBus !== undefined) Promise.resolve(this.#config.sessionBus.publish(sid, c)).catch((error: unknown) => reportError('source', error));
      else this.#unkept.set(sid, node);
    }
  }

  /**
   * A session command from the fleet: to every worker, except the death of a node (`left`, heard by
   * this machine alone): the sessions it kept are read once here and offered to the workers.
   */
  #fleetSession(sid: string, command: SessionCommand): void {
    if (command.kind !== 'left') {
      this.#sessions.heard(sid, command);
      return this.#all({ k: 'session', sid, c: command });
    }
    const listed = this.#config.sessionStore.keptBy?.(command.node);
    Promise.resolve(listed ?? []).then(
      (kept) => this.#orphan(kept),
      (error: unknown) => reportError('source', error),
    );
  }

  /** The machine ended a session (caps, idle sweep): every worker, and the fleet, forget it. */
  #ended(sid: string): void {
    this.#all({ k: 'session', sid, c: { kind: 'ended' } });
    Promise.resolve(this.#config.sessionBus?.publish(sid, { kind: 'ended' })).catch((error: unknown) => reportError('source', error));
  }

  #all(message: PrimaryMessage): void {
    for (const member of this.#members.values()) member.send(message);
  }

  readonly #exit = (worker: WorkerHandle, code: number | null, signal: string | null) => {
    const member = this.#members.get(worker);
    if (member === undefined) return;
    this.#members.delete(worker);
    member.leave();
    const slots = this.#slots.memberLeft(member);
    const streams = this.#cap.memberLeft(member);
    const sessions = this.#sessions.nodeLeft(member.nodeId);
    this.#leaving.delete(member);
    this.#orphan(this.#sessions.keptBy(member.nodeId));
    this.#events.next({ kind: 'left', worker: worker.id, pid: worker.process.pid, nodeId: member.nodeId, code, signal, released: { slots, streams, sessions } });
    this.#leases.memberLeft(member);
  };
}

function failure(id: number, error: unknown): PrimaryMessage {
  if (error instanceof SessionCapacityError) return { k: 'reply', id, err: { message: error.message, capacity: true } };
  return { k: 'reply', id, err: { message: error instanceof Error ? error.message : String(error) } };
}
