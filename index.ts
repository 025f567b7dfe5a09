// mcp-rx-streams: the package entry (`import … from 'mcp-rx-streams'`). Explicit named exports only.
//
// It loads the core, the operators and the server adapters, nothing heavier: the undici client is
// `mcp-rx-streams/client`, the Redis fleet `mcp-rx-streams/redis` (needs ioredis), the Prometheus
// bridge `mcp-rx-streams/metrics` (needs prom-client). spec/package-entry.spec.ts checks that every
// export of the core's modules (lib/) is exported here or named internal there.

/* Hub */
export { Hub, NotificationMethod } from './lib/hub.js';
export type { HubBus, HubEvent, HubOptions, PublishOptions, TaskStatus, TopicSelector } from './lib/hub.js';

/* Listen assembly */
export { notifications } from './lib/notifications.js';
export { acknowledgedNotification, authorizeListenFilter, clientDeclaresTasks, filterNames, parseListenFilter, MAX_FILTER_ENTRIES, MAX_TASK_ID_BYTES, MAX_URI_BYTES, CLIENT_CAPABILITIES_META_KEY, TASKS_EXTENSION_ID } from './lib/filter.js';
export type { FilterName, ListenFilter, ResourceAuthorizer, ServerCapabilities } from './lib/filter.js';
export { DEFAULT_LISTEN_OPTIONS, DEFAULT_STREAM_LIMITS, MAX_TIMER_DELAY, resolveListenOptions, resolveStreamLimits } from './lib/options.js';
export { positiveInteger } from './lib/validate.js';
export type { CloseNoticeMode, ListenOptions, StreamLimits } from './lib/options.js';

/* Frames and encoding */
export { CLOSE_REASONS, controlFrame, isCloseReason, isNotification, KEEP_ALIVE, mayReceive, notificationFrame } from './lib/frame.js';
export type { CloseReason, CommentFrame, EncodedMessage, Frame, MessageFrame, PrimingFrame, TopicKind } from './lib/frame.js';
export { encodedByteLength, encodeFrame, encodeMessage, encodeResourceUpdated, encodeSseEvent, KEEP_ALIVE_TEXT, messageJson, taggedMessage } from './lib/encode.js';
export type { SseEvent } from './lib/encode.js';

/* JSON-RPC and errors */
export { ErrorCode, isJsonRpcId, JsonRpcError, MAX_REQUEST_ID_BYTES, SUBSCRIPTION_ID_META_KEY } from './lib/jsonrpc.js';
export type { JsonRpcErrorObject, JsonRpcErrorResponse, JsonRpcId, JsonRpcMessage, JsonRpcNotification, JsonRpcRequest, JsonRpcResultResponse } from './lib/jsonrpc.js';
export { FrameEncodingError, InvalidOptionError, McpRxError, StalledStreamError } from './lib/errors.js';

/* Protocol revisions, request context, limits and auth */
export { LEGACY_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSION } from './lib/protocol.js';
export type { ServerInfo } from './lib/protocol.js';
export type { EndpointRequest, MethodHandler, ParsedBody, RequestContext } from './lib/context.js';
export { StreamSlots } from './lib/slots.js';
export type { SharedSlots, Slot } from './lib/slots.js';
export { PrincipalRegistry } from './lib/principals.js';
export type { Admission, PrincipalCap } from './lib/principals.js';
export { addressBucket, anonymous, AuthError, AuthUnavailableError } from './lib/auth.js';
export type { AuthInfo, BearerChallenge, CredentialRecheck } from './lib/auth.js';
export { protectResource, WELL_KNOWN_RESOURCE_PATH } from './lib/protectedResource.js';
export type { ProtectedResource } from './lib/protectedResource.js';

/* Legacy era: session store, resource providers, replay */
export { MemorySessionStore } from './lib/session.js';
export type { KeptSession, SessionBus, SessionChanges, SessionCommand, SessionRecord, SessionStore } from './lib/session.js';
export { hubResources } from './lib/resources.js';
export type { HubResourcesOptions, ResourceProvider, ResourceTemplate } from './lib/resources.js';
export { ReplayBuffer } from './lib/replayBuffer.js';
export type { EventLog } from './lib/replayBuffer.js';
export { isThenable } from './lib/replayBuffer.js';

/* Telemetry */
export { channels, queueTotals } from './lib/telemetry.js';
export type { DropEvent, ErrorEvent, ListenTrace, QueueTotals, SessionCreatedEvent, SessionEndedEvent, SessionEndReason, StartEvent, StopEvent, StopReason, StreamEra, TraceEvent } from './lib/telemetry.js';

/* Logs: the telemetry channels on a pino-compatible logger */
export { logTo } from './adapters/logTo.js';
export type { Logger, LogToOptions } from './adapters/logTo.js';

/* Operators */
export { ackThenNotify } from './operators/ackThenNotify.js';
export { closeWhen } from './operators/closeWhen.js';
export { expiresAt, idleTimeout, lifetimeCap, shutdown, superseded } from './operators/closeTriggers.js';
export type { CloseTrigger } from './operators/closeTriggers.js';
export { listenPipeline, listenStream } from './operators/listenPipeline.js';
export { sessionPipeline } from './operators/sessionPipeline.js';
export type { SessionPipelineInit } from './operators/sessionPipeline.js';
export type { ListenPipelineInit, ListenStreamInit } from './operators/listenPipeline.js';
export type { CloseNotice } from './operators/closeWhen.js';
export { DEFAULT_QUEUE_BYTES, dropWhenQueueExceeds } from './operators/dropWhenQueueExceeds.js';
export type { DropHandler, DropOptions, QueueLimits, StalledEnd } from './operators/dropWhenQueueExceeds.js';
export { primeStream } from './operators/primeStream.js';
export { keepAlive } from './operators/keepAlive.js';
export { replayFrom } from './operators/replayFrom.js';
export { restoreSubscriptions } from './operators/restoreSubscriptions.js';
export { tagSubscriptionId } from './operators/tagSubscriptionId.js';
export { withEventIds } from './operators/withEventIds.js';

/* Endpoint: the protocol core (protocol/) behind its HTTP front (adapters/http/) */
export { McpEndpoint } from './adapters/http/endpoint.js';
export type { EndpointStats, ProtocolCore } from './protocol/core.js';
export type { ListenStreamInfo, SessionInfo, StreamFilterInfo, StreamInfo, StreamsOptions } from './protocol/inspect.js';
export { RevokeRelayError } from './protocol/revoke.js';
export type { RevokeResult } from './protocol/revoke.js';
export type { EmptyListen, ProtocolOptions } from './protocol/options.js';
export type { McpEndpointOptions } from './adapters/http/options.js';
export { acceptsEventStream, JSON_HEADERS, SSE_HEADERS } from './adapters/http/responses.js';
export type { EndpointResponse } from './adapters/http/responses.js';
export { localhostHosts } from './adapters/http/hostCheck.js';
export type { TrustProxy } from './adapters/http/clientAddress.js';
export type { CorsOrigins } from './adapters/http/cors.js';
export { DEFAULT_SESSION_OPTIONS, resolveSessionOptions } from './protocol/legacy/sessionOptions.js';
export type { SessionOptions } from './protocol/legacy/sessionOptions.js';
export { RestoreError } from './protocol/legacy/subscribe.js';

/* Adapters: node:http and the Fetch API */
export { nodeHandler } from './adapters/http/node.js';
export type { NodeHandler } from './adapters/http/node.js';
export { MissingClientAddressError, webHandler } from './adapters/http/web.js';
export type { WebConnectionInfo, WebHandlerOptions } from './adapters/http/web.js';

/* Adapters: message channels (stdio, an in-process pair, yours; WebSocket: mcp-rx-streams/ws) */
export { serveChannel } from './adapters/channel/session.js';
export type { ChannelSession, ChannelStats, ServeChannelOptions } from './adapters/channel/session.js';
export type { ChannelInput, MessageChannel, OversizedMessage } from './adapters/channel/channel.js';
export { serveStdio, stdioChannel } from './adapters/channel/stdio.js';
export type { ServeStdioOptions, StdioChannelOptions } from './adapters/channel/stdio.js';
export { channelPair, channelTransport } from './adapters/channel/pair.js';
export type { ChannelPairOptions, PairEnd, SdkTransport } from './adapters/channel/pair.js';
