import { Observable, Subscriber } from 'rxjs';
import type { MonoTypeOperatorFunction } from 'rxjs';
import type { Frame } from '../lib/frame.js';

/**
 * Emits `ack` first, but only once the source is subscribed; then the source's frames.
 *
 * Subscribing to the hub's frames is what registers the stream's topics, so the acknowledgment
 * must go out after that subscription, never before (a plain `startWith(ack)` would emit it
 * before). The ack is emitted as soon as the source's subscription returns, or earlier, just
 * before the source's first value, completion or error if the source emits while it is being
 * subscribed: downstream always sees the ack first and then every source frame in order, and
 * a synchronous source is never buffered, so unsubscribing stops it. Each subscription gets
 * its own ack.
 *
 * MCP 2026-07-28 `subscriptions/listen`, DESIGN M6: "Topics are registered before the ack is
 * written: nothing published after the ack is missed."
 *
 * @example
 * const ack = controlFrame({
 *   jsonrpc: '2.0',
 *   method: 'notifications/subscriptions/acknowledged',
 *   params: { notifications: { toolsListChanged: true } },
 * });
 * hub.frames(filter).pipe(ackThenNotify(ack), keepAlive(15_000));
 * // ack, then the tools/list_changed notifications published after the topics were registered
 * @param ack the acknowledgment frame, emitted once per subscription (usually a control frame
 *   for `notifications/subscriptions/acknowledged`).
 * @see tagSubscriptionId
 * @see keepAlive
 * @see closeWhen
 */
export function ackThenNotify(ack: Frame): MonoTypeOperatorFunction<Frame> {
  return (source) =>
    new Observable<Frame>((subscriber) => {
      const inner = new AckFirstSubscriber(subscriber, ack);
      source.subscribe(inner);
      // The source's subscribe has returned: its topics are registered.
      if (!subscriber.closed) inner.sendAck();
    });
}

// A Subscriber subclass rather than `merge(ack$, source.pipe(tap(…)))`: this sits on the per-frame
// path of every stream, and one monomorphic layer costs a fraction of a merge plus a tap. Being
// a child of the downstream subscriber, it is closed when the downstream unsubscribes, which
// stops a synchronous source.
class AckFirstSubscriber extends Subscriber<Frame> {
  private sent = false;

  constructor(
    destination: Subscriber<Frame>,
    private readonly ack: Frame,
  ) {
    super(destination);
  }

  sendAck(): void {
    if (this.sent) return;
    this.sent = true;
    this.destination.next(this.ack);
  }

  protected override _next(frame: Frame): void {
    this.sendAck();
    this.destination.next(frame);
  }

  protected override _error(error: unknown): void {
    this.sendAck();
    super._error(error);
  }

  protected override _complete(): void {
    this.sendAck();
    super._complete();
  }
}
