// The ceiling (issue 22): what Node itself allows for a `subscriptions/listen` stream, i.e. the
// floor cost of a frame on node:http, not a server anyone should run. It is the hand-written
// baseline (peers/baseline.mjs: parse, ack, a `Set` of streams per topic, a frame built from a
// prefix encoded once per publish + the stream's own subscription id) with one change: every frame
// is ONE HTTP chunk string, `<hex length>\r\n<frame>\r\n`, built once per stream-frame and written
// with `socket.write(string)` straight on the response's socket (peers/chunk.mjs), instead of
// `res.write(frame)` (which writes four pieces into a socket corked until the next tick, then one
// writev). Nothing per frame besides that string: the size line comes from a table shared by all
// streams, the frame's byte length from lengths measured once per publish and once per stream.
//
// Why still chunked: "straight on the socket" would also allow a response without chunking (no
// Content-Length, no Transfer-Encoding: the body ends when the connection closes), which saves the
// size line and CRLF. It is not taken: the wire bytes would then differ from every other peer's
// (6–7 bytes fewer per frame of this bench), and such a response can never be followed by another
// on the same connection. Here the bytes on the wire are exactly the baseline's, head and ack
// included (the head and the ack go through `res`: `res.writeHead` + a first `res.write`), so the
// gap between a peer and this one is CPU, not bytes. `node bench/wire-check.mjs` compares them.
//
// What it does NOT do, on purpose: no queue (a frame is written whatever the socket holds), no
// caps (streams, principals), no backpressure handling (`socket.write`'s `false` is ignored; the
// bench's publisher waits for `writableNeedDrain` sockets, the same for every peer), no timers per
// stream (one keep-alive interval for all streams, as the baseline), no close triggers (lifetime,
// idle, expiry), no coalescing of identical pending notifications, no validation beyond parsing.
// And no corking: in the 10-per-turn pattern each frame is a syscall of its own, while a peer that
// writes once per stream per turn (ours, and the baseline through node's cork) merges the turn's
// frames into one, so there this is not a ceiling; the 1-per-turn pattern is the one it bounds.
import { chunkHead, KEEP_ALIVE_CHUNK } from './chunk.mjs';
import { readListen, SSE_HEADERS, StreamSets, SUBSCRIPTION_ID_META_KEY } from './common.mjs';

export const name = 'ceiling';
export const description = 'hand-written node:http head + one socket.write per frame';

const FRAME_TAIL = '}}}\n\n';

export async function create() {
  const streams = new StreamSets();
  const { all, tools, byUri } = streams;
  const keepAlive = setInterval(() => {
    for (const stream of all) stream.socket.write(KEEP_ALIVE_CHUNK);
  }, 15_000);
  keepAlive.unref();

  const metaKey = JSON.stringify(SUBSCRIPTION_ID_META_KEY);
  const handler = async (req, res) => {
    const listen = await readListen(req, res);
    if (listen === undefined) return;
    const { message, filter } = listen;
    const idJson = JSON.stringify(message.id);
    // The frame's end for this stream (its id, the JSON's closing braces, the SSE blank line) and
    // the chunk's CRLF, with its byte length without the CRLF: built once per stream.
    const tail = `${idJson}${FRAME_TAIL}`;
    const stream = { socket: req.socket, tail: `${tail}\r\n`, tailBytes: Buffer.byteLength(tail) };
    res.writeHead(200, SSE_HEADERS);
    // The head and the ack through `res`, so that node writes the head and knows the response is
    // chunked; every later frame goes on the socket, behind them (socket writes keep their order).
    res.write(
      `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":${JSON.stringify(filter)},"_meta":{${metaKey}:${idJson}}}}\n\n`,
    );
    streams.add(stream, filter, res);
  };

  const writeAll = (set, head) => {
    const headBytes = Buffer.byteLength(head);
    for (const stream of set) stream.socket.write(chunkHead(headBytes + stream.tailBytes) + head + stream.tail);
  };
  return {
    handler,
    publish(uri) {
      const set = byUri.get(uri);
      if (set !== undefined) {
        writeAll(set, `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":${JSON.stringify(uri)},"_meta":{${metaKey}:`);
      }
    },
    publishMarker() {
      writeAll(tools, `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{${metaKey}:`);
    },
    registry: () => ({ streams: all.size, topics: byUri.size }),
    close() {
      clearInterval(keepAlive);
    },
  };
}
