// A cluster worker's view of the machine's legacy sessions: their records and the commands between
// the workers serving them, both held and relayed by the primary.
import type { SessionBus, SessionChanges, SessionCommand, SessionRecord, SessionStore } from '../../lib/session.js';
import { reportError } from '../../lib/telemetry.js';
import { capacityRefusal } from '../../protocol/answer.js';
import { ClusterError, type WorkerLink } from './link.js';

/**
 * The {@link SessionStore} of a cluster worker: the records live in the primary (its own
 * `MemorySessionStore`, or the fleet's store), so that any worker serves any session's requests.
 *
 * The machine's session caps are the primary's: `create` beyond `maxSessionsPerPrincipal` ends that
 * principal's least recently used session wherever it is served, and beyond `maxSessions` is
 * refused with the endpoint's HTTP 503 (`Retry-After` from `capacityRetryAfter`). The primary also
 * evicts the idle sessions no worker holds (a worker's sweep sees only the sessions it holds), so
 * `idleSince` leaves nothing for a worker to delete.
 * @internal
 */
export class ClusterSessionStore implements SessionStore {
  constructor(
    private readonly link: WorkerLink,
    private readonly capacityRetryAfter: number,
  ) {}

  async create(record: SessionRecord): Promise<void> {
    try {
      await this.link.call('store.create', [record]);
    } catch (error) {
      if (error instanceof ClusterError && error.info.capacity === true) throw capacityRefusal('session', this.capacityRetryAfter);
      throw error;
    }
  }

  async get(id: string): Promise<SessionRecord | undefined> {
    return (await this.link.call('store.get', [id])) ?? undefined;
  }

  async update(id: string, changes: SessionChanges): Promise<void> {
    await this.link.call('store.update', [id, changes]);
  }

  async delete(id: string): Promise<void> {
    await this.link.call('store.delete', [id]);
  }

  /** Through the primary (one at a time for the machine; the fleet's store decides between machines). */
  async takeUp(id: string, from: string | null, to: string | null): Promise<boolean> {
    return await this.link.call('store.takeUp', [id, from, to]);
  }

  /** Always empty: the primary evicts the idle sessions nobody holds (a worker's own it ends itself). */
  idleSince(_cutoff: number): readonly string[] {
    return [];
  }
}

/**
 * The {@link SessionBus} of a cluster worker: its commands go to every other worker through the
 * primary (and beyond the machine through the primary's fleet bus, if it has one), in order, never
 * back to this worker. `publish` resolves once the primary has relayed it.
 *
 * Every command is relayed as it is, whatever its kind: a command added later (issue 25's
 * `revoke` of a principal's sessions) reaches every worker without a change here.
 * @internal
 */
export class ClusterSessionBus implements SessionBus {
  readonly #deliverers = new Set<(sessionId: string, command: SessionCommand) => void>();

  constructor(
    private readonly link: WorkerLink,
    readonly nodeId: string,
  ) {
    link.on('session', ({ sid, c }) => {
      for (const deliver of this.#deliverers) {
        try {
          deliver(sid, c);
        } catch (error) {
          reportError('source', error);
        }
      }
    });
  }

  async publish(sessionId: string, command: SessionCommand): Promise<void> {
    await this.link.call('session.publish', [sessionId, command]);
  }

  /** Tells the primary this worker stops (it offers it no session from now on); how many nodes may take its sessions up. */
  async leave(): Promise<number> {
    return await this.link.call('session.leave', []);
  }

  connect(deliver: (sessionId: string, command: SessionCommand) => void): () => void {
    const entry = (sessionId: string, command: SessionCommand) => deliver(sessionId, command);
    this.#deliverers.add(entry);
    return () => void this.#deliverers.delete(entry);
  }
}
