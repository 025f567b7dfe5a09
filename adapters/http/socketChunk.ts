import { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** node's own `ServerResponse.write`: a response whose `write` is another (middleware) is written through it. */
const NODE_WRITE = ServerResponse.prototype.write;

/**
 * Whether a response's socket is the connection itself, as on Node. Bun's and Deno's `node:http`
 * hand out a socket that is not the wire (writing there corrupts the response).
 */
const SOCKET_IS_WIRE = typeof process.versions.bun !== 'string' && typeof process.versions.deno !== 'string';

/**
 * True when {@link writeChunk} may write `res`'s next HTTP chunk on `socket` itself, because
 * `res.write` would put exactly those bytes there and nothing of `res` is waiting to go before
 * them. It relies on six things of Node's `node:http`, each checked here:
 * 1. the runtime is Node (Bun's and Deno's `node:http` socket is not the wire);
 * 2. `res.write` is `ServerResponse.prototype.write` (no compression or other middleware wraps it);
 * 3. `res.socket === socket`: the connection is serving this response now (not one queued behind
 *    an earlier response of a pipelined keep-alive connection, whose bytes node still holds);
 * 4. `res.headersSent`: the head went out;
 * 5. `res.writableLength === socket.writableLength`: node holds no bytes of the response itself
 *    (all it buffered is the socket's own);
 * 6. the socket is not destroyed.
 * Whether the body is chunked is `res.chunkedEncoding` (see {@link writeChunk}).
 * @internal
 */
export function ownsSocket(res: ServerResponse, socket: Socket): boolean {
  return SOCKET_IS_WIRE && res.write === NODE_WRITE && res.socket === socket && res.headersSent && res.writableLength === socket.writableLength && !socket.destroyed;
}

/**
 * Writes `text` as the response's next piece of body with one `socket.write`: the HTTP/1.1 chunk
 * (`<size in hex>\r\n<text>\r\n`) when `res.chunkedEncoding`, else `text` as it is; the same bytes
 * `res.write(text)` would send. Why: `res.write` corks the socket, uncorks it a tick later and
 * hands the kernel four buffers per chunk; at one notification per event-loop turn to 10 000
 * streams that was the cost of a frame (a stream's write path went from 28.7 to 18.6 µs per frame
 * with this, CPU profile of issue 15). `spec/adapters/socket-chunk.spec.ts` compares the bytes with
 * `res.write`'s on a real socket and checks each precondition.
 *
 * Precondition: {@link ownsSocket}(res, socket), just checked; `text` is not empty (an empty chunk
 * would end a chunked body); `bytes`, when given, is `text`'s UTF-8 byte length (a writer that
 * counted what it encoded, see `encodedByteLength`, saves measuring the text again).
 * @param bytes `Buffer.byteLength(text)`; measured here when not given.
 * @returns what `socket.write` returned: `false` when the socket's buffer is past its high-water mark.
 * @internal
 */
export function writeChunk(res: ServerResponse, socket: Socket, text: string, bytes = Buffer.byteLength(text)): boolean {
  return socket.write(res.chunkedEncoding ? `${chunkSizeLine(bytes)}${text}\r\n` : text);
}

/** The size lines made so far, by size (see {@link chunkSizeLine}). */
const SIZE_LINES: string[] = [];

/** Sizes up to this many bytes keep their size line; larger chunks are rare and make theirs. */
const KEPT_SIZE_LINES = 65_536;

/**
 * An HTTP/1.1 chunk's size line, `<bytes in lower-case hex>\r\n`: made once per size met below
 * {@link KEPT_SIZE_LINES} and kept (the frames of a stream come in few sizes), instead of a number
 * converted and a string joined at every write.
 * @internal
 */
export function chunkSizeLine(bytes: number): string {
  if (bytes >= KEPT_SIZE_LINES) return `${bytes.toString(16)}\r\n`;
  return (SIZE_LINES[bytes] ??= `${bytes.toString(16)}\r\n`);
}
