// The sessions of the hand-written legacy peers (peers/legacy-baseline.mjs and its ceiling,
// peers/legacy-ceiling.mjs): `initialize` answers JSON with a random `Mcp-Session-Id`;
// notifications get 202; `GET /mcp` opens the session's SSE stream (headers flushed at once,
// replacing its stream if it had one); `resources/subscribe` adds the session to a per-URI Set and
// answers `{}`; `DELETE` forgets it. The peers differ only in how they write a frame, so each
// keeps its own publish loop and says how a session and its stream look to it.
import { randomUUID } from 'node:crypto';
import { readJson, SSE_HEADERS } from './common.mjs';

const SERVER_INFO = { name: 'bench', version: '1.0.0' };

/**
 * @param peer `newSession(id)`: a session object with at least `id`, `res` (undefined), `nextId`
 *   (0) and `uris` (an empty Set); `attach(session, req)` / `detach(session)`: what the peer keeps
 *   of a GET stream besides `session.res` (set and cleared here), when it opens and closes.
 * @returns the sessions by id, the sessions of each URI, the request handler, and the peer's
 *   `registry()` (sessions, open streams, URIs).
 */
export function handWrittenSessions({ newSession, attach = () => undefined, detach = () => undefined }) {
  const sessions = new Map();
  const byUri = new Map();

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
      attach(session, req);
      res.writeHead(200, SSE_HEADERS);
      res.flushHeaders();
      res.on('close', () => {
        if (session.res !== res) return;
        session.res = undefined;
        detach(session);
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
      const created = newSession(randomUUID());
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

  const registry = () => {
    let streams = 0;
    for (const session of sessions.values()) if (session.res !== undefined) streams++;
    return { sessions: sessions.size, streams, topics: byUri.size };
  };

  return { sessions, byUri, handler, registry };
}
