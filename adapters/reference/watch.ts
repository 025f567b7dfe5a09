// Watching the served tree: one period of watching, from the first subscriber of
// `FileResources.changes()` to the last unsubscribe.
//
// Why not `fs.watch(dir, { recursive: true })`: on Linux, Node 20 emulates it in JavaScript
// with one inotify watch per *file* (checked on Node 20.20). After an atomic save (write a temp
// file, rename it over the original) it keeps watching the replaced inode and silently misses
// every later write to that file, and deleting `notes` also tears down and re-reports
// `notes2/…` (a string-prefix test). We watch each directory instead (non-recursive
// `fs.watch`, one inotify watch per directory, set up on the directory as opened and checked),
// add watchers as directories appear, and settle every event against the set of known paths
// after a per-path debounce.
import type { FSWatcher, Stats } from 'node:fs';
import { watch } from 'node:fs';
import * as fsp from 'node:fs/promises';
import * as path from 'node:path';
import type { SchedulerLike, Subscription } from 'rxjs';
import { Batch, FOLDER, type FolderState, type Kind, type SettledBatch } from './changeBatch.js';
import { watchDirectorySync } from './pinnedFs.js';
import type { Scan, ServedTree } from './tree.js';

/** Options of a {@link TreeWatch}. */
export interface TreeWatchOptions {
  /** Quiet time per path before its events are settled, in milliseconds. */
  readonly debounceMs: number;
  /** Where the debounce's clock and timers come from (`asyncScheduler` in production). */
  readonly scheduler: SchedulerLike;
  readonly warn: (message: string) => void;
  /** Told when the served directory is gone (`false`) and when one is there again (`true`). */
  readonly rootChanged?: (present: boolean) => void;
}

/** A path that never goes quiet is still settled after this many debounce periods. */
const MAX_WAIT_PERIODS = 10;
/**
 * Milliseconds between two looks at the served directory itself. A watch follows an inode: once
 * the directory is deleted, or renamed away, nothing tells that a new one took its place.
 */
export const ROOT_POLL_MS = 500;

/**
 * One watching period of a {@link ServedTree}: keeps the tree's known set following the disk and
 * emits the settled changes, one {@link SettledBatch} per flush, until {@link TreeWatch.stop}.
 */
export class TreeWatch {
  /** Resolves once the silent reconcile that starts the period is done. */
  readonly ready: Promise<void>;

  readonly #tree: ServedTree;
  readonly #options: TreeWatchOptions;
  readonly #emit: (batch: SettledBatch) => void;
  /** The watch of each directory, with the identity (`dev:ino:birthtime`) of the directory it watches. */
  readonly #watchers = new Map<string, { readonly watcher: FSWatcher; readonly identity: string }>();
  /** The pending debounce of each path, and when (scheduler time, ms) its first unsettled event came. */
  readonly #timers = new Map<string, { readonly timer: Subscription; readonly first: number }>();
  readonly #due = new Set<string>();
  #drain: NodeJS.Immediate | undefined;
  /** Every reconcile runs on this chain, one at a time, so the known set never sees two writers. */
  #queue: Promise<void>;
  /**
   * Paths with an event since the period started, until its first reconcile is done: that
   * reconcile leaves them (and what is under them) to their own reconcile, which reports them.
   */
  #touched: Set<string> | undefined = new Set();
  #closed = false;
  /**
   * Identity of the served directory as last seen, by a look or by a scan that watched it
   * (`undefined`: missing, or not a real directory there).
   */
  #rootIdentity: string | undefined;
  /** Looks at the served directory every {@link ROOT_POLL_MS}: it may be deleted, recreated or replaced. */
  readonly #rootPoll: NodeJS.Timeout;
  /** Whether a directory was at the served path at the last look (what `rootChanged` was last told). */
  #rootPresent = true;

  /**
   * Starts watching: directories in the known set are watched before this returns; a silent
   * reconcile then catches up with whatever changed while nobody watched.
   */
  constructor(tree: ServedTree, options: TreeWatchOptions, emit: (batch: SettledBatch) => void) {
    this.#tree = tree;
    this.#options = options;
    this.#emit = emit;
    this.#rootPoll = setInterval(() => void this.#lookAtRoot(), ROOT_POLL_MS).unref();
    for (const [p, kind] of tree.entries()) {
      // Gone or replaced since the last scan: the reconcile below settles it.
      if (kind === 'collection') this.#watchDirSync(p);
    }
    this.#rootIdentity = this.#watchers.get(tree.root)?.identity;
    // Catch up silently with what changed while nobody watched; whatever changes from now on
    // has an event, and is reported by that event's reconcile, not swallowed here.
    this.ready = this.#queue = this.#reconcile(tree.root, undefined)
      .catch((error: unknown) => this.#options.warn(`could not rescan ${tree.root}: ${String(error)}`))
      .finally(() => {
        this.#touched = undefined;
      });
  }

  /**
   * Hands `deliver` what differs between `since` (the state a previous publisher recorded) and the
   * known set, as one batch, in turn with the flushes: after every reconcile already queued (the
   * period's first one included), before any queued later. So the batch sums up every batch
   * emitted before it, and every change after it comes in a later batch. With `since` undefined
   * (nothing recorded), the batch announces nothing and carries the whole known set.
   */
  catchUp(since: FolderState | undefined, deliver: (batch: SettledBatch) => void): void {
    this.#queue = this.#queue
      .then(() => {
        if (!this.#closed) deliver(this.#since(since));
      })
      .catch((error: unknown) => this.#options.warn(`could not catch up with ${this.#tree.root}: ${String(error)}`));
  }

  /** Ends the period: every watcher and timer released, nothing emitted any more. */
  stop(): void {
    this.#closed = true;
    clearInterval(this.#rootPoll);
    for (const { watcher } of this.#watchers.values()) watcher.close();
    this.#watchers.clear();
    for (const { timer } of this.#timers.values()) timer.unsubscribe();
    this.#timers.clear();
    if (this.#drain) clearImmediate(this.#drain);
    this.#due.clear();
  }

  /**
   * Notices the served directory deleted, recreated, renamed away and back, or replaced (by
   * another directory or a link). Its own watch cannot tell: it follows an inode, and once the
   * directory is gone nothing reports a new one at the same path. So the path is looked at, and
   * when what is there differs from what the watches were set up on, the whole tree is
   * rescanned: directories that are still the same keep their watch, others get a new one, and
   * what vanished is unwatched.
   */
  async #lookAtRoot(): Promise<void> {
    const stat = await fsp.lstat(this.#tree.root).catch(() => undefined);
    if (this.#closed) return;
    const identity = stat?.isDirectory() ? identityOf(stat) : undefined;
    if ((identity !== undefined) !== this.#rootPresent) {
      this.#rootPresent = identity !== undefined;
      this.#options.rootChanged?.(this.#rootPresent);
    }
    if (identity === this.#rootIdentity) return;
    this.#rootIdentity = identity;
    this.#schedule(this.#tree.root);
  }

  /** Watches `dir` as it is now, unless the directory watched there is still the same one. */
  #watchDirSync(dir: string): void {
    if (this.#closed) return;
    let pinned;
    try {
      pinned = watchDirectorySync(dir, (filename) => this.#schedule(filename ? path.join(dir, filename) : dir));
    } catch (error) {
      this.#options.warn(`cannot watch ${dir} (${String(error)}); changes under it are not reported`);
      return;
    }
    if (pinned === undefined) return;
    const identity = identityOf(pinned.stat);
    if (this.#watchers.get(dir)?.identity === identity) {
      pinned.watcher.close();
      return;
    }
    this.#keepWatcher(dir, pinned.watcher, identity);
  }

  /** Watches the opened directory `pinned` (a `/proc/self/fd/<fd>` path) as `dir`. */
  #watchPinned(dir: string, pinned: string, stat: Stats): void {
    const identity = identityOf(stat);
    if (dir === this.#tree.root) this.#rootIdentity = identity;
    if (this.#closed || this.#watchers.get(dir)?.identity === identity) return;
    let watcher: FSWatcher;
    try {
      watcher = watch(pinned, { persistent: true }, (_event, filename) => {
        this.#schedule(filename ? path.join(dir, filename) : dir);
      });
    } catch (error) {
      this.#options.warn(`cannot watch ${dir} (${String(error)}); changes under it are not reported`);
      return;
    }
    this.#keepWatcher(dir, watcher, identity);
  }

  #keepWatcher(dir: string, watcher: FSWatcher, identity: string): void {
    this.#watchers.get(dir)?.watcher.close();
    watcher.on('error', () => {
      // Typically the directory went away under the watcher; the reconcile tells.
      watcher.close();
      if (this.#watchers.get(dir)?.watcher === watcher) this.#watchers.delete(dir);
      this.#schedule(dir);
    });
    this.#watchers.set(dir, { watcher, identity });
  }

  #unwatch(dir: string): void {
    this.#watchers.get(dir)?.watcher.close();
    this.#watchers.delete(dir);
    // Gone or replaced: the next look at the root that finds a directory there rescans.
    if (dir === this.#tree.root) this.#rootIdentity = undefined;
  }

  #schedule(p: string): void {
    if (this.#closed || !this.#tree.isInside(p)) return;
    this.#touched?.add(p);
    const { debounceMs, scheduler } = this.#options;
    const now = scheduler.now();
    const pending = this.#timers.get(p);
    const first = pending?.first ?? now;
    if (pending) pending.timer.unsubscribe();
    const delay = Math.max(0, Math.min(debounceMs, first + debounceMs * MAX_WAIT_PERIODS - now));
    const timer = scheduler.schedule(() => {
      this.#timers.delete(p);
      this.#due.add(p);
      // setImmediate runs after every timer due in this loop turn, so the two halves of a
      // rename (reported together) are settled in one batch and published as one change.
      this.#drain ??= setImmediate(() => {
        this.#drain = undefined;
        this.#queue = this.#queue.then(() => this.#flush());
      });
    }, delay);
    this.#timers.set(p, { timer, first });
  }

  async #flush(): Promise<void> {
    // Sorted, a directory is settled before its children: they then settle to no change.
    const paths = [...this.#due].sort();
    this.#due.clear();
    const batch = new Batch(this.#tree.root, (p) => this.#tree.isPrivate(p));
    for (const p of paths) {
      try {
        await this.#reconcile(p, batch);
      } catch (error) {
        this.#options.warn(`could not settle a change of ${p}: ${String(error)}`);
      }
    }
    if (this.#closed) return;
    const changes = batch.changes();
    if (changes.length === 0) return;
    const state = new Map<string, string | null>();
    for (const p of batch.paths()) if (p !== this.#tree.root) state.set(path.relative(this.#tree.root, p), this.#entryOf(p));
    this.#emit({ changes, state, catchUp: false });
  }

  /** The entry of `p` in a {@link FolderState} as known now: a file's version (`?` when unknown), {@link FOLDER}, or `null` when gone. */
  #entryOf(p: string): string | null {
    const kind = this.#tree.kindOf(p);
    return kind === undefined ? null : kind === 'collection' ? FOLDER : (this.#tree.versionOf(p) ?? '?');
  }

  /** The batch that takes the known set from `since` to now (see {@link TreeWatch.catchUp}). */
  #since(since: FolderState | undefined): SettledBatch {
    const tree = this.#tree;
    // By name: the announcements come in the order of the paths, whatever order they were found in.
    const now = new Map<string, string>();
    for (const p of [...tree.entries()].map(([p]) => p).sort()) if (p !== tree.root) now.set(path.relative(tree.root, p), this.#entryOf(p)!);
    if (since === undefined) return { changes: [], state: now, catchUp: true };
    const batch = new Batch(tree.root, (p) => tree.isPrivate(p));
    const state = new Map<string, string | null>();
    const kind = (entry: string): Kind => (entry === FOLDER ? 'collection' : 'file');
    for (const [name, entry] of now) {
      const was = since.get(name);
      if (was === entry) continue;
      state.set(name, entry);
      const p = path.join(tree.root, name);
      if (was !== undefined && kind(was) === 'file' && kind(entry) === 'file') batch.updated(p);
      else {
        if (was !== undefined) batch.listChanged(p, kind(was));
        batch.listChanged(p, kind(entry));
      }
    }
    for (const [name, was] of since) {
      if (now.has(name)) continue;
      state.set(name, null);
      const p = path.join(tree.root, name);
      // A recorded name that is not under the served directory is forgotten, not announced.
      if (p !== tree.root && tree.isInside(p)) batch.listChanged(p, kind(was));
    }
    return { changes: batch.changes(), state, catchUp: true };
  }

  /** Compares the disk at and under `p` with the known set, applies the difference, records it. */
  async #reconcile(p: string, batch: Batch | undefined): Promise<void> {
    const tree = this.#tree;
    const before = tree.at(p);
    const after: Scan = { kinds: new Map(), versions: new Map() };
    const parentKnown = p === tree.root || tree.kindOf(path.dirname(p)) === 'collection';
    const found = p === tree.root ? ({ kind: 'collection', version: '' } as const) : parentKnown ? await tree.classify(p) : undefined;
    if (found?.kind === 'collection') {
      await tree.scanInto(p, after, {
        entered: (dir, pinned, stat) => this.#watchPinned(dir, pinned, stat),
        missed: (dir) => this.#unwatch(dir),
      });
    } else if (found?.kind === 'file') {
      after.kinds.set(p, 'file');
      after.versions.set(p, found.version);
    }
    if (this.#closed) return;
    const touched = batch === undefined ? this.#touched : undefined;
    const deferred = (q: string) =>
      touched !== undefined && [...touched].some((t) => q === t || q.startsWith(t.endsWith(path.sep) ? t : t + path.sep));
    for (const [q, was] of before) {
      if (after.kinds.get(q) === was || deferred(q)) continue;
      tree.forget(q);
      if (was === 'collection') this.#unwatch(q);
      batch?.listChanged(q, was);
    }
    for (const [q, now] of after.kinds) {
      const was: Kind | undefined = before.get(q);
      if (was === now) {
        if (now === 'file') {
          const known = tree.versionOf(q);
          const version = after.versions.get(q);
          if (version !== undefined) tree.setVersion(q, version);
          // An event on the file itself is a change; found by a rescan, only a different version is.
          if (q === p || (known !== undefined && version !== undefined && known !== version)) batch?.updated(q);
        }
        continue;
      }
      if (deferred(q)) continue;
      tree.remember(q, now, after.versions.get(q));
      batch?.listChanged(q, now);
    }
  }
}

/** What tells one directory from another made later at the same path (inode numbers are reused). */
function identityOf(stat: Stats): string {
  return `${stat.dev}:${stat.ino}:${stat.birthtimeMs}`;
}
