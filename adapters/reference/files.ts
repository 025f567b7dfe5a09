// The reference server's file-system provider: a directory tree served as MCP resources, with
// its changes published as an Observable.
//
// Why not `fs.watch(dir, { recursive: true })`: on Linux, Node 20 emulates it in JavaScript
// with one inotify watch per *file* (checked on Node 20.20). After an atomic save (write a temp
// file, rename it over the original) it keeps watching the replaced inode and silently misses
// every later write to that file, and deleting `notes` also tears down and re-reports
// `notes2/…` (a string-prefix test). We watch each directory instead (non-recursive
// `fs.watch`, one inotify watch per directory), add watchers as directories appear, and settle
// every event against the set of known paths after a per-path debounce.
//
// Every directory is listed, watched and looked into through a descriptor whose location the
// kernel confirmed, and every file is read from the descriptor that was checked (see
// pinnedFs.ts): a folder swapped for a symbolic link between a check and a use never lends its
// name to what the link points at.
import type { FSWatcher, Stats } from 'node:fs';
import { watch } from 'node:fs';
import * as fsp from 'node:fs/promises';
import * as path from 'node:path';
import { Observable, Subject, share } from 'rxjs';
import { InvalidOptionError } from '../../lib/errors.js';
import { Batch, collectionUri, fileUri, PRIVATE_SCOPE, type FileChange, type Kind } from './changeBatch.js';
import { isTextType, mimeTypeOf, sniffText } from './mime.js';
import { inDirectory, openRegularFile, readAtMost, watchDirectorySync, type ReadTooLarge } from './pinnedFs.js';

export { ensureDemoData } from './demoData.js';

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

export type { FileChange } from './changeBatch.js';

/**
 * Options of {@link FileResources.open}.
 *
 * @example
 * await FileResources.open('./data', { debounceMs: 100, onWarning: console.warn });
 *
 * @see FileResources.open
 */
export interface FileResourcesOptions {
  /**
   * Quiet time per path before a burst of file-system events is settled into one change, in
   * milliseconds; defaults to 50. A path that never goes quiet is still reported at least every
   * ten debounce periods.
   */
  readonly debounceMs?: number;
  /**
   * Told about problems that do not stop the provider: an invalid `tools.json` / `prompts.json`
   * (once per distinct invalid content), a directory that cannot be watched. Defaults to
   * ignoring them.
   */
  readonly onWarning?: (message: string) => void;
  /**
   * The largest file `read` answers, in bytes; defaults to 8 MiB (8 388 608). A larger file is
   * refused with a {@link ResourceTooLargeError} before any of its bytes is read; `tools.json`
   * and `prompts.json` larger than this are served as empty (with a warning).
   */
  readonly maxReadBytes?: number;
}

/** Default of {@link FileResourcesOptions.maxReadBytes}: 8 MiB. */
export const DEFAULT_MAX_READ_BYTES = 8 * 1024 * 1024;

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
export class ResourceTooLargeError extends Error {
  override readonly name = 'ResourceTooLargeError';
  /** Stable machine-readable code. */
  readonly code = 'ERR_MCP_RX_RESOURCE_TOO_LARGE';
  /** The URI, the file's size in bytes (as far as known) and the cap in bytes. */
  readonly info: { readonly uri: string; readonly size: number; readonly maxReadBytes: number };

  constructor(uri: string, size: number, maxReadBytes: number) {
    super(
      `resource too large: ${uri} is ${size} bytes and this server reads at most ${maxReadBytes} bytes per resource ` +
        '(maxReadBytes, --max-read-bytes)',
    );
    this.info = { uri, size, maxReadBytes };
  }
}

/** State of one watching period: from the first subscriber of `changes()` to the last unsubscribe. */
interface WatchSession {
  readonly emit: (change: FileChange) => void;
  /** The watch of each directory, with the identity (`dev:ino:birthtime`) of the directory it watches. */
  readonly watchers: Map<string, { readonly watcher: FSWatcher; readonly identity: string }>;
  readonly timers: Map<string, { readonly timer: NodeJS.Timeout; readonly first: number }>;
  readonly due: Set<string>;
  drain: NodeJS.Immediate | undefined;
  /** Every reconcile runs on this chain, one at a time, so the known set never sees two writers. */
  queue: Promise<void>;
  /** Resolves once the silent reconcile that starts a watching period is done. */
  ready: Promise<void>;
  /**
   * Paths with an event since the watching period started, until that first reconcile is done:
   * it leaves them (and what is under them) to their own reconcile, which reports them.
   */
  touched: Set<string> | undefined;
  closed: boolean;
  /**
   * Identity of the served directory as last seen, by a look or by a scan that watched it
   * (`undefined`: missing, or not a real directory there).
   */
  rootIdentity: string | undefined;
  /** Looks at the served directory every {@link ROOT_POLL_MS}: it may be deleted, recreated or replaced. */
  readonly rootPoll: NodeJS.Timeout;
}

const DEFAULT_DEBOUNCE_MS = 50;
const MAX_WAIT_PERIODS = 10;
/**
 * Milliseconds between two looks at the served directory itself. A watch follows an inode: once
 * the directory is deleted, or renamed away, nothing tells that a new one took its place.
 */
const ROOT_POLL_MS = 500;
const URI_LIST = 'text/uri-list';

/**
 * Serves a directory tree as MCP resources and turns its file-system events into
 * {@link FileChange}s.
 *
 * Every regular file under the directory (recursively) is a resource whose URI is
 * `url.pathToFileURL(absolutePath).href`, so spaces, `#`, `?`, `%` and non-ASCII characters are
 * percent-encoded the way Node encodes them; every directory, the root included, is a collection
 * with the same URI plus a trailing `/`. URIs are matched as exact strings against that
 * canonical form (DESIGN M4), so `..` segments, alternative percent-encodings or a trailing
 * slash on a file never name a resource. Paths under `DIR/private/` (that collection included)
 * need the `private` scope. Symbolic links are followed only to regular files inside the
 * directory, and never from outside `private/` into it; links to directories are not descended
 * (no cycles, no duplicate URIs) and links pointing outside the directory are ignored. A link is
 * reported as changed when the link itself changes, not when its target is written.
 *
 * `read` opens the file first and then checks the opened file itself: it must be a regular file
 * (a FIFO or device is opened without blocking and refused) whose real location is inside the
 * directory, and inside `private/` only when the URI is; the bytes returned are that file's.
 * Directories are listed and watched the same way, so a folder swapped for a link into
 * `private/` never lists, reports or reads private entries under a public name. A hard link
 * is the same file under two names: one made in a public folder to a private file is served
 * as public (only someone who can already read the private file can make one).
 *
 * The set of known paths follows the disk while `changes()` has a subscriber, including the
 * served directory itself being deleted, recreated or replaced (it is looked at every
 * 500 ms, then rescanned and watched again); without a subscriber, `list()` rescans, and
 * `canRead`, `isSubscribable` and `read` use the set of the last scan.
 *
 * @example
 * const files = await FileResources.open('./data');
 * const sub = files.changes().subscribe((change) => console.log(change));
 * console.log(await files.read(files.rootUri, new Set()));
 * sub.unsubscribe();
 * files.close();
 *
 * @see ensureDemoData
 */
export class FileResources {
  /** Absolute real path of the served directory (symbolic links resolved). */
  readonly root: string;
  /** Collection URI of the served directory, with its trailing slash. */
  readonly rootUri: string;

  readonly #debounceMs: number;
  readonly #maxReadBytes: number;
  readonly #onWarning: (message: string) => void;
  readonly #rootPrefix: string;
  readonly #privateDir: string;
  #entries = new Map<string, Kind>();
  /**
   * Version (`ino:mtime:size` of the entry itself) of each known file, so that a rescan reports
   * files that changed while nothing watched them: the served directory renamed away, edited and
   * renamed back, or replaced by another one holding files of the same names.
   */
  #versions = new Map<string, string>();
  #byUri = new Map<string, string>();
  #session: WatchSession | undefined;
  #closed = false;
  readonly #closing = new Subject<void>();
  readonly #invalidJson = new Map<string, string>();
  readonly #changes: Observable<FileChange>;

  private constructor(root: string, options: FileResourcesOptions) {
    this.root = root;
    this.#rootPrefix = root.endsWith(path.sep) ? root : root + path.sep;
    this.#privateDir = path.join(root, 'private');
    this.rootUri = collectionUri(root);
    this.#debounceMs = options.debounceMs ?? DEFAULT_DEBOUNCE_MS;
    this.#maxReadBytes = options.maxReadBytes ?? DEFAULT_MAX_READ_BYTES;
    this.#onWarning = options.onWarning ?? (() => {});
    this.#changes = new Observable<FileChange>((subscriber) => {
      if (this.#closed) {
        subscriber.complete();
        return undefined;
      }
      const session = this.#startWatching((change) => subscriber.next(change));
      const closing = this.#closing.subscribe(() => subscriber.complete());
      return () => {
        closing.unsubscribe();
        this.#stopWatching(session);
      };
    }).pipe(share());
  }

  /**
   * Opens a directory: resolves its real path and scans it; creates and watches nothing.
   *
   * The scan fills the set of known files and collections that `canRead` and `isSubscribable`
   * answer from. Watching starts with the first subscriber of {@link FileResources.changes}.
   *
   * @example
   * const files = await FileResources.open('/srv/data', { debounceMs: 100 });
   *
   * @param dir The directory to serve; relative paths resolve against the working directory.
   * It must exist (an `ENOENT` error otherwise) and be a directory.
   * @param options `debounceMs` in milliseconds (defaults to 50; a positive integer, else an
   * `InvalidOptionError`), `maxReadBytes` in bytes (defaults to 8 388 608; a positive integer,
   * else an `InvalidOptionError`), `onWarning` (defaults to ignoring warnings).
   * @see ensureDemoData
   */
  static async open(dir: string, options: FileResourcesOptions = {}): Promise<FileResources> {
    const { debounceMs, maxReadBytes } = options;
    if (debounceMs !== undefined && !(Number.isInteger(debounceMs) && debounceMs > 0)) {
      throw new InvalidOptionError('debounceMs', 'a positive integer of milliseconds', debounceMs);
    }
    if (maxReadBytes !== undefined && !(Number.isSafeInteger(maxReadBytes) && maxReadBytes > 0)) {
      throw new InvalidOptionError('maxReadBytes', 'a positive integer of bytes', maxReadBytes);
    }
    const root = await fsp.realpath(path.resolve(dir));
    if (!(await fsp.stat(root)).isDirectory()) {
      throw new Error(`${root} is not a directory; FileResources.open needs the directory to serve`);
    }
    const files = new FileResources(root, options);
    files.#replaceEntries(...(await files.#scan()));
    return files;
  }

  /**
   * Lists the files and collections the given scopes may read, sorted by URI.
   *
   * Entries under `private/` appear only with the `private` scope. While `changes()` is
   * subscribed this answers from the watched set (after its first reconcile); otherwise it
   * rescans the directory first.
   *
   * @example
   * const all = await files.list(new Set(['private']));
   *
   * @param scopes The caller's granted scopes.
   * @see FileResources.canRead
   */
  async list(scopes: ReadonlySet<string>): Promise<ResourceDescriptor[]> {
    const session = this.#session;
    if (session) {
      await session.ready;
    } else {
      const fresh = await this.#scan();
      if (!this.#session) this.#replaceEntries(...fresh);
    }
    const out: ResourceDescriptor[] = [];
    for (const [uri, p] of this.#byUri) {
      if (!this.canRead(uri, scopes)) continue;
      out.push(this.#describe(uri, p, this.#entries.get(p) ?? 'file'));
    }
    return out.sort((a, b) => (a.uri < b.uri ? -1 : a.uri > b.uri ? 1 : 0));
  }

  /**
   * Tells whether the scopes may read a URI: it must be the exact URI of a known file or
   * collection, and `private/` entries need the `private` scope.
   *
   * Because matching is exact against `pathToFileURL` output, `file:///srv/data/../etc/passwd`,
   * `%2e%2e` segments, re-encoded characters or `README.md/` are all simply unknown.
   *
   * @example
   * files.canRead(`${files.rootUri}private/secret.txt`, new Set()); // false
   *
   * @param uri The URI as the client sent it.
   * @param scopes The caller's granted scopes.
   * @see FileResources.isSubscribable
   */
  canRead(uri: string, scopes: ReadonlySet<string>): boolean {
    const p = this.#byUri.get(uri);
    if (p === undefined) return false;
    return !this.#isPrivate(p) || scopes.has(PRIVATE_SCOPE);
  }

  /**
   * Reads a resource, or answers `undefined` when it is not readable by these scopes or no
   * longer on disk (callers answer a not-found error).
   *
   * A file is returned as UTF-8 `text` when its type is text-like (`text/*`, JSON, XML, YAML,
   * TOML, SVG, or an unrecognised extension whose bytes are valid UTF-8 without NUL — then
   * `text/plain`), otherwise as a base64 `blob`. A collection is returned as `text/uri-list`
   * (RFC 2483: one URI per line, each line ended by CRLF) of its direct children the scopes may
   * read, sorted.
   *
   * The file is opened before it is checked, and then checked as opened (see the class
   * comment): its bytes are exactly those of the file the URI was authorized for. A file larger
   * than `maxReadBytes` is refused before any byte is read, and a read never holds more than
   * `maxReadBytes + 1` bytes of a file that grows meanwhile.
   *
   * @example
   * const result = await files.read(`${files.rootUri}README.md`, new Set());
   * console.log(result?.contents[0].text);
   *
   * @param uri The exact resource URI.
   * @param scopes The caller's granted scopes.
   * @throws ResourceTooLargeError when the file holds more than `maxReadBytes` bytes.
   * @see FileResources.canRead
   */
  async read(
    uri: string,
    scopes: ReadonlySet<string>,
  ): Promise<{ contents: { uri: string; mimeType: string; text?: string; blob?: string }[] } | undefined> {
    if (!this.canRead(uri, scopes)) return undefined;
    const p = this.#byUri.get(uri)!;
    if (this.#entries.get(p) === 'collection') {
      const children: string[] = [];
      for (const [childUri, child] of this.#byUri) {
        if (child !== p && path.dirname(child) === p && this.canRead(childUri, scopes)) children.push(childUri);
      }
      children.sort();
      return { contents: [{ uri, mimeType: URI_LIST, text: children.map((c) => `${c}\r\n`).join('') }] };
    }
    const bytes = await this.#readInside(p);
    if (bytes === undefined) return undefined;
    if (!Buffer.isBuffer(bytes)) throw new ResourceTooLargeError(uri, bytes.size, this.#maxReadBytes);
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
   * Tells whether a URI names a known file or collection, whatever the caller's scopes (the
   * read check comes separately, DESIGN L3).
   *
   * @example
   * files.isSubscribable(files.rootUri); // true
   *
   * @param uri The exact resource URI.
   * @see FileResources.canRead
   */
  isSubscribable(uri: string): boolean {
    return this.#byUri.has(uri);
  }

  /**
   * Reads `DIR/tools.json`: the JSON array of tool definitions served by `tools/list`.
   *
   * A missing file answers `[]`; an unparsable file or one that is not an array answers `[]`
   * and is reported once through `onWarning` (again only if its content changes).
   *
   * @example
   * const tools = await files.tools();
   *
   * @see FileResources.prompts
   */
  async tools(): Promise<unknown[]> {
    return this.#readJsonArray('tools.json');
  }

  /**
   * Reads `DIR/prompts.json`: the JSON array of prompt definitions served by `prompts/list`.
   *
   * Same rules as {@link FileResources.tools}.
   *
   * @example
   * const prompts = await files.prompts();
   *
   * @see FileResources.tools
   */
  async prompts(): Promise<unknown[]> {
    return this.#readJsonArray('prompts.json');
  }

  /**
   * The changes under the directory, hot and shared: watching starts with the first
   * subscriber and stops (every watcher and timer released) when the last one leaves.
   *
   * Directories known at subscribe time are watched before `subscribe` returns; a silent
   * reconcile then catches up with whatever changed while nobody watched (`list()` waits for
   * it). Events are debounced per path and settled by comparing the disk with the set of known
   * paths, so a burst of writes is one `updated`, and a temp file written and renamed over a
   * file (an editor's atomic save) is one `updated` of that file.
   *
   * @example
   * const sub = files.changes().subscribe((change) => console.log(change.kind));
   *
   * @see FileChange
   */
  changes(): Observable<FileChange> {
    return this.#changes;
  }

  /**
   * Stops watching for good: current subscribers of `changes()` complete, later ones complete
   * at once. The other methods keep answering from the last known set.
   *
   * @example
   * files.close();
   *
   * @see FileResources.changes
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#closing.next();
    this.#closing.complete();
  }

  #startWatching(emit: (change: FileChange) => void): WatchSession {
    const session: WatchSession = {
      emit,
      watchers: new Map(),
      timers: new Map(),
      due: new Set(),
      drain: undefined,
      queue: Promise.resolve(),
      ready: Promise.resolve(),
      touched: new Set(),
      closed: false,
      rootIdentity: undefined,
      rootPoll: setInterval(() => void this.#lookAtRoot(session), ROOT_POLL_MS).unref(),
    };
    this.#session = session;
    for (const [p, kind] of this.#entries) {
      if (kind !== 'collection') continue;
      // Gone or replaced since the last scan: the reconcile below settles it.
      this.#watchDirSync(session, p);
    }
    session.rootIdentity = session.watchers.get(this.root)?.identity;
    // Catch up silently with what changed while nobody watched; whatever changes from now on
    // has an event, and is reported by that event's reconcile, not swallowed here.
    session.ready = session.queue = this.#reconcile(session, this.root, undefined)
      .catch((error: unknown) => this.#warn(`could not rescan ${this.root}: ${String(error)}`))
      .finally(() => {
        session.touched = undefined;
      });
    return session;
  }

  #stopWatching(session: WatchSession): void {
    session.closed = true;
    if (this.#session === session) this.#session = undefined;
    clearInterval(session.rootPoll);
    for (const { watcher } of session.watchers.values()) watcher.close();
    session.watchers.clear();
    for (const { timer } of session.timers.values()) clearTimeout(timer);
    session.timers.clear();
    if (session.drain) clearImmediate(session.drain);
    session.due.clear();
  }

  /**
   * Notices the served directory deleted, recreated, renamed away and back, or replaced (by
   * another directory or a link). Its own watch cannot tell: it follows an inode, and once the
   * directory is gone nothing reports a new one at the same path. So the path is looked at, and
   * when what is there differs from what the watches were set up on, the whole tree is
   * rescanned: directories that are still the same keep their watch, others get a new one, and
   * what vanished is unwatched.
   */
  async #lookAtRoot(session: WatchSession): Promise<void> {
    const stat = await fsp.lstat(this.root).catch(() => undefined);
    if (session.closed) return;
    const identity = stat?.isDirectory() ? identityOf(stat) : undefined;
    if (identity === session.rootIdentity) return;
    session.rootIdentity = identity;
    this.#schedule(session, this.root);
  }

  /** Watches `dir` as it is now, unless the directory watched there is still the same one. */
  #watchDirSync(session: WatchSession, dir: string): void {
    if (session.closed) return;
    let pinned;
    try {
      pinned = watchDirectorySync(dir, (filename) => this.#schedule(session, filename ? path.join(dir, filename) : dir));
    } catch (error) {
      this.#warn(`cannot watch ${dir} (${String(error)}); changes under it are not reported`);
      return;
    }
    if (pinned === undefined) return;
    const identity = identityOf(pinned.stat);
    if (session.watchers.get(dir)?.identity === identity) {
      pinned.watcher.close();
      return;
    }
    this.#keepWatcher(session, dir, pinned.watcher, identity);
  }

  /** Watches the opened directory `pinned` (a `/proc/self/fd/<fd>` path) as `dir`. */
  #watchPinned(session: WatchSession, dir: string, pinned: string, stat: Stats): void {
    const identity = identityOf(stat);
    if (session.closed || session.watchers.get(dir)?.identity === identity) return;
    let watcher: FSWatcher;
    try {
      watcher = watch(pinned, { persistent: true }, (_event, filename) => {
        this.#schedule(session, filename ? path.join(dir, filename) : dir);
      });
    } catch (error) {
      this.#warn(`cannot watch ${dir} (${String(error)}); changes under it are not reported`);
      return;
    }
    this.#keepWatcher(session, dir, watcher, identity);
  }

  #keepWatcher(session: WatchSession, dir: string, watcher: FSWatcher, identity: string): void {
    session.watchers.get(dir)?.watcher.close();
    watcher.on('error', () => {
      // Typically the directory went away under the watcher; the reconcile tells.
      watcher.close();
      if (session.watchers.get(dir)?.watcher === watcher) session.watchers.delete(dir);
      this.#schedule(session, dir);
    });
    session.watchers.set(dir, { watcher, identity });
  }

  #unwatch(session: WatchSession, dir: string): void {
    session.watchers.get(dir)?.watcher.close();
    session.watchers.delete(dir);
  }

  #schedule(session: WatchSession, p: string): void {
    if (session.closed || !this.#isInside(p)) return;
    session.touched?.add(p);
    const now = Date.now();
    const pending = session.timers.get(p);
    const first = pending?.first ?? now;
    if (pending) clearTimeout(pending.timer);
    const delay = Math.max(0, Math.min(this.#debounceMs, first + this.#debounceMs * MAX_WAIT_PERIODS - now));
    const timer = setTimeout(() => {
      session.timers.delete(p);
      session.due.add(p);
      // setImmediate runs after every timer due in this loop turn, so the two halves of a
      // rename (reported together) are settled in one batch and published as one change.
      session.drain ??= setImmediate(() => {
        session.drain = undefined;
        session.queue = session.queue.then(() => this.#flush(session));
      });
    }, delay);
    session.timers.set(p, { timer, first });
  }

  async #flush(session: WatchSession): Promise<void> {
    // Sorted, a directory is settled before its children: they then settle to no change.
    const paths = [...session.due].sort();
    session.due.clear();
    const batch = new Batch(this.root, (p) => this.#isPrivate(p));
    for (const p of paths) {
      try {
        await this.#reconcile(session, p, batch);
      } catch (error) {
        this.#warn(`could not settle a change of ${p}: ${String(error)}`);
      }
    }
    if (session.closed) return;
    for (const change of batch.changes()) session.emit(change);
  }

  /** Compares the disk at and under `p` with the known set, applies the difference, records it. */
  async #reconcile(session: WatchSession, p: string, batch: Batch | undefined): Promise<void> {
    const before = new Map<string, Kind>();
    const prefix = p.endsWith(path.sep) ? p : p + path.sep;
    for (const [q, kind] of this.#entries) if (q === p || q.startsWith(prefix)) before.set(q, kind);
    const after = new Map<string, Kind>();
    const versions = new Map<string, string>();
    const parentKnown = p === this.root || this.#entries.get(path.dirname(p)) === 'collection';
    const found = p === this.root ? ({ kind: 'collection', version: '' } as const) : parentKnown ? await this.#classify(p) : undefined;
    if (found?.kind === 'collection') await this.#scanTree(p, after, versions, session);
    else if (found?.kind === 'file') {
      after.set(p, 'file');
      versions.set(p, found.version);
    }
    if (session.closed) return;
    const touched = batch === undefined ? session.touched : undefined;
    const deferred = (q: string) =>
      touched !== undefined && [...touched].some((t) => q === t || q.startsWith(t.endsWith(path.sep) ? t : t + path.sep));
    for (const [q, was] of before) {
      if (after.get(q) === was || deferred(q)) continue;
      this.#forget(q);
      if (was === 'collection') this.#unwatch(session, q);
      batch?.listChanged(q, was);
    }
    for (const [q, now] of after) {
      const was = before.get(q);
      if (was === now) {
        if (now === 'file') {
          const known = this.#versions.get(q);
          const version = versions.get(q);
          if (version !== undefined) this.#versions.set(q, version);
          // An event on the file itself is a change; found by a rescan, only a different version is.
          if (q === p || (known !== undefined && version !== undefined && known !== version)) batch?.updated(q);
        }
        continue;
      }
      if (deferred(q)) continue;
      this.#remember(q, now, versions.get(q));
      batch?.listChanged(q, now);
    }
  }

  /** A fresh map of the whole tree and the versions of its files, watching nothing. */
  async #scan(): Promise<[Map<string, Kind>, Map<string, string>]> {
    const into = new Map<string, Kind>();
    const versions = new Map<string, string>();
    await this.#scanTree(this.root, into, versions, undefined);
    return [into, versions];
  }

  /**
   * Adds `dir` and everything under it to `into` (and the version of each file to `versions`),
   * watching each directory when `session` is given. A directory that is not a real directory at its own path (deleted, or swapped for a
   * link) is left out with everything under it; the root is always kept, empty when missing.
   */
  async #scanTree(dir: string, into: Map<string, Kind>, versions: Map<string, string>, session: WatchSession | undefined): Promise<void> {
    if (dir === this.root) into.set(dir, 'collection');
    const found = await inDirectory(dir, async (pinned, stat) => {
      into.set(dir, 'collection');
      // Watch before listing: whatever is created meanwhile is either listed or reported.
      if (session) {
        this.#watchPinned(session, dir, pinned, stat);
        if (dir === this.root) session.rootIdentity = identityOf(stat);
      }
      const dirents = await fsp.readdir(pinned, { withFileTypes: true }).catch(() => []);
      const subdirs: string[] = [];
      for (const dirent of dirents) {
        const p = path.join(dir, dirent.name);
        if (dirent.isDirectory()) subdirs.push(p);
        else if (dirent.isFile() || (dirent.isSymbolicLink() && (await this.#linkKind(p)) === 'file')) {
          into.set(p, 'file');
          const stat = await fsp.lstat(path.join(pinned, dirent.name)).catch(() => undefined);
          if (stat !== undefined) versions.set(p, versionOf(stat));
        }
      }
      return subdirs;
    });
    if (found === undefined) {
      if (session) this.#unwatch(session, dir);
      // Gone or replaced: the next look at the root that finds a directory there rescans.
      if (session && dir === this.root) session.rootIdentity = undefined;
      return;
    }
    for (const subdir of found) await this.#scanTree(subdir, into, versions, session);
  }

  /** What `p` is now, looked up inside its parent as opened (a swapped parent hides nothing), and its version. */
  async #classify(p: string): Promise<{ readonly kind: Kind; readonly version: string } | undefined> {
    const stat = await inDirectory(path.dirname(p), (pinned) => fsp.lstat(path.join(pinned, path.basename(p))).catch(() => undefined));
    if (stat === undefined) return undefined;
    const kind = stat.isFile() ? 'file' : stat.isDirectory() ? 'collection' : stat.isSymbolicLink() ? await this.#linkKind(p) : undefined;
    return kind === undefined ? undefined : { kind, version: versionOf(stat) };
  }

  /**
   * A link is listed only when it resolves to a regular file inside the root, not crossing into
   * `private/`. Only listing depends on this answer: `read` checks the file it opens.
   */
  async #linkKind(p: string): Promise<Kind | undefined> {
    const real = await fsp.realpath(p).catch(() => undefined);
    if (real === undefined || !this.#mayServe(p, real)) return undefined;
    const stat = await fsp.stat(real).catch(() => undefined);
    return stat?.isFile() ? 'file' : undefined;
  }

  /** Whether the file really at `real` may be served under the name `p`. */
  #mayServe(p: string, real: string): boolean {
    return this.#isInside(real) && (this.#isPrivate(p) || !this.#isPrivate(real));
  }

  /**
   * Reads the file known as `p`: opened first, then checked as opened (a regular file whose real
   * location may be served under `p`), then read from that descriptor, at most `maxReadBytes`.
   */
  async #readInside(p: string): Promise<Buffer | ReadTooLarge | undefined> {
    const file = await openRegularFile(p, (real) => this.#mayServe(p, real));
    if (file === undefined) return undefined;
    try {
      return await readAtMost(file, this.#maxReadBytes);
    } catch {
      return undefined;
    } finally {
      await file.handle.close().catch(() => {});
    }
  }

  async #readJsonArray(name: string): Promise<unknown[]> {
    const file = path.join(this.root, name);
    const bytes = await this.#readInside(file);
    if (bytes === undefined) return [];
    if (!Buffer.isBuffer(bytes)) {
      this.#warnOnce(name, `size:${bytes.size}`, `${file} is ${bytes.size} bytes, more than maxReadBytes (${this.#maxReadBytes}); serving no entries`);
      return [];
    }
    const text = bytes.toString('utf8');
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      value = undefined;
    }
    if (Array.isArray(value)) {
      this.#invalidJson.delete(name);
      return value;
    }
    this.#warnOnce(name, text, `${file} is not a JSON array; serving no entries until it is fixed`);
    return [];
  }

  /** Warns about `name` once per distinct `content`. */
  #warnOnce(name: string, content: string, message: string): void {
    if (this.#invalidJson.get(name) === content) return;
    this.#invalidJson.set(name, content);
    this.#warn(message);
  }

  #replaceEntries(entries: Map<string, Kind>, versions: Map<string, string>): void {
    this.#entries = new Map();
    this.#byUri = new Map();
    this.#versions = new Map();
    for (const [p, kind] of entries) this.#remember(p, kind, versions.get(p));
  }

  #remember(p: string, kind: Kind, version: string | undefined): void {
    this.#entries.set(p, kind);
    if (version !== undefined && kind === 'file') this.#versions.set(p, version);
    this.#byUri.set(kind === 'collection' ? collectionUri(p) : fileUri(p), p);
  }

  #forget(p: string): void {
    const kind = this.#entries.get(p);
    if (kind === undefined) return;
    this.#entries.delete(p);
    this.#versions.delete(p);
    this.#byUri.delete(kind === 'collection' ? collectionUri(p) : fileUri(p));
  }

  #describe(uri: string, p: string, kind: Kind): ResourceDescriptor {
    const relative = path.relative(this.root, p).split(path.sep).join('/');
    if (kind === 'collection') {
      const name = p === this.root ? `${path.basename(p) || '/'}/` : `${relative}/`;
      return { uri, name, mimeType: URI_LIST, description: `Directory ${name}: its children as a text/uri-list` };
    }
    const mimeType = mimeTypeOf(p);
    return mimeType === undefined ? { uri, name: relative } : { uri, name: relative, mimeType };
  }

  #isInside(p: string): boolean {
    return p === this.root || p.startsWith(this.#rootPrefix);
  }

  #isPrivate(p: string): boolean {
    return p === this.#privateDir || p.startsWith(this.#privateDir + path.sep);
  }

  #warn(message: string): void {
    try {
      this.#onWarning(message);
    } catch {
      // A throwing warning sink must not break watching.
    }
  }
}

/** What tells a file's content changed without reading it: the entry's inode, modification time and size. */
function versionOf(stat: Stats): string {
  return `${stat.ino}:${stat.mtimeMs}:${stat.size}`;
}

/** What tells one directory from another made later at the same path (inode numbers are reused). */
function identityOf(stat: Stats): string {
  return `${stat.dev}:${stat.ino}:${stat.birthtimeMs}`;
}
