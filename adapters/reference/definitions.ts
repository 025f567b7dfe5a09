// The tool and prompt definitions a served directory carries: `tools.json` and `prompts.json`.
import * as path from 'node:path';
import type { ReadTooLarge } from './pinnedFs.js';

/**
 * Reads JSON arrays of definitions from files at the top of the served directory, warning once
 * per distinct invalid content (not on every `tools/list`).
 * @internal
 */
export class DefinitionFiles {
  readonly #root: string;
  readonly #read: (p: string) => Promise<Buffer | ReadTooLarge | undefined>;
  readonly #maxReadBytes: number;
  readonly #warn: (message: string) => void;
  /** The last invalid content warned about, per file name. */
  readonly #invalid = new Map<string, string>();

  /**
   * @param root the served directory.
   * @param read reads a file as the provider serves it (pinned, at most `maxReadBytes` bytes).
   * @param maxReadBytes the read cap, in bytes (named in the warning about a larger file).
   * @param warn where warnings go.
   */
  constructor(
    root: string,
    read: (p: string) => Promise<Buffer | ReadTooLarge | undefined>,
    maxReadBytes: number,
    warn: (message: string) => void,
  ) {
    this.#root = root;
    this.#read = read;
    this.#maxReadBytes = maxReadBytes;
    this.#warn = warn;
  }

  /**
   * The JSON array in `<root>/<name>`: `[]` for a missing file; `[]` and a warning (once per
   * distinct content) for one that is too large, unparsable or not an array.
   */
  async read(name: string): Promise<unknown[]> {
    const file = path.join(this.#root, name);
    const bytes = await this.#read(file);
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
      this.#invalid.delete(name);
      return value;
    }
    this.#warnOnce(name, text, `${file} is not a JSON array; serving no entries until it is fixed`);
    return [];
  }

  /** Warns about `name` once per distinct `content`. */
  #warnOnce(name: string, content: string, message: string): void {
    if (this.#invalid.get(name) === content) return;
    this.#invalid.set(name, content);
    this.#warn(message);
  }
}
