import { BehaviorSubject, distinctUntilChanged, type Observable } from 'rxjs';
import type { WorkerLink } from './link.js';

/**
 * A named lease among the workers of a machine that one of them holds at a time, e.g. "who watches
 * this folder": the primary grants it to the longest-waiting live contender, and to the next one
 * the moment the holder dies (its IPC channel closes: no expiry to wait for) or lets go (`close`).
 * With a fleet beyond the machine (the primary's lease on Redis), a worker holds it only while its
 * machine does.
 *
 * Its holders hand a state over to each other (what the last one did, for the next to carry on):
 * the holder merges entries into it with {@link ClusterLease.saveState} (kept by the primary, or
 * beside the fleet's lease in Redis), and the grant brings the next holder the state as it was
 * left, read with {@link ClusterLease.state}.
 * @internal
 */
export class ClusterLease {
  /** `true` while this worker holds the lease; emits the current value on subscribe, then each change; completes on `close()`. */
  readonly held$: Observable<boolean>;
  readonly #held = new BehaviorSubject(false);
  #state: ReadonlyMap<string, string> | undefined;
  #closed = false;

  constructor(
    private readonly link: WorkerLink,
    /** The lease's name (the same on every worker that contends for it). */
    readonly key: string,
    private readonly onClose: (lease: ClusterLease) => void,
  ) {
    this.held$ = this.#held.pipe(distinctUntilChanged());
    link.send({ k: 'lease', key, join: true });
  }

  /** Whether this worker holds the lease now. */
  get held(): boolean {
    return this.#held.value;
  }

  /**
   * The state the holders before this one left, as the grant brought it; `undefined` when none
   * was ever saved (or this worker does not hold the lease).
   */
  state(): Promise<ReadonlyMap<string, string> | undefined> {
    return Promise.resolve(this.#held.value ? this.#state : undefined);
  }

  /** Merges `entries` into the holders' state (`null`: delete); ignored by the primary unless this worker holds the lease. */
  saveState(entries: Iterable<readonly [string, string | null]>): void {
    if (!this.#closed) this.link.send({ k: 'leaseState', key: this.key, s: [...entries] });
  }

  /** @internal */
  set(held: boolean, state?: readonly (readonly [string, string])[] | null): void {
    if (this.#closed) return;
    this.#state = held && state ? new Map(state) : undefined;
    this.#held.next(held);
  }

  /** Stops contending and lets the lease go if held (`held$` emits `false`, then completes); idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#held.next(false);
    this.#closed = true;
    this.#held.complete();
    this.link.send({ k: 'lease', key: this.key, join: false });
    this.onClose(this);
  }
}
