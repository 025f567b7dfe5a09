// bench/gateway.mjs's upstream: this library's endpoint (the hub's own resources) on node:http, in a
// process of its own. Over IPC: `publish` {uris, rounds} publishes notifyResourceUpdated for every
// URI, one round per event-loop turn (distinct URIs: nothing is coalesced), and answers when done;
// `cpu` answers process.cpuUsage(). Tells its URL first: {ready, url}.
import http from 'node:http';
import { Hub, McpEndpoint, nodeHandler } from '../../dist/index.js';

const hub = new Hub();
const endpoint = new McpEndpoint({ hub, capabilities: { tools: true, resources: true }, maxStreams: 100_000, maxListensPerPrincipal: 100_000 });
const server = http.createServer(nodeHandler(endpoint));
server.listen(0, '127.0.0.1', () => process.send({ ready: true, url: `http://127.0.0.1:${server.address().port}/mcp` }));
process.on('message', async ({ id, cmd, args }) => {
  if (cmd === 'publish') {
    for (let round = 0; round < args.rounds; round++) {
      for (const uri of args.uris) hub.notifyResourceUpdated(uri);
      await new Promise((resolve) => setImmediate(resolve));
    }
    return process.send({ id });
  }
  if (cmd === 'cpu') return process.send({ id, cpu: process.cpuUsage() });
});
process.on('disconnect', () => process.exit(0));
