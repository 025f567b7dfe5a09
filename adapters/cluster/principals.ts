import type { Observable } from 'rxjs';
import { Broadcast } from '../../lib/broadcast.js';
import type { Admission, PrincipalCap } from '../../lib/principals.js';
import type { WorkerLink } from './link.js';

/**
 * One admitted stream: its own signal (a listen attaches to it without subscribing, as to a
 * `PrincipalRegistry`'s). The value it emits is the reason its principal's stream must end: none
 * for a supersede, the reason of a revoke.
 */
class Entry extends Broadcast<unknown> implements Admission {
  live = true;

  constructor(
    private readonly cap: ClusterPrincipalCap,
    readonly id: number,
    readonly principal: string,
  ) {
    super();
  }

  get superseded$(): Observable<void> {
    // What it emits is the reason, for the close stage that reads one (a revoke); void for the others.
    return this as Observable<unknown> as Observable<void>;
  }

  release(): void {
    this.cap.release(this);
  }

  /** Tells the stream it must end (with `reason`, when `displaced`), and completes the signal. */
  end(reason: string | undefined, displaced = true): void {
    if (displaced) this.next(reason);
    this.complete();
  }
}

/**
 * The per-principal cap with supersede (DESIGN M8, `maxListensPerPrincipal`) across the workers of
 * a machine: a principal's newest listen anywhere supersedes its oldest stream anywhere.
 *
 * `admit` is synchronous and always admits, as the contract says. On this worker it works like a
 * `PrincipalRegistry` at once (a burst on one worker never holds more than the cap live); the
 * machine-wide part follows one IPC hop later: the admission is recorded by the primary, whose cap
 * (a `PrincipalRegistry` of the machine, or the fleet's `RedisPrincipalCap`) supersedes the oldest
 * beyond the cap and tells the worker that holds it. The releases of this worker's displaced
 * streams are sent before the new admission, so the primary never counts them together. When a
 * worker dies the primary releases everything it had admitted.
 * @internal
 */
export class ClusterPrincipalCap implements PrincipalCap {
  readonly maxPerPrincipal: number;
  readonly #link: WorkerLink;
  /** Live local entries per principal, oldest first (a Set keeps insertion order). */
  readonly #streams = new Map<string, Set<Entry>>();
  readonly #byId = new Map<number, Entry>();
  #next = 0;

  constructor(link: WorkerLink, maxPerPrincipal: number) {
    this.maxPerPrincipal = maxPerPrincipal;
    this.#link = link;
    link.on('supersede', ({ s, r }) => {
      const entry = this.#byId.get(s);
      if (entry === undefined) return;
      // The primary has let go of it already: nothing to send back.
      this.#drop(entry, false);
      entry.end(r);
    });
  }

  /** Principals with at least one live stream on this worker (for leak checks). */
  get size(): number {
    return this.#streams.size;
  }

  /** Live streams of `principal` on this worker. */
  count(principal: string): number {
    return this.#streams.get(principal)?.size ?? 0;
  }

  /**
   * Admits a new stream for `principal` at once; supersedes this worker's oldest streams of the
   * principal beyond the cap at once, and the machine's oldest when the primary has recorded it.
   */
  admit(principal: string): Admission {
    let own = this.#streams.get(principal);
    if (own === undefined) this.#streams.set(principal, (own = new Set()));
    const entry = new Entry(this, ++this.#next, principal);
    own.add(entry);
    this.#byId.set(entry.id, entry);
    // All displaced streams stop counting before any is told (a told stream may admit another).
    const displaced: Entry[] = [];
    for (const old of own) {
      if (own.size - displaced.length <= this.maxPerPrincipal) break;
      displaced.push(old);
    }
    for (const old of displaced) this.#drop(old, true);
    this.#link.send({ k: 'admit', s: entry.id, p: principal });
    for (const old of displaced) old.end(undefined);
    return entry;
  }

  /**
   * Ends every listen stream of `principal` on every worker of the machine with `reason` (and,
   * when the primary's cap is shared by a fleet and can revoke, on every node of the fleet): this
   * worker's at once, the others' when the primary tells them. Resolves once the primary has.
   *
   * The seam for `McpEndpoint.revoke` (issue 25): a cap that revokes is asked by the endpoint; the
   * reason travels to every worker as the value of the streams' supersede signal.
   * @param principal the principal's key.
   * @param reason why (the close reason the streams end with); defaults to `'revoked'`.
   */
  revoke(principal: string, reason = 'revoked'): Promise<void> {
    // The primary ends the admissions of every worker, this one's included: nothing to send back.
    const ended = [...(this.#streams.get(principal) ?? [])];
    for (const entry of ended) this.#drop(entry, false);
    for (const entry of ended) entry.end(reason);
    return this.#link.call('revoke', [principal, reason]).then(() => undefined);
  }

  /** A stream of this worker that ended by itself: it stops counting, and the primary is told. @internal */
  release(entry: Entry): void {
    if (!entry.live) return;
    this.#drop(entry, true);
    entry.end(undefined, false);
  }

  /** `entry` stops counting here, and at the primary when `tell` (unless the primary is the one telling). */
  #drop(entry: Entry, tell: boolean): void {
    entry.live = false;
    this.#byId.delete(entry.id);
    const own = this.#streams.get(entry.principal);
    if (own !== undefined && own.delete(entry) && own.size === 0) this.#streams.delete(entry.principal);
    if (tell) this.#link.send({ k: 'unadmit', s: entry.id });
  }
}
