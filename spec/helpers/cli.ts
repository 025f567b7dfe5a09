// The `mcp-rx-streams` command in a child process (`dist/adapters/cli.js`, built by `npm test` before
// the specs), its stdout and stderr read as they arrive.
import { strict as assert } from 'node:assert';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const CLI = fileURLToPath(new URL('../../dist/adapters/cli.js', import.meta.url));

export interface Run {
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  out(): string;
  err(): string;
  /** Resolves with the time (ms since spawn) `text` first appeared on stdout; rejects after `ms`. */
  waitFor(text: string | RegExp, ms?: number): Promise<number>;
  /** The same on stderr (the log). */
  waitForErr(text: string | RegExp, ms?: number): Promise<number>;
}

export function cli(args: string[]): Run {
  assert.ok(existsSync(CLI), `${CLI} is missing: run npm run build (npm test does)`);
  const started = Date.now();
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  const seen: { err: boolean; test: (text: string) => boolean; resolve: (at: number) => void }[] = [];
  const heard = (err: boolean) => {
    for (const waiter of [...seen]) {
      if (waiter.err === err && waiter.test(err ? stderr : stdout)) {
        seen.splice(seen.indexOf(waiter), 1);
        waiter.resolve(Date.now() - started);
      }
    }
  };
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    heard(false);
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
    heard(true);
  });
  // 'close', not 'exit': only then has everything the child wrote to its pipes been read.
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  const waitFor = (err: boolean) => (text: string | RegExp, ms = 10_000) => {
    const matches = (all: string) => (typeof text === 'string' ? all.includes(text) : text.test(all));
    if (matches(err ? stderr : stdout)) return Promise.resolve(Date.now() - started);
    return new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${String(text)}; stdout:\n${stdout}\nstderr:\n${stderr}`)), ms);
      seen.push({
        err,
        test: matches,
        resolve: (at) => {
          clearTimeout(timer);
          resolve(at);
        },
      });
    });
  };
  return { child, exited, out: () => stdout, err: () => stderr, waitFor: waitFor(false), waitForErr: waitFor(true) };
}


/** A `serve` run started by {@link serving}: its URL, its metrics base URL (with --metrics-port) and the directory it serves. */
export interface Served {
  readonly run: Run;
  readonly url: string;
  /** `http://HOST:PORT` of the metrics port, when started with `--metrics-port`. */
  readonly metrics: string | undefined;
  readonly dir: string;
}

/**
 * Runs `serve --port 0 --dir <dir> --demo` with `args` (`dir` defaults to a fresh temp directory's
 * `data/`), hands it to `body` once it listens (and its metrics port, when asked for), then stops it
 * with SIGTERM, which must exit 0. Always stops it and removes the temp directory. `startMs`: how
 * long it may take to print its ready lines (default `waitFor`'s 10 s).
 */
export async function serving(args: string[], body: (served: Served) => Promise<void>, dir?: string, startMs?: number): Promise<Run> {
  const root = await mkdtemp(path.join(tmpdir(), 'mcp-rx-cli-'));
  const data = dir ?? path.join(root, 'data');
  const run = cli(['serve', '--port', '0', '--dir', data, '--demo', ...args]);
  try {
    await run.waitFor(/^mcp-rx-streams listening on \S+$/m, startMs);
    if (args.includes('--metrics-port')) await run.waitFor(/^metrics on \S+$/m, startMs);
    const url = /^mcp-rx-streams listening on (\S+)$/m.exec(run.out())![1]!;
    const metrics = /^metrics on (\S+)\/metrics$/m.exec(run.out())?.[1];
    await body({ run, url, metrics, dir: data });
    run.child.kill('SIGTERM');
    assert.equal(await run.exited, 0, run.err());
    return run;
  } finally {
    run.child.kill('SIGKILL');
    await rm(root, { recursive: true, force: true });
  }
}
