// What a served file or directory reads as (`resources/read`) and lists as (`resources/list`).
import * as path from 'node:path';
import { McpRxError } from '../../lib/errors.js';
import type { Kind } from './changeBatch.js';
import { isTextType, mimeTypeOf, sniffText } from './mime.js';
import { openRegularFile, readAtMost, type ReadTooLarge } from './pinnedFs.js';
import type { ServedTree } from './tree.js';

/** The MIME type collections are listed with and read as (RFC 2483). */
export const URI_LIST = 'text/uri-list';

/**
 * One entry of a `resources/list` answer.
 *
 * Files carry the MIME type guessed from their extension (left out when the extension is not
 * recognised); collections carry `text/uri-list`, the format `read` answers them in.
 *
 * @example
 * const [first] = await files.list(new Set());
 * console.log(first.uri, first.name); // file:///srv/data/ data/
 *
 * @see FileResources.list
 */
export interface ResourceDescriptor {
  /** `file://` URI, exactly as `read`, `canRead` and subscriptions expect it. */
  readonly uri: string;
  /** Path relative to the served directory (`notes/todo.txt`, `notes/`); the root is `<basename>/`. */
  readonly name: string;
  readonly mimeType?: string;
  readonly description?: string;
}

/** A `resources/read` result: one entry, as UTF-8 `text` or as a base64 `blob`. */
export type ResourceContents = {
  contents: { uri: string; mimeType: string; text?: string; blob?: string }[];
};

/**
 * Thrown by {@link FileResources.read} for a file larger than `maxReadBytes`.
 *
 * @example
 * try {
 *   await files.read(uri, scopes);
 * } catch (error) {
 *   if (error instanceof ResourceTooLargeError) console.log(error.info.size);
 * }
 */
export class ResourceTooLargeError extends McpRxError {
  override readonly name = 'ResourceTooLargeError';
  /** Stable machine-readable code. */
  override readonly code = 'ERR_MCP_RX_RESOURCE_TOO_LARGE';
  /** The URI, the file's size in bytes (as far as known) and the cap in bytes. */
  override readonly info: { readonly uri: string; readonly size: number; readonly maxReadBytes: number };

  constructor(uri: string, size: number, maxReadBytes: number) {
    super(
      `resource too large: ${uri} is ${size} bytes and this server reads at most ${maxReadBytes} bytes per resource ` +
        '(maxReadBytes, --max-read-bytes)',
    );
    this.info = { uri, size, maxReadBytes };
  }
}

/**
 * The `resources/list` entry of the file or collection `p` (served under `root`, known as `uri`).
 * @internal
 */
export function describe(root: string, uri: string, p: string, kind: Kind): ResourceDescriptor {
  const relative = path.relative(root, p).split(path.sep).join('/');
  if (kind === 'collection') {
    const name = p === root ? `${path.basename(p) || '/'}/` : `${relative}/`;
    return { uri, name, mimeType: URI_LIST, description: `Directory ${name}: its children as a text/uri-list` };
  }
  const mimeType = mimeTypeOf(p);
  return mimeType === undefined ? { uri, name: relative } : { uri, name: relative, mimeType };
}

/**
 * A collection read as `text/uri-list`: one URI per line, each line ended by CRLF, sorted.
 * @internal
 */
export function collectionContents(uri: string, children: string[]): ResourceContents {
  children.sort();
  return { contents: [{ uri, mimeType: URI_LIST, text: children.map((c) => `${c}\r\n`).join('') }] };
}

/**
 * A file's bytes as read: `text` when its type (by extension) is text-like, or when an
 * unrecognised extension holds valid UTF-8 without NUL (then `text/plain`); a base64 `blob`
 * otherwise.
 * @internal
 */
export function fileContents(uri: string, p: string, bytes: Buffer): ResourceContents {
  const known = mimeTypeOf(p);
  if (known !== undefined) {
    return isTextType(known)
      ? { contents: [{ uri, mimeType: known, text: bytes.toString('utf8') }] }
      : { contents: [{ uri, mimeType: known, blob: bytes.toString('base64') }] };
  }
  const text = sniffText(bytes);
  return text !== undefined
    ? { contents: [{ uri, mimeType: 'text/plain', text }] }
    : { contents: [{ uri, mimeType: 'application/octet-stream', blob: bytes.toString('base64') }] };
}

/**
 * Reads the file known as `p`: opened first, then checked as opened (a regular file whose real
 * location `tree` may serve under `p`), then read from that descriptor, at most `maxReadBytes`
 * bytes. `undefined` when it cannot be opened, is refused, or fails to read.
 * @internal
 */
export async function readInside(tree: ServedTree, p: string, maxReadBytes: number): Promise<Buffer | ReadTooLarge | undefined> {
  const file = await openRegularFile(p, (real) => tree.mayServe(p, real));
  if (file === undefined) return undefined;
  try {
    return await readAtMost(file, maxReadBytes);
  } catch {
    return undefined;
  } finally {
    await file.handle.close().catch(() => {});
  }
}
