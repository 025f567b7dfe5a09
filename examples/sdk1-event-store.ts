// A server built on the official SDK 1.x (@modelcontextprotocol/sdk) with mcp-rx-streams beside it:
// its StreamableHTTPServerTransport replays what a client missed with Last-Event-ID from a bounded
// replayEventStore, and ResourceUpdates serves resources/subscribe from the hub, so a change
// published anywhere (hub.notifyResourceUpdated) reaches the sessions subscribed to that URI.
// For a fleet on Redis (a session resumed on another node), see docs/existing-server.md.
// Run it:   node --import tsx examples/sdk1-event-store.ts [port]
// The README shows this file with package imports ('mcp-rx-streams', 'mcp-rx-streams/sdk');
// spec/sdk/sdk1.spec.ts serves it on a loopback port and drives it with the official 1.x client.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { pathToFileURL } from 'node:url';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { SubscribeRequestSchema, UnsubscribeRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { Hub } from '../index.js';
import { replayEventStore, ResourceUpdates } from '../adapters/sdk/index.js';

const NOTE = 'memo://notes/today';

/** A `(req, res)` handler serving one SDK 1.x session per client; its `touch` tool changes {@link NOTE}. */
export function notesServer(hub: Hub): (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  let note = '';

  async function openSession(): Promise<StreamableHTTPServerTransport> {
    const server = new McpServer({ name: 'notes', version: '1.0.0' }, { capabilities: { resources: { subscribe: true } } });
    server.registerResource('today', NOTE, { mimeType: 'text/plain' }, async () => ({ contents: [{ uri: NOTE, text: note }] }));
    server.registerTool('touch', { description: 'appends a line to the note' }, async () => {
      note += `${new Date().toISOString()}\n`;
      hub.notifyResourceUpdated(NOTE); // every session subscribed to NOTE is sent resources/updated
      return { content: [{ type: 'text', text: 'touched' }] };
    });
    const updates = new ResourceUpdates(server.server, { hub });
    server.server.setRequestHandler(SubscribeRequestSchema, updates.subscribe);
    server.server.setRequestHandler(UnsubscribeRequestSchema, updates.unsubscribe);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      eventStore: replayEventStore({ capacity: 100 }), // the last 100 messages of each stream
      onsessioninitialized: (id) => void sessions.set(id, transport),
    });
    transport.onclose = () => {
      updates.close();
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    return transport;
  }

  return async (req, res) => {
    const id = req.headers['mcp-session-id'];
    const transport = typeof id === 'string' ? sessions.get(id) : id === undefined && req.method === 'POST' ? await openSession() : undefined;
    if (transport === undefined) {
      res.writeHead(404, { 'Content-Type': 'application/json' }).end('{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}');
      return;
    }
    await transport.handleRequest(req, res);
  };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const handle = notesServer(new Hub());
  const server = http.createServer((req, res) => void handle(req, res).catch(() => res.destroy()));
  server.listen(Number(process.argv[2] ?? 3000), '127.0.0.1', () => {
    const { port } = server.address() as { port: number };
    console.log(`notes (SDK 1.x + mcp-rx-streams) listening on http://127.0.0.1:${port}/mcp`);
  });
}
