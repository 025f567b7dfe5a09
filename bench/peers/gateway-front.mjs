// bench/gateway.mjs's gateway: upstreamGateway over one upstream (argv[2], a 2026-07-28 endpoint) in
// front of an endpoint on node:http, in a process of its own. Over IPC: `cpu` answers
// process.cpuUsage(); `stats` the gateway's. Tells its URL first: {ready, url}.
import http from 'node:http';
import { Hub, McpEndpoint, nodeHandler } from '../../dist/index.js';
import { upstreamGateway } from '../../dist/adapters/upstream/index.js';

const hub = new Hub();
const gateway = upstreamGateway({ hub, upstreams: [{ name: 'up', url: process.argv[2], era: 'modern' }] });
const endpoint = new McpEndpoint({ hub, capabilities: { tools: true, resources: true }, resourceProviders: [gateway.resources], maxStreams: 100_000, maxListensPerPrincipal: 100_000 });
const server = http.createServer(nodeHandler(endpoint));
server.listen(0, '127.0.0.1', () => process.send({ ready: true, url: `http://127.0.0.1:${server.address().port}/mcp` }));
process.on('message', ({ id, cmd }) => {
  if (cmd === 'cpu') return process.send({ id, cpu: process.cpuUsage() });
  if (cmd === 'stats') return process.send({ id, stats: gateway.stats });
});
process.on('disconnect', () => process.exit(0));
