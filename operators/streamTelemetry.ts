// A served stream's telemetry (DESIGN M11), the one stage both eras' pipelines end with: a listen
// (`listenStages`) and a legacy GET stream (`sessionStages`) publish `start` and `stop` here, and
// tell their owner (the endpoint's registry of open streams) how they are doing; `drop` is published
// by their queue through `reportDrop`.
import type { Clock } from '../lib/clock.js';
import type { FilterName } from '../lib/filter.js';
import type { CloseReason, Frame, MessageFrame } from '../lib/frame.js';
import type { JsonRpcId } from '../lib/jsonrpc.js';
import { channels, type StopReason, type StreamEra } from '../lib/telemetry.js';
import type { QueueStage } from './dropWhenQueueExceeds.js';
import { Stage } from './stage.js';

/** How a stream ended or is ending, as its telemetry reports it (a {@link CloseStage} says so), and how to end it. @internal */
export interface StreamEnd {
  readonly reason: CloseReason | undefined;
  readonly failed: boolean;
  /** The listen request the closing frames answer (a served listen's). */
  readonly requestId?: JsonRpcId | undefined;
  /** See `CloseStage.lastNotificationAt`. */
  readonly lastNotificationAt: number | undefined;
  /** Ends the stream now with its closing frames (a served stream's close stage); idempotent. */
  close?(reason: CloseReason): void;
}

/**
 * What an open stream tells its owner about itself, through its telemetry stage: when it opened,
 * how it ends (its close stage) and what its queue holds. @internal
 */
export interface StreamStatus {
  /** When the stream opened, in milliseconds since the epoch (its scheduler's time). */
  openedAt(): number;
  /** How it ended or is ending, and the way to end it now (a served stream's `CloseStage`). */
  readonly close: StreamEnd;
  /** Its queue for a busy client (a served stream's `QueueStage`). */
  readonly queue: QueueStage | undefined;
}

/**
 * Told about one stream's life by its telemetry stage (a per-stream value, like its signals):
 * `watch` as the stream is assembled, `started` when it opens, `stopped` when it ends (after its
 * `stop` is published). @internal
 */
export interface StreamWatcher<S extends StreamStatus = StreamStatus> {
  watch(status: S): void;
  started(status: S): void;
  stopped(status: S, reason: StopReason, duration: number): void;
}

/**
 * The last stage of a served stream, of either era: publishes its `start` when it opens (the last
 * stage opens first, so before its source is registered and its first frame goes out) and its
 * `stop` with the reason when it is torn down, and tells its watcher. Frames pass through it
 * untouched. An era says what the stream listens to ({@link TelemetryStage.filters}) and, where
 * its owner can end it, why it did ({@link TelemetryStage.endReason}).
 * @internal
 */
export abstract class TelemetryStage<S extends StreamStatus = StreamStatus> extends Stage<Frame> implements StreamStatus {
  // Milliseconds after the clock's origin: a small integer kept in the object.
  private startedAt = 0;

  constructor(
    private readonly clock: Clock,
    readonly close: StreamEnd,
    readonly queue: QueueStage | undefined,
    protected readonly watcher: StreamWatcher<S> | undefined,
  ) {
    super();
    watcher?.watch(this.status());
  }

  /** The stream's era (on the prototype: a stream holds no field for it). */
  protected abstract get era(): StreamEra;

  /** The filters the stream listens to, as telemetry names them (read at its start and at its stop). */
  protected abstract filters(): FilterName[];

  /** How many resource URIs the stream listens to, when it starts. */
  protected abstract resourceSubscriptions(): number;

  /** Why the stream's owner ended it, when it did (a legacy session's stream: `replaced`, `session_ended`). */
  protected endReason(): StopReason | undefined {
    return undefined;
  }

  /** What the watcher is handed: this stage, as its era's status. */
  protected abstract status(): S;

  openedAt(): number {
    return this.startedAt + this.clock.origin;
  }

  override open(): void {
    this.startedAt = this.clock.elapsed();
    if (channels.start.hasSubscribers) {
      channels.start.publish({ era: this.era, systemTime: this.openedAt(), resourceSubscriptions: this.resourceSubscriptions(), filters: this.filters() });
    }
    this.watcher?.started(this.status());
  }

  push(frame: Frame): void {
    this.out.push(frame);
  }

  override dispose(): void {
    const { watcher, close } = this;
    if (watcher === undefined && !channels.stop.hasSubscribers) return;
    const reason: StopReason = close.reason ?? this.endReason() ?? (close.failed ? 'error' : 'client_closed');
    const duration = this.clock.elapsed() - this.startedAt;
    if (channels.stop.hasSubscribers) channels.stop.publish({ era: this.era, duration, filters: this.filters(), reason });
    watcher?.stopped(this.status(), reason, duration);
  }
}

/** The `drop` telemetry of a notification dropped for a busy client (listen and legacy GET streams). @internal */
export function reportDrop(frame: MessageFrame, queueLength: number, queueBytes: number): void {
  if (channels.drop.hasSubscribers) channels.drop.publish({ queueLength, queueBytes, topic: frame.topic ?? 'resource' });
}
