import type { Observable, Subscription } from 'rxjs';
import { reportError } from '../../lib/telemetry.js';
import type { Member } from './member.js';

/**
 * A lease the machine holds among the machines of a fleet (a `RedisLease`): the workers' lease of
 * the same name is held (by one of them) only while the machine holds this one.
 */
export interface MachineLease {
  /** `true` while the machine holds it; emits the current value on subscribe, then each change. */
  readonly held$: Observable<boolean>;
  /** Stops contending and lets it go. */
  close(): void | Promise<void>;
  /**
   * The state the fleet's holders handed over (a `RedisLease`'s), which a worker that takes the
   * lease gets with the grant. Without it (and `saveState`), the primary keeps the workers' state
   * in its memory: handed over between the machine's workers only.
   */
  state?(): Promise<ReadonlyMap<string, string> | undefined>;
  /** Merges the holding worker's entries into the fleet's state (`null`: delete). */
  saveState?(entries: Iterable<readonly [string, string | null]>): void;
}

interface Lease {
  /** Workers that asked for it, in the order they asked. */
  readonly contenders: Member[];
  holder: Member | undefined;
  /** Whether the machine holds it (always, without a fleet). */
  machineHeld: boolean;
  readonly machine: MachineLease | undefined;
  watch: Subscription | undefined;
  /** Grants so far: a state read for an earlier grant is not sent. */
  grants: number;
}

/** Milliseconds before the state of a grant is read again, when reading it failed (Redis away). */
const STATE_RETRY = 500;

/**
 * The leases of a machine's workers: each held by the worker that asked first among the live ones,
 * handed to the next one the moment it dies or lets go (an IPC channel that closes needs no expiry:
 * the takeover is immediate). With `machineLease`, a lease is held by a worker only while the
 * machine holds the fleet's lease of that name.
 *
 * The holding worker's state (`save`) is kept here, or by the machine's lease when it keeps one;
 * a grant tells the new holder once it has the state to go with it (when the machine's lease
 * cannot be read, it is read again every 500 ms for as long as the grant stands). Entries from a
 * worker that does not hold the lease are ignored.
 * @internal
 */
export class MachineLeases {
  readonly #leases = new Map<string, Lease>();
  /**
   * The holders' state of each lease whose machine lease keeps none: here for as long as the primary
   * lives (workers that all left and come back carry on from it).
   */
  readonly #states = new Map<string, Map<string, string>>();

  constructor(
    private readonly machineLease: ((key: string) => MachineLease) | undefined,
    private readonly onChange: (key: string, holder: Member | undefined) => void,
  ) {}

  /** The worker holding `key`, if any. */
  holder(key: string): Member | undefined {
    return this.#leases.get(key)?.holder;
  }

  join(member: Member, key: string): void {
    let lease = this.#leases.get(key);
    if (lease === undefined) {
      const machine = this.machineLease?.(key);
      lease = { contenders: [], holder: undefined, machineHeld: machine === undefined, machine, watch: undefined, grants: 0 };
      this.#leases.set(key, lease);
      const made = lease;
      made.watch = machine?.held$.subscribe((held) => {
        made.machineHeld = held;
        this.#grant(key, made);
      });
    }
    if (!lease.contenders.includes(member)) lease.contenders.push(member);
    member.leases.add(key);
    this.#grant(key, lease);
  }

  leave(member: Member, key: string): void {
    const lease = this.#leases.get(key);
    member.leases.delete(key);
    if (lease === undefined) return;
    const at = lease.contenders.indexOf(member);
    if (at >= 0) lease.contenders.splice(at, 1);
    if (lease.contenders.length > 0) return this.#grant(key, lease);
    // Nobody contends any more: the machine lets the fleet's lease go too.
    this.#leases.delete(key);
    lease.machineHeld = false;
    this.#grant(key, lease);
    this.#close(lease);
  }

  /** The holder of `key` merges `entries` into the state it hands over (from any other worker: ignored). */
  save(member: Member, key: string, entries: readonly (readonly [string, string | null])[]): void {
    const lease = this.#leases.get(key);
    if (lease === undefined || lease.holder !== member) return;
    if (lease.machine?.saveState !== undefined) return lease.machine.saveState(entries);
    let memory = this.#states.get(key);
    if (memory === undefined) this.#states.set(key, (memory = new Map()));
    for (const [field, value] of entries) {
      if (value === null) memory.delete(field);
      else memory.set(field, value);
    }
  }

  /** A worker died: the leases it held go to the next contenders. */
  memberLeft(member: Member): void {
    for (const key of [...member.leases]) this.leave(member, key);
  }

  close(): void {
    for (const lease of this.#leases.values()) this.#close(lease);
    this.#leases.clear();
  }

  #close(lease: Lease): void {
    lease.watch?.unsubscribe();
    if (lease.machine !== undefined) Promise.resolve(lease.machine.close()).catch((error: unknown) => reportError('source', error));
  }

  /** Hands `key` to the first live contender while the machine holds it; tells the old and new holders. */
  #grant(key: string, lease: Lease): void {
    const next = lease.machineHeld ? lease.contenders.find((member) => !member.left) : undefined;
    const old = lease.holder;
    if (next === old) return;
    lease.holder = next;
    const grant = ++lease.grants;
    // The old holder lets go before the new one takes it (both through the primary, in that order).
    old?.send({ k: 'lease', key, held: false });
    if (next !== undefined) this.#hand(key, lease, next, grant);
    this.onChange(key, next);
  }

  /** Tells `member` it holds `key`, with the state its holders left, unless the grant is over by then. */
  #hand(key: string, lease: Lease, member: Member, grant: number, failures = 0): void {
    const machine = lease.machine;
    const read = machine?.state === undefined ? Promise.resolve(this.#states.get(key)) : machine.state();
    read.then(
      (state) => {
        if (lease.grants === grant) member.send({ k: 'lease', key, held: true, state: state === undefined ? null : [...state] });
      },
      (error: unknown) => {
        if (lease.grants !== grant) return;
        if (failures === 0) reportError('source', error);
        setTimeout(() => lease.grants === grant && this.#hand(key, lease, member, grant, failures + 1), STATE_RETRY).unref();
      },
    );
  }
}
