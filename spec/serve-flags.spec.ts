// Every `serve` flag accepted at its documented default (issue 30 "Options declared once", issue 31
// item 8): `serve --help` is read for each flag and its default, and the built command
// (`dist/adapters/cli.js`, built by `npm test` before the specs) is started with each flag alone at
// that default, then with all of them together, on one process and on `--workers 2`. Each start must
// print its ready line and exit 0 on SIGTERM. A flag whose default is not a value it can be given
// (its default is its absence), or that cannot go alone, is listed below with the reason: a flag
// the help gains is run, or the spec fails until it is listed.
//
// Every run's working directory is a temp folder holding `demo-data/`, so the documented `--dir`
// default serves it; every run is given `--port 0` (see NOT_RUN).
import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';

const CLI = fileURLToPath(new URL('../dist/adapters/cli.js', import.meta.url));
const READY = /^mcp-rx-streams listening on \S+$/m;
/** What `serve --stdio` says on stderr once it serves. */
const STDIO_READY = /INFO: serving \S+ on stdio\b/;

/** How many `serve` processes run at once: each a Node process that starts a server (about 1 s of CPU). */
const AT_ONCE = 8;
/** A run that has not printed its ready line by then is killed (and fails): generous, for a machine that other work keeps busy. */
const START_WITHIN_MS = 60_000;

/** Flags no run gives at their default, and why. */
const NOT_RUN: Readonly<Record<string, string>> = {
  help: 'prints the help and exits: no server to start',
  stdio: 'a mode, not a setting: serves one host on stdin and stdout, with no ready line on stdout (its own run below)',
  port: 'every run is given --port 0: the documented 3000 may be taken on a shared machine, and the runs go in parallel',
  'token-secret': 'its default (none: no authentication) is its absence',
  redis: 'its default (none: one process) is its absence; given as the prerequisite of --watch-lease-ttl below',
  'node-id': 'its default (a random UUID) is its absence',
  'redis-timeout': 'its default (none: wait for ever) is its absence',
  'trust-proxy': "its default (none: the client is the connection's peer) is its absence",
  'cors-origins': 'its default (none: no CORS) is its absence',
  'metrics-port': 'its default (off) is its absence; given as the prerequisite of --metrics-host below',
  'admin-token': 'its default (none: no admin endpoints) is its absence',
  issuer: 'its default (none: no authorization server) is its absence; given, it needs a real authorization server (spec/auth/reference.spec.ts)',
  resource: 'only with --issuer (spec/auth/reference.spec.ts); its default is the listening URL',
  'jwks-url': "only with --issuer; its default is the issuer metadata's jwks_uri",
  'required-scopes': 'only with --issuer; its default (none) is its absence',
  'introspection-url': 'its default (none: tokens are JWTs) is its absence; given, it needs an introspection endpoint (spec/auth/reference.spec.ts)',
  'introspection-client-id': 'only with --introspection-url',
  'introspection-client-secret': 'only with --introspection-url',
  upstream: 'its default (none) is its absence; given, it needs an upstream MCP server (spec/upstream/)',
};

/** What a flag needs beside it to be accepted (its help says "only with …"). */
const NEEDS: Readonly<Record<string, (context: Context) => string[]>> = {
  'metrics-host': () => ['--metrics-port', '0'],
  'watch-lease-ttl': ({ redis }) => ['--redis', redis],
};

/** Flags left out of the `--workers 2` run, and why. */
const NOT_WITH_WORKERS: Readonly<Record<string, string>> = {
  workers: 'the run gives --workers 2 instead of the default 1',
};

interface Context {
  /** A Redis URL where nobody listens: a node starts at once and waits for it. */
  readonly redis: string;
}

interface HelpFlag {
  readonly name: string;
  /** `MS`, `N`, `BYTES`…; absent for a switch. */
  readonly value: string | undefined;
  /** The documented default's first word (`1048576 (1 MiB)` → `1048576`); absent when none is shown. */
  readonly default: string | undefined;
  /** The documented default as `--help` shows it (`none (no authentication)`). */
  readonly shown: string | undefined;
}

/** The flags of `serve --help`, each with its documented default. */
function helpFlags(help: string): HelpFlag[] {
  const lines = help.split('\n').filter((line) => /^ {2}(?:-\w, )?--/.test(line));
  return lines.map((line) => {
    const [, name, value] = /^ {2}(?:-\w, )?--([a-z-]+)(?: ([A-Z]+))?\s/.exec(line)!;
    const shown = /\bdefault: ([^;\]]+)\]$/.exec(line)?.[1];
    return { name: name!, value, default: shown?.split(' ')[0], shown };
  });
}

interface Started {
  /** The command line after the script. */
  readonly argv: readonly string[];
  /** Resolves with the exit code once it printed the ready line and was stopped with SIGTERM; with the output when it failed. */
  readonly result: Promise<{ code: number | null; ready: boolean; out: string; err: string }>;
}

/**
 * Runs `serve --port 0 …args` in `cwd` until its ready line (or its exit), then SIGTERM. With
 * `stdio`, `serve --stdio …args` instead: its ready line is on stderr, and its stdin stays open
 * (it would exit when the host closes it).
 */
function start(cwd: string, args: readonly string[], { stdio = false }: { readonly stdio?: boolean } = {}): Started {
  const argv = stdio ? ['serve', '--stdio', ...args] : ['serve', '--port', '0', ...args];
  const child = spawn(process.execPath, [CLI, ...argv], { cwd, stdio: [stdio ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  let seen = false;
  const look = () => {
    if (seen || !(stdio ? STDIO_READY.test(err) : READY.test(out))) return;
    seen = true;
    child.kill('SIGTERM');
  };
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => ((out += chunk), look()));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => ((err += chunk), look()));
  const timer = setTimeout(() => child.kill('SIGKILL'), START_WITHIN_MS);
  const result = new Promise<{ code: number | null; ready: boolean; out: string; err: string }>((resolve) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, ready: seen, out, err });
    }),
  );
  return { argv, result };
}

/** Asserts that `run` printed its ready line and exited 0 on SIGTERM. */
async function accepted(run: Started): Promise<void> {
  const { code, ready, out, err } = await run.result;
  const shown = `${run.argv.join(' ')}\nstdout:\n${out}\nstderr:\n${err}`;
  assert.ok(ready, `no ready line: ${shown}`);
  assert.equal(code, 0, `SIGTERM did not exit 0: ${shown}`);
}

/** `each` of `items`, `AT_ONCE` at a time (the next starts as soon as one is done), in their order. */
async function inTurn<T, R>(items: readonly T[], each: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await each(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(AT_ONCE, items.length) }, worker));
  return results;
}

/** A loopback port nobody listens on (bound, read, released). */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

let cwd: string;
let flags: HelpFlag[];
let context: Context;

test.before(async () => {
  assert.ok(existsSync(CLI), `${CLI} is missing: run npm run build (npm test does)`);
  cwd = await mkdtemp(path.join(tmpdir(), 'mcp-rx-serve-flags-'));
  await mkdir(path.join(cwd, 'demo-data'));
  await writeFile(path.join(cwd, 'demo-data', 'todo.txt'), '- one\n');
  context = { redis: `redis://127.0.0.1:${await closedPort()}` };
  const help = spawn(process.execPath, [CLI, 'serve', '--help'], { stdio: ['ignore', 'pipe', 'inherit'] });
  let text = '';
  help.stdout!.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
  assert.equal(await new Promise((resolve) => help.on('close', resolve)), 0);
  flags = helpFlags(text);
  assert.ok(flags.length >= 30, text);
});

test.after(async () => {
  if (cwd !== undefined) await rm(cwd, { recursive: true, force: true });
});

/** The flags run at their default, each with what it needs: `--flag value` (a switch: `--flag`). */
function runnable(): { name: string; args: string[] }[] {
  return flags
    .filter((flag) => !(flag.name in NOT_RUN))
    .map((flag) => ({ name: flag.name, args: [`--${flag.name}`, ...(flag.value === undefined ? [] : [flag.default!]), ...(NEEDS[flag.name]?.(context) ?? [])] }));
}

test('every flag of serve --help is run at its documented default, or listed with the reason it is not', () => {
  const names = flags.map((flag) => flag.name);
  for (const flag of flags) {
    if (flag.name in NOT_RUN || flag.value === undefined) continue;
    assert.ok(flag.default !== undefined, `--${flag.name} documents no default: run it at one, or list it in NOT_RUN with the reason`);
    assert.doesNotMatch(flag.shown!, /^(?:none|off)\b/, `--${flag.name}'s default (${flag.shown}) is its absence, not a value: list it in NOT_RUN with the reason`);
  }
  for (const listed of [...Object.keys(NOT_RUN), ...Object.keys(NEEDS), ...Object.keys(NOT_WITH_WORKERS)]) {
    assert.ok(names.includes(listed), `--${listed} is listed here but serve --help has no such flag`);
  }
  // The defect of issue 31 item 8: both refused as options startReferenceServer did not know.
  assert.ok(runnable().some((run) => run.name === 'body-timeout') && runnable().some((run) => run.name === 'max-body-bytes'));
});

test('each flag alone at its documented default: the ready line, and exit 0 on SIGTERM', async () => {
  const outcomes = await inTurn(runnable(), ({ args }) => accepted(start(cwd, args)).then(
    () => undefined,
    (error: Error) => error.message,
  ));
  const failures = outcomes.filter((failure): failure is string => failure !== undefined);
  assert.deepEqual(failures, [], failures.join('\n\n'));
});

/** Every runnable flag at its default with what it needs, each given once. */
function together(leaveOut: Readonly<Record<string, string>> = {}): string[] {
  const args: string[] = [];
  for (const run of runnable().filter((entry) => !(entry.name in leaveOut))) {
    for (let i = 0; i < run.args.length; ) {
      const flag = run.args[i]!;
      const value = run.args[i + 1]?.startsWith('--') === false ? run.args[i + 1] : undefined;
      if (!args.includes(flag)) args.push(flag, ...(value === undefined ? [] : [value]));
      i += value === undefined ? 1 : 2;
    }
  }
  return args;
}

test('all of them together at their documented defaults: the ready line, and exit 0 on SIGTERM', async () => {
  await accepted(start(cwd, together()));
});

test('all of them together on --workers 2: the primary prints the ready line, and exits 0 on SIGTERM', async () => {
  await accepted(start(cwd, [...together(NOT_WITH_WORKERS), '--workers', '2']));
});

test('--stdio with every flag that applies on stdio, at its default: it says it serves on stdio, and exits 0 on SIGTERM', async () => {
  // A flag of the HTTP server only is refused with --stdio, one line naming it (spec/interop-stdio.spec.ts). Each
  // flag is tried with a --dir that does not exist: the command refuses an HTTP-only flag before it looks at the
  // directory, and either way exits 2 without starting anything (--dir and --demo, which would create it, are
  // given to the run that starts). Every other flag must then be accepted, together.
  const runs = runnable().filter((run) => !['workers', 'dir', 'demo'].includes(run.name));
  const refused = await inTurn(runs, async (run) => {
    const { code, err } = await start(cwd, [...run.args, '--dir', path.join(cwd, 'absent')], { stdio: true }).result;
    assert.equal(code, 2, err);
    if (/applies to the HTTP server only; it cannot go with --stdio$/m.test(err)) return true;
    assert.match(err, /^mcp-rx-streams: --dir \S+ does not exist/, `--stdio ${run.args.join(' ')}`);
    return false;
  });
  const httpOnly = runs.filter((_, i) => refused[i]).map((run) => run.name);
  assert.ok(!httpOnly.includes('max-body-bytes') && !httpOnly.includes('keep-alive-interval'), `refused on stdio: ${httpOnly.join(' ')}`);
  await accepted(start(cwd, ['--dir', './demo-data', '--demo', ...runs.filter((run) => !httpOnly.includes(run.name)).flatMap((run) => run.args)], { stdio: true }));
});

test.run();
