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
import { lstatSync, watch } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import * as fsp from 'node:fs/promises';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Observable, Subject, share } from 'rxjs';
import { InvalidOptionError } from '../../lib/errors.js';

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

/**
 * One settled change under the served directory, ready to be turned into MCP notifications.
 *
 * `updated` is a content change of a known file: publish `notifications/resources/updated` for
 * every URI, the file first, then its collections from the innermost up to the root (DESIGN
 * L5: a collection subscription hears every member's change, matching stays exact).
 * `listChanged` is a file or directory that appeared, disappeared or moved: publish
 * `notifications/resources/list_changed` once, and `resources/updated` for each collection URI
 * (innermost first; a rename lists the collections of both locations). `tools` and `prompts`
 * mean `DIR/tools.json` or `DIR/prompts.json` changed: publish the matching `list_changed`
 * (the file's own resource change is reported too, since it is a file).
 *
 * @example
 * files.changes().subscribe((change) => {
 *   if (change.kind === 'updated') change.uris.forEach((uri) => hub.notifyResourceUpdated(uri));
 * });
 *
 * @see FileResources.changes
 */
export type FileChange =
  | { readonly kind: 'updated'; readonly uris: readonly string[] }
  | { readonly kind: 'listChanged'; readonly uris: readonly string[] }
  | { readonly kind: 'tools' }
  | { readonly kind: 'prompts' };

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
}

type Kind = 'file' | 'collection';

/** State of one watching period: from the first subscriber of `changes()` to the last unsubscribe. */
interface WatchSession {
  readonly emit: (change: FileChange) => void;
  readonly watchers: Map<string, { readonly watcher: FSWatcher; readonly ino: number }>;
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
}

const DEFAULT_DEBOUNCE_MS = 50;
const MAX_WAIT_PERIODS = 10;
const PRIVATE_SCOPE = 'private';
const URI_LIST = 'text/uri-list';

const MIME_TYPES: Readonly<Record<string, string>> = {
  '.md': 'text/markdown',
  '.markdown': 'text/markdown',
  '.txt': 'text/plain',
  '.log': 'text/plain',
  '.csv': 'text/csv',
  '.html': 'text/html',
  '.htm': 'text/html',
  '.css': 'text/css',
  '.js': 'text/javascript',
  '.mjs': 'text/javascript',
  '.ts': 'text/x-typescript',
  '.json': 'application/json',
  '.xml': 'application/xml',
  '.yaml': 'application/yaml',
  '.yml': 'application/yaml',
  '.toml': 'application/toml',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.pdf': 'application/pdf',
  '.zip': 'application/zip',
  '.gz': 'application/gzip',
};
const TEXT_APPLICATION_TYPES = new Set(['application/json', 'application/xml', 'application/yaml', 'application/toml', 'image/svg+xml']);

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
 * (no cycles, no duplicate URIs) and links pointing outside the directory are ignored. `read`
 * re-checks the link target on every read. A link is reported as changed when the link itself
 * changes, not when its target is written.
 *
 * The set of known paths follows the disk while `changes()` has a subscriber; without one,
 * `list()` rescans, and `canRead`, `isSubscribable` and `read` use the set of the last scan.
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
  readonly #onWarning: (message: string) => void;
  readonly #rootPrefix: string;
  readonly #privateDir: string;
  #entries = new Map<string, Kind>();
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
   * `InvalidOptionError`), `onWarning` (defaults to ignoring warnings).
   * @see ensureDemoData
   */
  static async open(dir: string, options: FileResourcesOptions = {}): Promise<FileResources> {
    const { debounceMs } = options;
    if (debounceMs !== undefined && !(Number.isInteger(debounceMs) && debounceMs > 0)) {
      throw new InvalidOptionError('debounceMs', 'a positive integer of milliseconds', debounceMs);
    }
    const root = await fsp.realpath(path.resolve(dir));
    if (!(await fsp.stat(root)).isDirectory()) {
      throw new Error(`${root} is not a directory; FileResources.open needs the directory to serve`);
    }
    const files = new FileResources(root, options);
    files.#replaceEntries(await files.#scan());
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
      if (!this.#session) this.#replaceEntries(fresh);
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
   * read, sorted. The file is read whole, into memory.
   *
   * @example
   * const result = await files.read(`${files.rootUri}README.md`, new Set());
   * console.log(result?.contents[0].text);
   *
   * @param uri The exact resource URI.
   * @param scopes The caller's granted scopes.
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
    };
    this.#session = session;
    for (const [p, kind] of this.#entries) {
      if (kind !== 'collection') continue;
      try {
        this.#watchDir(session, p, lstatSync(p).ino);
      } catch {
        // Gone since the last scan: the reconcile below drops it.
      }
    }
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
    for (const { watcher } of session.watchers.values()) watcher.close();
    session.watchers.clear();
    for (const { timer } of session.timers.values()) clearTimeout(timer);
    session.timers.clear();
    if (session.drain) clearImmediate(session.drain);
    session.due.clear();
  }

  #watchDir(session: WatchSession, dir: string, ino: number): void {
    const existing = session.watchers.get(dir);
    if (session.closed || existing?.ino === ino) return;
    existing?.watcher.close();
    session.watchers.delete(dir);
    let watcher: FSWatcher;
    try {
      watcher = watch(dir, { persistent: true }, (_event, filename) => {
        this.#schedule(session, filename ? path.join(dir, filename) : dir);
      });
    } catch (error) {
      this.#warn(`cannot watch ${dir} (${String(error)}); changes under it are not reported`);
      return;
    }
    watcher.on('error', () => {
      // Typically the directory went away under the watcher; the reconcile tells.
      watcher.close();
      if (session.watchers.get(dir)?.watcher === watcher) session.watchers.delete(dir);
      this.#schedule(session, dir);
    });
    session.watchers.set(dir, { watcher, ino });
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
    const batch = new Batch(this.root);
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
    const parentKnown = p === this.root || this.#entries.get(path.dirname(p)) === 'collection';
    const kind = p === this.root ? 'collection' : parentKnown ? await this.#classify(p) : undefined;
    if (kind === 'collection') await this.#scanTree(p, after, session);
    else if (kind === 'file') after.set(p, 'file');
    if (session.closed) return;
    const touched = batch === undefined ? session.touched : undefined;
    const deferred = (q: string) =>
      touched !== undefined && [...touched].some((t) => q === t || q.startsWith(t.endsWith(path.sep) ? t : t + path.sep));
    for (const [q, was] of before) {
      if (after.get(q) === was || deferred(q)) continue;
      this.#forget(q);
      if (was === 'collection') {
        session.watchers.get(q)?.watcher.close();
        session.watchers.delete(q);
      }
      batch?.listChanged(q, was);
    }
    for (const [q, now] of after) {
      const was = before.get(q);
      if (was === now) {
        if (q === p && now === 'file') batch?.updated(q);
        continue;
      }
      if (deferred(q)) continue;
      this.#remember(q, now);
      batch?.listChanged(q, now);
    }
  }

  /** A fresh map of the whole tree, watching nothing. */
  async #scan(): Promise<Map<string, Kind>> {
    const into = new Map<string, Kind>();
    await this.#scanTree(this.root, into, undefined);
    return into;
  }

  async #scanTree(dir: string, into: Map<string, Kind>, session: WatchSession | undefined): Promise<void> {
    into.set(dir, 'collection');
    if (session) {
      // Watch before listing: whatever is created meanwhile is either listed or reported.
      const stat = await fsp.lstat(dir).catch(() => undefined);
      if (!stat?.isDirectory()) return;
      this.#watchDir(session, dir, stat.ino);
    }
    const dirents = await fsp.readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const dirent of dirents) {
      const p = path.join(dir, dirent.name);
      if (dirent.isDirectory()) await this.#scanTree(p, into, session);
      else if (dirent.isFile() || (dirent.isSymbolicLink() && (await this.#linkKind(p)) === 'file')) into.set(p, 'file');
    }
  }

  async #classify(p: string): Promise<Kind | undefined> {
    const stat = await fsp.lstat(p).catch(() => undefined);
    if (stat === undefined) return undefined;
    if (stat.isFile()) return 'file';
    if (stat.isDirectory()) return 'collection';
    return stat.isSymbolicLink() ? this.#linkKind(p) : undefined;
  }

  /** A link is served only when it resolves to a regular file inside the root, not crossing into `private/`. */
  async #linkKind(p: string): Promise<Kind | undefined> {
    const target = await this.#resolveInside(p);
    if (target === undefined) return undefined;
    const stat = await fsp.stat(target).catch(() => undefined);
    return stat?.isFile() ? 'file' : undefined;
  }

  async #resolveInside(p: string): Promise<string | undefined> {
    const real = await fsp.realpath(p).catch(() => undefined);
    if (real === undefined || !this.#isInside(real)) return undefined;
    if (this.#isPrivate(real) && !this.#isPrivate(p)) return undefined;
    return real;
  }

  /** Reads a file through its real path, re-checked now: a link may have been re-pointed since the scan. */
  async #readInside(p: string): Promise<Buffer | undefined> {
    const real = await this.#resolveInside(p);
    if (real === undefined) return undefined;
    const stat = await fsp.stat(real).catch(() => undefined);
    if (!stat?.isFile()) return undefined;
    return fsp.readFile(real).catch(() => undefined);
  }

  async #readJsonArray(name: string): Promise<unknown[]> {
    const bytes = await this.#readInside(path.join(this.root, name));
    if (bytes === undefined) return [];
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
    if (this.#invalidJson.get(name) !== text) {
      this.#invalidJson.set(name, text);
      this.#warn(`${path.join(this.root, name)} is not a JSON array; serving no entries until it is fixed`);
    }
    return [];
  }

  #replaceEntries(entries: Map<string, Kind>): void {
    this.#entries = new Map();
    this.#byUri = new Map();
    for (const [p, kind] of entries) this.#remember(p, kind);
  }

  #remember(p: string, kind: Kind): void {
    this.#entries.set(p, kind);
    this.#byUri.set(kind === 'collection' ? collectionUri(p) : fileUri(p), p);
  }

  #forget(p: string): void {
    const kind = this.#entries.get(p);
    if (kind === undefined) return;
    this.#entries.delete(p);
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

/** The changes settled in one flush, merged: one `listChanged` at most, then each `updated`. */
class Batch {
  readonly #root: string;
  readonly #collections = new Set<string>();
  readonly #updated: string[] = [];
  #tools = false;
  #prompts = false;

  constructor(root: string) {
    this.#root = root;
  }

  listChanged(p: string, kind: Kind): void {
    if (kind === 'collection') this.#collections.add(p);
    for (const dir of this.#ancestors(p)) this.#collections.add(dir);
    this.#touch(p);
  }

  updated(p: string): void {
    this.#updated.push(p);
    this.#touch(p);
  }

  changes(): FileChange[] {
    const out: FileChange[] = [];
    if (this.#collections.size > 0) {
      const depth = (p: string) => p.split(path.sep).length;
      const dirs = [...this.#collections].sort((a, b) => depth(b) - depth(a) || (a < b ? -1 : a > b ? 1 : 0));
      out.push({ kind: 'listChanged', uris: dirs.map(collectionUri) });
    }
    for (const p of this.#updated) {
      out.push({ kind: 'updated', uris: [fileUri(p), ...this.#ancestors(p).map(collectionUri)] });
    }
    if (this.#tools) out.push({ kind: 'tools' });
    if (this.#prompts) out.push({ kind: 'prompts' });
    return out;
  }

  #touch(p: string): void {
    if (p === path.join(this.#root, 'tools.json')) this.#tools = true;
    if (p === path.join(this.#root, 'prompts.json')) this.#prompts = true;
  }

  /** Enclosing directories of `p`, innermost first, up to and including the root. */
  #ancestors(p: string): string[] {
    const out: string[] = [];
    let dir = p;
    while (dir !== this.#root) {
      const parent = path.dirname(dir);
      if (parent === dir) break;
      out.push((dir = parent));
    }
    return out;
  }
}

function fileUri(p: string): string {
  return pathToFileURL(p).href;
}

function collectionUri(p: string): string {
  const href = pathToFileURL(p).href;
  return href.endsWith('/') ? href : `${href}/`;
}

function mimeTypeOf(p: string): string | undefined {
  return MIME_TYPES[path.extname(p).toLowerCase()];
}

function isTextType(mimeType: string): boolean {
  return mimeType.startsWith('text/') || TEXT_APPLICATION_TYPES.has(mimeType);
}

function sniffText(bytes: Buffer): string | undefined {
  if (bytes.includes(0)) return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

const DEMO_TOOLS = [
  {
    name: 'echo',
    description: 'Returns the given text unchanged.',
    inputSchema: {
      type: 'object',
      properties: { text: { type: 'string', description: 'The text to echo back.' } },
      required: ['text'],
    },
  },
  {
    name: 'add',
    description: 'Adds two numbers and returns the sum.',
    inputSchema: {
      type: 'object',
      properties: { a: { type: 'number' }, b: { type: 'number' } },
      required: ['a', 'b'],
    },
  },
];

const DEMO_PROMPTS = [
  {
    name: 'summarize',
    description: 'Summarize a resource of this server in three sentences.',
    arguments: [{ name: 'uri', description: 'The file:// URI of the resource to summarize.', required: true }],
  },
];

const DEMO_README = `# Demo data of the mcp-rx-streams reference server

Every file in this directory is an MCP resource (\`file://\` + its absolute path), every
directory a collection (the same with a trailing \`/\`).

Try it: subscribe to a file or a collection, then edit, create, delete or rename files here.

- Editing a file sends \`notifications/resources/updated\` for the file and every enclosing
  directory up to this one.
- Creating, deleting or renaming a file sends \`notifications/resources/list_changed\`.
- \`tools.json\` and \`prompts.json\` are served by \`tools/list\` and \`prompts/list\`; editing
  them also sends \`notifications/tools/list_changed\` / \`notifications/prompts/list_changed\`.
- Files under \`private/\` need the \`private\` scope.
`;

/**
 * Creates a directory of sample data for the reference server, unless it already exists.
 *
 * Writes `README.md`, `notes/todo.txt`, `config.json`, `tools.json` (two tools with `name`,
 * `description` and `inputSchema`), `prompts.json` (one prompt) and `private/secret.txt`. An
 * existing directory is left exactly as it is, so a user's edits survive restarts; the check
 * and the creation are one `mkdir`, so two starts racing do not both write.
 *
 * @example
 * if (await ensureDemoData('./data')) console.log('created ./data with sample files');
 * const files = await FileResources.open('./data');
 *
 * @param dir The directory to create; missing parent directories are created too.
 * @returns `true` when it created the directory, `false` when it existed.
 * @see FileResources.open
 */
export async function ensureDemoData(dir: string): Promise<boolean> {
  const target = path.resolve(dir);
  await fsp.mkdir(path.dirname(target), { recursive: true });
  try {
    await fsp.mkdir(target);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
  await fsp.mkdir(path.join(target, 'notes'));
  await fsp.mkdir(path.join(target, 'private'));
  await Promise.all([
    fsp.writeFile(path.join(target, 'README.md'), DEMO_README),
    fsp.writeFile(path.join(target, 'notes', 'todo.txt'), '- subscribe to this file\n- edit it and watch the notification\n'),
    fsp.writeFile(path.join(target, 'config.json'), `${JSON.stringify({ greeting: 'hello', retries: 3 }, null, 2)}\n`),
    fsp.writeFile(path.join(target, 'tools.json'), `${JSON.stringify(DEMO_TOOLS, null, 2)}\n`),
    fsp.writeFile(path.join(target, 'prompts.json'), `${JSON.stringify(DEMO_PROMPTS, null, 2)}\n`),
    fsp.writeFile(path.join(target, 'private', 'secret.txt'), 'Only callers with the private scope can read this.\n'),
  ]);
  return true;
}
