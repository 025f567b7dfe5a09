// Serving mcp-rx-streams from Express 5: nodeHandler as the /mcp route, ahead of the app's body parser.
// Run it:   node --import tsx examples/express.ts [port]     (then POST subscriptions/listen to /mcp)
// spec/adapters/frameworks.spec.ts serves mcpApp() on a loopback port and drives it with real sockets.
import express, { type Express } from 'express';
import { pathToFileURL } from 'node:url';
import { Hub, McpEndpoint, nodeHandler } from '../index.js';

/**
 * An Express app that serves `endpoint` on `/mcp` (POST, and GET/DELETE for legacy sessions), and
 * parses JSON for its other routes.
 *
 * The `/mcp` route comes before `express.json()`: the endpoint then reads the raw body itself
 * (within its `maxBodyBytes`, 413 beyond) and answers a malformed one with the JSON-RPC parse
 * error `-32700`, where `express.json()` would have answered Express's own HTML 400. (Behind an
 * `express.json()` that did run, nodeHandler uses `req.body`, so well-formed requests work either way.)
 */
export function mcpApp(endpoint: McpEndpoint): Express {
  const app = express();
  app.all('/mcp', nodeHandler(endpoint));
  app.use(express.json());
  // …the application's other routes, with their JSON bodies parsed:
  app.post('/echo', (req, res) => {
    res.json(req.body);
  });
  return app;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const hub = new Hub();
  const endpoint = new McpEndpoint({ hub, capabilities: { tools: true, resources: true } });
  const port = Number(process.argv[2] ?? 3000);
  const server = mcpApp(endpoint).listen(port, '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${port}/mcp`));
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
