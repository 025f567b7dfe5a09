// A command's flags, read from the option tables (lib/optionTable.ts): each option with a flag is
// `--` and its name in kebab case, takes the text its kind reads (a switch none), and has its
// `--help` line from its description, unit and default. `--help` is printed from the same flags
// that node:util parseArgs reads the command line with, so the help and what is accepted cannot
// drift apart.
import { isDeepStrictEqual, parseArgs } from 'node:util';
import { option, type AnyOptionTable, type OptionSpec } from '../../lib/optionTable.js';
import { UsageError } from './errors.js';

/** One flag of a command: the option it sets and how. */
export interface Flag {
  /** Without the leading `--`. */
  readonly name: string;
  /** The option it sets, by its name (`keepAliveInterval`): of `startReferenceServer`, or of the command itself. */
  readonly option: string;
  readonly spec: OptionSpec<unknown>;
  /** A one-letter alias (`-h`). */
  readonly short?: string;
  /** May be given several times (the values are collected in order). */
  readonly multiple?: boolean;
  /**
   * Set on the flag of an option's former name (`OptionSpec.formerly`): the flag it was renamed to.
   * Accepted as that flag (deprecated), never shown in `--help`.
   */
  readonly renamedTo?: string;
}

/** A command: how it is called, what it does, its flags. */
export interface Command {
  readonly name: string;
  readonly usage: string;
  readonly summary: string;
  readonly flags: readonly Flag[];
  /** Whether it takes arguments besides its flags (`listen URL`). */
  readonly positionals: boolean;
}

/** `keepAliveInterval` → `keep-alive-interval`. */
export const kebab = (name: string): string => name.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`);

/**
 * The flags of `table`'s options (those declared with `flag: false` have none), in its order; `extra`
 * adds an alias or `multiple` by option name. A renamed option's former name is a hidden flag too
 * (`--listen-max-queue` for `--max-stream-queue`), so that a command line written before still runs.
 */
export function flagsOf(table: AnyOptionTable, extra: Readonly<Record<string, Pick<Flag, 'short' | 'multiple'>>> = {}): Flag[] {
  return Object.entries(table)
    .filter(([, spec]) => spec.flag !== false)
    .flatMap(([name, spec]) => {
      const flag: Flag = { name: kebab(name), option: name, spec, ...extra[name] };
      return spec.formerly === undefined ? [flag] : [flag, { ...flag, name: kebab(spec.formerly), renamedTo: flag.name }];
    });
}

/** `-h`, `--help`: every command's. */
export const HELP: Flag = { name: 'help', option: 'help', short: 'h', spec: option.toggle({ description: 'print this help and exit' }) };

/** The `--help` text of `command`, generated from its flags. */
export function helpText({ usage, summary, flags: all }: Command): string {
  const flags = all.filter((flag) => flag.renamedTo === undefined);
  const left = flags.map((flag) => `${flag.short === undefined ? '' : `-${flag.short}, `}--${flag.name}${flag.spec.placeholder === undefined ? '' : ` ${flag.spec.placeholder}`}`);
  const width = Math.max(...left.map((text) => text.length)) + 2;
  const lines = flags.map((flag, i) => {
    const notes = [flag.spec.unit, flag.spec.shownDefault === undefined ? undefined : `default: ${flag.spec.shownDefault}`].filter(Boolean);
    return `  ${left[i]!.padEnd(width)}${flag.spec.description}${notes.length === 0 ? '' : ` [${notes.join('; ')}]`}`;
  });
  return `usage: ${usage}\n\n${summary}\n\nflags:\n${lines.join('\n')}\n`;
}

/**
 * Reads `argv` with `command`'s flags: the values given, checked and converted by their kinds, by
 * option name, and the positionals.
 * @throws UsageError for an unknown flag, a missing value or an unexpected argument; InvalidOptionError
 *   naming the flag for a value it cannot take.
 */
export function readArgs(command: Command, argv: readonly string[]): { values: Record<string, unknown>; positionals: string[] } {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: command.positionals,
      options: Object.fromEntries(
        command.flags.map((flag) => [
          flag.name,
          { type: flag.spec.placeholder === undefined ? ('boolean' as const) : ('string' as const), multiple: flag.multiple === true, ...(flag.short === undefined ? {} : { short: flag.short }) },
        ]),
      ),
    });
  } catch (error) {
    const code = (error as { code?: string }).code;
    const message = (error as Error).message;
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
      const flag = /'([^']+)'/.exec(message)?.[1] ?? message;
      throw new UsageError(`unknown flag ${flag} for ${command.name}; see mcp-rx-streams ${command.name} --help`);
    }
    if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') throw new UsageError(`${command.name} takes no arguments besides flags; see mcp-rx-streams ${command.name} --help`);
    throw new UsageError(message.split('\n')[0]!);
  }
  const values: Record<string, unknown> = {};
  for (const flag of command.flags) {
    const given = (parsed.values as Record<string, string | boolean | (string | boolean)[] | undefined>)[flag.name];
    if (given === undefined) continue;
    const read = (text: string | boolean) => (typeof text === 'boolean' ? text : flag.spec.read(`--${flag.name}`, text));
    const value = Array.isArray(given) ? given.map(read) : read(given);
    // A former name after its flag (flagsOf's order): the two must agree.
    if (flag.renamedTo !== undefined && flag.option in values && !isDeepStrictEqual(values[flag.option], value)) {
      throw new UsageError(`--${flag.name} is the former name of --${flag.renamedTo}, given another value; give --${flag.renamedTo} alone`);
    }
    values[flag.option] = value;
  }
  return { values, positionals: parsed.positionals };
}
