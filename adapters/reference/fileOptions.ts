import { asyncScheduler, type SchedulerLike } from 'rxjs';
import { InvalidOptionError } from '../../lib/errors.js';
import { option, readOptions, type OptionTable } from '../../lib/optionTable.js';

/**
 * Options of {@link FileResources.open}.
 *
 * @example
 * await FileResources.open('./data', { debounceMs: 100, onWarning: console.warn });
 *
 * @see FileResources.open
 */
export interface FileResourcesOptions extends Partial<FileSettings> {
  /**
   * Told about problems that do not stop the provider: an invalid `tools.json` / `prompts.json`
   * (once per distinct invalid content), a directory that cannot be watched. Defaults to
   * ignoring them.
   */
  readonly onWarning?: (message: string) => void;
  /**
   * Told when the served directory disappears (`false`: deleted, renamed away, replaced by
   * something that is not a directory) and when a directory is there again (`true`), as the
   * watch notices it (it looks every 500 ms while `changes()` has a subscriber). Defaults to
   * ignoring it.
   */
  readonly onRootChange?: (present: boolean) => void;
  /**
   * Where the debounce's time comes from (its clock and its timers); defaults to RxJS's
   * `asyncScheduler`. A `VirtualTimeScheduler` or `TestScheduler` makes the debounce testable
   * in virtual time.
   */
  readonly scheduler?: SchedulerLike;
}

/** The options of {@link FileResources.open} that are values (the `serve` command has a flag for each). */
export interface FileSettings {
  /**
   * Quiet time per path before a burst of file-system events is settled into one change, in
   * milliseconds; defaults to 50. A path that never goes quiet is still reported at least every
   * ten debounce periods.
   */
  readonly debounceMs: number;
  /**
   * The largest file `read` answers, in bytes; defaults to 8 MiB (8 388 608). A larger file is
   * refused with a {@link ResourceTooLargeError} before any of its bytes is read; `tools.json`
   * and `prompts.json` larger than this are served as empty (with a warning).
   */
  readonly maxReadBytes: number;
}

/** Default of {@link FileSettings.maxReadBytes}: 8 MiB. */
export const DEFAULT_MAX_READ_BYTES = 8 * 1024 * 1024;

/** Default of {@link FileSettings.debounceMs}: 50 milliseconds. */
export const DEFAULT_DEBOUNCE_MS = 50;

/**
 * {@link FileSettings}, declared once (see `LISTEN_OPTIONS`): checked here, accepted by the reference
 * server, and `serve` flags.
 * @internal
 */
export const FILE_SETTINGS: OptionTable<FileSettings> = {
  debounceMs: option.milliseconds({ default: DEFAULT_DEBOUNCE_MS, description: 'quiet time per file before a burst of file-system events is published as one change' }),
  maxReadBytes: option.bytes({ default: DEFAULT_MAX_READ_BYTES, description: 'largest file resources/read returns; larger ones get a JSON-RPC error' }),
};

/** {@link FileResourcesOptions} with every default filled in. @internal */
export interface ResolvedFileResourcesOptions extends FileSettings {
  readonly onWarning: (message: string) => void;
  readonly onRootChange: (present: boolean) => void;
  readonly scheduler: SchedulerLike;
}

/**
 * Checks the options of {@link FileResources.open} and fills in the defaults.
 * @throws InvalidOptionError naming `debounceMs` or `maxReadBytes` when it is not a positive
 *   integer, or `scheduler` when it is not a `SchedulerLike`.
 * @internal
 */
export function resolveFileResourcesOptions(options: FileResourcesOptions): ResolvedFileResourcesOptions {
  const { debounceMs, maxReadBytes } = readOptions(FILE_SETTINGS, options);
  const { scheduler } = options;
  if (scheduler !== undefined && (typeof scheduler?.now !== 'function' || typeof scheduler.schedule !== 'function')) {
    throw new InvalidOptionError('scheduler', 'an RxJS SchedulerLike (now, schedule)', scheduler);
  }
  return {
    debounceMs,
    maxReadBytes,
    onWarning: options.onWarning ?? (() => {}),
    onRootChange: options.onRootChange ?? (() => {}),
    scheduler: scheduler ?? asyncScheduler,
  };
}
