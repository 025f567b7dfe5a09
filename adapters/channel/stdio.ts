import type { Readable, Writable } from 'node:stream';
import { Observable, Subject } from 'rxjs';
import type { AuthInfo } from '../../lib/auth.js';
import type { EndpointRequest } from '../../lib/context.js';
import { endpoint as validEndpoint, options as validOptions, positiveInteger } from '../../lib/validate.js';
import { highWaterMark, readable, writable } from './check.js';
import type { McpEndpoint } from '../http/endpoint.js';
import type { ChannelInput, MessageChannel, OversizedMessage } from './channel.js';
import { type ChannelSession, serveChannel } from './session.js';

/** Options of {@link stdioChannel}. */
export interface StdioChannelOptions {
  /** Where messages arrive, newline-delimited; defaults to `process.stdin`. */
  readonly input?: Readable;
  /** Where messages go, one per line; defaults to `process.stdout`. Nothing else may write to it. */
  readonly output?: Writable;
  /**
   * The longest message taken, in bytes; a longer line is discarded as it arrives (never held
   * whole) and answered `-32600` with id `null`. Defaults to 1 048 576 (1 MiB; {@link serveStdio}
   * passes the endpoint's `maxBodyBytes`).
   */
  readonly maxMessageBytes?: number;
  /**
   * Bytes `output` may buffer before the channel says it is busy (its streams then hold their
   * notifications in their bounded queues); defaults to 65 536. Node reports a pipe busy at 16 KiB,
   * which one burst to a host that reads at full speed reaches before the host had a chance to read.
   */
  readonly highWaterMark?: number;
}

/**
 * A {@link MessageChannel} over a pair of byte streams, newline-delimited JSON (MCP's stdio
 * transport): `process.stdin` and `process.stdout` by default, or any pair (a child process's,
 * a socket's, `PassThrough`s in a test).
 *
 * MCP 2025-06-18 and 2026-07-28 (transports, stdio): "Messages are delimited by newlines, and MUST
 * NOT contain embedded newlines", "The server MUST NOT write anything to its stdout that is not a
 * valid MCP message." Every message this library sends is `JSON.stringify` output (or its own
 * encoder's), which escapes every line break inside strings, so one message is one line. Anything
 * else the library or the CLI says goes to stderr.
 *
 * Incoming lines are split by {@link LineSplitter} (at most `maxMessageBytes` of an unfinished
 * line held). Outgoing messages written within one event-loop turn go out as one write (the output
 * is corked for the turn): a burst of notifications costs one system call, not one each. The
 * channel is busy once `output` buffers `highWaterMark` bytes, and drains on its `'drain'`. It ends
 * when `input` ends or errors, or `output` errors (the host closed its end of the pipe: `EPIPE`).
 *
 * @example
 * serveChannel(endpoint, stdioChannel()); // what serveStdio(endpoint) does, with the stdio principal
 * @param options the streams and the limits; see {@link StdioChannelOptions}.
 * @throws InvalidOptionError for a bad limit or a stream that is not one.
 * @see serveStdio
 */
export function stdioChannel(options?: StdioChannelOptions): MessageChannel {
  const given = validOptions('stdioChannel options', options, STDIO_CHANNEL_OPTIONS);
  const input = given.input === undefined ? process.stdin : readable<Readable>('input', given.input);
  const output = given.output === undefined ? process.stdout : writable<Writable>('output', given.output);
  const maxBytes = given.maxMessageBytes === undefined ? 1_048_576 : positiveInteger('maxMessageBytes', given.maxMessageBytes, 'bytes');
  return new StdioChannel(input, output, maxBytes, highWaterMark(given.highWaterMark) ?? 65_536);
}

const STDIO_CHANNEL_OPTIONS: readonly (keyof StdioChannelOptions)[] = ['input', 'output', 'maxMessageBytes', 'highWaterMark'];

class StdioChannel implements MessageChannel {
  readonly incoming: Observable<ChannelInput>;
  readonly drain$ = new Subject<void>();
  #ended = false;
  #corked = false;
  #finish: (() => void) | undefined;

  constructor(
    input: Readable,
    private readonly output: Writable,
    maxBytes: number,
    private readonly highWaterMark: number,
  ) {
    this.incoming = new Observable<ChannelInput>((subscriber) => {
      const splitter = new LineSplitter(maxBytes);
      const emit = (message: ChannelInput) => subscriber.next(message);
      const onData = (chunk: Buffer | string) => splitter.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk, emit);
      const onEnd = () => subscriber.complete();
      const onDrain = () => this.drain$.next();
      // The host closed the pipe we write to (EPIPE), or our input failed: the channel is over.
      const onError = () => subscriber.complete();
      const listeners: [Readable | Writable, string, (...args: any[]) => void][] = [
        [input, 'data', onData],
        [input, 'end', onEnd],
        [input, 'close', onEnd],
        [input, 'error', onError],
        [output, 'drain', onDrain],
        [output, 'error', onError],
      ];
      for (const [stream, event, listener] of listeners) stream.on(event, listener);
      this.#finish = onEnd;
      return () => {
        this.#ended = true;
        this.#finish = undefined;
        for (const [stream, event, listener] of listeners) stream.off(event, listener);
        // Keep swallowing write errors that surface after the end (a host gone mid-write).
        output.on('error', ignore);
        // Stop reading (process.stdin would otherwise keep the process alive).
        input.pause();
      };
    });
  }

  send(json: string): boolean {
    const { output } = this;
    if (this.#ended || output.destroyed || output.writableEnded) return true;
    if (!this.#corked) {
      // Everything written in this turn goes out as one write when the turn ends.
      this.#corked = true;
      output.cork();
      process.nextTick(() => {
        this.#corked = false;
        output.uncork();
      });
    }
    output.write(`${json}\n`);
    return output.writableLength < this.highWaterMark;
  }

  close(): void {
    this.#finish?.();
  }
}

function ignore(): void {}

/** Options of {@link serveStdio}: the channel's and the session's. */
export interface ServeStdioOptions extends Omit<StdioChannelOptions, 'maxMessageBytes'> {
  /**
   * Who the host is: its principal (what `maxListensPerPrincipal` counts: a stdio process serves
   * one host, so by default all its listens count as one principal's), its scopes (what `canRead`
   * sees) and its credential's expiry. Default: `{ principal: 'stdio', scopes: none }`.
   */
  readonly auth?: AuthInfo | (() => AuthInfo | Promise<AuthInfo>);
  /** The request hooks see as `context.request`; default: one with method `CHANNEL` and no headers. */
  readonly request?: EndpointRequest;
}

/** The principal of a stdio channel by default: the one host that launched the process. */
const STDIO_AUTH: AuthInfo = Object.freeze({ principal: 'stdio', scopes: new Set<string>() });

/**
 * Serves an {@link McpEndpoint} over this process's stdin and stdout (or another pair of streams):
 * how a host that launches the server as a child process talks to it (MCP's stdio transport).
 * Both eras: 2026-07-28 clients `server/discover` and `subscriptions/listen` (any number of listens
 * at once, told apart by their subscription id; `notifications/cancelled` ends one), 2025-era clients
 * `initialize` and `resources/subscribe`, with updates pushed on the same pipe.
 *
 * Messages longer than the endpoint's `maxBodyBytes` are refused line by line, `endpoint.listenOptions`
 * bound what a host that stops reading costs (see {@link serveChannel}), and when stdin ends (the
 * host closed it or went away) every stream ends and every slot is released: `closed` resolves.
 *
 * @example
 * import { Hub, McpEndpoint } from 'mcp-rx-streams';
 * import { serveStdio } from 'mcp-rx-streams';
 * const hub = new Hub();
 * const session = serveStdio(new McpEndpoint({ hub }));
 * hub.notifyToolsChanged(); // every listen that asked for tools hears it, on stdout
 * await session.closed;     // the host closed stdin
 * @param endpoint the endpoint to serve.
 * @param options the streams (default `process.stdin` / `process.stdout`), the output's mark and the host's principal.
 * @see stdioChannel
 * @see serveChannel
 */
export function serveStdio(endpoint: McpEndpoint, options?: ServeStdioOptions): ChannelSession {
  validEndpoint<McpEndpoint>('serveStdio endpoint', endpoint);
  validOptions('serveStdio options', options, ['input', 'output', 'highWaterMark', 'auth', 'request']);
  const { auth = STDIO_AUTH, request, ...streams } = options ?? {};
  const channel = stdioChannel({ ...streams, maxMessageBytes: endpoint?.maxBodyBytes });
  return serveChannel(endpoint, channel, request === undefined ? { auth } : { auth, request });
}

// Newline framing: stdio's, in its own class with its own spec (spec/channel/lines.spec.ts).

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
