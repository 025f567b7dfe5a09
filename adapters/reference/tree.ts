// The served tree as the provider knows it: which paths are files and collections, under which
// URIs, and the rules of what may be served under which name. Scanning reads the disk only
// through directories whose location the kernel confirmed (pinnedFs.ts).
import type { Stats } from 'node:fs';
import * as fsp from 'node:fs/promises';
import * as path from 'node:path';
import { collectionUri, fileUri, type Kind } from './changeBatch.js';
import { inDirectory } from './pinnedFs.js';

/** What a scan found: each path's kind and each file's version. */
export interface Scan {
  readonly kinds: Map<string, Kind>;
  readonly versions: Map<string, string>;
}

/** Told about each directory a scan enters (open, at its own path) or cannot (gone, or swapped for a link). */
export interface ScanHooks {
  entered(dir: string, pinned: string, stat: Stats): void;
  missed(dir: string): void;
}

/** The set of known files and collections under `root`, with the serving rules. */
export class ServedTree {
  /** Absolute real path of the served directory. */
  readonly root: string;
  readonly #rootPrefix: string;
  readonly #privateDir: string;
  #kinds = new Map<string, Kind>();
  /**
   * Version (`ino:mtime:size` of the entry itself) of each known file, so that a rescan reports
   * files that changed while nothing watched them: the served directory renamed away, edited and
   * renamed back, or replaced by another one holding files of the same names.
   */
  #versions = new Map<string, string>();
  #byUri = new Map<string, string>();

  constructor(root: string) {
    this.root = root;
    this.#rootPrefix = root.endsWith(path.sep) ? root : root + path.sep;
    this.#privateDir = path.join(root, 'private');
  }

  isInside(p: string): boolean {
    return p === this.root || p.startsWith(this.#rootPrefix);
  }

  /** Whether `p` is `DIR/private` or under it: reading it, or hearing of it, needs the `private` scope. */
  isPrivate(p: string): boolean {
    return p === this.#privateDir || p.startsWith(this.#privateDir + path.sep);
  }

  /** Whether the file really at `real` may be served under the name `p`: inside, and not into `private/` from outside it. */
  mayServe(p: string, real: string): boolean {
    return this.isInside(real) && (this.isPrivate(p) || !this.isPrivate(real));
  }

  kindOf(p: string): Kind | undefined {
    return this.#kinds.get(p);
  }

  pathOf(uri: string): string | undefined {
    return this.#byUri.get(uri);
  }

  versionOf(p: string): string | undefined {
    return this.#versions.get(p);
  }

  /** Every known path and its kind. */
  entries(): IterableIterator<[string, Kind]> {
    return this.#kinds.entries();
  }

  /** Every known URI and its path. */
  uris(): IterableIterator<[string, string]> {
    return this.#byUri.entries();
  }

  /** The known entries at and under `p`. */
  at(p: string): Map<string, Kind> {
    const out = new Map<string, Kind>();
    const prefix = p.endsWith(path.sep) ? p : p + path.sep;
    for (const [q, kind] of this.#kinds) if (q === p || q.startsWith(prefix)) out.set(q, kind);
    return out;
  }

  remember(p: string, kind: Kind, version: string | undefined): void {
    this.#kinds.set(p, kind);
    if (version !== undefined && kind === 'file') this.#versions.set(p, version);
    this.#byUri.set(kind === 'collection' ? collectionUri(p) : fileUri(p), p);
  }

  setVersion(p: string, version: string): void {
    if (this.#kinds.get(p) === 'file') this.#versions.set(p, version);
  }

  forget(p: string): void {
    const kind = this.#kinds.get(p);
    if (kind === undefined) return;
    this.#kinds.delete(p);
    this.#versions.delete(p);
    this.#byUri.delete(kind === 'collection' ? collectionUri(p) : fileUri(p));
  }

  /** Makes `scan` the known set. */
  replace(scan: Scan): void {
    this.#kinds = new Map();
    this.#byUri = new Map();
    this.#versions = new Map();
    for (const [p, kind] of scan.kinds) this.remember(p, kind, scan.versions.get(p));
  }

  /** A fresh scan of the whole tree; the known set is left alone. */
  async scan(): Promise<Scan> {
    const scan: Scan = { kinds: new Map(), versions: new Map() };
    await this.scanInto(this.root, scan);
    return scan;
  }

  /**
   * Adds `dir` and everything under it to `scan`. A directory that is not a real directory at
   * its own path (deleted, or swapped for a link) is left out with everything under it; the
   * root is always kept, empty when missing. `hooks.entered` runs before the directory is listed
   * (a watch set up there misses nothing created meanwhile).
   */
  async scanInto(dir: string, scan: Scan, hooks?: ScanHooks): Promise<void> {
    if (dir === this.root) scan.kinds.set(dir, 'collection');
    const subdirs = await inDirectory(dir, async (pinned, stat) => {
      scan.kinds.set(dir, 'collection');
      hooks?.entered(dir, pinned, stat);
      const dirents = await fsp.readdir(pinned, { withFileTypes: true }).catch(() => []);
      const found: string[] = [];
      for (const dirent of dirents) {
        const p = path.join(dir, dirent.name);
        if (dirent.isDirectory()) found.push(p);
        else if (dirent.isFile() || (dirent.isSymbolicLink() && (await this.#linkKind(p)) === 'file')) {
          scan.kinds.set(p, 'file');
          const entry = await fsp.lstat(path.join(pinned, dirent.name)).catch(() => undefined);
          if (entry !== undefined) scan.versions.set(p, versionOf(entry));
        }
      }
      return found;
    });
    if (subdirs === undefined) return hooks?.missed(dir);
    for (const subdir of subdirs) await this.scanInto(subdir, scan, hooks);
  }

  /** What `p` is now, looked up inside its parent as opened (a swapped parent hides nothing), and its version. */
  async classify(p: string): Promise<{ readonly kind: Kind; readonly version: string } | undefined> {
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
    if (real === undefined || !this.mayServe(p, real)) return undefined;
    const stat = await fsp.stat(real).catch(() => undefined);
    return stat?.isFile() ? 'file' : undefined;
  }
}

/** What tells a file's content changed without reading it: the entry's inode, modification time and size. */
function versionOf(stat: Stats): string {
  return `${stat.ino}:${stat.mtimeMs}:${stat.size}`;
}
