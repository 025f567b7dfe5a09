import type { JsonRpcId, JsonRpcMessage, JsonRpcNotification } from './jsonrpc.js';

/** The kinds of topic a stream can hear about (also the `topic` of a `drop` telemetry event). */
export type TopicKind = 'tools' | 'prompts' | 'resources' | 'resource' | 'task';

/**
 * Why the server ended a stream (the `reason` of `notifications/cancelled` and of the `stop` event);
 * `empty_filter`: a listen that honoured nothing, completed at once (the endpoint's `emptyListen: 'complete'`);
 * `revoked`: the application ended its principal's streams, or this one (`McpEndpoint.revoke`,
 * `McpEndpoint.closeStream`).
 */
export type CloseReason = 'max_lifetime' | 'token_expired' | 'idle_timeout' | 'superseded' | 'shutdown' | 'empty_filter' | 'revoked';

/** Every {@link CloseReason}, in the order of the type. */
export const CLOSE_REASONS: readonly CloseReason[] = Object.freeze(['max_lifetime', 'token_expired', 'idle_timeout', 'superseded', 'shutdown', 'empty_filter', 'revoked']);

/** True when `value` is one of the {@link CloseReason}s. */
export function isCloseReason(value: unknown): value is CloseReason {
  return typeof value === 'string' && (CLOSE_REASONS as readonly string[]).includes(value);
}

/**
 * A JSON-RPC message encoded once, to be tagged per stream without encoding it again:
 * the tagged JSON for subscription id `x` is `head + JSON.stringify(x) + tail`.
 */
export interface EncodedMessage {
  /** JSON of the message without any subscription id (legacy streams). */
  readonly plain: string;
  /** JSON up to and including `"io.modelcontextprotocol/subscriptionId":`. */
  readonly head: string;
  /** JSON after the subscription id value (closes `_meta`, `params`/`result` and the message). */
  readonly tail: string;
  /**
   * UTF-8 byte lengths of `plain`, `head` and `tail`, measured once where the message is encoded
   * (`encodeMessage`, `encodeResourceUpdated`), so that a frame's size on the wire is a sum (see
   * `encodedByteLength`); absent, they are measured when needed.
   */
  readonly plainBytes?: number;
  readonly headBytes?: number;
  readonly tailBytes?: number;
}

/**
 * A listen's subscription id as the encoder writes it, made once per stream (`tagSubscriptionId`)
 * instead of once per frame: `json` is `JSON.stringify(id)` (a number's JSON is its string form),
 * `bytes` its UTF-8 byte length. See `encodeSubscriptionId`.
 */
export interface EncodedSubscriptionId {
  readonly id: JsonRpcId;
  readonly json: string;
  readonly bytes: number;
}

/** A frame that carries one JSON-RPC message as an SSE `message` event. */
export interface MessageFrame {
  readonly type: 'message';
  /** The message as published, without the subscription id tag. Treat as immutable: it is shared by every stream. */
  readonly message: JsonRpcMessage;
  /**
   * `notification` frames may be coalesced or dropped for a slow consumer; `control` frames
   * (acknowledgment, `notifications/cancelled`, the listen result) never are.
   */
  readonly priority: 'notification' | 'control';
  /** The topic a notification came from (for `drop` telemetry). */
  readonly topic?: TopicKind;
  /** Pending notifications with equal keys are identical: one of them is enough. */
  readonly coalesceKey?: string;
  /** Set by `tagSubscriptionId`: written as `_meta["io.modelcontextprotocol/subscriptionId"]`. */
  readonly subscriptionId?: JsonRpcId;
  /**
   * Set by `tagSubscriptionId` with `subscriptionId`: that id encoded once for the stream. The
   * encoder uses it when its `id` is `subscriptionId` (a frame copied with another id is encoded
   * from the id itself).
   */
  readonly encodedSubscriptionId?: EncodedSubscriptionId;
  /** SSE `id:` of the event (legacy streams): a decimal string. */
  readonly eventId?: string;
  /** Set by `closeWhen` on the frames it emits when it ends a stream. */
  readonly closeReason?: CloseReason;
  /** The message encoded once at publish time; absent for one-off control frames. */
  readonly encoded?: EncodedMessage;
  /**
   * The read scope a receiver must hold (`AuthInfo.scopes`) to be sent this notification; absent
   * or `undefined`: every receiver. Set by a scoped publish (`hub.notifyResourceUpdated(uri, { scope })`).
   */
  readonly scope?: string | undefined;
}

/**
 * True when a principal with `scopes` may be sent `frame`: the frame names no scope, or one of
 * `scopes`. Streams check it for every notification, so that a change never reveals activity on
 * a resource the receiver may not read.
 */
export function mayReceive(frame: MessageFrame, scopes: ReadonlySet<string> | undefined): boolean {
  const scope = frame.scope;
  return scope === undefined || (scopes !== undefined && scopes.has(scope));
}

/** An SSE comment line: `:` + text + CRLF. With empty text it is the keep-alive `:\r\n`. */
export interface CommentFrame {
  readonly type: 'comment';
  readonly text: string;
}

/**
 * The event a legacy GET stream opens with (MCP 2025-11-25 transports: "the server SHOULD
 * immediately send an SSE event consisting of an event ID and an empty data field in order to
 * prime the client to reconnect"): written as `id: <eventId>`, `retry: <retry>` and an empty
 * `data:` line. Clients record the id as their last event id and dispatch no message, so one that
 * has heard nothing else can still resume with `Last-Event-ID`. Never dropped, never coalesced.
 */
export interface PrimingFrame {
  readonly type: 'prime';
  /** The SSE `id:` the client records; absent: only `retry:` is sent. */
  readonly eventId?: string;
  /** The SSE `retry:` field: milliseconds the client waits before reconnecting. */
  readonly retry: number;
}

/** One unit of an SSE stream. */
export type Frame = MessageFrame | CommentFrame | PrimingFrame;

/** The keep-alive comment: written as the three bytes `:\r\n` (DESIGN M5). */
export const KEEP_ALIVE: CommentFrame = Object.freeze({ type: 'comment', text: '' });

/** A control frame (never dropped, never coalesced) for `message`. */
export function controlFrame(message: JsonRpcMessage, closeReason?: CloseReason): MessageFrame {
  return closeReason === undefined
    ? { type: 'message', message, priority: 'control' }
    : { type: 'message', message, priority: 'control', closeReason };
}

/** A notification frame for a one-off message (encoded when written). Hub notifications come pre-encoded. */
export function notificationFrame(message: JsonRpcNotification, topic?: TopicKind, coalesceKey?: string): MessageFrame {
  return { type: 'message', message, priority: 'notification', topic, coalesceKey };
}

/** True for frames that may be dropped or coalesced under backpressure. */
export function isNotification(frame: Frame): frame is MessageFrame {
  return frame.type === 'message' && frame.priority === 'notification';
}
