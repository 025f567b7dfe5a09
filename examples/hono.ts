// Serving mcp-rx-streams from Hono on Node (@hono/node-server): webHandler with each client's
// address, so anonymous clients are told apart (each its own per-principal cap) instead of all
// being one principal that supersedes its own streams.
// Run it:   node --import tsx examples/hono.ts [port]     (then POST subscriptions/listen to /mcp)
// spec/adapters/hono.spec.ts serves mcpApp() on a loopback port and drives it with real sockets.
import { serve } from '@hono/node-server';
import { getConnInfo } from '@hono/node-server/conninfo';
import { Hono } from 'hono';
import { pathToFileURL } from 'node:url';
import { Hub, McpEndpoint, webHandler } from '../index.js';

/**
 * A Hono app that serves `endpoint` on `/mcp` (POST, and GET/DELETE for legacy sessions).
 *
 * `getConnInfo(c).remote.address` is the socket's peer address under `@hono/node-server`; on Bun
 * or Deno use `getConnInfo` from `hono/bun` or `hono/deno` instead. Behind a reverse proxy, pass
 * the address the proxy reports (and trust only your proxy's header).
 */
export function mcpApp(endpoint: McpEndpoint): Hono {
  const handle = webHandler(endpoint);
  const app = new Hono();
  app.all('/mcp', (c) => handle(c.req.raw, { remoteAddress: getConnInfo(c).remote.address }));
  return app;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const hub = new Hub();
  const endpoint = new McpEndpoint({ hub, capabilities: { tools: true, resources: true } });
  const port = Number(process.argv[2] ?? 3000);
  const server = serve({ fetch: mcpApp(endpoint).fetch, port, hostname: '127.0.0.1' }, (info) => {
    console.log(`listening on http://127.0.0.1:${info.port}/mcp`);
  });
  // A change every 5 s, so a listen for toolsListChanged has something to show.
  const tick = setInterval(() => hub.notifyToolsChanged(), 5_000);
  const stop = () => {
    clearInterval(tick);
    endpoint.close();
    server.close();
    hub.close();
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
