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
    listenMaxQueue: 1000,
    listenMaxQueueBytes: 1_048_576,
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
      listenMaxQueue: undefined,
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
  const options = resolveListenOptions({ keepAliveInterval: 5, listenMaxQueue: 1, closeNotice: 'result-only' });
  deepStrictEqual(options, {
    keepAliveInterval: 5,
    listenIdleTimeout: 1_800_000,
    maxStreamLifetime: 3_600_000,
    listenMaxQueue: 1,
    listenMaxQueueBytes: 1_048_576,
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
  [resolveListenOptions, 'listenMaxQueue'],
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
    'keepAliveIntervall must be one of the known options (keepAliveInterval, listenIdleTimeout, maxStreamLifetime, listenMaxQueue, listenMaxQueueBytes, closeNotice), got 5000',
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
    'maxStreams must be one of the known options (keepAliveInterval, listenIdleTimeout, maxStreamLifetime, listenMaxQueue, listenMaxQueueBytes, closeNotice), got 10',
  );
});

test('unknown keys are reported before bad values', () => {
  throwsOption(
    () => resolveListenOptions({ keepAliveInterval: -1, typo: 1 } as Partial<ListenOptions>),
    'typo',
    'typo must be one of the known options (keepAliveInterval, listenIdleTimeout, maxStreamLifetime, listenMaxQueue, listenMaxQueueBytes, closeNotice), got 1',
  );
});

test('options are checked in declaration order', () => {
  throwsOption(
    () => resolveListenOptions({ closeNotice: 'x' as never, listenMaxQueue: 0, keepAliveInterval: 0 }),
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

test.run();
