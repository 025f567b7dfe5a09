// The machine-wide caps a cluster primary keeps for its workers: the stream slots (maxStreams) and
// the per-principal cap of listen streams (maxListensPerPrincipal).
import { follow, type Follower, unfollow } from '../../lib/broadcast.js';
import type { Observable, Subscription } from 'rxjs';
import type { Admission, PrincipalCap } from '../../lib/principals.js';
import type { HeldAdmission, Member } from './member.js';

/**
 * The machine's stream slots (DESIGN M9 for every worker): a worker asks for a place before it
 * admits a listen or opens a GET stream, and gets one while fewer than `capacity` are held by all
 * workers together. A dead worker's places are free at once.
 * @internal
 */
export class MachineSlots {
  #inUse = 0;

  constructor(readonly capacity: number) {}

  /** Places held now, by every worker. */
  get inUse(): number {
    return this.#inUse;
  }

  acquire(member: Member, slot: number): boolean {
    if (this.#inUse >= this.capacity || member.slots.has(slot)) return false;
    this.#inUse++;
    member.slots.add(slot);
    return true;
  }

  release(member: Member, slot: number): void {
    if (member.slots.delete(slot)) this.#inUse--;
  }

  /** Frees every place of a worker that died; returns how many. */
  memberLeft(member: Member): number {
    const freed = member.slots.size;
    this.#inUse -= freed;
    member.slots.clear();
    return freed;
  }
}

/** One worker's admitted stream, following its admission's signal (see {@link follow}). */
class Held implements HeldAdmission, Follower {
  #watch: Subscription | undefined;

  constructor(
    private readonly cap: MachineCap,
    readonly member: Member,
    readonly stream: number,
    readonly principal: string,
    readonly admission: Admission,
  ) {
    this.#watch = follow(admission.superseded$, this);
  }

  onBroadcast(_source: Observable<unknown>, reason: unknown): void {
    this.cap.displaced(this, reason);
  }

  stop(): void {
    unfollow(this.admission.superseded$, this, this.#watch);
    this.#watch = undefined;
  }
}

/**
 * The per-principal cap (DESIGN M8) for every worker of the machine, on `cap` (a `PrincipalRegistry`
 * of the machine, or the fleet's `RedisPrincipalCap`): each worker's admission is admitted here too,
 * and when `cap` supersedes one (the principal's oldest stream, on any worker) the worker holding
 * it is told. A dead worker's admissions are released at once.
 * @internal
 */
export class MachineCap {
  readonly #byPrincipal = new Map<string, Set<HeldAdmission>>();

  constructor(readonly cap: PrincipalCap) {}

  admit(member: Member, stream: number, principal: string): void {
    if (member.admissions.has(stream)) return;
    // The principal's oldest streams beyond the cap are displaced inside `admit`, their workers told.
    const held = new Held(this, member, stream, principal, this.cap.admit(principal));
    member.admissions.set(stream, held);
    let own = this.#byPrincipal.get(principal);
    if (own === undefined) this.#byPrincipal.set(principal, (own = new Set()));
    own.add(held);
  }

  unadmit(member: Member, stream: number): void {
    const held = member.admissions.get(stream);
    if (held === undefined) return;
    this.#drop(held);
    held.admission.release();
  }

  /**
   * Ends every stream of `principal` on every worker with `reason`: through `cap` when it can revoke
   * (a fleet's cap: on every node), else the ones this machine admitted.
   */
  async revoke(principal: string, reason: string): Promise<void> {
    const revoke = (this.cap as { revoke?: (principal: string, reason?: string) => void | Promise<void> }).revoke;
    if (typeof revoke === 'function') return void (await revoke.call(this.cap, principal, reason));
    for (const held of [...(this.#byPrincipal.get(principal) ?? [])]) {
      this.#drop(held);
      held.admission.release();
      held.member.send({ k: 'supersede', s: held.stream, r: reason });
    }
  }

  /** Releases every admission of a worker that died; returns how many. */
  memberLeft(member: Member): number {
    const left = [...member.admissions.values()];
    for (const held of left) {
      this.#drop(held);
      held.admission.release();
    }
    return left.length;
  }

  /** `cap` displaced `held` (superseded, or revoked with `reason`): its worker ends the stream. @internal */
  displaced(held: HeldAdmission, reason: unknown): void {
    if (held.member.admissions.get(held.stream) !== held) return;
    this.#drop(held);
    held.member.send(typeof reason === 'string' ? { k: 'supersede', s: held.stream, r: reason } : { k: 'supersede', s: held.stream });
  }

  #drop(held: HeldAdmission): void {
    held.stop();
    held.member.admissions.delete(held.stream);
    const own = this.#byPrincipal.get(held.principal);
    if (own !== undefined && own.delete(held) && own.size === 0) this.#byPrincipal.delete(held.principal);
  }
}
