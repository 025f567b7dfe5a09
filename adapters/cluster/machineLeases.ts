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
}

interface Lease {
  /** Workers that asked for it, in the order they asked. */
  readonly contenders: Member[];
  holder: Member | undefined;
  /** Whether the machine holds it (always, without a fleet). */
  machineHeld: boolean;
  readonly machine: MachineLease | undefined;
  watch: Subscription | undefined;
}

/**
 * The leases of a machine's workers: each held by the worker that asked first among the live ones,
 * handed to the next one the moment it dies or lets go (an IPC channel that closes needs no expiry:
 * the takeover is immediate). With `machineLease`, a lease is held by a worker only while the
 * machine holds the fleet's lease of that name.
 * @internal
 */
export class MachineLeases {
  readonly #leases = new Map<string, Lease>();

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
      lease = { contenders: [], holder: undefined, machineHeld: machine === undefined, machine, watch: undefined };
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
    // The old holder lets go before the new one takes it (both through the primary, in that order).
    old?.send({ k: 'lease', key, held: false });
    next?.send({ k: 'lease', key, held: true });
    this.onChange(key, next);
  }
}
