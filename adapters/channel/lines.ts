import type { OversizedMessage } from './channel.js';

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;

/**
 * Splits a byte stream into newline-delimited messages (the framing of MCP's stdio transport:
 * "Messages are delimited by newlines, and MUST NOT contain embedded newlines"), holding at most
 * `maxBytes` of a message that has not ended yet.
 *
 * A message is the bytes before a `\n` (a `\r` before it is dropped, for peers that end lines with
 * CRLF); empty lines are skipped. Bytes are not decoded here: a message is handed on as its bytes,
 * so that the session decodes each complete one strictly (invalid UTF-8 is a `-32700`, not a
 * replacement character), and a multibyte character split across chunks is never an issue.
 *
 * A message longer than `maxBytes` is refused without being held whole: from the byte that takes
 * it past the limit, what arrives is discarded until its `\n`, and the message is reported once
 * as `{ oversized: n }` (n: the bytes it had), so that its sender gets an error and the channel
 * goes on with the next line.
 * @internal
 */
export class LineSplitter {
  /** The start of the message being received (chunks without a newline yet). */
  #parts: Uint8Array[] = [];
  #held = 0;
  /** Bytes of a message past the limit, being discarded until its newline; -1 when none is. */
  #discarding = -1;

  /** @param maxBytes the longest message, in bytes (the endpoint's `maxBodyBytes`). */
  constructor(private readonly maxBytes: number) {}

  /** Takes one chunk; hands each complete message (or the mark of an oversized one) to `emit`, in order. */
  push(chunk: Uint8Array, emit: (message: Uint8Array | OversizedMessage) => void): void {
    let start = 0;
    while (start < chunk.length) {
      const end = chunk.indexOf(NEWLINE, start);
      const stop = end === -1 ? chunk.length : end;
      if (this.#discarding >= 0) {
        this.#discarding += stop - start;
      } else if (this.#held + stop - start > this.maxBytes) {
        // Past the limit: what was held goes, and the rest of the line is counted, not kept.
        this.#discarding = this.#held + stop - start;
        this.#parts = [];
        this.#held = 0;
      } else if (stop > start) {
        this.#parts.push(chunk.subarray(start, stop));
        this.#held += stop - start;
      }
      if (end === -1) return;
      this.#lineEnd(emit);
      start = end + 1;
    }
  }

  /** What is held of a message that never ended (the channel closed mid-line): discarded. */
  get pending(): number {
    return this.#held;
  }

  #lineEnd(emit: (message: Uint8Array | OversizedMessage) => void): void {
    if (this.#discarding >= 0) {
      const oversized = this.#discarding;
      this.#discarding = -1;
      emit({ oversized });
      return;
    }
    const parts = this.#parts;
    if (parts.length === 0) return;
    // Copied out of the chunks it came in: a message handed on never holds a whole read buffer.
    let line = parts.length === 1 ? Uint8Array.prototype.slice.call(parts[0]!) : Buffer.concat(parts, this.#held);
    this.#parts = [];
    this.#held = 0;
    if (line[line.length - 1] === CARRIAGE_RETURN) line = line.subarray(0, line.length - 1);
    if (line.length > 0) emit(line);
  }
}
