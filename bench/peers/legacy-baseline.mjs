// The legacy-era hand-written reference ("legacy baseline"): a node:http server for 2025-11-25 sessions.
// `initialize` answers JSON with a random `Mcp-Session-Id`; notifications get 202; `GET /mcp`
// opens the session's SSE stream (headers flushed at once); `resources/subscribe` adds the session
// to a per-URI Set and answers `{}`. A publish writes, per subscribed session with a live stream,
// one `res.write` of the frame built from a body encoded once per publish plus the session's next
// event id (DESIGN L7: every frame carries a per-session increasing `id:`, in the same byte layout
// as ours). No replay buffer, no caps, no idle eviction, no per-session timers (one keep-alive
// interval for all streams), no backpressure handling. peers/legacy-ceiling.mjs is this server
// with each frame written as one chunk string on the socket.
import { handWrittenSessions } from './legacy-sessions.mjs';

export const name = 'legacy-baseline';
export const description = 'hand-written node:http legacy sessions + res.write';

export async function create() {
  const { sessions, byUri, handler, registry } = handWrittenSessions({
    newSession: (id) => ({ id, res: undefined, nextId: 0, uris: new Set() }),
  });
  const keepAlive = setInterval(() => {
    for (const session of sessions.values()) session.res?.write(':\r\n');
  }, 15_000);
  keepAlive.unref();

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
    registry,
    close() {
      clearInterval(keepAlive);
    },
  };
}
