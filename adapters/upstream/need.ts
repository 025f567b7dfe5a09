// What the gateway holds of one upstream resource URI: who needs it, what the upstream said of it,
// and where its changes go. Shared by both eras' drivers.
import { Subject, type Subscription } from 'rxjs';
import type { UpstreamError } from './errors.js';

/** What an upstream said of a resource URI: not yet (`pending`), honoured, refused, or failed to say. @internal */
export type NeedStatus = 'pending' | 'honoured' | 'refused' | 'failed';

/**
 * One upstream resource URI some downstream streams need: held while at least one does (plus a
 * linger, so that a listen's decision and its subscription share it), carried by one upstream stream
 * (a modern listen's group, a legacy session's subscription).
 * @internal
 */
export class Need {
  /** Downstream holders now (listens' feeds of a node, legacy sessions, decisions in progress). */
  refs = 0;
  status: NeedStatus = 'pending';
  /** Why the upstream failed to say (`failed`). */
  failure: UpstreamError | undefined;
  /** An upstream stream honoured it before: when a new one honours it again, changes may have been missed in between. */
  heard = false;
  /** No longer held: forgotten by its upstream. */
  dropped = false;
  /** The changes of the URI, one value each (a payload-less `resources/updated` downstream). */
  readonly updates = new Subject<void>();
  /** The drop scheduled when the last holder left. */
  linger: Subscription | undefined;
  /** Which upstream stream carries it (the driver's own). */
  carrier: unknown;
  #waiters: (() => void)[] | undefined;

  constructor(readonly uri: string) {}

  /**
   * The upstream answered for the URI. Honoured again after an earlier stream honoured it: the
   * changes made while no stream carried it may have been missed, so one update is handed on (a
   * client may hear a change it did not need, never miss one; the hub coalesces it with a pending one).
   */
  answer(status: Exclude<NeedStatus, 'pending'>, failure?: UpstreamError): void {
    if (this.dropped) return;
    const again = status === 'honoured' && this.heard;
    this.status = status;
    this.failure = failure;
    if (status === 'honoured') this.heard = true;
    const waiters = this.#waiters;
    this.#waiters = undefined;
    if (waiters !== undefined) for (const waiter of waiters) waiter();
    if (again) this.updates.next();
  }

  /** Resolves at the next answer (at once when there has been one). */
  answered(): Promise<void> {
    if (this.status !== 'pending') return Promise.resolve();
    return new Promise((resolve) => (this.#waiters ??= []).push(resolve));
  }
}
