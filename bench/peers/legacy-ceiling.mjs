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
import { chunkHead, KEEP_ALIVE_CHUNK } from './chunk.mjs';
import { handWrittenSessions } from './legacy-sessions.mjs';

export const name = 'legacy-ceiling';
export const description = 'hand-written node:http legacy sessions, one socket.write per frame';

const FRAME_HEAD = 'event: message\nid: ';
const FRAME_HEAD_BYTES = FRAME_HEAD.length; // ASCII

/** Decimal digits of a positive integer (an event id), without building its string. */
function digits(n) {
  let d = 1;
  for (; n >= 10; n = Math.floor(n / 10)) d++;
  return d;
}

export async function create() {
  const { sessions, byUri, handler, registry } = handWrittenSessions({
    newSession: (id) => ({ id, res: undefined, socket: undefined, nextId: 0, uris: new Set() }),
    attach: (session, req) => (session.socket = req.socket),
    detach: (session) => (session.socket = undefined),
  });
  const keepAlive = setInterval(() => {
    for (const session of sessions.values()) session.socket?.write(KEEP_ALIVE_CHUNK);
  }, 15_000);
  keepAlive.unref();

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
    registry,
    close() {
      clearInterval(keepAlive);
    },
  };
}
