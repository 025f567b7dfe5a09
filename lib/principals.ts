import { Subject, type Observable } from 'rxjs';
import { InvalidOptionError } from './errors.js';

/** A stream admitted for a principal. */
export interface Admission {
  /** Emits once if a newer stream of the same principal displaces this one. */
  readonly superseded$: Observable<void>;
  /** Removes the stream from its principal's count; idempotent. Call when the stream ends. */
  release(): void;
}

/**
 * The per-principal cap an endpoint admits streams through. {@link PrincipalRegistry} is the
 * in-process implementation; a cluster-wide one (e.g. on Redis) implements the same contract:
 * `admit` is synchronous and always admits; when the principal is over the cap, its oldest
 * streams (anywhere) are told to close through their `superseded$`.
 */
export interface PrincipalCap {
  /** The cap of live streams per principal. */
  readonly maxPerPrincipal: number;
  /** Principals with at least one live stream on this node (for leak checks). */
  readonly size: number;
  /** Live streams of `principal` on this node. */
  count(principal: string): number;
  /** Admits a new stream for `principal`; see {@link PrincipalRegistry.admit}. */
  admit(principal: string): Admission;
}

interface Entry {
  readonly signal: Subject<void>;
  live: boolean;
}

/**
 * The per-principal cap of listen streams with supersede (DESIGN M8, default 4).
 *
 * A new stream is always admitted; when its principal is over the cap, the principal's
 * **oldest** streams are told to close (reason `superseded`) and stop counting at once.
 * Admission is synchronous, so it is serialized per principal by construction: a burst never
 * holds more than the cap live. Other principals are never touched. Never 429: a client's dead
 * streams are only noticed on their next write, so refusing would lock it out.
 *
 * @example
 * const registry = new PrincipalRegistry(4);
 * const admission = registry.admit('user:42');
 * listenStream({ ..., supersede$: admission.superseded$ }).pipe(finalize(() => admission.release()));
 * @param maxPerPrincipal the cap; a positive integer; defaults to 4.
 */
export class PrincipalRegistry implements PrincipalCap {
  readonly maxPerPrincipal: number;
  readonly #streams = new Map<string, Entry[]>();

  constructor(maxPerPrincipal = 4) {
    if (!Number.isSafeInteger(maxPerPrincipal) || maxPerPrincipal <= 0) {
      throw new InvalidOptionError('maxListensPerPrincipal', 'a positive integer', maxPerPrincipal);
    }
    this.maxPerPrincipal = maxPerPrincipal;
  }

  /** Live streams of `principal`. */
  count(principal: string): number {
    return this.#streams.get(principal)?.length ?? 0;
  }

  /** Principals with at least one live stream (for leak checks). */
  get size(): number {
    return this.#streams.size;
  }

  /**
   * Admits a new stream for `principal`, superseding its oldest streams beyond the cap.
   * @param principal the principal's key (authenticated id or address bucket).
   */
  admit(principal: string): Admission {
    let list = this.#streams.get(principal);
    if (list === undefined) this.#streams.set(principal, (list = []));
    const entry: Entry = { signal: new Subject<void>(), live: true };
    list.push(entry);
    const displaced = list.length > this.maxPerPrincipal ? list.splice(0, list.length - this.maxPerPrincipal) : [];
    for (const old of displaced) {
      old.live = false;
      old.signal.next();
      old.signal.complete();
    }
    return {
      superseded$: entry.signal.asObservable(),
      release: () => this.#remove(principal, entry),
    };
  }

  #remove(principal: string, entry: Entry): void {
    if (!entry.live) return;
    entry.live = false;
    entry.signal.complete();
    const list = this.#streams.get(principal);
    if (list === undefined) return;
    const at = list.indexOf(entry);
    if (at >= 0) list.splice(at, 1);
    if (list.length === 0) this.#streams.delete(principal);
  }
}
