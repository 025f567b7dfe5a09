import type { Observable } from 'rxjs';
import { Broadcast } from './broadcast.js';
import { positiveInteger } from './validate.js';
import type { CloseReason } from './frame.js';

/** A stream admitted for a principal. */
export interface Admission {
  /**
   * Emits once when the stream must end because of its principal: when a newer stream of the same
   * principal displaces it (no value, or `'superseded'`), or with the reason its principal's
   * streams were ended for (`'revoked'`, see {@link PrincipalCap.revoke}).
   */
  readonly superseded$: Observable<CloseReason | void>;
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
  /**
   * Ends every stream of `principal` admitted through this cap, with `reason` (their
   * `superseded$` emits it), and stops counting them; a cap shared by a fleet does so on every
   * node. Optional: without it an endpoint ends its own streams of the principal, on its node only.
   * A cap that tells other nodes may return a Promise, rejected when it could not.
   * @param reason defaults to `'revoked'`.
   */
  revoke?(principal: string, reason?: CloseReason): void | Promise<void>;
}

/**
 * One admitted stream, its own {@link Admission} and its own supersede signal (a listen or GET
 * stream attaches to it without subscribing): one object per stream, 10 000 idle streams hold one
 * each. Once released it holds nothing of its subscribers.
 */
class Entry extends Broadcast<CloseReason | void> implements Admission {
  constructor(private readonly streams: PrincipalStreams) {
    super();
  }

  get superseded$(): Observable<CloseReason | void> {
    return this;
  }

  release(): void {
    this.streams.registry.remove(this.streams.principal, this);
  }

  /** Tells the stream why it must end (once, when there is a `reason`) and completes the signal: a later subscriber only gets the completion. */
  end(reason: CloseReason | undefined): void {
    if (reason !== undefined) this.next(reason);
    this.complete();
  }
}

/**
 * A principal's live streams, oldest first (a Set keeps insertion order): releasing one of 10 000
 * streams of one address is a delete, not a scan. Its entries share its principal string.
 */
class PrincipalStreams extends Set<Entry> {
  constructor(
    readonly registry: PrincipalRegistry,
    readonly principal: string,
  ) {
    super();
  }
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
 * @throws InvalidOptionError naming `maxListensPerPrincipal` (the endpoint option it stands for) when it is not a positive integer.
 */
export class PrincipalRegistry implements PrincipalCap {
  readonly maxPerPrincipal: number;
  readonly #streams = new Map<string, PrincipalStreams>();

  constructor(maxPerPrincipal = 4) {
    this.maxPerPrincipal = positiveInteger('maxListensPerPrincipal', maxPerPrincipal);
  }

  /** Live streams of `principal`. */
  count(principal: string): number {
    return this.#streams.get(principal)?.size ?? 0;
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
    let live = this.#streams.get(principal);
    if (live === undefined) this.#streams.set(principal, (live = new PrincipalStreams(this, principal)));
    const entry = new Entry(live);
    live.add(entry);
    // All displaced streams stop counting before any is told (a told stream may admit another).
    const displaced: Entry[] = [];
    for (const old of live) {
      if (live.size <= this.maxPerPrincipal) break;
      live.delete(old);
      displaced.push(old);
    }
    for (const old of displaced) old.end('superseded');
    return entry;
  }

  /**
   * Ends every live stream of `principal`: each stops counting at once and is told `reason`
   * through its `superseded$` (its stream closes with that reason).
   * @param principal the principal's key.
   * @param reason defaults to `'revoked'`.
   */
  revoke(principal: string, reason: CloseReason = 'revoked'): void {
    const live = this.#streams.get(principal);
    if (live === undefined) return;
    this.#streams.delete(principal);
    // All stop counting before any is told (a told stream may admit another).
    const ended = [...live];
    live.clear();
    for (const entry of ended) entry.end(reason);
  }

  /**
   * Removes a released stream from its principal's count (what `Admission.release` calls).
   * @internal
   */
  remove(principal: string, entry: Entry): void {
    const live = this.#streams.get(principal);
    // Released twice, or displaced already (no longer counted).
    if (live === undefined || !live.delete(entry)) return;
    if (live.size === 0) this.#streams.delete(principal);
    entry.end(undefined);
  }
}
