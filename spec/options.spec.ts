import { test } from 'uvu';
import { deepStrictEqual, equal, ok, throws } from 'node:assert/strict';
import { InvalidOptionError, McpRxError } from '../lib/errors.js';
import {
  DEFAULT_LISTEN_OPTIONS,
  DEFAULT_STREAM_LIMITS,
  MAX_TIMER_DELAY,
  resolveListenOptions,
  resolveStreamLimits,
} from '../lib/options.js';
import { positiveInteger } from '../lib/validate.js';
import type { ListenOptions, StreamLimits } from '../lib/options.js';
import { LISTEN_OPTIONS, STREAM_LIMITS } from '../lib/options.js';
import { defaultsOf, option, readOptions, resolveOptions, type AnyOptionTable } from '../lib/optionTable.js';
import { SESSION_OPTIONS } from '../protocol/legacy/sessionOptions.js';
import { PROTOCOL_OPTIONS, PROTOCOL_SETTINGS } from '../protocol/options.js';
import { HTTP_SETTINGS } from '../adapters/http/options.js';
import { FILE_SETTINGS } from '../adapters/reference/fileOptions.js';
import { FLEET_SETTINGS } from '../adapters/reference/fleet.js';
import { AUTH_SETTINGS } from '../adapters/reference/auth.js';
import { REFERENCE_SETTINGS, REFERENCE_TABLES, resolveReferenceOptions } from '../adapters/reference/options.js';
import { SERVED_UPSTREAMS } from '../adapters/upstream/served.js';
import { McpEndpoint } from '../adapters/http/endpoint.js';
import { Hub } from '../lib/hub.js';

/** Asserts `run` throws an InvalidOptionError naming `option`, with exactly this message. */
function throwsOption(run: () => unknown, option: string, message: string): void {
  throws(run, (error: unknown) => {
    ok(error instanceof InvalidOptionError, `expected an InvalidOptionError, got ${String(error)}`);
    equal(error.message, message);
    equal(error.code, 'ERR_MCP_RX_INVALID_OPTION');
    equal(error.info.option, option);
    return true;
  });
}

/** Every kind of number or non-number that is not a positive safe integer, with how the message shows it. */
const BAD_INTEGERS: ReadonlyArray<readonly [unknown, string]> = [
  [0, '0'],
  [-0, '0'],
  [-5, '-5'],
  [1.5, '1.5'],
  [Number.NaN, 'NaN'],
  [Number.POSITIVE_INFINITY, 'Infinity'],
  [Number.NEGATIVE_INFINITY, '-Infinity'],
  [Number.MAX_SAFE_INTEGER + 1, '9007199254740992'],
  ['15000', '"15000"'],
  [15000n, '15000n'],
  [null, 'null'],
  [true, 'true'],
  [{}, '{}'],
  [[1000], '[1000]'],
];

/* Defaults */

test('listen defaults', () => {
  deepStrictEqual(DEFAULT_LISTEN_OPTIONS, {
    keepAliveInterval: 15_000,
    listenIdleTimeout: 1_800_000,
    maxStreamLifetime: 3_600_000,
    maxStreamQueue: 1000,
    maxStreamQueueBytes: 1_048_576,
    closeNotice: 'cancelled-then-result',
  });
  ok(Object.isFrozen(DEFAULT_LISTEN_OPTIONS));
  deepStrictEqual(resolveListenOptions(), DEFAULT_LISTEN_OPTIONS);
  deepStrictEqual(resolveListenOptions({}), DEFAULT_LISTEN_OPTIONS);
});

test('stream limit defaults', () => {
  deepStrictEqual(DEFAULT_STREAM_LIMITS, { maxListensPerPrincipal: 4, maxStreams: 1000 });
  ok(Object.isFrozen(DEFAULT_STREAM_LIMITS));
  deepStrictEqual(resolveStreamLimits(), DEFAULT_STREAM_LIMITS);
  deepStrictEqual(resolveStreamLimits({}), DEFAULT_STREAM_LIMITS);
});

test('undefined values mean the default', () => {
  deepStrictEqual(
    resolveListenOptions({
      keepAliveInterval: undefined,
      listenIdleTimeout: undefined,
      maxStreamLifetime: undefined,
      maxStreamQueue: undefined,
      closeNotice: undefined,
    } as unknown as Partial<ListenOptions>),
    DEFAULT_LISTEN_OPTIONS,
  );
  deepStrictEqual(resolveStreamLimits({ maxStreams: undefined } as unknown as Partial<StreamLimits>), DEFAULT_STREAM_LIMITS);
});

test('null input means no options', () => {
  deepStrictEqual(resolveListenOptions(null as unknown as undefined), DEFAULT_LISTEN_OPTIONS);
  deepStrictEqual(resolveStreamLimits(null as unknown as undefined), DEFAULT_STREAM_LIMITS);
});

test('given values override only their own option, results frozen', () => {
  const options = resolveListenOptions({ keepAliveInterval: 5, maxStreamQueue: 1, closeNotice: 'result-only' });
  deepStrictEqual(options, {
    keepAliveInterval: 5,
    listenIdleTimeout: 1_800_000,
    maxStreamLifetime: 3_600_000,
    maxStreamQueue: 1,
    maxStreamQueueBytes: 1_048_576,
    closeNotice: 'result-only',
  });
  ok(Object.isFrozen(options));
  const limits = resolveStreamLimits({ maxListensPerPrincipal: 1 });
  deepStrictEqual(limits, { maxListensPerPrincipal: 1, maxStreams: 1000 });
  ok(Object.isFrozen(limits));
});

test('the input object is not kept', () => {
  const input = { keepAliveInterval: 10 };
  const options = resolveListenOptions(input);
  input.keepAliveInterval = -1;
  equal(options.keepAliveInterval, 10);
});

test('closeNotice accepts both modes', () => {
  equal(resolveListenOptions({ closeNotice: 'cancelled-then-result' }).closeNotice, 'cancelled-then-result');
  equal(resolveListenOptions({ closeNotice: 'result-only' }).closeNotice, 'result-only');
});

/* Bad values, each option × each kind */

for (const name of ['keepAliveInterval', 'listenIdleTimeout', 'maxStreamLifetime'] as const) {
  for (const [value, shown] of BAD_INTEGERS) {
    test(`${name}: ${shown} is refused`, () => {
      throwsOption(
        () => resolveListenOptions({ [name]: value } as Partial<ListenOptions>),
        name,
        `${name} must be a positive integer of milliseconds, got ${shown}`,
      );
    });
  }

  test(`${name}: 1 ms and MAX_TIMER_DELAY accepted, one more refused`, () => {
    equal(resolveListenOptions({ [name]: 1 })[name], 1);
    equal(MAX_TIMER_DELAY, 2_147_483_647);
    equal(resolveListenOptions({ [name]: MAX_TIMER_DELAY })[name], MAX_TIMER_DELAY);
    throwsOption(
      () => resolveListenOptions({ [name]: MAX_TIMER_DELAY + 1 }),
      name,
      `${name} must be a positive integer of milliseconds no greater than 2147483647, got 2147483648`,
    );
  });
}

for (const [resolve, name] of [
  [resolveListenOptions, 'maxStreamQueue'],
  [resolveStreamLimits, 'maxListensPerPrincipal'],
  [resolveStreamLimits, 'maxStreams'],
] as const) {
  for (const [value, shown] of BAD_INTEGERS) {
    test(`${name}: ${shown} is refused`, () => {
      throwsOption(() => resolve({ [name]: value } as never), name, `${name} must be a positive integer, got ${shown}`);
    });
  }

  test(`${name}: counts have no timer ceiling`, () => {
    equal((resolve({ [name]: MAX_TIMER_DELAY + 1 } as never) as Record<string, number>)[name], MAX_TIMER_DELAY + 1);
    equal((resolve({ [name]: 1 } as never) as Record<string, number>)[name], 1);
  });
}

for (const [value, shown] of [
  ['resultOnly', '"resultOnly"'],
  ['', '""'],
  ['RESULT-ONLY', '"RESULT-ONLY"'],
  [null, 'null'],
  [true, 'true'],
  [1, '1'],
] as const) {
  test(`closeNotice: ${shown} is refused`, () => {
    throwsOption(
      () => resolveListenOptions({ closeNotice: value } as unknown as Partial<ListenOptions>),
      'closeNotice',
      `closeNotice must be "cancelled-then-result" or "result-only", got ${shown}`,
    );
  });
}

/* Unknown keys */

test('a misspelt listen option is refused by name', () => {
  throwsOption(
    () => resolveListenOptions({ keepAliveIntervall: 5000 } as Partial<ListenOptions>),
    'keepAliveIntervall',
    'keepAliveIntervall must be one of the known options (keepAliveInterval, listenIdleTimeout, maxStreamLifetime, maxStreamQueue, maxStreamQueueBytes, closeNotice), got 5000',
  );
});

test('a misspelt stream limit is refused by name, even when undefined', () => {
  throwsOption(
    () => resolveStreamLimits({ maxStream: undefined } as Partial<StreamLimits>),
    'maxStream',
    'maxStream must be one of the known options (maxListensPerPrincipal, maxStreams), got undefined',
  );
});

test('an option of the other group is unknown here', () => {
  throwsOption(
    () => resolveListenOptions({ maxStreams: 10 } as Partial<ListenOptions>),
    'maxStreams',
    'maxStreams must be one of the known options (keepAliveInterval, listenIdleTimeout, maxStreamLifetime, maxStreamQueue, maxStreamQueueBytes, closeNotice), got 10',
  );
});

test('unknown keys are reported before bad values', () => {
  throwsOption(
    () => resolveListenOptions({ keepAliveInterval: -1, typo: 1 } as Partial<ListenOptions>),
    'typo',
    'typo must be one of the known options (keepAliveInterval, listenIdleTimeout, maxStreamLifetime, maxStreamQueue, maxStreamQueueBytes, closeNotice), got 1',
  );
});

test('options are checked in declaration order', () => {
  throwsOption(
    () => resolveListenOptions({ closeNotice: 'x' as never, maxStreamQueue: 0, keepAliveInterval: 0 }),
    'keepAliveInterval',
    'keepAliveInterval must be a positive integer of milliseconds, got 0',
  );
});

test('a non-object input is refused', () => {
  for (const [input, shown] of [
    [5, '5'],
    ['fast', '"fast"'],
    [[1], '[1]'],
  ] as const) {
    throwsOption(() => resolveListenOptions(input as never), 'options', `options must be an object, got ${shown}`);
    throwsOption(() => resolveStreamLimits(input as never), 'options', `options must be an object, got ${shown}`);
  }
});

/* positiveInteger */

test('positiveInteger returns a positive safe integer unchanged', () => {
  equal(positiveInteger('n', 1), 1);
  equal(positiveInteger('n', Number.MAX_SAFE_INTEGER), Number.MAX_SAFE_INTEGER);
});

test('positiveInteger refuses each bad kind, naming the option and the unit', () => {
  for (const [value, shown] of BAD_INTEGERS) {
    throwsOption(() => positiveInteger('myOption', value), 'myOption', `myOption must be a positive integer, got ${shown}`);
    throwsOption(() => positiveInteger('myDelay', value, 'milliseconds'), 'myDelay', `myDelay must be a positive integer of milliseconds, got ${shown}`);
  }
});

test('the error keeps the rejected value in info', () => {
  try {
    resolveListenOptions({ keepAliveInterval: -5 });
  } catch (error) {
    ok(error instanceof InvalidOptionError);
    ok(error instanceof McpRxError);
    equal(error.code, 'ERR_MCP_RX_INVALID_OPTION');
    deepStrictEqual(error.info, { option: 'keepAliveInterval', value: -5 });
    equal(error.message, 'keepAliveInterval must be a positive integer of milliseconds, got -5');
    return;
  }
  throw new Error('expected InvalidOptionError');
});


/* The option tables (lib/optionTable.ts): each option declared once */

test('option.milliseconds: checked in code and read from text, from its minimum to MAX_TIMER_DELAY', () => {
  const wait = option.milliseconds({ min: 0, default: 1000, description: 'd' });
  equal(wait.check('wait', 0), 0);
  throwsOption(() => wait.check('wait', -1), 'wait', 'wait must be a non-negative integer of milliseconds, got -1');
  throwsOption(() => wait.check('wait', MAX_TIMER_DELAY + 1), 'wait', 'wait must be a non-negative integer of milliseconds no greater than 2147483647, got 2147483648');
  equal(wait.read('--wait', '0'), 0);
  const ttl = option.milliseconds({ min: 30, default: 5000, description: 'd' });
  throwsOption(() => ttl.check('ttl', 29), 'ttl', 'ttl must be a positive integer of milliseconds, at least 30, got 29');
  throwsOption(() => ttl.check('ttl', MAX_TIMER_DELAY + 1), 'ttl', 'ttl must be a positive integer of milliseconds, at least 30, no greater than 2147483647, got 2147483648');
  throwsOption(() => ttl.read('--ttl', '29'), '--ttl', '--ttl must be an integer from 30 to 2147483647 (milliseconds), got "29"');
  for (const text of ['', '1.5', '-1', ' 40', '1e3', '2147483648']) {
    throwsOption(() => ttl.read('--ttl', text), '--ttl', `--ttl must be an integer from 30 to 2147483647 (milliseconds), got ${JSON.stringify(text)}`);
  }
  equal(ttl.read('--ttl', '2147483647'), MAX_TIMER_DELAY);
  deepStrictEqual([ttl.unit, ttl.placeholder, ttl.shownDefault], ['milliseconds', 'MS', '5000']);
});

test('option.count, bytes, choice, port, text: the message of their kind, the unit and default --help shows', () => {
  const queue = option.count({ unit: 'notifications', default: 1000, description: 'd' });
  throwsOption(() => queue.check('queue', 0), 'queue', 'queue must be a positive integer, got 0');
  throwsOption(() => queue.read('--queue', 'x'), '--queue', '--queue must be an integer from 1 to 9007199254740991 (notifications), got "x"');
  deepStrictEqual([queue.unit, queue.placeholder, queue.shownDefault], ['notifications', 'N', '1000']);
  const body = option.bytes({ default: 8 * 1_048_576, description: 'd' });
  throwsOption(() => body.check('body', 1.5), 'body', 'body must be a positive integer of bytes, got 1.5');
  deepStrictEqual([body.unit, body.placeholder, body.shownDefault], ['bytes', 'BYTES', '8388608 (8 MiB)']);
  equal(option.bytes({ default: 1000, description: 'd' }).shownDefault, '1000');
  const mode = option.choice(['hold', 'complete'], { default: 'hold', description: 'd' });
  throwsOption(() => mode.check('mode', 'Hold'), 'mode', 'mode must be "hold" or "complete", got "Hold"');
  throwsOption(() => mode.read('--mode', 'Hold'), '--mode', '--mode must be hold or complete, got "Hold"');
  equal(mode.read('--mode', 'complete'), 'complete');
  const port = option.port({ default: 3000, description: 'd' });
  throwsOption(() => port.read('--port', '65536'), '--port', '--port must be an integer from 0 to 65535 (a TCP port; 0 picks a free one), got "65536"');
  equal(port.read('--port', '0'), 0);
  const dir = option.text({ placeholder: 'DIR', rule: { nonEmpty: true, what: 'a directory path' }, description: 'd', shownDefault: 'none' });
  throwsOption(() => dir.read('--dir', ''), '--dir', '--dir must be a directory path, got ""');
  deepStrictEqual([dir.default, dir.shownDefault, dir.placeholder], [undefined, 'none', 'DIR']);
  equal(option.toggle({ description: 'd' }).placeholder, undefined);
});

test('readOptions takes only its table\'s options from a larger object, each checked, undefined meaning the default', () => {
  deepStrictEqual(readOptions(STREAM_LIMITS, { maxStreams: 5, maxListensPerPrincipal: undefined, keepAliveInterval: -1 }), { maxListensPerPrincipal: 4, maxStreams: 5 });
  throwsOption(() => readOptions(STREAM_LIMITS, { maxStreams: 0 }), 'maxStreams', 'maxStreams must be a positive integer, got 0');
  const table = { a: option.count({ unit: 'a', default: 1, description: 'd' }), b: option.count({ unit: 'b', shownDefault: 'none', description: 'd' }) };
  deepStrictEqual(readOptions(table, {}), { a: 1, b: undefined });
  deepStrictEqual(defaultsOf(table), { a: 1 });
  ok(Object.isFrozen(defaultsOf(table)));
  throwsOption(() => resolveOptions('options', table, { c: 1, a: 0 }), 'c', 'c must be one of the known options (a, b), got 1');
});

/** Every table an option of the library is declared in. */
const TABLES: Readonly<Record<string, AnyOptionTable>> = {
  LISTEN_OPTIONS,
  STREAM_LIMITS,
  SESSION_OPTIONS,
  PROTOCOL_SETTINGS,
  HTTP_SETTINGS,
  FILE_SETTINGS,
  REFERENCE_SETTINGS,
  AUTH_SETTINGS,
  FLEET_SETTINGS,
  SERVED_UPSTREAMS,
};

test('every declared default passes its own check, and the default --help shows reads back to it', () => {
  for (const [table, options] of Object.entries(TABLES)) {
    for (const [name, spec] of Object.entries(options)) {
      ok(spec.description.length > 10, `${table}.${name} has no description`);
      if (spec.default === undefined) {
        ok(spec.shownDefault !== undefined, `${table}.${name}: without a default, --help must say what its absence means`);
        continue;
      }
      deepStrictEqual(spec.check(name, spec.default), spec.default, `${table}.${name}`);
      if (spec.placeholder !== undefined) deepStrictEqual(spec.read(`--${name}`, spec.shownDefault!.split(' ')[0]!), spec.default, `${table}.${name}`);
    }
  }
});

test('an option is declared in one table only, and the tables are what the endpoint and the reference server know', () => {
  const names = Object.values(TABLES).flatMap((table) => Object.keys(table));
  deepStrictEqual(names.filter((name, i) => names.indexOf(name) !== i), []);
  for (const name of [...Object.keys(LISTEN_OPTIONS), ...Object.keys(STREAM_LIMITS), ...Object.keys(SESSION_OPTIONS), ...Object.keys(PROTOCOL_SETTINGS)]) {
    ok((PROTOCOL_OPTIONS as readonly string[]).includes(name), `McpEndpoint does not know ${name}`);
  }
  deepStrictEqual(
    REFERENCE_TABLES.flatMap((table) => Object.keys(table)).sort(),
    Object.values(TABLES)
      .flatMap((table) => Object.keys(table))
      .sort(),
    'startReferenceServer takes every value option of what it is built from',
  );
});

test('an option declared with its former name (formerly) reads it as itself, checked under the name given; both names with different values are refused', () => {
  const table = { limit: option.count({ unit: 'things', default: 5, description: 'the most things', formerly: 'oldLimit' }) };
  deepStrictEqual(readOptions(table, { oldLimit: 3 }), { limit: 3 });
  deepStrictEqual(readOptions(table, { oldLimit: 3, limit: 3 }), { limit: 3 });
  deepStrictEqual(resolveOptions('options', table, { oldLimit: 3 }), { limit: 3 });
  throwsOption(() => readOptions(table, { oldLimit: 0 }), 'oldLimit', 'oldLimit must be a positive integer, got 0');
  throwsOption(() => readOptions(table, { oldLimit: 3, limit: 4 }), 'oldLimit', 'oldLimit must be left out or equal to limit (its new name, given as 4), got 3');
  // An unknown key is told the current names only.
  throwsOption(() => resolveOptions('options', table, { limt: 1 }), 'limt', 'limt must be one of the known options (limit), got 1');
});

test('the former names listenMaxQueue and listenMaxQueueBytes are read as maxStreamQueue and maxStreamQueueBytes; both names with different values are refused (issue 30)', () => {
  // resolveListenOptions (and so listenPipeline, listenStream): the old name, the new one, both alike.
  deepStrictEqual(resolveListenOptions({ listenMaxQueue: 7, listenMaxQueueBytes: 4096 }), resolveListenOptions({ maxStreamQueue: 7, maxStreamQueueBytes: 4096 }));
  equal(resolveListenOptions({ listenMaxQueue: 7, maxStreamQueue: 7 }).maxStreamQueue, 7);
  equal(resolveListenOptions({ listenMaxQueue: undefined, maxStreamQueue: 9 }).maxStreamQueue, 9);
  ok(!('listenMaxQueue' in resolveListenOptions({ listenMaxQueue: 7 })), 'the resolved options have the new names only');
  throwsOption(
    () => resolveListenOptions({ listenMaxQueue: 7, maxStreamQueue: 8 }),
    'listenMaxQueue',
    'listenMaxQueue must be left out or equal to maxStreamQueue (its new name, given as 8), got 7',
  );
  throwsOption(() => resolveListenOptions({ listenMaxQueueBytes: 0 }), 'listenMaxQueueBytes', 'listenMaxQueueBytes must be a positive integer of bytes, got 0');
  // McpEndpoint: each name reaches the streams' queue; both with different values is an InvalidOptionError.
  const hub = new Hub();
  for (const options of [{ listenMaxQueue: 3, listenMaxQueueBytes: 2048 }, { maxStreamQueue: 3, maxStreamQueueBytes: 2048 }]) {
    const endpoint = new McpEndpoint({ hub, ...options });
    equal(endpoint.listenOptions.maxStreamQueue, 3);
    equal(endpoint.listenOptions.maxStreamQueueBytes, 2048);
    endpoint.close();
  }
  throwsOption(
    () => new McpEndpoint({ hub, maxStreamQueueBytes: 2048, listenMaxQueueBytes: 4096 }),
    'listenMaxQueueBytes',
    'listenMaxQueueBytes must be left out or equal to maxStreamQueueBytes (its new name, given as 2048), got 4096',
  );
  hub.close();
});

test('McpEndpoint and startReferenceServer accept every option of their tables at its default (issue 31 item 8)', () => {
  const hub = new Hub();
  const endpointTables: AnyOptionTable[] = [LISTEN_OPTIONS, STREAM_LIMITS, SESSION_OPTIONS, PROTOCOL_SETTINGS, HTTP_SETTINGS];
  new McpEndpoint({ hub, ...Object.assign({}, ...endpointTables.map((table) => defaultsOf(table))) }).close();
  hub.close();
  const all = Object.assign({ redis: 'redis://127.0.0.1:6379' }, ...REFERENCE_TABLES.map((table) => defaultsOf(table)));
  deepStrictEqual(resolveReferenceOptions(all).endpoint.bodyTimeout, 10_000);
  deepStrictEqual(resolveReferenceOptions(all).endpoint.maxBodyBytes, 1_048_576);
});

test.run();
