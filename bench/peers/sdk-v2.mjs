// The official TypeScript SDK v2 (@modelcontextprotocol/server): `createMcpHandler` serves
// `subscriptions/listen` on its fetch face, `handler.notify.*` publishes to the open streams. Node
// needs a fetch→node:http bridge: @hono/node-server's `getRequestListener`, which is what the SDK's
// own `@modelcontextprotocol/node` adapter (toNodeHandler) is built on. `maxSubscriptions` is
// raised from its default 1024 so that 10 000 streams fit; `legacy: 'reject'` (modern only).
import { getRequestListener } from '@hono/node-server';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';

export const name = '@modelcontextprotocol/server';
export const description = 'createMcpHandler listen via @hono/node-server';

export async function create() {
  const mcp = createMcpHandler(
    () =>
      new McpServer(
        { name: 'bench', version: '1.0.0' },
        { capabilities: { tools: { listChanged: true }, resources: { subscribe: true, listChanged: true } } },
      ),
    { legacy: 'reject', maxSubscriptions: 1_000_000 },
  );
  return {
    handler: getRequestListener(mcp.fetch),
    publish: (uri) => mcp.notify.resourceUpdated(uri),
    publishMarker: () => mcp.notify.toolsChanged(),
    registry: () => ({ streams: mcp.bus.listenerCount }),
    close: () => mcp.close(),
  };
}
