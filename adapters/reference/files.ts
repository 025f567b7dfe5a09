// The reference server's file-system provider: a directory tree served as MCP resources, with
// its changes published as an Observable.
//
// The parts, one job each: tree.ts knows the served tree (which paths, which URIs, what may be
// served under which name) and scans it; watch.ts keeps it following the disk and settles
// events into changes; changeBatch.ts turns settled changes into notifications to publish;
// pinnedFs.ts opens files and directories so that what is used is what was checked; mime.ts
// names a file's type; resourceContents.ts says what a file or directory reads and lists as;
// definitions.ts reads tools.json and prompts.json; fileOptions.ts checks the options;
// demoData.ts writes the sample tree. This file is the provider's face.
import * as fsp from 'node:fs/promises';
import * as path from 'node:path';
import { mergeMap, Observable, Subject, share } from 'rxjs';
import { collectionUri, PRIVATE_SCOPE, type FileChange, type FolderState, type SettledBatch } from './changeBatch.js';
import { DefinitionFiles } from './definitions.js';
import { type FileResourcesOptions, resolveFileResourcesOptions } from './fileOptions.js';
import { collectionContents, describe, fileContents, readInside, type ResourceContents, type ResourceDescriptor, ResourceTooLargeError } from './resourceContents.js';
import { ServedTree } from './tree.js';
import { TreeWatch } from './watch.js';

export { ensureDemoData } from './demoData.js';
export { DEFAULT_DEBOUNCE_MS, DEFAULT_MAX_READ_BYTES } from './fileOptions.js';
export type { FileResourcesOptions } from './fileOptions.js';
export { ResourceTooLargeError } from './resourceContents.js';
export type { ResourceContents, ResourceDescriptor } from './resourceContents.js';
export type { FileChange, FolderState, SettledBatch } from './changeBatch.js';

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

  readonly #maxReadBytes: number;
  readonly #onWarning: (message: string) => void;
  readonly #tree: ServedTree;
  readonly #definitions: DefinitionFiles;
  #watch: TreeWatch | undefined;
  #closed = false;
  readonly #closing = new Subject<void>();
  /** The settled batches of the one watch, shared: it starts with the first subscriber and stops with the last. */
  readonly #batches: Observable<SettledBatch>;
  readonly #changes: Observable<FileChange>;

  private constructor(root: string, options: FileResourcesOptions) {
    const { debounceMs, maxReadBytes, onWarning, onRootChange, scheduler } = resolveFileResourcesOptions(options);
    this.root = root;
    this.#tree = new ServedTree(root);
    this.rootUri = collectionUri(root);
    this.#maxReadBytes = maxReadBytes;
    this.#onWarning = onWarning;
    this.#definitions = new DefinitionFiles(root, (p) => readInside(this.#tree, p, maxReadBytes), maxReadBytes, (m) => this.#warn(m));
    this.#batches = new Observable<SettledBatch>((subscriber) => {
      if (this.#closed) {
        subscriber.complete();
        return undefined;
      }
      const rootChanged = (present: boolean) => {
        try {
          onRootChange(present);
        } catch {
          // A throwing listener must not break watching.
        }
      };
      const watching = new TreeWatch(this.#tree, { debounceMs, scheduler, warn: (m) => this.#warn(m), rootChanged }, (batch) => subscriber.next(batch));
      this.#watch = watching;
      const closing = this.#closing.subscribe(() => subscriber.complete());
      return () => {
        closing.unsubscribe();
        watching.stop();
        if (this.#watch === watching) this.#watch = undefined;
      };
    }).pipe(share());
    this.#changes = this.#batches.pipe(mergeMap((batch) => batch.changes));
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
   * else an `InvalidOptionError`), `onWarning` (defaults to ignoring warnings), `scheduler` (where
   * the debounce's time comes from; defaults to `asyncScheduler`).
   * @see ensureDemoData
   */
  static async open(dir: string, options: FileResourcesOptions = {}): Promise<FileResources> {
    resolveFileResourcesOptions(options);
    const root = await fsp.realpath(path.resolve(dir));
    if (!(await fsp.stat(root)).isDirectory()) {
      throw new Error(`${root} is not a directory; FileResources.open needs the directory to serve`);
    }
    const files = new FileResources(root, options);
    files.#tree.replace(await files.#tree.scan());
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
    const watching = this.#watch;
    if (watching) await watching.ready;
    else await this.rescan();
    const out: ResourceDescriptor[] = [];
    for (const [uri, p] of this.#tree.uris()) {
      if (!this.canRead(uri, scopes)) continue;
      out.push(describe(this.root, uri, p, this.#tree.kindOf(p) ?? 'file'));
    }
    return out.sort((a, b) => (a.uri < b.uri ? -1 : a.uri > b.uri ? 1 : 0));
  }

  /**
   * Rescans the directory, unless `changes()` is subscribed (the watched set follows the disk by
   * itself): what a server that does not watch does when it hears, from the one that does, that the
   * list of files changed (a machine's cluster watches its folder from one worker).
   */
  async rescan(): Promise<void> {
    if (this.#watch) return;
    const fresh = await this.#tree.scan();
    if (!this.#watch) this.#tree.replace(fresh);
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
    const p = this.#tree.pathOf(uri);
    if (p === undefined) return false;
    return !this.#tree.isPrivate(p) || scopes.has(PRIVATE_SCOPE);
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
  async read(uri: string, scopes: ReadonlySet<string>): Promise<ResourceContents | undefined> {
    if (!this.canRead(uri, scopes)) return undefined;
    const p = this.#tree.pathOf(uri)!;
    if (this.#tree.kindOf(p) === 'collection') {
      const children: string[] = [];
      for (const [childUri, child] of this.#tree.uris()) {
        if (child !== p && path.dirname(child) === p && this.canRead(childUri, scopes)) children.push(childUri);
      }
      return collectionContents(uri, children);
    }
    const bytes = await readInside(this.#tree, p, this.#maxReadBytes);
    if (bytes === undefined) return undefined;
    if (!Buffer.isBuffer(bytes)) throw new ResourceTooLargeError(uri, bytes.size, this.#maxReadBytes);
    return fileContents(uri, p, bytes);
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
    return this.#tree.pathOf(uri) !== undefined;
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
    return this.#definitions.read('tools.json');
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
    return this.#definitions.read('prompts.json');
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
   * The changes for a publisher that takes over from another (the new holder of the watch lease):
   * first one batch with what differs between the state the previous publisher recorded (`since`,
   * asked once the watch is on) and the known set, then each batch as it settles. Every batch
   * carries the new state of the paths it settled, for the publisher to record once it has
   * published them. Batches that settle before the first are left out: it sums them up.
   *
   * So a change made while nobody published is announced once somebody does (with a change made
   * just before the handover possibly announced by both: twice, never not at all). When nothing
   * was recorded (`since` gives `undefined`: a first publisher, or the record was lost), the first
   * batch announces nothing and carries the whole known set. Watching is shared with
   * {@link FileResources.changes}.
   *
   * @param since where the previous publisher's record is read; its rejection is this Observable's error.
   * @internal
   */
  publishable(since: () => PromiseLike<FolderState | undefined>): Observable<SettledBatch> {
    return new Observable<SettledBatch>((subscriber) => {
      let caughtUp = false;
      const live = this.#batches.subscribe({
        next: (batch) => caughtUp && subscriber.next(batch),
        error: (error: unknown) => subscriber.error(error),
        complete: () => subscriber.complete(),
      });
      const watching = this.#watch;
      if (watching === undefined) return live;
      Promise.resolve()
        .then(since)
        .then(
          (state) => {
            if (subscriber.closed) return;
            watching.catchUp(state, (batch) => {
              if (subscriber.closed) return;
              caughtUp = true;
              subscriber.next(batch);
            });
          },
          (error: unknown) => subscriber.error(error),
        );
      return live;
    });
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

  #warn(message: string): void {
    try {
      this.#onWarning(message);
    } catch {
      // A throwing warning sink must not break watching.
    }
  }
}
