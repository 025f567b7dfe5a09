// The legacy-era hand-written reference ("legacy baseline"): a node:http server for 2025-11-25 sessions.
// `initialize` answers JSON with a random `Mcp-Session-Id`; notifications get 202; `GET /mcp`
// opens the session's SSE stream (headers flushed at once); `resources/subscribe` adds the session
// to a per-URI Set and answers `{}`. A publish writes, per subscribed session with a live stream,
// one `res.write` of the frame built from a body encoded once per publish plus the session's next
// event id (DESIGN L7: every frame carries a per-session increasing `id:`, in the same byte layout
// as ours). No replay buffer, no caps, no idle eviction, no per-session timers (one keep-alive
// interval for all streams), no backpressure handling. peers/legacy-ceiling.mjs is this server
// with each frame written as one chunk string on the socket.
import { randomUUID } from 'node:crypto';
import { readJson, SSE_HEADERS } from './common.mjs';

export const name = 'legacy-baseline';
export const description = 'hand-written node:http legacy sessions + res.write';

const SERVER_INFO = { name: 'bench', version: '1.0.0' };

export async function create() {
  const sessions = new Map();
  const byUri = new Map();
  const keepAlive = setInterval(() => {
    for (const session of sessions.values()) session.res?.write(':\r\n');
  }, 15_000);
  keepAlive.unref();

  const json = (res, status, body, headers = {}) => {
    res.writeHead(status, { 'Content-Type': 'application/json', ...headers }).end(JSON.stringify(body));
  };

  const handler = async (req, res) => {
    const id = req.headers['mcp-session-id'];
    const session = id === undefined ? undefined : sessions.get(id);
    if (id !== undefined && session === undefined) return json(res, 404, { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'session not found' } });
    if (req.method === 'GET') {
      if (session === undefined) return json(res, 400, { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'missing Mcp-Session-Id' } });
      session.res?.end();
      session.res = res;
      res.writeHead(200, SSE_HEADERS);
      res.flushHeaders();
      res.on('close', () => {
        if (session.res === res) session.res = undefined;
      });
      return;
    }
    if (req.method === 'DELETE' && session !== undefined) {
      forget(session);
      res.writeHead(204).end();
      return;
    }
    let message;
    try {
      message = await readJson(req);
    } catch {
      return json(res, 400, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse error' } });
    }
    if (message.id === undefined) {
      res.writeHead(202).end();
      return;
    }
    if (session === undefined) {
      if (message.method !== 'initialize') return json(res, 400, { jsonrpc: '2.0', id: message.id, error: { code: -32000, message: 'missing Mcp-Session-Id' } });
      const created = { id: randomUUID(), res: undefined, nextId: 0, uris: new Set() };
      sessions.set(created.id, created);
      const result = {
        protocolVersion: '2025-11-25',
        capabilities: { tools: { listChanged: true }, resources: { subscribe: true, listChanged: true } },
        serverInfo: SERVER_INFO,
      };
      return json(res, 200, { jsonrpc: '2.0', id: message.id, result }, { 'Mcp-Session-Id': created.id });
    }
    if (message.method === 'resources/subscribe' || message.method === 'resources/unsubscribe') {
      const uri = message.params?.uri;
      if (typeof uri !== 'string') return json(res, 200, { jsonrpc: '2.0', id: message.id, error: { code: -32602, message: 'uri required' } });
      let set = byUri.get(uri);
      if (message.method === 'resources/subscribe') {
        if (set === undefined) byUri.set(uri, (set = new Set()));
        set.add(session);
        session.uris.add(uri);
      } else {
        set?.delete(session);
        session.uris.delete(uri);
      }
    }
    return json(res, 200, { jsonrpc: '2.0', id: message.id, result: {} });
  };

  function forget(session) {
    sessions.delete(session.id);
    session.res?.end();
    for (const uri of session.uris) byUri.get(uri)?.delete(session);
  }

  const writeAll = (set, tail) => {
    for (const session of set) session.res?.write(`event: message\nid: ${++session.nextId}${tail}`);
  };
  return {
    handler,
    publish(uri) {
      const set = byUri.get(uri);
      if (set !== undefined) writeAll(set, `\ndata: {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":${JSON.stringify(uri)}}}\n\n`);
    },
    publishMarker() {
      writeAll(sessions.values(), '\ndata: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n\n');
    },
    registry: () => {
      let streams = 0;
      for (const session of sessions.values()) if (session.res !== undefined) streams++;
      return { sessions: sessions.size, streams, topics: byUri.size };
    },
    close() {
      clearInterval(keepAlive);
    },
  };
}
