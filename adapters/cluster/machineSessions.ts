// The legacy sessions of a machine, as its cluster primary holds them for every worker: the store,
// the event logs, and the session caps that a worker alone cannot apply (it sees its own sessions).
import type { EventLog } from '../../lib/replayBuffer.js';
import { isThenable } from '../../lib/replayBuffer.js';
import type { KeptSession, SessionChanges, SessionCommand, SessionRecord, SessionStore } from '../../lib/session.js';
import { reportError } from '../../lib/telemetry.js';
import { RelayedFrame, toLogged } from './frames.js';
import type { LoggedFrame, WireFrame } from './protocol.js';
import { sessionToDisplace } from '../../protocol/legacy/sessionCap.js';

/** Thrown by {@link MachineSessions.create} at `maxSessions`: the worker answers HTTP 503. @internal */
export class SessionCapacityError extends Error {
  constructor(maxSessions: number) {
    super(`the machine holds maxSessions (${maxSessions}) sessions`);
  }
}

/** What the primary knows of a session without asking its store: enough for the caps and the sweep. */
interface Known {
  readonly principal: string;
  lastActivity: number;
  streamNode: string | null;
}

/** What {@link MachineSessions} is built from. @internal */
export interface MachineSessionsInit {
  readonly store: SessionStore;
  readonly eventLog: (sessionId: string) => EventLog;
  readonly maxSessions: number;
  readonly maxSessionsPerPrincipal: number;
  readonly sessionIdleTimeout: number;
  /**
   * Whether the store is this machine's alone: the sweep then deletes the idle records nobody holds.
   * A store a fleet shares (with a session bus beyond the machine) is left to its own expiry: a
   * session this machine created may be served on another machine since.
   */
  readonly owned: boolean;
  /** Tells every worker (and the fleet) that a session ended: its stream, if any, ends. */
  readonly ended: (sessionId: string) => void;
  /** Whether node `nodeId` (a worker) is alive. */
  readonly alive: (nodeId: string) => boolean;
  /** The machine's clock, in milliseconds since the epoch. */
  readonly now: () => number;
}

/**
 * The machine's legacy sessions (DESIGN L1–L10 across the workers of a cluster).
 *
 * Records and logs are in `store` and `eventLog` (in memory by default: a `MemorySessionStore` and
 * a `ReplayBuffer` per session; the fleet's on Redis). Every `create`, `update` and `delete` of a
 * worker passes here, so the primary knows each session's principal, last activity and the worker
 * that holds its GET stream, and applies what no worker can see alone:
 * - `maxSessionsPerPrincipal`: a principal's `initialize` beyond it ends its least recently used
 *   session first, on whichever worker it is served (every worker is told it `ended`);
 * - `maxSessions`: an `initialize` beyond it is refused (the worker answers HTTP 503);
 * - the idle sweep: a session idle past `sessionIdleTimeout` whose GET stream no live worker holds
 *   is ended (a worker's own sweep only sees the sessions it holds);
 * - a worker's death: the sessions whose GET stream it held are free again (`streamNode` cleared,
 *   counted active from then, so that their clients have `sessionIdleTimeout` to reconnect), and
 *   the sessions it kept live (`keeper`: its GET streams, grace periods, take-ups) are named, for
 *   the primary to offer them to the other workers ({@link keptBy}).
 * @internal
 */
export class MachineSessions {
  readonly #init: MachineSessionsInit;
  readonly #known = new Map<string, Known>();
  readonly #byPrincipal = new Map<string, Set<string>>();
  readonly #logs = new Map<string, EventLog>();
  // The keeper of each session a worker of this machine keeps, as the workers' updates and take-ups say.
  readonly #keepers = new Map<string, string>();

  constructor(init: MachineSessionsInit) {
    this.#init = init;
  }

  /** Sessions the machine knows now. */
  get size(): number {
    return this.#known.size;
  }

  async create(record: SessionRecord): Promise<void> {
    const { maxSessions, maxSessionsPerPrincipal } = this.#init;
    // Fairness first, the one session-cap policy of a node too (sessionToDisplace).
    const own = this.#byPrincipal.get(record.principal);
    const activity = (id: string) => this.#known.get(id)!.lastActivity;
    for (let oldest; (oldest = sessionToDisplace(own, maxSessionsPerPrincipal, activity)) !== undefined; ) this.#end(oldest);
    if (this.#known.size >= maxSessions) throw new SessionCapacityError(maxSessions);
    // Counted before the store answers: a burst of one principal's initializes never holds more.
    this.#know(record.id, { principal: record.principal, lastActivity: record.lastActivity, streamNode: record.streamNode ?? null });
    try {
      await this.#init.store.create(record);
    } catch (error) {
      this.#forget(record.id);
      throw error;
    }
  }

  get(id: string): SessionRecord | undefined | Promise<SessionRecord | undefined> {
    return this.#init.store.get(id);
  }

  update(id: string, changes: SessionChanges): void | Promise<void> {
    if (changes.keeper !== undefined) this.#keep(id, changes.keeper);
    const known = this.#known.get(id);
    if (known !== undefined) {
      if (changes.lastActivity !== undefined) known.lastActivity = changes.lastActivity;
      if (changes.streamNode !== undefined) known.streamNode = changes.streamNode;
    }
    return this.#init.store.update(id, changes);
  }

  delete(id: string): void | Promise<void> {
    this.#forget(id);
    return this.#init.store.delete(id);
  }

  /** `SessionStore.takeUp` of the store (false without one), one worker's at a time. */
  async takeUp(id: string, from: string | null, to: string | null): Promise<boolean> {
    const won = (await this.#init.store.takeUp?.(id, from, to)) === true;
    if (won) this.#keep(id, to);
    return won;
  }

  /** The sessions a worker kept live, as far as this machine knows (for the primary to offer them when it dies). */
  keptBy(nodeId: string): KeptSession[] {
    const kept: KeptSession[] = [];
    for (const [id, keeper] of this.#keepers) if (keeper === nodeId) kept.push({ id, keeper });
    return kept;
  }

  /** What the fleet says of a session another machine now keeps or holds: no worker here keeps it. */
  heard(id: string, command: SessionCommand): void {
    if ((command.kind === 'claimed' || command.kind === 'kept') && this.#keepers.has(id)) this.#keepers.delete(id);
    else if (command.kind === 'ended') this.#keepers.delete(id);
  }

  #keep(id: string, keeper: string | null): void {
    if (keeper === null) this.#keepers.delete(id);
    else this.#keepers.set(id, keeper);
  }

  /** Logs `appends` (session id, index into `frames`) pairs in order; the ids, in the same order. */
  append(frames: readonly WireFrame[], appends: readonly (string | number)[]): readonly string[] | Promise<readonly string[]> {
    const relayed = frames.map((frame) => new RelayedFrame(frame));
    const ids: (string | Promise<string>)[] = [];
    let waiting = false;
    for (let i = 0; i < appends.length; i += 2) {
      const stamped = this.#log(appends[i] as string).append(relayed[appends[i + 1] as number]!);
      if (isThenable(stamped)) {
        waiting = true;
        ids.push(Promise.resolve(stamped).then((frame) => frame.eventId!));
      } else ids.push(stamped.eventId!);
    }
    return waiting ? Promise.all(ids) : (ids as string[]);
  }

  /** The logged frames of `sessionId` after `lastEventId`, on the wire. */
  after(sessionId: string, lastEventId: string | null): readonly LoggedFrame[] | Promise<readonly LoggedFrame[]> {
    const frames = this.#log(sessionId).after(lastEventId);
    return isThenable(frames) ? Promise.resolve(frames).then((list) => list.map(toLogged)) : frames.map(toLogged);
  }

  newestId(sessionId: string): string | Promise<string> {
    return this.#log(sessionId).newestId?.() ?? '0';
  }

  /** Worker `nodeId` died: the GET streams it held are gone, their sessions wait for a reconnect anywhere. */
  nodeLeft(nodeId: string): number {
    const now = this.#init.now();
    let freed = 0;
    for (const [id, known] of this.#known) {
      if (known.streamNode !== nodeId) continue;
      freed++;
      known.streamNode = null;
      known.lastActivity = now;
      Promise.resolve(this.#init.store.update(id, { streamNode: null, lastActivity: now })).catch((error: unknown) => reportError('source', error));
    }
    return freed;
  }

  /** Ends (or, with a store the fleet shares, forgets) the sessions idle past `sessionIdleTimeout` that no live worker holds. */
  sweep(): void {
    const cutoff = this.#init.now() - this.#init.sessionIdleTimeout;
    for (const [id, known] of [...this.#known]) {
      if (known.lastActivity >= cutoff || (known.streamNode !== null && this.#init.alive(known.streamNode))) continue;
      if (this.#init.owned) this.#end(id);
      else this.#forget(id);
    }
  }

  /** Ends a session the machine evicts: forgotten, its record deleted, every worker told. */
  #end(id: string): void {
    this.#forget(id);
    Promise.resolve(this.#init.store.delete(id)).catch((error: unknown) => reportError('source', error));
    this.#init.ended(id);
  }

  #know(id: string, known: Known): void {
    this.#known.set(id, known);
    let own = this.#byPrincipal.get(known.principal);
    if (own === undefined) this.#byPrincipal.set(known.principal, (own = new Set()));
    own.add(id);
  }

  #forget(id: string): void {
    this.#logs.delete(id);
    this.#keepers.delete(id);
    const known = this.#known.get(id);
    if (known === undefined) return;
    this.#known.delete(id);
    const own = this.#byPrincipal.get(known.principal);
    if (own !== undefined && own.delete(id) && own.size === 0) this.#byPrincipal.delete(known.principal);
  }

  /**
   * The log of `sessionId`, kept while the machine knows the session. One it does not know is
   * another machine's (a fleet: its log is the fleet's, nothing here to keep) or one that ended (a
   * late append: whatever it is given is forgotten with it).
   */
  #log(sessionId: string): EventLog {
    const log = this.#logs.get(sessionId);
    if (log !== undefined) return log;
    const made = this.#init.eventLog(sessionId);
    if (this.#known.has(sessionId)) this.#logs.set(sessionId, made);
    return made;
  }
}
