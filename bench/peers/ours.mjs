// mcp-rx-streams (compiled dist/): McpEndpoint + nodeHandler, as in adapters/reference/server.ts.
// One endpoint serves both eras: the modern workloads open `subscriptions/listen` streams, the
// legacy ones 2025-11-25 sessions (`initialize`, GET stream, `resources/subscribe` served by the
// default `hubResources` provider). The caps are raised so that 10 000 streams or sessions from
// one address fit (the defaults are 1000 streams, 4 per principal, 10 000 sessions); every other
// option is the default (15 s keep-alive, 1000-frame queue, 100-frame replay buffer per session).
// bench/run.mjs points BENCH_DIST at its copy of dist/ (one build for the whole run).
const lib = await import(process.env.BENCH_DIST ?? '../../dist/index.js');
const { channels, Hub, McpEndpoint, nodeHandler } = lib;

export const name = 'mcp-rx-streams';
export const description = 'McpEndpoint + nodeHandler (dist/)';

export async function create() {
  const hub = new Hub();
  const endpoint = new McpEndpoint({
    hub,
    capabilities: { tools: true, resources: true },
    maxStreams: 1_000_000,
    maxListensPerPrincipal: 1_000_000,
    maxSessions: 1_000_000,
    maxSessionsPerPrincipal: 1_000_000,
  });
  let drops = 0;
  const onDrop = () => drops++;
  channels.drop.subscribe(onDrop);
  return {
    handler: nodeHandler(endpoint),
    publish: (uri) => hub.notifyResourceUpdated(uri),
    publishMarker: () => hub.notifyToolsChanged(),
    registry: () => ({ ...hub.size, ...endpoint.stats }),
    drops: () => drops,
    // Notifications coalesced in slow consumers' queues since the start (process-wide telemetry).
    coalesced: () => lib.queueTotals?.().coalesced ?? 0,
    close() {
      channels.drop.unsubscribe(onDrop);
      endpoint.close();
    },
  };
}
