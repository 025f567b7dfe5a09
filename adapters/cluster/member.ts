import type { Admission } from '../../lib/principals.js';
import { Outbox, type Port, type PrimaryMessage } from './protocol.js';

/** A `cluster.Worker` as the primary uses it. @internal */
export interface WorkerHandle extends Port {
  readonly id: number;
  readonly process: { readonly pid?: number | undefined };
}

/** A listen stream of a worker admitted by the machine's cap, until it ends. @internal */
export interface HeldAdmission {
  readonly member: Member;
  readonly stream: number;
  readonly principal: string;
  readonly admission: Admission;
  /** Stops following the admission's supersede signal. */
  stop(): void;
}

/**
 * A worker as the primary knows it from its hello to its exit: what it holds of the machine (slots,
 * admissions, leases), released at once when it dies, and its outbox.
 * @internal
 */
export class Member {
  readonly nodeId: string;
  /** The machine's stream slots it holds, by its own numbers. */
  readonly slots = new Set<number>();
  /** Its listen streams admitted by the machine's cap, by its own numbers. */
  readonly admissions = new Map<number, HeldAdmission>();
  /** The leases it contends for. */
  readonly leases = new Set<string>();
  #left = false;
  readonly #outbox: Outbox<PrimaryMessage>;

  constructor(
    readonly worker: WorkerHandle,
    primaryNodeId: string,
  ) {
    this.nodeId = `${primaryNodeId}/${worker.id}`;
    // A send to a worker that is gone: its exit is on its way, and releases what it held.
    this.#outbox = new Outbox(worker, () => undefined);
  }

  /** True once it exited: nothing is sent to it any more. */
  get left(): boolean {
    return this.#left;
  }

  send(message: PrimaryMessage): void {
    if (!this.#left) this.#outbox.push(message);
  }

  /** It exited. */
  leave(): void {
    this.#left = true;
  }
}
