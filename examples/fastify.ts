// Serving mcp-rx-streams from Fastify 5: nodeHandler on the raw request and reply, in a plugin whose
// body parsing is left to the endpoint.
// Run it:   node --import tsx examples/fastify.ts [port]     (then POST subscriptions/listen to /mcp)
// spec/adapters/frameworks.spec.ts serves mcpPlugin() on a loopback port and drives it with real sockets.
import Fastify, { type FastifyPluginAsync } from 'fastify';
import { pathToFileURL } from 'node:url';
import { Hub, McpEndpoint, nodeHandler } from '../index.js';

/**
 * A Fastify plugin serving `endpoint` on `/mcp` (POST, and GET/DELETE for legacy sessions).
 *
 * Fastify parses JSON bodies itself and answers a malformed one with its own 400
 * (`FST_ERR_CTP_INVALID_JSON_BODY`), before any handler runs; an MCP client expects the JSON-RPC
 * parse error `-32700` instead. So inside this plugin the parsers are replaced by one that reads
 * nothing: the endpoint reads the raw body itself (within its `maxBodyBytes`, 413 beyond) and
 * answers every malformed or unexpected body in JSON-RPC. Parsers are scoped to the plugin: the
 * app's other routes keep Fastify's. `reply.hijack()` hands the raw response to the endpoint
 * (an SSE stream outlives the handler).
 */
export function mcpPlugin(endpoint: McpEndpoint): FastifyPluginAsync {
  const handle = nodeHandler(endpoint);
  return async (app) => {
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', (_request, _payload, done) => done(null));
    app.route({
      method: ['GET', 'POST', 'DELETE'],
      url: '/mcp',
      handler: (request, reply) => {
        reply.hijack();
        handle(request.raw, reply.raw);
      },
    });
  };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const hub = new Hub();
  const endpoint = new McpEndpoint({ hub, capabilities: { tools: true, resources: true } });
  const app = Fastify();
  await app.register(mcpPlugin(endpoint));
  const port = Number(process.argv[2] ?? 3000);
  await app.listen({ port, host: '127.0.0.1' });
  console.log(`listening on http://127.0.0.1:${port}/mcp`);
  // A change every 5 s, so a listen for toolsListChanged has something to show.
  const tick = setInterval(() => hub.notifyToolsChanged(), 5_000);
  const stop = () => {
    clearInterval(tick);
    endpoint.close();
    void app.close().then(() => hub.close());
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
