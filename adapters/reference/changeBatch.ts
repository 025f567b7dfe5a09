// Settling file-system events into the MCP notifications they stand for.
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';

/** The scope that `DIR/private/` needs, to read it and to hear about it. */
export const PRIVATE_SCOPE = 'private';

export type Kind = 'file' | 'collection';

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
 * `scope: 'private'` marks a change under `DIR/private/`: every notification it stands for —
 * the file's own `updated`, its collections' up to the root (public ones included) and the
 * `list_changed` — must reach only streams whose principal holds the `private` scope, since
 * even "something changed in the root folder" tells an unscoped reader about activity it may
 * not read. A batch that changes both public and private entries yields a public change and a
 * private one; the private one leaves out the collection URIs the public one already names.
 *
 * @example
 * files.changes().subscribe((change) => {
 *   if (change.kind === 'updated') change.uris.forEach((uri) => hub.notifyResourceUpdated(uri));
 * });
 *
 * @see FileResources.changes
 */
export type FileChange =
  | { readonly kind: 'updated'; readonly uris: readonly string[]; readonly scope?: typeof PRIVATE_SCOPE }
  | { readonly kind: 'listChanged'; readonly uris: readonly string[]; readonly scope?: typeof PRIVATE_SCOPE }
  | { readonly kind: 'tools' }
  | { readonly kind: 'prompts' };

/**
 * The served folder as a publisher of its changes records it, so that the next publisher (the next
 * holder of the watch lease) can announce what changed since: each known file's version (as
 * the served tree compares them: inode, modification time and size) and {@link FOLDER} for
 * each folder, by path relative to the served directory (the directory itself left out).
 */
export type FolderState = ReadonlyMap<string, string>;

/** The entry of a folder in a {@link FolderState}; a file's version is never this. */
export const FOLDER = '/';

/**
 * The changes of one settled batch, and the new state of every path it settled (`null`: gone), to
 * record as published once they are. `catchUp`: the first batch of a publisher that takes over,
 * holding what changed since the state the previous publisher recorded.
 */
export interface SettledBatch {
  readonly changes: readonly FileChange[];
  readonly state: ReadonlyMap<string, string | null>;
  readonly catchUp: boolean;
}

/**
 * The changes settled in one flush, merged: at most one public and one private `listChanged`,
 * then each `updated`, then `tools` / `prompts`.
 */
export class Batch {
  readonly #root: string;
  readonly #isPrivate: (p: string) => boolean;
  readonly #collections = new Set<string>();
  readonly #privateCollections = new Set<string>();
  /** Files whose content changed, in the order first seen (a file settled twice in one flush is one change). */
  readonly #updated = new Set<string>();
  /** Every path that appeared, disappeared or changed: whose recorded state follows this batch. */
  readonly #settled = new Set<string>();
  #tools = false;
  #prompts = false;

  /** `isPrivate` tells the paths whose changes only the `private` scope may hear about. */
  constructor(root: string, isPrivate: (p: string) => boolean) {
    this.#root = root;
    this.#isPrivate = isPrivate;
  }

  listChanged(p: string, kind: Kind): void {
    const into = this.#isPrivate(p) ? this.#privateCollections : this.#collections;
    if (kind === 'collection') into.add(p);
    for (const dir of this.#ancestors(p)) into.add(dir);
    this.#touch(p);
  }

  updated(p: string): void {
    this.#updated.add(p);
    this.#touch(p);
  }

  changes(): FileChange[] {
    const out: FileChange[] = [];
    if (this.#collections.size > 0) out.push({ kind: 'listChanged', uris: innermostFirst(this.#collections).map(collectionUri) });
    const hidden = [...this.#privateCollections].filter((p) => !this.#collections.has(p));
    if (this.#privateCollections.size > 0) {
      out.push({ kind: 'listChanged', uris: innermostFirst(hidden).map(collectionUri), scope: PRIVATE_SCOPE });
    }
    for (const p of this.#updated) {
      const uris = [fileUri(p), ...this.#ancestors(p).map(collectionUri)];
      out.push(this.#isPrivate(p) ? { kind: 'updated', uris, scope: PRIVATE_SCOPE } : { kind: 'updated', uris });
    }
    if (this.#tools) out.push({ kind: 'tools' });
    if (this.#prompts) out.push({ kind: 'prompts' });
    return out;
  }

  /** The paths that appeared, disappeared or changed in this batch. */
  paths(): ReadonlySet<string> {
    return this.#settled;
  }

  #touch(p: string): void {
    this.#settled.add(p);
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

function innermostFirst(dirs: Iterable<string>): string[] {
  const depth = (p: string) => p.split(path.sep).length;
  return [...dirs].sort((a, b) => depth(b) - depth(a) || (a < b ? -1 : a > b ? 1 : 0));
}

/** The resource URI of a file: `pathToFileURL` of its absolute path. */
export function fileUri(p: string): string {
  return pathToFileURL(p).href;
}

/** The resource URI of a directory: its file URI with a trailing slash. */
export function collectionUri(p: string): string {
  const href = pathToFileURL(p).href;
  return href.endsWith('/') ? href : `${href}/`;
}

