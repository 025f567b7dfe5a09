// The core's public surface (lib/ only): the package entry `index.ts` re-exports it with the
// operators and the node:http / Fetch adapters. Explicit named exports only.

/* Hub */
export { Hub, NotificationMethod } from './hub.js';
export type { HubBus, HubEvent, HubOptions, PublishOptions, TaskStatus, TopicSelector } from './hub.js';

/* Listen assembly */
export { notifications } from './notifications.js';
export {
  acknowledgedNotification,
  authorizeListenFilter,
  clientDeclaresTasks,
  filterNames,
  parseListenFilter,
  MAX_FILTER_ENTRIES,
  MAX_TASK_ID_BYTES,
  MAX_URI_BYTES,
  CLIENT_CAPABILITIES_META_KEY,
  TASKS_EXTENSION_ID,
} from './filter.js';
export type { FilterName, ListenFilter, ResourceAuthorizer, ServerCapabilities } from './filter.js';
export {
  DEFAULT_LISTEN_OPTIONS,
  DEFAULT_STREAM_LIMITS,
  MAX_TIMER_DELAY,
  resolveListenOptions,
  resolveStreamLimits,
} from './options.js';
export { positiveInteger } from './validate.js';
export type { CloseNoticeMode, ListenOptions, StreamLimits } from './options.js';

/* Frames and encoding */
export { controlFrame, isNotification, KEEP_ALIVE, mayReceive, notificationFrame } from './frame.js';
export type { CloseReason, CommentFrame, EncodedMessage, Frame, MessageFrame, PrimingFrame, TopicKind } from './frame.js';
export { encodedByteLength, encodeFrame, encodeMessage, encodeResourceUpdated, encodeSseEvent, KEEP_ALIVE_TEXT, messageJson, taggedMessage } from './encode.js';
export type { SseEvent } from './encode.js';

/* JSON-RPC and errors */
export { ErrorCode, isJsonRpcId, JsonRpcError, MAX_REQUEST_ID_BYTES, SUBSCRIPTION_ID_META_KEY } from './jsonrpc.js';
export type {
  JsonRpcErrorObject,
  JsonRpcErrorResponse,
  JsonRpcId,
  JsonRpcMessage,
  JsonRpcNotification,
  JsonRpcRequest,
  JsonRpcResultResponse,
} from './jsonrpc.js';
export { FrameEncodingError, InvalidOptionError, McpRxError, StalledStreamError } from './errors.js';

/* Protocol revisions, request context, limits and auth */
export { LEGACY_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSION } from './protocol.js';
export type { ServerInfo } from './protocol.js';
export type { EndpointRequest, MethodHandler, ParsedBody, RequestContext } from './context.js';
export { StreamSlots } from './slots.js';
export type { Slot } from './slots.js';
export { PrincipalRegistry } from './principals.js';
export type { Admission, PrincipalCap } from './principals.js';
export { addressBucket, anonymous, AuthError } from './auth.js';
export type { AuthInfo } from './auth.js';

/* Legacy era: session store, resource providers, replay */
export { MemorySessionStore } from './session.js';
export type { SessionBus, SessionChanges, SessionCommand, SessionRecord, SessionStore } from './session.js';
export { hubResources } from './resources.js';
export type { HubResourcesOptions, ResourceProvider, ResourceTemplate } from './resources.js';
export { ReplayBuffer } from './replayBuffer.js';
export type { EventLog } from './replayBuffer.js';
export { isThenable } from './replayBuffer.js';

/* Telemetry */
export { channels, queueTotals } from './telemetry.js';
export type { DropEvent, ErrorEvent, QueueTotals, StartEvent, StopEvent, StopReason } from './telemetry.js';
