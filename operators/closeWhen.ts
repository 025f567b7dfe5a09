import { Observable, Subject, type MonoTypeOperatorFunction } from 'rxjs';
import { follow, type Follower, unfollow } from '../lib/broadcast.js';
import type { Clock, ClockEntry } from '../lib/clock.js';
import { InvalidOptionError } from '../lib/errors.js';
import { controlFrame, isCloseReason, type CloseReason, type Frame } from '../lib/frame.js';
import type { JsonRpcId } from '../lib/jsonrpc.js';
import type { CloseNoticeMode } from '../lib/options.js';
import { BareSubscriber, type SubscriptionReceiver } from '../lib/subscribers.js';
import { callback, oneOf, requestId } from '../lib/validate.js';
import { Stage, type StageChain, stageOperator } from './stage.js';

/**
 * Decides when a stream is closed: given the stream's frames, emits the reason to close it.
 *
 * `closeWhen` subscribes every trigger once, to the same shared upstream, and closes the
 * stream on the first reason any of them emits. A trigger that does not care about the frames
 * (a timer, an outside signal) ignores its argument.
 *
 * @example
 * // Close on maintenance; the frames are not needed.
 * const maintenance: CloseTrigger = () => maintenance$.pipe(take(1), map(() => 'shutdown' as const));
 * @param upstream the frames of the stream, shared with the other triggers; each frame reaches
 *   the triggers just before it is passed on.
 * @see closeWhen
 */
export type CloseTrigger = (upstream: Observable<Frame>) => Observable<CloseReason>;

/**
 * What a built-in trigger is, for `closeWhen` to run it as a few fields of its own stage instead
 * of a subscribed chain: a deadline on a clock, an idle window, or an outside signal.
 * @internal
 */
export type TriggerSpec = DeadlineSpec | IdleSpec | { readonly kind: 'signal'; readonly reason: CloseReason; readonly signal$: Observable<unknown> };

/** A deadline: `after` milliseconds from the stream's start, or at the time `at`. @internal */
export interface DeadlineSpec {
  readonly kind: 'deadline';
  readonly reason: CloseReason;
  readonly clock: Clock;
  readonly after?: number;
  readonly at?: number;
}

/** An idle window of `ms` milliseconds without a notification. @internal */
export interface IdleSpec {
  readonly kind: 'idle';
  readonly ms: number;
  readonly clock: Clock;
}

/** Where a built-in trigger keeps its {@link TriggerSpec}. @internal */
export const TRIGGER_SPEC: unique symbol = Symbol('mcp-rx-streams.closeTrigger');

/** A built-in trigger: callable like any {@link CloseTrigger}, and known to `closeWhen`. @internal */
export type BuiltInTrigger = CloseTrigger & { readonly [TRIGGER_SPEC]: TriggerSpec };

/** The spec of `trigger` if it is a built-in one. @internal */
export function triggerSpec(trigger: CloseTrigger): TriggerSpec | undefined {
  return (trigger as Partial<BuiltInTrigger>)[TRIGGER_SPEC];
}

/** How a stream closed by `closeWhen` says goodbye. */
export interface CloseNotice {
  /** The id of the `subscriptions/listen` request: the `requestId` of `notifications/cancelled` and the id of the result. */
  readonly requestId: JsonRpcId;
  /**
   * `'cancelled-then-result'` (the default) sends `notifications/cancelled` and then the listen
   * result; `'result-only'` sends just the result, for clients that treat the cancellation as an
   * abnormal end (DESIGN M7, option `closeNotice`).
   */
  readonly mode?: CloseNoticeMode;
}

function isTriggerList(value: unknown): boolean {
  return Array.isArray(value) && value.every((trigger) => typeof trigger === 'function');
}

/**
 * Passes frames through until a trigger gives a reason to close, then ends the stream gracefully:
 * `notifications/cancelled`, the listen result, completion.
 *
 * Each trigger (`lifetimeCap`, `expiresAt`, `idleTimeout`, `superseded`, `shutdown`, or your own)
 * watches the same single subscription to the upstream and may emit a `CloseReason`. The first
 * reason wins: `closeWhen` emits the closing frames (control frames carrying `closeReason`, so
 * they are never dropped), completes, and unsubscribes the upstream and every trigger. An upstream
 * that ends first ends the stream as it is, without closing frames (a client disconnect sends
 * nothing); its error passes through. Triggers are subscribed before the upstream, so they see
 * every frame; a frame on which a trigger decides to close is replaced by the closing frames.
 * The subscription id `_meta` is not added here: put `tagSubscriptionId` downstream.
 *
 * MCP 2026-07-28 `subscriptions/listen`, DESIGN M7: "Order fixed: `notifications/cancelled`
 * (`requestId` = listen id, `reason`), then the listen result
 * `{"resultType":"complete","_meta":{subscriptionId}}` as a JSON-RPC response to the listen id,
 * then end of stream."
 *
 * @example
 * hubFrames$.pipe(
 *   ackThenNotify(ack),
 *   keepAlive(15_000),
 *   closeWhen([lifetimeCap(3_600_000), expiresAt(tokenExpMs), idleTimeout(1_800_000), superseded(evict$)], { requestId: 7 }),
 *   tagSubscriptionId(7),
 * );
 * // … on the first reason, e.g. after one hour:
 * // {"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"max_lifetime"}}
 * // {"jsonrpc":"2.0","id":7,"result":{"resultType":"complete"}}
 * // then completion (both messages tagged with the subscription id by tagSubscriptionId)
 * @param triggers one trigger or a list of them; an empty list never closes.
 * @param notice the listen request id and which closing frames to send; `mode` defaults to
 *   `'cancelled-then-result'`. `'end'`: no closing frames, the stream just completes on the first
 *   reason (what a legacy GET stream does: its client reconnects).
 * @param onClose called once with the reason, just before the closing frames; optional (the
 *   endpoint lets a legacy session go of its stream at that moment). If it throws, the error
 *   reaches whoever triggered the close.
 * @throws InvalidOptionError when a trigger is not a function, `notice.requestId` is not a string
 *   or finite number, `notice.mode` is not one of the two modes, or `onClose` is not a function.
 * @see lifetimeCap
 * @see expiresAt
 * @see idleTimeout
 * @see superseded
 * @see shutdown
 * @see tagSubscriptionId
 */
export function closeWhen(
  triggers: CloseTrigger | readonly CloseTrigger[],
  notice: CloseNotice | 'end',
  onClose?: (reason: CloseReason) => void,
): MonoTypeOperatorFunction<Frame> {
  const list: readonly CloseTrigger[] = typeof triggers === 'function' ? [triggers] : triggers;
  if (!isTriggerList(list)) {
    throw new InvalidOptionError('closeWhen triggers', 'a CloseTrigger function or an array of them', triggers);
  }
  const told = onClose === undefined ? undefined : callback<(reason: CloseReason) => void>('closeWhen onClose', onClose);
  const plan =
    notice === 'end'
      ? closePlan(list, 'end', { onClose: told })
      : closePlan(list, oneOf('closeWhen notice.mode', notice?.mode ?? 'cancelled-then-result', CLOSE_NOTICE_MODES), {
          requestId: requestId('closeWhen notice.requestId', notice?.requestId),
          onClose: told,
        });
  return stageOperator(() => [new CloseStage(plan)]);
}

const CLOSE_NOTICE_MODES: readonly CloseNoticeMode[] = ['cancelled-then-result', 'result-only'];

/**
 * What a close sends: the listen's closing frames in one of the two {@link CloseNoticeMode}s
 * (`notifications/cancelled` and the result, or the result alone), nothing (`'end'`: a legacy GET
 * stream just ends, its client reconnects), or the reason itself (`'reason'`: a trigger run on its
 * own emits it). @internal
 */
export type CloseAction = CloseNoticeMode | 'end' | 'reason';

/**
 * What the close stages of one `closeWhen`, or of one endpoint's streams, share: the triggers
 * sorted by kind, and what a close sends. A stream adds its own request id, token expiry and
 * supersede signal to its stage ({@link CloseStage}).
 * @internal
 */
export interface ClosePlan {
  readonly deadlines: readonly DeadlineSpec[];
  /** The narrowest idle window (several idle triggers close at the narrowest one). */
  readonly idle: IdleSpec | undefined;
  /** The outside signals, and (at the same index) the reason each closes with. */
  readonly signals: readonly Observable<unknown>[];
  readonly signalReasons: readonly CloseReason[];
  /** Triggers of your own: given the frames, subscribed. */
  readonly custom: readonly CloseTrigger[];
  readonly action: CloseAction;
  /** The request the closing frames answer, when every stream of the plan answers the same one (`closeWhen`'s notice). */
  readonly requestId: JsonRpcId | undefined;
  /** Told the reason once, just before the closing frames (`closeWhen`'s `onClose`). */
  readonly onClose: ((reason: CloseReason) => void) | undefined;
  /** Where a stream's own expiry is timed (see {@link CloseStage}); the first deadline's clock otherwise. */
  readonly clock: Clock | undefined;
}

/**
 * Sorts valid `triggers` (trigger functions, or the specs of built-in ones) into a
 * {@link ClosePlan} (the order of the list breaks ties: of two deadlines due at the same time, the
 * first listed closes). @internal
 */
export function closePlan(
  triggers: readonly (CloseTrigger | TriggerSpec)[],
  action: CloseAction,
  extra: { readonly requestId?: JsonRpcId; readonly onClose?: (reason: CloseReason) => void; readonly clock?: Clock } = {},
): ClosePlan {
  const deadlines: DeadlineSpec[] = [];
  const signals: Observable<unknown>[] = [];
  const signalReasons: CloseReason[] = [];
  const custom: CloseTrigger[] = [];
  let idle: IdleSpec | undefined;
  for (const trigger of triggers) {
    const spec = typeof trigger === 'function' ? triggerSpec(trigger) : trigger;
    if (spec === undefined) custom.push(trigger as CloseTrigger);
    else if (spec.kind === 'deadline') deadlines.push(spec);
    else if (spec.kind === 'signal') {
      signals.push(spec.signal$);
      signalReasons.push(spec.reason);
    } else if (idle === undefined || spec.ms < idle.ms) idle = spec;
  }
  return {
    deadlines,
    idle,
    signals,
    signalReasons,
    custom,
    action,
    requestId: extra.requestId,
    onClose: extra.onClose,
    clock: extra.clock ?? deadlines[0]?.clock,
  };
}

/**
 * The closing frames of a listen stream closed for `reason`: `notifications/cancelled` (unless
 * `mode` is `'result-only'`) and the listen result, both control frames carrying `closeReason`.
 * @internal
 */
export function listenClosingFrames(requestId: JsonRpcId, mode: CloseNoticeMode, reason: CloseReason): readonly Frame[] {
  const result = controlFrame({ jsonrpc: '2.0', id: requestId, result: { resultType: 'complete' } }, reason);
  if (mode === 'result-only') return [result];
  const cancelled = controlFrame({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId, reason } }, reason);
  return [cancelled, result];
}

/**
 * The reason a principal's signal closes its stream with: the value itself when it is a close
 * reason (`'revoked'`), else `superseded` (a supersede signal emits `undefined`).
 */
function principalReason(value: unknown): CloseReason {
  return isCloseReason(value) ? value : 'superseded';
}

/**
 * The logic of `closeWhen` and of every built-in trigger: it watches the frames (idle window,
 * your own triggers), holds the earliest deadline as its own entry on the shared {@link Clock}
 * and follows the outside signals; the first reason ends everything above it (the source, the
 * stages before) and sends the closing frames, then ends the stream.
 *
 * A stream brings what is its own: the request its closing frames answer, its credential's expiry
 * (reason `token_expired`, after the plan's deadlines on a tie) and its principal's signal (reason
 * `superseded`, or the close reason it emits, such as `revoked`; followed before the plan's
 * signals). Ties keep the order of the listen composition: lifetime, token expiry, idle,
 * superseded, shutdown. `close(reason)` ends it from outside (what `McpEndpoint.closeStream` does).
 * @internal
 */
export class CloseStage extends Stage<Frame, Frame | CloseReason> implements ClockEntry, Follower, SubscriptionReceiver<unknown, undefined> {
  due = 0;
  slot = -1;
  seq = 0;
  /** Why the stream was closed (`undefined` while open). */
  reason: CloseReason | undefined = undefined;
  /** A signal or a trigger of your own errored. */
  failed = false;
  /** It has closed, ended or been disposed: it passes and does nothing more. */
  private closing = false;
  private deadlineReason: CloseReason = 'max_lifetime';
  private lastActivity = 0;
  // Deadlines on another clock than the plan's, the signals that are not Broadcasts (see follow),
  // and the triggers of your own.
  private others: { unsubscribe(): void }[] | undefined = undefined;
  private frames: Subject<Frame> | undefined = undefined;
  private chain: StageChain | undefined = undefined;

  /**
   * @param plan what the stream shares with the others.
   * @param requestId the listen request this stream's closing frames answer (else the plan's).
   * @param expiresAt when the stream's credential expires, in milliseconds since the epoch.
   * @param supersede$ the stream's own signal from its principal's cap: emits when a newer stream
   *   of the same principal displaces this one (reason `superseded`), or with the close reason
   *   itself when the stream is ended for another reason of its principal's (`'revoked'`).
   */
  constructor(
    private readonly plan: ClosePlan,
    /** The listen request this stream's closing frames answer (else the plan's). */
    readonly requestId?: JsonRpcId,
    private readonly expiresAt?: number,
    private readonly supersede$?: Observable<unknown>,
  ) {
    super();
  }

  override link(chain: StageChain): void {
    this.chain = chain;
  }

  /**
   * When the stream last passed a notification on (to be written or queued), in milliseconds
   * since the epoch; when it opened if none yet. `undefined` for a stream without an idle window
   * (a legacy GET stream), which does not keep the time.
   */
  get lastNotificationAt(): number | undefined {
    const idle = this.plan.idle;
    return idle === undefined ? undefined : this.lastActivity + idle.clock.origin;
  }

  override open(): void {
    const { deadlines, idle, signals, custom, clock } = this.plan;
    if (idle !== undefined) this.lastActivity = idle.clock.elapsed();
    if (clock !== undefined) this.openDeadlines(clock, deadlines);
    const supersede$ = this.supersede$;
    if (supersede$ !== undefined) this.follow(supersede$);
    for (let i = 0; i < signals.length && !this.closing; i++) this.follow(signals[i]!);
    if (custom.length > 0 && !this.closing) {
      const frames = (this.frames = new Subject<Frame>());
      for (let i = 0; i < custom.length && !this.closing; i++) {
        (this.others ??= []).push(custom[i]!(frames.asObservable()).subscribe(new BareSubscriber<unknown>(this, undefined)));
      }
    }
  }

  /** The deadlines on `clock` are one entry, the earliest (the first listed on a tie); others get one each. */
  private openDeadlines(clock: Clock, deadlines: readonly DeadlineSpec[]): void {
    const now = clock.now();
    let due = Number.POSITIVE_INFINITY;
    for (const deadline of deadlines) {
      const at = deadline.at ?? now + deadline.after!;
      if (deadline.clock !== clock) {
        const { reason } = deadline;
        (this.others ??= []).push(deadline.clock.at(at, () => this.close(reason)));
      } else if (at < due) {
        due = at;
        this.deadlineReason = deadline.reason;
      }
    }
    const expiry = this.expiresAt;
    if (expiry !== undefined && expiry < due) {
      due = expiry;
      this.deadlineReason = 'token_expired';
    }
    if (due !== Number.POSITIVE_INFINITY) clock.add(this, due);
  }

  /** Follows an outside signal: an idle stream keeps nothing for a Broadcast, a subscription among `others` for anything else. */
  private follow(signal$: Observable<unknown>): void {
    const subscription = follow(signal$, this);
    if (subscription !== undefined) (this.others ??= []).push(subscription);
  }

  push(frame: Frame): void {
    if (this.closing) return;
    const idle = this.plan.idle;
    if (idle !== undefined) {
      if (frame.type === 'message' && frame.priority === 'notification') this.lastActivity = idle.clock.elapsed();
      // The check runs on each keep-alive tick; the close replaces that tick.
      else if (frame.type === 'comment' && idle.clock.elapsed() - this.lastActivity >= idle.ms) return this.close('idle_timeout');
    }
    if (this.frames !== undefined) {
      this.frames.next(frame);
      if (this.closing) return;
    }
    if (this.plan.action !== 'reason') this.out.push(frame);
  }

  /** The earliest deadline came. */
  fire(): void {
    this.close(this.deadlineReason);
  }

  /**
   * A value of an outside signal: the stream's principal signal says its own reason (it is looked
   * at first, as it was followed first), a signal of the plan the reason it was listed with (the
   * first listing when it is listed twice).
   */
  onBroadcast(source: Observable<unknown>, value: unknown): void {
    if (source === this.supersede$) return this.close(principalReason(value));
    const i = this.plan.signals.indexOf(source);
    if (i >= 0) this.close(this.plan.signalReasons[i]!);
  }

  /** A value of a trigger of your own: the value is the reason. */
  onValue(value: unknown): void {
    this.close(value as CloseReason);
  }

  /** A signal or a trigger of your own errored: so does the stream. */
  onError(error: unknown): void {
    if (this.closing) return;
    this.closing = true;
    this.failed = true;
    this.release();
    this.chain?.cut(this);
    this.out.fail(error);
  }

  // A signal that completes without a value closes nothing: no onComplete.

  /** A reason from a signal, a deadline or a trigger of your own. */
  close(reason: CloseReason): void {
    if (this.closing) return;
    this.closing = true;
    this.reason = reason;
    this.release();
    // Stops the source and the stages before this one; this one and those after go on.
    this.chain?.cut(this);
    const { action, onClose } = this.plan;
    if (action === 'reason') {
      this.out.push(reason);
    } else {
      onClose?.(reason);
      if (action !== 'end') for (const frame of listenClosingFrames((this.requestId ?? this.plan.requestId)!, action, reason)) this.out.push(frame);
    }
    this.out.end();
  }

  override end(): void {
    if (this.closing) return;
    this.closing = true;
    this.release();
    // A trigger on its own completes with the frames it watched; closeWhen ends the stream as it is.
    this.out.end();
  }

  override fail(error: unknown): void {
    if (this.closing) return;
    this.closing = true;
    this.release();
    this.out.fail(error);
  }

  override dispose(): void {
    this.closing = true;
    this.release();
  }

  private release(): void {
    const { signals, clock } = this.plan;
    clock?.remove(this);
    // The subscriptions of the signals that are not Broadcasts are among `others`.
    const supersede$ = this.supersede$;
    if (supersede$ !== undefined) unfollow(supersede$, this);
    for (let i = 0; i < signals.length; i++) unfollow(signals[i]!, this);
    const others = this.others;
    if (others !== undefined) {
      this.others = undefined;
      for (const other of others) other.unsubscribe();
    }
    this.frames = undefined;
  }
}
