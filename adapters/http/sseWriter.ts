// The writer of a streamed response on node:http (see nodeHandler): one Subscriber per stream that
// encodes its frames, writes what it got in one tick as one HTTP chunk, tells the stream when the
// client is busy, and ends the stream when the connection goes.
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { Broadcast } from '../../lib/broadcast.js';
import { encodedByteLength, encodeFrame, KEEP_ALIVE_TEXT } from '../../lib/encode.js';
import { StalledStreamError } from '../../lib/errors.js';
import type { Frame } from '../../lib/frame.js';
import { LeanSubscriber } from '../../lib/subscribers.js';
import { reportError } from '../../lib/telemetry.js';
import { TurnBatch } from '../../lib/turn.js';
import { ownsSocket, writeChunk } from './socketChunk.js';

// The streams that got frames in this tick, written out together at its end (process.nextTick:
// before the promise callbacks of the tick).
const dirty = new TurnBatch<SseWriter>(flushAll, process.nextTick);

function flushAll(writers: readonly SseWriter[]): void {
  for (let i = 0; i < writers.length; i++) writers[i]!.flush();
}

/**
 * What a stream's text is written in: once a stream's pending text reaches this many UTF-16 code
 * units it is written at once instead of at the end of the tick, so that a burst never becomes
 * one unbounded string (and the socket's backpressure applies within the burst).
 */
const WRITE_CHUNK = 16_384;

/**
 * Bytes a stream's response may buffer in node (`res.writableLength`) before the stream is told
 * the client is busy: 64 KiB. Node reports any write busy once 16 KiB wait for the kernel, which
 * happens within a single burst to a client that reads at full speed (the kernel takes them a
 * moment later); told at once, the stream would queue, coalesce and drop the burst of a healthy
 * client. So a burst of up to this much is written straight through, and only a client whose
 * backlog reaches it is slow. What a stalled client costs: this, plus its queue
 * (`maxStreamQueueBytes`), plus the kernel's socket buffers.
 */
const BUSY_BYTES = 65_536;

/** Milliseconds after a keep-alive on a paused connection before the probe that finds a gone peer (see `probeLater`). */
const PROBE_DELAY_MS = 50;

/**
 * The streams queued on each connection behind the response it is serving (pipelined on a
 * keep-alive connection): such a response hears no `'close'` of its own until the connection
 * serves it, so its connection is watched, with one `'close'` listener per socket however many
 * wait. A response the connection serves hears its connection close itself.
 */
const queuedOn = new WeakMap<Socket, Set<SseWriter>>();

function watch(socket: Socket, writer: SseWriter): void {
  let writers = queuedOn.get(socket);
  if (writers === undefined) {
    const set = (writers = new Set());
    queuedOn.set(socket, set);
    socket.once('close', () => {
      queuedOn.delete(socket);
      for (const each of Array.from(set)) each.connectionClosed();
    });
  }
  writers.add(writer);
}

function unwatch(socket: Socket, writer: SseWriter): void {
  queuedOn.get(socket)?.delete(writer);
}

/** The writer of a streamed response, on the response itself (see {@link onResponseClose}). */
const WRITER = Symbol('mcp-rx-streams.writer');
type WrittenResponse = ServerResponse & { [WRITER]?: SseWriter | undefined };

/** The `'close'` listener of every streamed response: its writer learns the client went away. */
function onResponseClose(this: ServerResponse): void {
  (this as WrittenResponse)[WRITER]?.connectionClosed();
}

/**
 * Writes one stream's frames to its response and reports the socket's demand back. One object
 * per stream (a Subscriber, not an observer object with closures): idle streams are many. It is a
 * {@link LeanSubscriber}: the one teardown it gets, its pipeline's, is held in a field.
 *
 * Whatever goes wrong on the write path (a frame that cannot be encoded, a write that throws, a
 * demand signal whose receiver throws) ends this stream alone: the error is reported on
 * `channels.error` (`where: 'adapter'`), the connection is dropped and the stream unsubscribed,
 * which gives back its slot and principal entry. Nothing escapes into a socket callback.
 * @internal
 */
export class SseWriter extends LeanSubscriber<Frame> {
  /** `false` when `write()` returned false, `true` on `'drain'`. */
  readonly demand = new Broadcast<boolean>();
  // The frames a stream gets within one tick (a burst of publishes, a notification and its
  // keep-alive) go out as one write: one HTTP chunk and one syscall instead of one per frame.
  // At most WRITE_CHUNK of them wait: once a write returns false the stream queues upstream.
  private pending = '';
  /** `pending`'s UTF-8 byte length, counted frame by frame (`encodedByteLength`): the chunk's size line without measuring the text. */
  private pendingBytes = 0;
  /** The connection closed (or the write path failed): nothing more is written. */
  gone = false;
  /** In `dirty`, to be flushed at the end of the tick. */
  private scheduled = false;
  /** A probe of a paused connection is due (see `probeLater`). */
  private probing = false;
  /** The response waits behind another on its connection, which is watched for it. */
  private readonly queued: boolean;
  /** Listening for the response's `'drain'` (made the first time the client was busy through `res.write`). */
  private resDrainWatched = false;
  /** Listening for the socket's next `'drain'` (the client was busy with chunks written on the socket). */
  private socketDrainWatched = false;
  private drainListener: (() => void) | undefined = undefined;

  constructor(
    private readonly res: ServerResponse,
    private readonly socket: Socket,
    /** How long closing frames still in the socket's buffer may wait for the client after the end (`keepAliveInterval`). */
    private readonly keepAliveInterval: number,
  ) {
    super();
    // One listener function for every stream, which finds its writer on the response: no closure
    // per stream. 'on', not 'once' (no wrapper either): connectionClosed is idempotent.
    (res as WrittenResponse)[WRITER] = this;
    res.on('close', onResponseClose);
    this.queued = res.socket !== socket;
    if (this.queued) watch(socket, this);
  }

  // An override rather than an added teardown: no closure per stream.
  override unsubscribe(): void {
    if (this.closed) return;
    super.unsubscribe();
    if (this.drainListener !== undefined) {
      this.res.off('drain', this.drainListener);
      this.socket.off('drain', this.drainListener);
    }
    this.res.off('close', onResponseClose);
    (this.res as WrittenResponse)[WRITER] = undefined;
    if (this.queued) unwatch(this.socket, this);
  }

  /** Tells the stream the client is busy, and listens for the drain that ends it (once per emitter). */
  private busy(onSocket: boolean): void {
    const listener = (this.drainListener ??= () => this.drained());
    if (onSocket && !this.socketDrainWatched) {
      this.socketDrainWatched = true;
      this.socket.once('drain', listener);
    } else if (!onSocket && !this.resDrainWatched) {
      this.resDrainWatched = true;
      this.res.on('drain', listener);
    }
    this.demand.next(false);
  }

  private drained(): void {
    // The socket's listener was a 'once'; the response's stays for the next time.
    this.socketDrainWatched = false;
    try {
      this.demand.next(true);
    } catch (error) {
      this.fail(error);
    }
  }

  /** The client went away (the response or its connection closed): nothing more is written. */
  connectionClosed(): void {
    this.gone = true;
    this.pending = '';
    this.pendingBytes = 0;
    this.unsubscribe();
  }

  /** Ends this stream because its write path threw: reported, connection dropped, stream released. */
  fail(error: unknown): void {
    reportError('adapter', error);
    this.gone = true;
    this.pending = '';
    this.pendingBytes = 0;
    try {
      this.res.destroy();
    } catch {
      // Already torn down.
    }
    this.unsubscribe();
  }

  /**
   * node:http stops reading a connection whose client pipelines requests faster than their
   * responses go out (`socket.pause()`), and a paused socket never sees its peer leave: the
   * responses queued behind this one would hold their slots until a write failed. The first
   * write after the peer left only provokes its reset, so after a keep-alive on such a socket a
   * second one follows shortly: if the peer is gone, that write fails, the socket closes and every
   * stream on it is released, within one keep-alive interval (plus PROBE_DELAY_MS) of the peer
   * leaving.
   */
  private probeLater(): void {
    const { socket, res } = this;
    if (this.probing || res.socket !== socket || !socket.isPaused()) return;
    this.probing = true;
    setTimeout(() => {
      this.probing = false;
      if (this.gone || this.closed || socket.destroyed) return;
      try {
        res.write(KEEP_ALIVE_TEXT);
      } catch (error) {
        this.fail(error);
      }
    }, PROBE_DELAY_MS).unref();
  }

  flush(): void {
    this.scheduled = false;
    if (this.pending === '' || this.gone) return;
    const text = this.pending;
    const bytes = this.pendingBytes;
    this.pending = '';
    this.pendingBytes = 0;
    const { res, socket } = this;
    try {
      // One write of the whole HTTP chunk straight on the socket when that is what res.write would
      // send (see socketChunk.ts), else through res.write.
      if (ownsSocket(res, socket)) {
        if (!writeChunk(res, socket, text, bytes) && socket.writableLength >= BUSY_BYTES) this.busy(true);
      } else if (!res.write(text) && res.writableLength >= BUSY_BYTES) this.busy(false);
    } catch (error) {
      this.fail(error);
    }
  }

  protected override _next(frame: Frame): void {
    if (this.gone) return;
    try {
      this.pending += encodeFrame(frame);
      this.pendingBytes += encodedByteLength(frame);
    } catch (error) {
      this.fail(error);
      return;
    }
    if (frame.type === 'comment') this.probeLater();
    if (this.pending.length >= WRITE_CHUNK) {
      this.flush();
    } else if (!this.scheduled) {
      this.scheduled = true;
      dirty.add(this);
    }
  }

  protected override _error(error: unknown): void {
    // The stream failed (say, its client was not reading when it closed): drop the connection.
    if (!(error instanceof StalledStreamError)) reportError('adapter', error);
    try {
      this.res.destroy();
    } finally {
      this.unsubscribe();
    }
  }

  protected override _complete(): void {
    try {
      const { res } = this;
      this.flush();
      res.end();
      // The closing frames may still sit in the socket's buffer: the client gets one keep-alive
      // interval to take them, then the connection is dropped (the slot is given back already).
      if (!res.writableFinished && !this.socket.destroyed) {
        const timer = setTimeout(() => res.destroy(), this.keepAliveInterval);
        timer.unref();
        const clear = () => clearTimeout(timer);
        res.once('close', clear);
        this.socket.once('close', clear);
      }
    } catch (error) {
      reportError('adapter', error);
      this.res.destroy();
    } finally {
      this.unsubscribe();
    }
  }
}
