// File-system access that acts on exactly the file or directory it checked.
//
// Checking a path and then using it by name is a race: between `realpath` and `readFile` a
// public folder can be swapped for a symbolic link into `private/`, and the read follows it.
// Everything here opens first and then asks the kernel where the *opened* descriptor is: on
// Linux `/proc/self/fd/<fd>` names the file the descriptor refers to, whatever happened to the
// path since. Directories are then listed, watched and looked into through that same
// `/proc/self/fd/<fd>` path (the `openat` of a runtime that has none), so a directory is never
// named twice. Where `/proc/self/fd` is missing (not Linux, or no procfs mounted), the opened
// file's device and inode are compared with those of the path's real path instead: that
// narrows the window to the time between two system calls but cannot close it; the served tree
// is then only as safe as its writers are trustworthy.
import { closeSync, constants, existsSync, fstatSync, lstatSync, openSync, readlinkSync, watch } from 'node:fs';
import type { FSWatcher, Stats } from 'node:fs';
import * as fsp from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';

const PROC_FD = '/proc/self/fd';
/** Whether the kernel can tell where an open descriptor is (Linux with procfs). */
export const kernelPaths: boolean = process.platform === 'linux' && existsSync(PROC_FD);

// O_NONBLOCK: opening a FIFO (or a device) for reading must not wait for a writer; O_NOCTTY: a
// terminal never becomes the controlling one. Both are 0 where the platform lacks them.
const FILE_FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOCTTY ?? 0);
const DIR_FLAGS = FILE_FLAGS | (constants.O_DIRECTORY ?? 0);

/** An open regular file, at a location the caller accepted, with its size when opened. */
export interface PinnedFile {
  readonly handle: FileHandle;
  /** Where the opened file is: its real path. */
  readonly real: string;
  readonly stat: Stats;
}

/**
 * Opens `p` for reading and returns it only when it is a regular file whose real location
 * `accept` allows; otherwise closes it and answers `undefined` (also for a path that cannot be
 * opened). A FIFO, socket or device is opened without blocking and refused.
 */
export async function openRegularFile(p: string, accept: (real: string) => boolean): Promise<PinnedFile | undefined> {
  let handle: FileHandle;
  try {
    handle = await fsp.open(p, FILE_FLAGS);
  } catch {
    return undefined;
  }
  try {
    const stat = await handle.stat();
    // Unlinked since it was opened: gone, and its kernel path would carry a " (deleted)" suffix.
    if (!stat.isFile() || stat.nlink === 0) return close(handle);
    const real = await openedPath(handle.fd, p, stat);
    if (real === undefined || !accept(real)) return close(handle);
    return { handle, real, stat };
  } catch {
    return close(handle);
  }
}

/** Answers {@link ReadTooLarge} instead of bytes when the file holds more than the cap. */
export interface ReadTooLarge {
  readonly tooLarge: true;
  /** The file's size in bytes as far as it is known (at least `max + 1`). */
  readonly size: number;
}

/**
 * Reads an opened file whole, holding at most `max` bytes: a file larger than `max` when it was
 * opened, or that grows past it while being read, answers {@link ReadTooLarge} without its
 * bytes ever being buffered beyond `max + 1`.
 */
export async function readAtMost(file: PinnedFile, max: number): Promise<Buffer | ReadTooLarge> {
  if (file.stat.size > max) return { tooLarge: true, size: file.stat.size };
  // One byte more than the cap tells a file that grew past it from one that ends exactly there.
  let buffer = Buffer.allocUnsafe(Math.min(max, file.stat.size) + 1);
  let length = 0;
  for (;;) {
    if (length === buffer.length) {
      if (length > max) {
        const now = await file.handle.stat().catch(() => undefined);
        return { tooLarge: true, size: Math.max(length, now?.size ?? 0) };
      }
      const bigger = Buffer.allocUnsafe(Math.min(max + 1, buffer.length * 2));
      buffer.copy(bigger, 0, 0, length);
      buffer = bigger;
    }
    const { bytesRead } = await file.handle.read(buffer, length, buffer.length - length, length);
    if (bytesRead === 0) return buffer.subarray(0, length);
    length += bytesRead;
  }
}

/**
 * Opens directory `dir` and runs `use` with a path that names exactly the opened directory
 * (`/proc/self/fd/<fd>`, or `dir` itself without procfs), provided the opened directory is at
 * `dir` itself (no symbolic link anywhere on the way); answers `undefined` without calling
 * `use` otherwise. The directory stays open until `use` settles.
 */
export async function inDirectory<T>(dir: string, use: (pinned: string, stat: Stats) => Promise<T>): Promise<T | undefined> {
  let handle: FileHandle;
  try {
    handle = await fsp.open(dir, DIR_FLAGS);
  } catch {
    return undefined;
  }
  try {
    const stat = await handle.stat();
    if (!stat.isDirectory() || (await openedPath(handle.fd, dir, stat)) !== dir) return undefined;
    return await use(kernelPaths ? `${PROC_FD}/${handle.fd}` : dir, stat);
  } catch {
    return undefined;
  } finally {
    await handle.close().catch(() => {});
  }
}

/** A directory watch pinned to the directory that was verified, with that directory's fstat. */
export interface PinnedWatch {
  readonly watcher: FSWatcher;
  readonly stat: Stats;
}

/**
 * Synchronously opens `dir`, verifies it as {@link inDirectory} does and watches the opened
 * directory (not whatever `dir` names later); `undefined` when it is not a real directory at
 * `dir`. Throws what `fs.watch` throws (e.g. out of inotify watches).
 */
export function watchDirectorySync(dir: string, listener: (filename: string | null) => void): PinnedWatch | undefined {
  let fd: number;
  try {
    fd = openSync(dir, DIR_FLAGS);
  } catch {
    return undefined;
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isDirectory() || openedPathSync(fd, dir, stat) !== dir) return undefined;
    const watcher = watch(kernelPaths ? `${PROC_FD}/${fd}` : dir, { persistent: true }, (_event, filename) => listener(filename));
    return { watcher, stat };
  } finally {
    closeSync(fd);
  }
}

/** Where the kernel says descriptor `fd` (opened from `p`, `stat` its fstat) is; `undefined` when unknown. */
async function openedPath(fd: number, p: string, stat: Stats): Promise<string | undefined> {
  if (kernelPaths) return fsp.readlink(`${PROC_FD}/${fd}`).catch(() => undefined);
  const real = await fsp.realpath(p).catch(() => undefined);
  if (real === undefined) return undefined;
  const now = await fsp.lstat(real).catch(() => undefined);
  return now !== undefined && now.dev === stat.dev && now.ino === stat.ino ? real : undefined;
}

function openedPathSync(fd: number, p: string, stat: Stats): string | undefined {
  try {
    if (kernelPaths) return readlinkSync(`${PROC_FD}/${fd}`);
    const now = lstatSync(p);
    return now.dev === stat.dev && now.ino === stat.ino && now.isDirectory() ? p : undefined;
  } catch {
    return undefined;
  }
}

async function close(handle: FileHandle): Promise<undefined> {
  await handle.close().catch(() => {});
  return undefined;
}
