import { type SchedulerLike, timer } from 'rxjs';
import type { EndpointRequest } from '../../lib/context.js';
import { HttpError } from './httpError.js';
import { ErrorCode, JsonRpcError } from '../../lib/jsonrpc.js';

/**
 * Decodes the bytes of a body: strict UTF-8, so that bytes that are not UTF-8 are refused rather
 * than replaced by U+FFFD. A leading byte order mark is kept (`ignoreBOM`), so `JSON.parse` refuses
 * it as before: RFC 8259 §8.1 forbids senders to add one and lets parsers either ignore or refuse
 * it. Stateless between calls (never `stream: true`), so one decoder serves every request.
 */
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Reads a request body as JSON: a body a framework already parsed is taken as is; a raw one must
 * fit in `limit` bytes, be UTF-8 and, when streamed, arrive within `timeoutMs` milliseconds.
 *
 * The limit counts the bytes received (a string, the bytes of its UTF-8), never the decoded text:
 * a body of invalid bytes under the limit is a parse error, not a size error.
 * @param contentLength the `Content-Length` header: a larger declared body is refused unread.
 * @param limit the largest body, in bytes (the endpoint's `maxBodyBytes`).
 * @param timeoutMs milliseconds a streamed body may take (the endpoint's `bodyTimeout`).
 * @param scheduler where the deadline's time comes from.
 * @throws HttpError 413 past `limit`, 408 past `timeoutMs` (with `Connection: close`), 400
 *   (`-32700`) for a body that is not UTF-8 (`parse error: the body is not valid UTF-8`) or not
 *   JSON (`parse error: the body is not valid JSON`, a leading byte order mark included).
 * @internal
 */
export async function readJson(
  body: EndpointRequest['body'],
  contentLength: string | undefined,
  limit: number,
  timeoutMs: number,
  scheduler: SchedulerLike,
): Promise<unknown> {
  if (body !== undefined && typeof body === 'object' && 'parsed' in body) return body.parsed;
  const tooLarge = () => new HttpError(413, new JsonRpcError(ErrorCode.InvalidRequest, `request body exceeds ${limit} bytes`));
  if (contentLength !== undefined && Number(contentLength) > limit) throw tooLarge();
  let text: string;
  if (body === undefined) text = '';
  else if (typeof body === 'string') {
    if (Buffer.byteLength(body) > limit) throw tooLarge();
    text = body;
  } else if (body instanceof Uint8Array) {
    if (body.byteLength > limit) throw tooLarge();
    text = decode(body);
  } else text = decode(await readStream(body, limit, tooLarge, timeoutMs, scheduler));
  try {
    return JSON.parse(text);
  } catch {
    throw new HttpError(400, new JsonRpcError(ErrorCode.ParseError, 'parse error: the body is not valid JSON'));
  }
}

/** The text of a body's bytes; 400 (`-32700`) when they are not UTF-8. */
function decode(bytes: Uint8Array): string {
  try {
    return UTF8.decode(bytes);
  } catch {
    throw new HttpError(400, new JsonRpcError(ErrorCode.ParseError, 'parse error: the body is not valid UTF-8'));
  }
}

/** Reads the bytes of a streamed body within `limit` bytes and `timeoutMs` milliseconds (408 past it, and the connection closes). */
async function readStream(
  body: AsyncIterable<Uint8Array>,
  limit: number,
  tooLarge: () => HttpError,
  timeoutMs: number,
  scheduler: SchedulerLike,
): Promise<Uint8Array> {
  let expire: (error: HttpError) => void = () => {};
  const expired = new Promise<never>((_, reject) => (expire = reject));
  const deadline = timer(timeoutMs, scheduler).subscribe(() =>
    expire(new HttpError(408, new JsonRpcError(ErrorCode.InvalidRequest, `the request body did not arrive within ${timeoutMs} ms`), { Connection: 'close' })),
  );
  const chunks: Uint8Array[] = [];
  let size = 0;
  const take = (chunk: Uint8Array): void => {
    size += chunk.byteLength;
    if (size > limit) throw tooLarge();
    chunks.push(chunk);
  };
  try {
    await (isNodeReadable(body) ? readEvents(body, take, expired) : readIterator(body, take, expired));
  } finally {
    deadline.unsubscribe();
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
}

async function readIterator(body: AsyncIterable<Uint8Array>, take: (chunk: Uint8Array) => void, expired: Promise<never>): Promise<void> {
  const iterator = body[Symbol.asyncIterator]();
  try {
    for (;;) {
      const next = await Promise.race([iterator.next(), expired]);
      if (next.done === true) return;
      take(next.value);
    }
  } catch (error) {
    // Stop reading what is left of a refused body.
    void Promise.resolve(iterator.return?.()).catch(() => {});
    throw error;
  }
}

/** A node `Readable` (an `IncomingMessage`), read through its events. */
interface NodeReadable {
  readonly readableEnded?: boolean;
  on(event: string, listener: (...args: never[]) => void): unknown;
  off(event: string, listener: (...args: never[]) => void): unknown;
}

function isNodeReadable(body: object): body is NodeReadable & AsyncIterable<Uint8Array> {
  const stream = body as Partial<NodeReadable>;
  return typeof stream.on === 'function' && typeof stream.off === 'function';
}

/**
 * Reads a node stream through its events and removes every listener once it ends, fails or is
 * refused (the rest of a refused body flows on unread: the answer, 413 or 408, still goes out, as
 * it does through an iterator, whose pending read keeps its `return` from running). A node
 * stream's async iterator would leave seven listeners and their closures on the request for as
 * long as the request lives, which for a listen or GET stream is the stream's whole life (~0.5 KB
 * each).
 */
function readEvents(stream: NodeReadable, take: (chunk: Uint8Array) => void, expired: Promise<never>): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (stream.readableEnded === true) return resolve();
    let done = false;
    const finish = (error?: unknown): void => {
      if (done) return;
      done = true;
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onError);
      stream.off('close', onClose);
      if (error === undefined) resolve();
      else reject(error);
    };
    const onData = (chunk: Uint8Array): void => {
      try {
        take(chunk);
      } catch (error) {
        finish(error);
      }
    };
    const onEnd = (): void => finish();
    const onError = (error: unknown): void => finish(error);
    const onClose = (): void => finish(new Error('the request closed before its body ended'));
    expired.catch(finish);
    stream.on('data', onData);
    stream.on('end', onEnd);
    stream.on('error', onError);
    stream.on('close', onClose);
  });
}
