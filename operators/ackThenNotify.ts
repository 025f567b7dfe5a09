import type { MonoTypeOperatorFunction } from 'rxjs';
import type { Frame } from '../lib/frame.js';
import { object } from '../lib/validate.js';
import { Stage, stageOperator } from './stage.js';

/**
 * Emits `ack` first, but only once the source is subscribed; then the source's frames.
 *
 * Subscribing to the hub's notifications is what registers the stream's topics, so the acknowledgment
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
 * const filter: ListenFilter = { toolsListChanged: true };
 * // { jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: { toolsListChanged: true } } }
 * const ack = controlFrame(acknowledgedNotification(filter));
 * notifications(hub, filter).pipe(ackThenNotify(ack), keepAlive(15_000));
 * // ack, then the tools/list_changed notifications published after the topics were registered
 * @param ack the acknowledgment frame, emitted once per subscription (usually a control frame
 *   for `notifications/subscriptions/acknowledged`).
 * @see tagSubscriptionId
 * @see keepAlive
 * @see closeWhen
 */
export function ackThenNotify(ack: Frame): MonoTypeOperatorFunction<Frame> {
  const frame = object<Frame>('ackThenNotify ack', ack, 'a Frame (controlFrame(acknowledgedNotification(filter)))');
  return stageOperator(() => [new AckStage(frame)]);
}

/**
 * The logic of {@link ackThenNotify}: the ack goes out once the source's subscribe has returned,
 * or just before the source's first value, completion or error if it emits while being
 * subscribed. A synchronous source is never buffered.
 * @internal
 */
export class AckStage extends Stage<Frame> {
  // Let go of once sent: an idle stream does not keep its ack.
  private ack: Frame | undefined;

  constructor(ack: Frame) {
    super();
    this.ack = ack;
  }

  private sendAck(): void {
    const ack = this.ack;
    if (ack === undefined) return;
    this.ack = undefined;
    this.out.push(ack);
  }

  override opened(): void {
    // The source's subscribe has returned: its topics are registered.
    this.sendAck();
  }

  push(frame: Frame): void {
    this.sendAck();
    this.out.push(frame);
  }

  // A source that ends (or fails) before the ack went out still gets it first.
  override end(): void {
    this.sendAck();
    super.end();
  }

  override fail(error: unknown): void {
    this.sendAck();
    super.fail(error);
  }
}
