// Serving mcp-rx-streams from a plain node:http server, next to the server's other routes.
// Run it:   node --import tsx examples/node-http.ts [port]     (then POST subscriptions/listen to /mcp)
// spec/adapters/frameworks.spec.ts serves mcpServer() on a loopback port and drives it with real sockets.
import http from 'node:http';
import { pathToFileURL } from 'node:url';
import { Hub, McpEndpoint, nodeHandler } from '../index.js';

/**
 * An http.Server that serves `endpoint` on `/mcp` (POST, and GET/DELETE for legacy sessions) and
 * answers 404 elsewhere. `nodeHandler` reads and parses the body itself, answers every method of
 * the path, and writes SSE responses with the socket's backpressure.
 */
export function mcpServer(endpoint: McpEndpoint): http.Server {
  const handle = nodeHandler(endpoint);
  return http.createServer((req, res) => {
    if (new URL(req.url ?? '/', 'http://localhost').pathname === '/mcp') handle(req, res);
    else res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found\n');
  });
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const hub = new Hub();
  const endpoint = new McpEndpoint({ hub, capabilities: { tools: true, resources: true } });
  const port = Number(process.argv[2] ?? 3000);
  const server = mcpServer(endpoint).listen(port, '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${port}/mcp`));
  // A change every 5 s, so a listen for toolsListChanged has something to show.
  const tick = setInterval(() => hub.notifyToolsChanged(), 5_000);
  const stop = () => {
    clearInterval(tick);
    endpoint.close();
    server.close(() => hub.close());
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
