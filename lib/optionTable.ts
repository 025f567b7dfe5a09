/**
 * Options declared once (DESIGN §2): each option of the library is one entry of a table, in the file
 * that uses it, with its name, the kind of value it takes, its unit, its default and a one-line
 * description. Everything else is read from the entry: the check a resolver runs on a value given in
 * code (the InvalidOptionError message naming the option), the options the reference server
 * accepts and passes on, and the `serve` command's flag (its name, how its text is read, its
 * `--help` line). So a new option is one new entry, and the CLI, the reference server and the
 * endpoint cannot disagree about it.
 *
 * @example
 * ```ts
 * const TIMING = {
 *   keepAliveInterval: option.milliseconds({ default: 15_000, description: 'time between ":" keep-alive comments on a stream' }),
 * } satisfies OptionTable<{ keepAliveInterval: number }>;
 * resolveOptions('options', TIMING, { keepAliveInterval: -5 });
 * // throws InvalidOptionError: keepAliveInterval must be a positive integer of milliseconds, got -5
 * TIMING.keepAliveInterval.read('--keep-alive-interval', 'soon');
 * // throws InvalidOptionError: --keep-alive-interval must be an integer from 1 to 2147483647 (milliseconds), got "soon"
 * ```
 */
import { MAX_TIMER_DELAY } from './clock.js';
import { InvalidOptionError } from './errors.js';
import { boolean, knownKeys, oneOf, port as validPort, positiveInteger, string, type StringRule } from './validate.js';

/** One option, declared once. Made by the {@link option} builders. */
export interface OptionSpec<T> {
  /** What the option does, in one line: the flag's `--help` line. */
  readonly description: string;
  /** The value used when the option is not given; `undefined`: none (the option is off). */
  readonly default: T | undefined;
  /** The default as `--help` shows it (`1048576 (1 MiB)`, `none (no authentication)`); `undefined` when there is none. */
  readonly shownDefault: string | undefined;
  /** What the value counts or is, as `--help` shows it (`milliseconds`, `bytes`, `notifications`); `undefined` when the value says it. */
  readonly unit: string | undefined;
  /** What `--help` writes for the value (`MS`, `N`, `BYTES`, `MODE`, `DIR`…); `undefined` for a switch, which takes none. */
  readonly placeholder: string | undefined;
  /**
   * `false` when the option has no command-line flag; else its flag is its name in kebab case
   * (`keepAliveInterval` is `--keep-alive-interval`: an option keeps its name).
   */
  readonly flag: false | undefined;
  /** The option's former name, still read in code as this one (deprecated); `undefined` when it has none. */
  readonly formerly: string | undefined;
  /** A value given in code: returned typed, or an InvalidOptionError naming `label` (the option's public name). */
  check(label: string, value: unknown): T;
  /** A value written as text (a command-line flag's): converted and checked, or an InvalidOptionError naming `label` (`--keep-alive-interval`). */
  read(label: string, text: string): T;
}

/** A table of options: an {@link OptionSpec} for every member of `O`, checked in declaration order. */
export type OptionTable<O> = { readonly [K in keyof O]-?: OptionSpec<Exclude<O[K], undefined>> };

/** Any table, its options' kinds unknown: what is read from every table alike (a command's flags). */
export type AnyOptionTable = Readonly<Record<string, OptionSpec<unknown>>>;

/** What every builder of {@link option} takes. */
export interface Declaration<T> {
  /** One line: what the option does. */
  readonly description: string;
  /** Omitted: none (the option is off until given). */
  readonly default?: T;
  /** How `--help` shows the default, where the value does not say it all; required when there is no default (what its absence means). */
  readonly shownDefault?: string;
  /** `false`: the option has no command-line flag. */
  readonly flag?: false;
  /**
   * The option's former name, when it was renamed: still accepted in code (an options object), read
   * as this option and checked under the name it was given by; giving both names with different
   * values is refused. Its flag has the new name only.
   */
  readonly formerly?: string;
}

const MIB = 1_048_576;

/**
 * An integer written as decimal digits, from `min` to `max`; `unit` says what it counts in the message.
 * @throws InvalidOptionError naming `label`: `--port must be an integer from 0 to 65535 (a TCP port; 0 picks a free one), got "x"`.
 */
function readInteger(label: string, text: string, min: number, max: number, unit: string): number {
  const value = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new InvalidOptionError(label, `an integer from ${min} to ${max} (${unit})`, text);
  }
  return value;
}

/** The entry of `declared`, with how the value is checked, read and shown. */
function spec<T>(
  declared: Declaration<T>,
  kind: { readonly unit?: string; readonly placeholder: string | undefined; check(label: string, value: unknown): T; read(label: string, text: string): T; show?(value: T): string },
): OptionSpec<T> {
  const shown = declared.default === undefined ? undefined : (kind.show?.(declared.default) ?? String(declared.default));
  return Object.freeze({
    description: declared.description,
    default: declared.default,
    shownDefault: declared.shownDefault ?? shown,
    unit: kind.unit,
    placeholder: kind.placeholder,
    flag: declared.flag,
    formerly: declared.formerly,
    check: kind.check,
    read: kind.read,
  });
}

/**
 * The builders of {@link OptionSpec}: one per kind of value, each with its check (the message every
 * option of that kind shares) and its reading from text.
 * @internal
 */
export const option = {
  /**
   * A duration in milliseconds that becomes a timer's delay: an integer from `min` (1 unless given;
   * 0 when 0 means "not at all") to {@link MAX_TIMER_DELAY} (Node fires a longer timer at once).
   */
  milliseconds(declared: Declaration<number> & { readonly min?: number }): OptionSpec<number> {
    const min = declared.min ?? 1;
    const expected = `${min === 0 ? 'a non-negative' : 'a positive'} integer of milliseconds${min > 1 ? `, at least ${min}` : ''}`;
    return spec(declared, {
      unit: 'milliseconds',
      placeholder: 'MS',
      check: (label, value) => {
        if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) throw new InvalidOptionError(label, expected, value);
        if (value > MAX_TIMER_DELAY) throw new InvalidOptionError(label, `${expected}${min > 1 ? ',' : ''} no greater than ${MAX_TIMER_DELAY}`, value);
        return value;
      },
      read: (label, text) => readInteger(label, text, min, MAX_TIMER_DELAY, 'milliseconds'),
    });
  },

  /** A count of `unit` (`notifications`, `streams`…): a positive safe integer. */
  count(declared: Declaration<number> & { readonly unit: string }): OptionSpec<number> {
    return spec(declared, {
      unit: declared.unit,
      placeholder: 'N',
      check: (label, value) => positiveInteger(label, value),
      read: (label, text) => readInteger(label, text, 1, Number.MAX_SAFE_INTEGER, declared.unit),
    });
  },

  /** A size in bytes: a positive safe integer, shown in MiB too where it is whole MiB. */
  bytes(declared: Declaration<number>): OptionSpec<number> {
    return spec(declared, {
      unit: 'bytes',
      placeholder: 'BYTES',
      check: (label, value) => positiveInteger(label, value, 'bytes'),
      read: (label, text) => readInteger(label, text, 1, Number.MAX_SAFE_INTEGER, 'bytes'),
      show: (value) => (value % MIB === 0 ? `${value} (${value / MIB} MiB)` : String(value)),
    });
  },

  /** One of `choices`, written as itself (`--help` shows it as `placeholder`, `MODE` unless given). */
  choice<T extends string>(choices: readonly T[], declared: Declaration<T> & { readonly placeholder?: string }): OptionSpec<T> {
    return spec(declared, {
      placeholder: declared.placeholder ?? 'MODE',
      check: (label, value) => oneOf(label, value, choices),
      read: (label, text) => {
        const found = choices.find((choice) => choice === text);
        if (found === undefined) throw new InvalidOptionError(label, choices.join(' or '), text);
        return found;
      },
    });
  },

  /** A TCP port: an integer from 0 (any free port) to 65535. */
  port(declared: Declaration<number>): OptionSpec<number> {
    return spec(declared, {
      unit: 'TCP port, 0 = any free one',
      placeholder: 'N',
      check: (label, value) => validPort(label, value),
      read: (label, text) => readInteger(label, text, 0, 65_535, 'a TCP port; 0 picks a free one'),
    });
  },

  /** A string, as `rule` says; read from text as it is given in code. */
  text(declared: Declaration<string> & { readonly placeholder: string; readonly rule: StringRule }): OptionSpec<string> {
    const check = (label: string, value: unknown) => string(label, value, declared.rule);
    return spec(declared, { placeholder: declared.placeholder, check, read: check });
  },

  /** A switch: `true` when given, on a command line without a value. */
  toggle(declared: Declaration<boolean>): OptionSpec<boolean> {
    const check = (label: string, value: unknown) => boolean(label, value);
    return spec(declared, { placeholder: undefined, check, read: check });
  },

  /** A value of its own kind: how it is checked in code and read from text are given. */
  custom<T>(
    declared: Declaration<T> & {
      readonly placeholder: string;
      readonly unit?: string;
      check(label: string, value: unknown): T;
      read(label: string, text: string): T;
    },
  ): OptionSpec<T> {
    return spec(declared, declared);
  },
};

/** The option names of `table`, in declaration order. @internal */
export function namesOf<O>(table: OptionTable<O>): (keyof O & string)[] {
  return Object.keys(table) as (keyof O & string)[];
}

/**
 * The defaults of `table`, frozen, in declaration order (an option without one is left out).
 *
 * @example
 * ```ts
 * defaultsOf(LISTEN_OPTIONS).keepAliveInterval; // → 15000
 * ```
 * @internal
 */
export function defaultsOf<O>(table: OptionTable<O>): Readonly<O> {
  const defaults: Record<string, unknown> = {};
  for (const name of namesOf(table)) if (table[name].default !== undefined) defaults[name] = table[name].default;
  return Object.freeze(defaults) as Readonly<O>;
}

/**
 * The options of `table` among `given` (which may hold others): each checked in declaration order,
 * `undefined` (or absent) meaning its default; an option given by its former name
 * ({@link Declaration.formerly}) is read as itself. Nothing else of `given` is looked at.
 * @throws InvalidOptionError naming the first option with a value it cannot use (by the name it was
 *   given by), or a former name given beside the new one with another value.
 * @internal
 */
export function readOptions<O>(table: OptionTable<O>, given: object): O {
  const values: Record<string, unknown> = {};
  for (const name of namesOf(table)) {
    const spec = table[name];
    let value = (given as Record<string, unknown>)[name];
    const former = spec.formerly === undefined ? undefined : (given as Record<string, unknown>)[spec.formerly];
    if (former !== undefined) {
      if (value !== undefined && value !== former) {
        throw new InvalidOptionError(spec.formerly!, `left out or equal to ${name} (its new name, given as ${JSON.stringify(value)})`, former);
      }
      if (value === undefined) value = spec.check(spec.formerly!, former);
    }
    values[name] = value === undefined ? spec.default : spec.check(name, value);
  }
  return values as O;
}

/** The former names of `table`'s options ({@link Declaration.formerly}). */
function formerNamesOf(table: AnyOptionTable): string[] {
  const names: string[] = [];
  for (const spec of Object.values(table)) if (spec.formerly !== undefined) names.push(spec.formerly);
  return names;
}

/**
 * An options object of `table` alone, complete and frozen: a key that is not one of its options
 * (or a former name of one) is refused first (a misspelled option must not be ignored silently),
 * then each option is checked as {@link readOptions} does. `undefined` and `null` input mean no
 * options.
 * @throws InvalidOptionError naming `label` when `input` is not an object, else the unknown key or
 *   the first unusable value.
 * @internal
 */
export function resolveOptions<O>(label: string, table: OptionTable<O>, input: unknown): Readonly<O> {
  const formers = formerNamesOf(table as AnyOptionTable);
  // The unknown key's message lists the current names only: a former name is not a way to write it now.
  knownKeys(label, formers.some((name) => isObject(input) && Object.hasOwn(input, name)) ? without(input as object, formers) : input, namesOf(table));
  return Object.freeze(readOptions(table, (input ?? {}) as object));
}

function isObject(value: unknown): value is object {
  return typeof value === 'object' && value !== null;
}

/** A copy of `given` without `keys`. */
function without(given: object, keys: readonly string[]): object {
  const copy: Record<string, unknown> = { ...given };
  for (const key of keys) delete copy[key];
  return copy;
}
