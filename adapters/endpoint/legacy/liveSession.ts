import { noop, Subject, type Subscription } from 'rxjs';
import { linkStages, type Downstream } from '../../../operators/stage.js';
import { EventIdStage } from '../../../operators/withEventIds.js';
import type { RequestContext } from '../../../lib/context.js';
import { type Frame, mayReceive, type MessageFrame } from '../../../lib/frame.js';
import type { Admission } from '../../../lib/principals.js';
import type { EventLog } from '../../../lib/replayBuffer.js';
import type { SessionRecord } from '../../../lib/session.js';
import { reportError } from '../../../lib/telemetry.js';

const NO_SCOPES: ReadonlySet<string> = new Set();

/** A GET stream of a session: where its live frames go, and how the server ends it. @internal */
export interface StreamHandle {
  readonly feed: Subject<Frame>;
  /** Its place in the principal's cap: given back as soon as the stream is ended. */
  readonly admission: Admission;
}

/** A subscribe in progress: told why it was cancelled when something overtakes it. @internal */
export interface PendingSubscribe {
  reason: string | undefined;
}

/**
 * A legacy session as this node holds it: the record plus what cannot be persisted (its live GET
 * stream, its live subscriptions, its timers).
 * @internal
 */
export class LiveSession {
  readonly id: string;
  readonly principal: string;
  readonly protocolVersion: string;
  /** The persisted subscription list, kept in step with the store. */
  uris: string[];
  lastActivity: number;
  readonly log: EventLog;
  stream: StreamHandle | undefined;
  /** The request context of the live GET stream (whose principal remote subscribes run as). */
  streamContext: RequestContext | undefined;
  readonly live = new Map<string, Subscription>();
  readonly pending = new Map<string, PendingSubscribe>();
  listChanged: Subscription | undefined;
  /** The grace period after its GET stream ended, on the endpoint's clock. */
  grace: { unsubscribe(): void } | undefined;
  ended = false;
  /** Emits when a GET stream attaches or the session ends. */
  readonly changed = new Subject<void>();
  /**
   * The read scopes of the principal as of its latest GET stream (empty until one opens): a
   * notification published with a scope outside them is never stamped nor written.
   */
  scopes: ReadonlySet<string> = NO_SCOPES;

  // The session's feed: every frame stamped with its next event id and kept for replay (the
  // withEventIds stage, linked straight to the session), then written to the live stream if any.
  // With an asynchronous log frames still come out in push order; a frame the log failed to take
  // is reported on `channels.error` and not written, and the frames after it go on.
  readonly #stamp: Downstream<MessageFrame>;

  constructor(record: SessionRecord, log: EventLog) {
    this.id = record.id;
    this.principal = record.principal;
    this.protocolVersion = record.protocolVersion;
    this.uris = [...record.subscriptions];
    this.lastActivity = record.lastActivity;
    this.log = log;
    this.#stamp = linkStages([new EventIdStage(log, (error) => reportError('source', error))], {
      push: (frame: Frame) => this.stream?.feed.next(frame),
      end: noop,
      fail: (error: unknown) => reportError('source', error),
    });
  }

  /** Stamps `frame` with the session's next event id, keeps it for replay, writes it to the live stream if any. */
  push(frame: MessageFrame): void {
    // A storm of identical notifications (1000 tools/list_changed from a registry's loop) reaches
    // a session once (the hub collapses it, HubOptions.coalesce), so a collapsed one takes no id.
    if (frame.scope !== undefined && !mayReceive(frame, this.scopes)) return;
    this.#stamp.push(frame);
  }
}

/**
 * Ends the session's stream (only `handle` when given): its pipeline writes what it holds and
 * completes. Idempotent.
 * @internal
 */
export function endStream(session: LiveSession, handle: StreamHandle | undefined = session.stream): void {
  if (handle === undefined || session.stream !== handle) return;
  session.stream = undefined;
  handle.admission.release();
  handle.feed.complete();
}

/**
 * Releases the session's live subscriptions (they stay on the record, restored on the next GET).
 * @internal
 */
export function sleep(session: LiveSession): void {
  session.grace?.unsubscribe();
  session.grace = undefined;
  session.listChanged?.unsubscribe();
  session.listChanged = undefined;
  for (const subscription of session.live.values()) subscription.unsubscribe();
  session.live.clear();
  for (const pending of session.pending.values()) pending.reason ??= 'the GET stream closed';
  session.pending.clear();
}
