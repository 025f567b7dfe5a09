// The legacy-era ceiling (issue 22): what Node itself allows for a 2025-11-25 session's GET stream,
// i.e. the floor cost of a frame on node:http, not a server anyone should run. It is the legacy
// baseline (peers/legacy-baseline.mjs: `initialize` with a random `Mcp-Session-Id`, 202 for
// notifications, `GET /mcp` opening the session's SSE stream, a `Set` of sessions per URI for
// `resources/subscribe`, a frame `event: message\nid: <session's next id>` + a body encoded once
// per publish) with one change: every frame is ONE HTTP chunk string, `<hex length>\r\n<frame>\r\n`,
// built once per stream-frame and written with `socket.write(string)` straight on the GET
// response's socket (peers/chunk.mjs), instead of `res.write(frame)`. Nothing per frame besides
// that string: the size line comes from a table shared by all streams, the frame's byte length is
// the body's (measured once per publish) plus the id's digits (counted, not converted).
//
// Still chunked, for the reason peers/ceiling.mjs gives: the wire bytes are exactly the legacy
// baseline's, event ids included (`node bench/wire-check.mjs` compares them), so the gap between a
// peer and this one is CPU, not bytes. The GET response's head goes through `res` (`res.writeHead`
// + `res.flushHeaders()`, as the legacy baseline does), and a replaced or deleted session's stream
// ends through `res.end()` (node writes the last chunk); everything between is socket writes.
//
// What it does NOT do, on purpose: no replay buffer (so no `Last-Event-ID` resumption), no caps,
// no idle eviction, no queue, no backpressure handling (`socket.write`'s `false` is ignored; the
// bench's publisher waits for `writableNeedDrain` sockets, the same for every peer), no timers per
// session (one keep-alive interval for all streams, as the legacy baseline), no protocol-version
// checks. And no corking: in the 10-per-turn pattern each frame is a syscall of its own, while a
// peer that writes once per stream per turn merges the turn's frames, so there this is not a
// ceiling; the 1-per-turn pattern is the one it bounds.
import { randomUUID } from 'node:crypto';
import { chunkHead, KEEP_ALIVE_CHUNK } from './chunk.mjs';
import { readJson, SSE_HEADERS } from './common.mjs';

export const name = 'legacy-ceiling';
export const description = 'hand-written node:http legacy sessions, one socket.write per frame';

const SERVER_INFO = { name: 'bench', version: '1.0.0' };
const FRAME_HEAD = 'event: message\nid: ';
const FRAME_HEAD_BYTES = FRAME_HEAD.length; // ASCII

/** Decimal digits of a positive integer (an event id), without building its string. */
function digits(n) {
  let d = 1;
  for (; n >= 10; n = Math.floor(n / 10)) d++;
  return d;
}

export async function create() {
  const sessions = new Map();
  const byUri = new Map();
  const keepAlive = setInterval(() => {
    for (const session of sessions.values()) session.socket?.write(KEEP_ALIVE_CHUNK);
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
      session.socket = req.socket;
      res.writeHead(200, SSE_HEADERS);
      res.flushHeaders();
      res.on('close', () => {
        if (session.res === res) session.res = session.socket = undefined;
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
      const created = { id: randomUUID(), res: undefined, socket: undefined, nextId: 0, uris: new Set() };
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

  // `tail`: the frame after its id (`\ndata: …\n\n`), encoded once per publish.
  const writeAll = (set, tail) => {
    const bytes = FRAME_HEAD_BYTES + Buffer.byteLength(tail);
    const tailCrlf = `${tail}\r\n`;
    for (const session of set) {
      const socket = session.socket;
      if (socket === undefined) continue;
      const id = ++session.nextId;
      socket.write(chunkHead(bytes + digits(id)) + FRAME_HEAD + id + tailCrlf);
    }
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
