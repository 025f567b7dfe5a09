// The one trick the ceiling peers share (bench/peers/ceiling.mjs, legacy-ceiling.mjs): an HTTP/1.1
// chunk built as one string and written with `socket.write` on the response's socket, bypassing
// `res.write`.
//
// What `res.write(frame)` does on a chunked response (node 20, lib/_http_outgoing.js `write_`):
// `Buffer.byteLength(frame)`, `len.toString(16)`, four `_send`s (hex, CRLF, frame, CRLF), each a
// `socket.write` into the socket corked until a `process.nextTick` it schedules, then one `writev`
// of the buffered pieces (an entry object per piece, arrays for the writev). Built here instead:
// `chunkHead(bytes) + frame + '\r\n'`, one `socket.write(string)` of an uncorked socket, which goes
// to `writeUtf8String` at once: one syscall per frame, and no object of ours besides the string.
//
// Preconditions (a caller that breaks one corrupts the response):
// - the response is chunked (node's default for a response without Content-Length) and its head
//   is already on the socket or queued before it (`res.writeHead` + `res.flushHeaders()`, or a
//   first `res.write`), so the bytes that follow are the body's chunks;
// - the socket carries no other response (no pipelining: the load generator opens one connection
//   per stream) and nothing else writes through `res` meanwhile except a whole chunk or `res.end()`;
// - `bytes` is the frame's length in UTF-8 bytes, not in UTF-16 code units.
// The wire bytes are exactly those of `res.write(frame)`: lower-case hex length, CRLF, frame, CRLF.

/** A chunk's size line (hex byte count + CRLF) for each size met, built once and kept. */
const HEADS = [];

/** The size line of a chunk of `bytes` bytes: `${bytes.toString(16)}\r\n`, cached below 64 KiB. */
export function chunkHead(bytes) {
  if (bytes >= 65_536) return `${bytes.toString(16)}\r\n`;
  return (HEADS[bytes] ??= `${bytes.toString(16)}\r\n`);
}

/** The chunk of an SSE keep-alive comment (`:\r\n`, what the baseline peers write). */
export const KEEP_ALIVE_CHUNK = `${chunkHead(3)}:\r\n\r\n`;
