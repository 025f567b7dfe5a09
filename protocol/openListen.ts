import type { CloseReason } from '../lib/frame.js';
import type { Admission } from '../lib/principals.js';
import type { Slot } from '../lib/slots.js';
import type { ListenTrace, StopReason } from '../lib/telemetry.js';
import type { ListenStatus } from '../operators/listenPipeline.js';
import type { StreamWatcher } from '../operators/streamTelemetry.js';
import { listenFilterInfo, type ListenStreamInfo, type StreamsOptions } from './inspect.js';
import type { HeldCredential } from './credentialChecks.js';
import type { FeedLease } from './providerFeeds.js';
import { traceStart, traceStop } from './trace.js';

/**
 * One open listen stream as its endpoint keeps it, the one object per stream it keeps: what the
 * stream gives back when it ends (its place in its principal's cap, its slot, its providers'
 * feeds), its entry in the endpoint's set of open streams (for the snapshot, `closeStream` and
 * `revoke`), and the watcher its telemetry stage tells (which hands it the stream's
 * {@link ListenStatus}: filter, times, close and queue). Unsubscribed after the stream's own
 * teardown, whatever ended it.
 * @internal
 */
export class OpenListen implements StreamWatcher<ListenStatus> {
  /** The stream's telemetry stage, once the stream is assembled. */
  status: ListenStatus | undefined = undefined;
  /** Its place among the streams of its credential, when that is checked again while it is open (`AuthInfo.recheck`). */
  credential: HeldCredential | undefined = undefined;

  constructor(
    /** The endpoint's open listen streams, this one among them while it is open. */
    private readonly open: Set<OpenListen>,
    /** Its number on the endpoint: the snapshot's `listen-<n>`. */
    readonly serial: number,
    readonly principal: string,
    private readonly admission: Admission,
    private readonly slot: Slot,
    private readonly lease: FeedLease | undefined,
    /** The request's trace context, when `channels.trace` had a subscriber at admission. */
    private readonly trace: ListenTrace | undefined,
  ) {
    open.add(this);
  }

  /** The id the snapshot and `closeStream` use. */
  get id(): string {
    return `listen-${this.serial}`;
  }

  watch(status: ListenStatus): void {
    this.status = status;
  }

  started(status: ListenStatus): void {
    if (this.trace !== undefined) traceStart(this.trace, status);
  }

  stopped(status: ListenStatus, reason: StopReason, duration: number): void {
    if (this.trace !== undefined) traceStop(this.trace, status, reason, duration);
  }

  /** Ends the stream now with its closing frames and `reason` (nothing if it is ending already). */
  close(reason: CloseReason): void {
    this.status?.close.close?.(reason);
  }

  /** The stream's entry in the endpoint's snapshot. */
  info(options: StreamsOptions): ListenStreamInfo | undefined {
    const status = this.status;
    if (status === undefined) return undefined;
    const { close, queue } = status;
    const openedAt = status.openedAt();
    return {
      era: 'modern',
      id: this.id,
      principal: this.principal,
      requestId: close.requestId!,
      openedAt,
      filter: listenFilterInfo(status.filter, options),
      queuedFrames: queue?.queuedFrames ?? 0,
      queuedBytes: queue?.queuedBytes ?? 0,
      dropped: queue?.dropped ?? 0,
      coalesced: queue?.coalesced ?? 0,
      lastNotificationAt: close.lastNotificationAt ?? openedAt,
    };
  }

  /** The stream ended (any reason): it leaves the set and gives back what it held. */
  unsubscribe(): void {
    this.open.delete(this);
    this.admission.release();
    this.slot.release();
    this.lease?.release();
    this.credential?.release();
  }
}
