// The official SDK 2.x serving `subscriptions/listen` on stdio (`serveStdio` of
// @modelcontextprotocol/server, its StdioListenRouter): the peer of bench/stdio.mjs. Tools:
//   publish: sendResourceUpdated(PREFIX + i) for i < COUNT, ROUNDS times, one round per turn
//     (the counts come from the environment: a tool without arguments needs no schema library);
//   memory: {rss, heapUsed} after a full GC (run with --expose-gc), as JSON text.
import { McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';

const prefix = process.env.PREFIX ?? 'file:///bench/doc-';
const count = Number(process.env.COUNT ?? 1000);
const rounds = Number(process.env.ROUNDS ?? 1);

serveStdio(
  () => {
    const server = new McpServer({ name: 'bench', version: '1.0.0' }, { capabilities: { tools: {}, resources: { subscribe: true, listChanged: true } } });
    server.registerTool('publish', { description: 'publishes COUNT x ROUNDS resource updates' }, async () => {
      for (let round = 0; round < rounds; round++) {
        for (let i = 0; i < count; i++) void server.server.sendResourceUpdated({ uri: `${prefix}${i}` });
        await new Promise((resolve) => setImmediate(resolve));
      }
      return { content: [{ type: 'text', text: String(count * rounds) }] };
    });
    server.registerTool('memory', { description: 'rss and heap after GC' }, async () => {
      globalThis.gc?.();
      const { rss, heapUsed } = process.memoryUsage();
      return { content: [{ type: 'text', text: JSON.stringify({ rss, heapUsed }) }] };
    });
    return server;
  },
  { maxSubscriptions: 1_000_000 },
);
