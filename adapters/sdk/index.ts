// The `mcp-rx-streams/sdk` entry: this library beside servers built on the official MCP SDKs
// (issue 16). Nothing here loads an SDK: its objects are typed by shape, so the entry works with
// whichever copy of `@modelcontextprotocol/server` 2.x or `@modelcontextprotocol/sdk` 1.x the
// application has (both optional; the package depends on neither).

/* SDK 2.x (@modelcontextprotocol/server): listen in front, handler.notify.* on the hub */
export { HubEventBus, sdkRouter } from './server2.js';
export type { SdkFetchHandler, SdkRouter, SdkRouterOptions, SdkRouterRequestInfo, SdkChangeEvent, SdkServerEvent } from './server2.js';

/* SDK 1.x (@modelcontextprotocol/sdk): Last-Event-ID replay and resources/subscribe */
export { eventLogStore, replayEventStore, STANDALONE_STREAM_ID } from './eventStore.js';
export type { ReplayEventStoreOptions, SdkEventStore } from './eventStore.js';
export { ResourceUpdates } from './resourceUpdates.js';
export type { ListChange, ResourceUpdateSender, ResourceUpdatesOptions, RestoreResult, SdkRequestExtra, SdkResourceRequest } from './resourceUpdates.js';

/* SDK 2.x on stdio: listen in front of the SDK server on one stdin/stdout pair */
export { sdkStdio } from './stdio.js';
export type { SdkStdio, SdkStdioOptions } from './stdio.js';
