// The official TypeScript SDK 1.x (@modelcontextprotocol/sdk), legacy era only (2025-11-25
// sessions, standalone GET SSE stream, `resources/subscribe`), wired the way its own
// `simpleStreamableHttp` example does it: one low-level `Server` + `StreamableHTTPServerTransport`
// per session (a `Server` connects to exactly one transport), kept in a map by `Mcp-Session-Id`.
// The SDK has no resource registry for subscriptions, so `resources/subscribe` handlers keep a
// per-URI Set of sessions and a publish calls `server.sendResourceUpdated({ uri })` on each, which
// the transport writes to that session's GET stream. Default transport options: no event store,
// so its frames carry no `id:` and nothing is kept for replay (ours and the legacy baseline stamp
// ids; ours also keeps a 100-frame replay buffer per session). POST responses are SSE (the default).
import { randomUUID } from 'node:crypto';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest, SubscribeRequestSchema, UnsubscribeRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { readJson } from './common.mjs';

export const name = '@modelcontextprotocol/sdk';
export const description = 'Server + StreamableHTTPServerTransport per session';

export async function create() {
  const sessions = new Map();
  const byUri = new Map();
  const ignore = () => {};

  const forget = (entry) => {
    sessions.delete(entry.id);
    for (const uri of entry.uris) {
      const set = byUri.get(uri);
      set?.delete(entry);
      if (set?.size === 0) byUri.delete(uri);
    }
  };

  async function open(req, res) {
    let body;
    try {
      body = await readJson(req);
    } catch {
      res.writeHead(400).end();
      return;
    }
    if (!isInitializeRequest(body)) {
      res.writeHead(400, { 'Content-Type': 'application/json' }).end('{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: no session"},"id":null}');
      return;
    }
    const entry = { id: undefined, server: undefined, transport: undefined, uris: new Set() };
    entry.transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        entry.id = id;
        sessions.set(id, entry);
      },
    });
    entry.transport.onclose = () => forget(entry);
    entry.server = new Server(
      { name: 'bench', version: '1.0.0' },
      { capabilities: { tools: { listChanged: true }, resources: { subscribe: true, listChanged: true } } },
    );
    entry.server.setRequestHandler(SubscribeRequestSchema, (request) => {
      const uri = request.params.uri;
      entry.uris.add(uri);
      let set = byUri.get(uri);
      if (set === undefined) byUri.set(uri, (set = new Set()));
      set.add(entry);
      return {};
    });
    entry.server.setRequestHandler(UnsubscribeRequestSchema, (request) => {
      const uri = request.params.uri;
      entry.uris.delete(uri);
      byUri.get(uri)?.delete(entry);
      return {};
    });
    await entry.server.connect(entry.transport);
    await entry.transport.handleRequest(req, res, body);
  }

  const handler = (req, res) => {
    const id = req.headers['mcp-session-id'];
    if (id === undefined) return open(req, res);
    const entry = sessions.get(id);
    if (entry === undefined) {
      res.writeHead(404, { 'Content-Type': 'application/json' }).end('{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}');
      return;
    }
    return entry.transport.handleRequest(req, res);
  };

  return {
    handler,
    publish(uri) {
      const set = byUri.get(uri);
      if (set !== undefined) for (const entry of set) entry.server.sendResourceUpdated({ uri }).catch(ignore);
    },
    publishMarker() {
      for (const entry of sessions.values()) entry.server.sendToolListChanged().catch(ignore);
    },
    registry: () => {
      let subscribed = 0;
      for (const set of byUri.values()) subscribed += set.size;
      return { sessions: sessions.size, subscribed };
    },
    async close() {
      await Promise.all([...sessions.values()].map((entry) => entry.transport.close().catch(ignore)));
    },
  };
}
