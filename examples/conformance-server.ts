// A minimal MCP server composed from the library's public parts (Hub + McpEndpoint + nodeHandler),
// serving what the official conformance runner's server scenarios expect:
//   server-initialize, ping, resources-subscribe, resources-unsubscribe,
//   server-sse-multiple-streams (tools/list), dns-rebinding-protection.
// Run it:   node --import tsx examples/conformance-server.ts [--port 3000] [--host localhost] [--tick 0] [--verbose]
// It prints `listening on http://HOST:PORT/mcp` once it accepts connections. SIGINT/SIGTERM stop it.
// scripts/conformance.sh starts it on a free port and runs the six scenarios against it.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import {
  ErrorCode,
  Hub,
  hubResources,
  JsonRpcError,
  localhostHosts,
  McpEndpoint,
  nodeHandler,
  type MethodHandler,
  type RequestContext,
} from '../index.js';

/** The resource the conformance scenarios subscribe to (and the only subscribable one here). */
export const WATCHED_RESOURCE = 'test://watched-resource';

const SERVER_INFO = Object.freeze({ name: 'mcp-rx-streams-conformance', version: '0.1.0' });

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '3000' },
    host: { type: 'string', default: 'localhost' },
    // Milliseconds between simulated changes of the watched resource; 0 (the default) = never.
    tick: { type: 'string', default: '0' },
    // Log every HTTP request to stderr: on arrival (method, session, Last-Event-ID, Host), then its status.
    verbose: { type: 'boolean', default: false },
  },
});
const port = Number(values.port);
const tick = Number(values.tick);
if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new Error(`--port must be 0..65535, got ${values.port}`);
if (!Number.isInteger(tick) || tick < 0) throw new Error(`--tick must be a non-negative integer of milliseconds, got ${values.tick}`);

let version = 1;
const hub = new Hub();

// Modern (2026-07-28) results say they are complete; legacy sessions (2025-06-18 / 2025-11-25) get
// the plain results the 1.x client validates strictly (ping/subscribe must be exactly `{}`).
const complete = (result: Record<string, unknown>, context: RequestContext) =>
  context.session === undefined ? { resultType: 'complete', ...result } : result;

const methods: Record<string, MethodHandler> = {
  ping: (_params, context) => complete({}, context),
  'resources/list': (_params, context) =>
    complete({ resources: [{ uri: WATCHED_RESOURCE, name: 'watched-resource', mimeType: 'text/plain' }] }, context),
  'resources/read': (params, context) => {
    if (params?.uri !== WATCHED_RESOURCE) {
      throw new JsonRpcError(-32002, `resource not found: ${String(params?.uri)}`, { uri: params?.uri });
    }
    return complete({ contents: [{ uri: WATCHED_RESOURCE, mimeType: 'text/plain', text: `version ${version}\n` }] }, context);
  },
  'tools/list': (_params, context) =>
    complete(
      {
        tools: [
          {
            name: 'echo',
            description: 'Returns its text argument.',
            inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
          },
        ],
      },
      context,
    ),
  'tools/call': (params, context) => {
    const args = params?.arguments as Record<string, unknown> | undefined;
    if (params?.name !== 'echo') throw new JsonRpcError(ErrorCode.InvalidParams, `unknown tool: ${String(params?.name)}`);
    if (typeof args?.text !== 'string') throw new JsonRpcError(ErrorCode.InvalidParams, 'echo requires arguments.text');
    return complete({ content: [{ type: 'text', text: args.text }] }, context);
  },
};

const endpoint = new McpEndpoint({
  hub,
  capabilities: { tools: true, prompts: false, resources: true },
  methods,
  serverInfo: SERVER_INFO,
  // Legacy resources/subscribe: only the watched resource; its changes are what the hub publishes.
  resourceProviders: [hubResources(hub, { subscribable: (uri) => uri === WATCHED_RESOURCE })],
  // DNS-rebinding protection: only loopback Host and Origin values (anything else → 403).
  allowedHosts: localhostHosts,
  allowedOrigins: localhostHosts,
});

const handle = nodeHandler(endpoint);
let requests = 0;
const server = http.createServer((req, res) => {
  const pathname = (req.url ?? '/').split('?')[0];
  if (values.verbose) {
    const n = ++requests;
    const started = performance.now();
    const session = req.headers['mcp-session-id'] === undefined ? 'no-session' : 'session';
    const lastEventId = req.headers['last-event-id'] === undefined ? '' : ` last-event-id=${req.headers['last-event-id']}`;
    console.error(`#${n} ${req.method} ${req.url} ${session}${lastEventId} host=${req.headers.host}`);
    res.once('close', () => console.error(`#${n} -> ${res.statusCode} (${(performance.now() - started).toFixed(0)} ms)`));
  }
  if (pathname === '/mcp') return handle(req, res);
  res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found: the MCP endpoint is /mcp\n');
});

const ticker =
  tick > 0
    ? setInterval(() => {
        version++;
        hub.notifyResourceUpdated(WATCHED_RESOURCE);
      }, tick)
    : undefined;

server.listen(port, values.host, () => {
  const { port: bound } = server.address() as AddressInfo;
  const host = values.host.includes(':') ? `[${values.host}]` : values.host;
  console.log(`listening on http://${host}:${bound}/mcp`);
});

function stop(): void {
  if (ticker !== undefined) clearInterval(ticker);
  endpoint.close();
  server.close(() => process.exit(0));
  server.closeIdleConnections();
  setTimeout(() => server.closeAllConnections(), 1_000).unref();
}
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
