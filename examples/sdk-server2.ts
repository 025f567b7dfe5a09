// mcp-rx-streams in front of a server built on the official SDK 2.x (@modelcontextprotocol/server):
// on one path, the SDK's createMcpHandler answers server/discover, tools, resources and prompts, and
// an McpEndpoint serves subscriptions/listen (bounded queues, caps, close triggers, the Redis fleet).
// The SDK's handler.notify.* publish on the endpoint's hub through HubEventBus, so a tool that
// changes the tool list reaches every listen stream.
// Run it:   node --import tsx examples/sdk-server2.ts [port]
// The README shows this file with package imports ('mcp-rx-streams', 'mcp-rx-streams/sdk');
// spec/sdk/server2.spec.ts serves it on a loopback port and drives it with the official 2.x client.
import http from 'node:http';
import { pathToFileURL } from 'node:url';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { Hub, McpEndpoint } from '../index.js';
import { HubEventBus, sdkRouter, type SdkRouter } from '../adapters/sdk/index.js';

/** The router of a small notes server whose `add-tool` tool adds a tool and tells the listen streams. */
export function notesServer(hub: Hub): { router: SdkRouter; close: () => Promise<void> } {
  const added: string[] = [];
  const handler = createMcpHandler(
    () => {
      const server = new McpServer({ name: 'notes', version: '1.0.0' });
      server.registerTool('add-tool', { description: 'adds a tool' }, async () => {
        added.push(`tool-${added.length + 1}`);
        handler.notify.toolsChanged(); // hub.notifyToolsChanged(): every listen stream hears it
        return { content: [{ type: 'text', text: `added ${added.at(-1)}` }] };
      });
      for (const name of added) server.registerTool(name, { description: name }, async () => ({ content: [] }));
      return server;
    },
    { bus: new HubEventBus(hub) },
  );
  // Acknowledge what the SDK server advertises in server/discover (here: tools).
  const endpoint = new McpEndpoint({ hub, capabilities: { tools: true } });
  const router = sdkRouter({ endpoint, sdk: handler });
  return { router, close: () => (endpoint.close(), handler.close()) };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { router } = notesServer(new Hub());
  const server = http.createServer(router.node);
  server.listen(Number(process.argv[2] ?? 3000), '127.0.0.1', () => {
    const { port } = server.address() as { port: number };
    console.log(`notes (SDK 2.x + mcp-rx-streams) listening on http://127.0.0.1:${port}/mcp`);
  });
}
