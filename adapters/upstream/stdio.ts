// An upstream launched as a child process and spoken to over its stdin and stdout (MCP's stdio
// transport): the command line, the process, and the channel over its pipes.
import { spawn } from 'node:child_process';
import { Observable } from 'rxjs';
import { InvalidOptionError } from '../../lib/errors.js';
import { string } from '../../lib/validate.js';
import type { MessageChannel } from '../channel/channel.js';
import { stdioChannel } from '../channel/stdio.js';
import { UpstreamError } from './errors.js';

/** How an upstream launched as a child process is started. */
export interface StdioCommand {
  /** The program and its arguments, e.g. `['python', '-m', 'notes_server']`. */
  readonly command: readonly string[];
  /** Its working directory; defaults to this process's. */
  readonly cwd?: string;
  /** Its environment; defaults to this process's. */
  readonly env?: Readonly<Record<string, string>>;
  /** What becomes of its stderr (its logs): `'inherit'` (this process's stderr, the default) or `'ignore'`. */
  readonly stderr?: 'inherit' | 'ignore';
}

/**
 * The words of a command line, split as a POSIX shell splits them but with nothing expanded: blanks
 * separate words, `'…'` keeps everything inside as it is, `"…"` keeps everything but `\"` and `\\`,
 * and `\` outside quotes keeps the next character. What `stdio:CMD…` of `--upstream` is read with.
 *
 * @example
 * commandWords(`python -m notes --dir "/srv/my notes"`); // ['python', '-m', 'notes', '--dir', '/srv/my notes']
 * @throws InvalidOptionError naming `label` for an unterminated quote, a trailing `\`, or no word at all.
 */
export function commandWords(text: string, label = 'command'): string[] {
  string(label, text, { what: 'a command line (a string)' });
  const words: string[] = [];
  let word: string | undefined;
  let quote: "'" | '"' | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote === "'") {
      if (c === "'") quote = undefined;
      else word += c;
    } else if (quote === '"') {
      if (c === '"') quote = undefined;
      else if (c === '\\' && (text[i + 1] === '"' || text[i + 1] === '\\')) word += text[++i];
      else word += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      word ??= '';
    } else if (c === '\\') {
      if (i + 1 === text.length) throw new InvalidOptionError(label, 'a command line without a trailing backslash', text);
      word = (word ?? '') + text[++i];
    } else if (c === ' ' || c === '\t' || c === '\n') {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else word = (word ?? '') + c;
  }
  if (quote !== undefined) throw new InvalidOptionError(label, `a command line whose ${quote === '"' ? 'double' : 'single'} quotes are closed`, text);
  if (word !== undefined) words.push(word);
  if (words.length === 0) throw new InvalidOptionError(label, 'a command line naming a program', text);
  return words;
}

/** Milliseconds a child process is given to exit after its stdin closed, before SIGTERM; and after that, before SIGKILL. */
const CLOSE_GRACE_MS = 200;
const KILL_GRACE_MS = 2_000;

/**
 * Launches `command` when subscribed and emits one {@link MessageChannel} over its stdin and stdout;
 * errors (an {@link UpstreamError} naming `upstream`) when the process cannot start or exits (its channel then has ended too). Unsubscribing
 * closes its stdin (MCP stdio: the client ends the session so), sends SIGTERM if it has not exited
 * within 200 ms and SIGKILL 2 s later.
 * @internal
 */
export function stdioProcess(upstream: string, command: StdioCommand, maxMessageBytes: number): Observable<MessageChannel> {
  return new Observable<MessageChannel>((subscriber) => {
    const [program, ...args] = command.command;
    const child = spawn(program!, args, {
      cwd: command.cwd,
      env: command.env === undefined ? process.env : { ...command.env },
      stdio: ['pipe', 'pipe', command.stderr ?? 'inherit'],
    });
    let exited = false;
    const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
      exited = true;
      subscriber.error(new UpstreamError(`upstream ${upstream}: its process ${JSON.stringify(program)} exited (${signal === null ? `code ${code}` : signal})`, { upstream }));
    };
    const onError = (error: Error) => {
      exited = exited || child.exitCode !== null;
      subscriber.error(new UpstreamError(`upstream ${upstream}: its process ${JSON.stringify(program)} could not be run: ${error.message}`, { upstream }, { cause: error }));
    };
    child.once('exit', onExit);
    child.once('error', onError);
    // A write to a process that exited meanwhile fails with EPIPE: the channel ends, the exit says why.
    child.stdin.on('error', noop);
    subscriber.next(stdioChannel({ input: child.stdout, output: child.stdin, maxMessageBytes }));
    return () => {
      child.off('exit', onExit);
      child.off('error', onError);
      if (exited || child.exitCode !== null) return;
      child.stdin.end();
      const term = setTimeout(() => child.kill('SIGTERM'), CLOSE_GRACE_MS);
      const kill = setTimeout(() => child.kill('SIGKILL'), CLOSE_GRACE_MS + KILL_GRACE_MS);
      term.unref();
      kill.unref();
      child.once('exit', () => {
        clearTimeout(term);
        clearTimeout(kill);
      });
    };
  });
}

function noop(): void {}
