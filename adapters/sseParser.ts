/**
 * An incremental Server-Sent Events parser that follows the WHATWG HTML "event stream
 * interpretation" rules (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation).
 */

import { callback } from '../lib/validate.js';

/** One dispatched SSE event, as an `EventSource` would see it. */
export interface ParsedSseEvent {
  /** The `event:` field of the block, or `'message'` when the block had none (or an empty one). */
  readonly event: string;
  /** The `data:` lines of the block joined with `\n` (no trailing newline). */
  readonly data: string;
  /**
   * The last event ID at dispatch time: the most recent `id:` field seen on this stream, in
   * this block or an earlier one, or `undefined` when none has been seen yet.
   */
  readonly id: string | undefined;
  /**
   * The reconnection time in milliseconds, present only on the first event dispatched after
   * a valid `retry:` field (a `retry:`-only block is reported with the next event).
   */
  readonly retry?: number;
}

const LF = 0x0a;
const SPACE = 0x20;
const COLON = 0x3a;
const BOM = 0xfeff;
const DIGITS = /^[0-9]+$/;

/**
 * Turns the bytes (or text) of an SSE stream, in chunks cut anywhere, into dispatched events.
 *
 * Push chunks as they arrive; the parser keeps the unfinished line, the half-read UTF-8
 * character and a trailing CR (whose LF may come in the next chunk) between calls, so the
 * events never depend on where the network cut the stream. Lines end in CRLF, CR or LF; a
 * leading BOM is dropped once; a block is dispatched at the blank line that ends it, and only
 * if it had at least one `data` line. Line breaks are found with `indexOf` and only field
 * values are sliced out, so the cost is linear in the input whatever the chunking.
 *
 * @example
 * ```ts
 * const parser = new SseParser((e) => console.log(e.event, e.id, JSON.parse(e.data)), (c) => console.log('comment', c));
 * parser.push(new TextEncoder().encode('id: 7\r\nevent: message\r\ndata: {"a"'));
 * parser.push(':1}\r\n\r\n: keep-alive\r\n');   // logs: message 7 { a: 1 }, then: comment " keep-alive"
 * parser.end();
 * ```
 *
 * @param onEvent called synchronously, once per dispatched event, in stream order.
 * @param onComment called with the text after the `:` of each comment line, verbatim (the
 *   leading space, if any, is kept: `": ping"` reports `" ping"`, a bare `":"` reports `""`);
 *   defaults to ignoring comments.
 * @throws InvalidOptionError naming `SseParser onEvent` or `SseParser onComment` when it is not a function.
 * @see parseSse for a whole stream at once
 * @see listen and openSse in `adapters/client.ts`, which feed it from an undici response
 */
export class SseParser {
  private readonly onEvent: (e: ParsedSseEvent) => void;
  private readonly onComment: ((text: string) => void) | undefined;
  private decoder = new TextDecoder('utf-8', { ignoreBOM: true });
  /** The text of the line being read, when the previous chunk ended inside it. */
  private tail = '';
  /** The previous chunk ended with CR: an LF at the start of the next one belongs to it. */
  private skipLf = false;
  private bomChecked = false;
  private eventType = '';
  private data = '';
  private hasData = false;
  private lastEventId: string | undefined = undefined;
  private retry: number | undefined = undefined;

  constructor(onEvent: (e: ParsedSseEvent) => void, onComment?: (text: string) => void) {
    this.onEvent = callback<(e: ParsedSseEvent) => void>('SseParser onEvent', onEvent);
    this.onComment = onComment === undefined ? undefined : callback<(text: string) => void>('SseParser onComment', onComment);
  }

  /**
   * Feeds the next chunk of the stream.
   *
   * Bytes are decoded as UTF-8 in streaming mode (invalid sequences become U+FFFD, as the
   * spec requires); strings are taken as already decoded. Don't mix the two inside one
   * multi-byte character.
   *
   * @example
   * ```ts
   * parser.push(Buffer.from('data: hi\n\n'));
   * ```
   *
   * @param chunk raw bytes (`Uint8Array`, `Buffer`) or decoded text; may be empty.
   * @see SseParser.end
   */
  push(chunk: Uint8Array | string): void {
    const text = typeof chunk === 'string' ? chunk : this.decoder.decode(chunk, { stream: true });
    if (text.length > 0) this.feed(text);
  }

  /**
   * Ends the stream: discards the unfinished line and event and readies the parser for a new stream.
   *
   * The spec says "if the file ends in the middle of an event, before the final empty line,
   * the incomplete event is not dispatched". The last event ID is kept, as an `EventSource`
   * keeps it across reconnections; everything else (decoder, BOM check, buffers) is reset.
   *
   * @example
   * ```ts
   * parser.push('data: never dispatched\n');
   * parser.end(); // no event
   * ```
   *
   * @see SseParser.push
   */
  end(): void {
    this.decoder = new TextDecoder('utf-8', { ignoreBOM: true });
    this.tail = '';
    this.skipLf = false;
    this.bomChecked = false;
    this.eventType = '';
    this.data = '';
    this.hasData = false;
    this.retry = undefined;
  }

  private feed(text: string): void {
    let pos = 0;
    const len = text.length;
    if (!this.bomChecked) {
      this.bomChecked = true;
      if (text.charCodeAt(0) === BOM) pos = 1;
    }
    if (this.skipLf) {
      this.skipLf = false;
      if (text.charCodeAt(pos) === LF) pos++;
    }
    // The next CR and LF at or after `pos`, each searched again only once passed: with one of
    // them absent, searching per line would make a long chunk quadratic.
    let cr = text.indexOf('\r', pos);
    let lf = text.indexOf('\n', pos);
    while (pos < len) {
      if (cr !== -1 && cr < pos) cr = text.indexOf('\r', pos);
      if (lf !== -1 && lf < pos) lf = text.indexOf('\n', pos);
      let end: number;
      if (cr === -1) {
        if (lf === -1) break;
        end = lf;
      } else {
        end = lf === -1 || cr < lf ? cr : lf;
      }
      const tail = this.tail;
      const next = end === cr && text.charCodeAt(end + 1) === LF ? end + 2 : end + 1;
      if (end === cr && next === len) this.skipLf = true;
      if (tail.length === 0) {
        this.line(text, pos, end);
      } else {
        this.tail = '';
        const line = tail + text.slice(pos, end);
        this.line(line, 0, line.length);
      }
      pos = next;
    }
    if (pos < len) this.tail += pos === 0 ? text : text.slice(pos);
  }

  /** Interprets the line `text[start, end)`: slicing only the value avoids a copy per line. */
  private line(text: string, start: number, end: number): void {
    if (start === end) {
      this.dispatch();
      return;
    }
    // Field names are short: a scan by char code finds the colon without searching past `end`.
    let colon = start;
    while (colon < end && text.charCodeAt(colon) !== COLON) colon++;
    if (colon === start) {
      this.onComment?.(text.slice(start + 1, end));
      return;
    }
    let valueStart = colon + 1;
    if (valueStart < end && text.charCodeAt(valueStart) === SPACE) valueStart++;
    const nameLength = colon - start;
    if (nameLength === 4 && text.startsWith('data', start)) {
      const value = text.slice(valueStart, end);
      if (this.hasData) this.data += '\n' + value;
      else {
        this.data = value;
        this.hasData = true;
      }
    } else if (nameLength === 5 && text.startsWith('event', start)) {
      this.eventType = text.slice(valueStart, end);
    } else if (nameLength === 2 && text.startsWith('id', start)) {
      const value = text.slice(valueStart, end);
      if (value.indexOf('\0') === -1) this.lastEventId = value;
    } else if (nameLength === 5 && text.startsWith('retry', start)) {
      const value = text.slice(valueStart, end);
      if (DIGITS.test(value)) this.retry = Number.parseInt(value, 10);
    }
    // "Otherwise: the field is ignored."
  }

  private dispatch(): void {
    if (!this.hasData) {
      this.eventType = '';
      return;
    }
    const event: ParsedSseEvent =
      this.retry === undefined
        ? { event: this.eventType || 'message', data: this.data, id: this.lastEventId }
        : { event: this.eventType || 'message', data: this.data, id: this.lastEventId, retry: this.retry };
    this.eventType = '';
    this.data = '';
    this.hasData = false;
    this.retry = undefined;
    this.onEvent(event);
  }
}

/**
 * Parses a whole SSE stream held in one string (or byte array) and returns its events.
 *
 * A convenience over {@link SseParser} for tests and fixtures: the stream is pushed in one
 * chunk and ended, so an unterminated last event is dropped exactly as on a live stream.
 *
 * @example
 * ```ts
 * parseSse('event: message\r\ndata: {"a":1}\r\n\r\n');
 * // → [{ event: 'message', data: '{"a":1}', id: undefined }]
 * ```
 *
 * @param text the complete stream, as text or UTF-8 bytes.
 * @see SseParser
 */
export function parseSse(text: string | Uint8Array): ParsedSseEvent[] {
  const events: ParsedSseEvent[] = [];
  const parser = new SseParser((e) => events.push(e));
  parser.push(text);
  parser.end();
  return events;
}
