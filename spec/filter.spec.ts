import { test } from 'uvu';
import { deepStrictEqual, equal, ok, throws } from 'node:assert/strict';
import {
  MAX_FILTER_ENTRIES,
  TASKS_EXTENSION_ID,
  acknowledgedNotification,
  authorizeListenFilter,
  clientDeclaresTasks,
  filterNames,
  parseListenFilter,
} from '../lib/filter.js';
import type { ListenFilter, ServerCapabilities } from '../lib/filter.js';
import { JsonRpcError } from '../lib/jsonrpc.js';

const ALL: ServerCapabilities = { tools: true, prompts: true, resources: true, tasks: true };
const TASKS_META = { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } };

/** Asserts `run` throws a JsonRpcError with exactly this code and message. */
function throwsRpc(run: () => unknown, code: number, message: string): void {
  throws(run, (error: unknown) => {
    ok(error instanceof JsonRpcError, `expected a JsonRpcError, got ${String(error)}`);
    equal(error.code, code);
    equal(error.message, message);
    return true;
  });
}

const uris = (count: number): string[] => Array.from({ length: count }, (_, i) => `file:///r/${i}`);

/* -32602: params and notifications */

for (const [label, params] of [
  ['undefined', undefined],
  ['null', null],
  ['a string', 'notifications'],
  ['an array', [{ notifications: {} }]],
] as const) {
  test(`params that is ${label} → -32602 naming params`, () => {
    throwsRpc(() => parseListenFilter(params, ALL), -32602, 'subscriptions/listen requires params to be an object');
  });
}

for (const [label, notifications] of [
  ['missing', undefined],
  ['null', null],
  ['an array', [{ toolsListChanged: true }]],
  ['a string', 'toolsListChanged'],
  ['true', true],
] as const) {
  test(`notifications ${label} → -32602 naming params.notifications`, () => {
    const params = notifications === undefined ? { _meta: {} } : { notifications };
    throwsRpc(() => parseListenFilter(params, ALL), -32602, 'subscriptions/listen requires params.notifications to be an object');
  });
}

test('notifications inherited from the prototype does not count', () => {
  const params = Object.create({ notifications: { toolsListChanged: true } }) as object;
  throwsRpc(() => parseListenFilter(params, ALL), -32602, 'subscriptions/listen requires params.notifications to be an object');
});

/* -32602: field types */

for (const field of ['toolsListChanged', 'promptsListChanged', 'resourcesListChanged'] as const) {
  for (const bad of ['true', 1, null, {}, []]) {
    test(`${field}: ${JSON.stringify(bad)} → -32602 naming it`, () => {
      throwsRpc(
        () => parseListenFilter({ notifications: { [field]: bad } }, ALL),
        -32602,
        `params.notifications.${field} must be a boolean`,
      );
    });
  }
}

for (const [field, noun] of [
  ['resourceSubscriptions', 'URI'],
  ['taskIds', 'task id'],
] as const) {
  for (const bad of ['file:///a', null, {}, 3, true]) {
    test(`${field}: ${JSON.stringify(bad)} → -32602 naming it`, () => {
      throwsRpc(
        () => parseListenFilter({ notifications: { [field]: bad }, _meta: TASKS_META }, ALL),
        -32602,
        `params.notifications.${field} must be an array of ${noun} strings`,
      );
    });
  }

  test(`${field}: a non-string element → -32602 naming the element`, () => {
    throwsRpc(
      () => parseListenFilter({ notifications: { [field]: ['a', 'b', 7] }, _meta: TASKS_META }, ALL),
      -32602,
      `params.notifications.${field}[2] must be a string`,
    );
    throwsRpc(
      () => parseListenFilter({ notifications: { [field]: [null] }, _meta: TASKS_META }, ALL),
      -32602,
      `params.notifications.${field}[0] must be a string`,
    );
  });

  test(`${field}: ${MAX_FILTER_ENTRIES} entries accepted, ${MAX_FILTER_ENTRIES + 1} refused`, () => {
    const accepted = parseListenFilter({ notifications: { [field]: uris(1000) }, _meta: TASKS_META }, ALL);
    equal(accepted[field]?.length, 1000);
    throwsRpc(
      () => parseListenFilter({ notifications: { [field]: uris(1001) }, _meta: TASKS_META }, ALL),
      -32602,
      `params.notifications.${field} must list at most 1000 ${noun}s, got 1001`,
    );
  });

  test(`${field}: the limit counts entries before deduplication`, () => {
    const same = Array.from({ length: 1001 }, () => 'x');
    throwsRpc(
      () => parseListenFilter({ notifications: { [field]: same }, _meta: TASKS_META }, ALL),
      -32602,
      `params.notifications.${field} must list at most 1000 ${noun}s, got 1001`,
    );
  });
}

test('MAX_FILTER_ENTRIES is 1000', () => {
  equal(MAX_FILTER_ENTRIES, 1000);
});

test('type errors are reported for a field the server does not honour', () => {
  throwsRpc(() => parseListenFilter({ notifications: { promptsListChanged: 'yes' } }, {}), -32602, 'params.notifications.promptsListChanged must be a boolean');
  throwsRpc(
    () => parseListenFilter({ notifications: { resourceSubscriptions: 'file:///a' } }, { tools: true }),
    -32602,
    'params.notifications.resourceSubscriptions must be an array of URI strings',
  );
  throwsRpc(() => parseListenFilter({ notifications: { taskIds: [1] } }, {}), -32602, 'params.notifications.taskIds[0] must be a string');
});

test('errors come in a fixed field order', () => {
  const everythingWrong = {
    taskIds: 'x',
    resourceSubscriptions: 'x',
    resourcesListChanged: 'x',
    promptsListChanged: 'x',
    toolsListChanged: 'x',
  };
  throwsRpc(() => parseListenFilter({ notifications: everythingWrong }, ALL), -32602, 'params.notifications.toolsListChanged must be a boolean');
  const { toolsListChanged: _t, ...rest1 } = everythingWrong;
  throwsRpc(() => parseListenFilter({ notifications: rest1 }, ALL), -32602, 'params.notifications.promptsListChanged must be a boolean');
  const { promptsListChanged: _p, ...rest2 } = rest1;
  throwsRpc(() => parseListenFilter({ notifications: rest2 }, ALL), -32602, 'params.notifications.resourcesListChanged must be a boolean');
  const { resourcesListChanged: _r, ...rest3 } = rest2;
  throwsRpc(
    () => parseListenFilter({ notifications: rest3 }, ALL),
    -32602,
    'params.notifications.resourceSubscriptions must be an array of URI strings',
  );
  const { resourceSubscriptions: _s, ...rest4 } = rest3;
  throwsRpc(() => parseListenFilter({ notifications: rest4 }, ALL), -32602, 'params.notifications.taskIds must be an array of task id strings');
});

test('a -32602 in any field wins over the -32021 for taskIds', () => {
  throwsRpc(
    () => parseListenFilter({ notifications: { taskIds: ['t'], toolsListChanged: 1 } }, ALL),
    -32602,
    'params.notifications.toolsListChanged must be a boolean',
  );
});

/* -32021: taskIds without the tasks extension */

const MISSING_TASKS =
  'params.notifications.taskIds requires the tasks extension: declare "io.modelcontextprotocol/tasks" in ' +
  'params._meta["io.modelcontextprotocol/clientCapabilities"].extensions';

test('taskIds without the tasks extension → -32021 naming taskIds and the extension', () => {
  throwsRpc(() => parseListenFilter({ notifications: { taskIds: ['t-1'] } }, ALL), -32021, MISSING_TASKS);
  throwsRpc(
    () =>
      parseListenFilter(
        { notifications: { taskIds: ['t-1'] }, _meta: { 'io.modelcontextprotocol/clientCapabilities': {} } },
        ALL,
      ),
    -32021,
    MISSING_TASKS,
  );
});

test('-32021 carries the missing capability as error data, SDK-shaped', () => {
  try {
    parseListenFilter({ notifications: { taskIds: ['t-1'] } }, ALL);
  } catch (error) {
    ok(error instanceof JsonRpcError);
    deepStrictEqual(error.toResponse(5), {
      jsonrpc: '2.0',
      id: 5,
      error: {
        code: -32021,
        message: MISSING_TASKS,
        data: { requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } },
      },
    });
    return;
  }
  throw new Error('expected -32021');
});

test('taskIds with the tasks extension declared is honoured', () => {
  deepStrictEqual(parseListenFilter({ notifications: { taskIds: ['t-1', 't-2'] }, _meta: TASKS_META }, ALL), { taskIds: ['t-1', 't-2'] });
});

test('no -32021 when the server does not enable tasks: the field is just left out', () => {
  deepStrictEqual(parseListenFilter({ notifications: { taskIds: ['t-1'], toolsListChanged: true } }, { tools: true }), {
    toolsListChanged: true,
  });
});

test('no -32021 for an empty taskIds list', () => {
  deepStrictEqual(parseListenFilter({ notifications: { taskIds: [] } }, ALL), {});
});

test('clientDeclaresTasks: the 2026-07-28 extensions map', () => {
  equal(TASKS_EXTENSION_ID, 'io.modelcontextprotocol/tasks');
  equal(clientDeclaresTasks({ _meta: TASKS_META }), true);
  equal(
    clientDeclaresTasks({ _meta: { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': { x: 1 } } } } }),
    true,
  );
});

test('clientDeclaresTasks: the 2025-11-25 tasks capability', () => {
  equal(clientDeclaresTasks({ _meta: { 'io.modelcontextprotocol/clientCapabilities': { tasks: { requests: {} } } } }), true);
});

test('clientDeclaresTasks: anything else declares nothing', () => {
  for (const params of [
    undefined,
    null,
    'x',
    {},
    { _meta: null },
    { _meta: {} },
    { _meta: { 'io.modelcontextprotocol/clientCapabilities': null } },
    { _meta: { 'io.modelcontextprotocol/clientCapabilities': { extensions: {} } } },
    { _meta: { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': true } } } },
    { _meta: { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': null } } } },
    { _meta: { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': [] } } } },
    { _meta: { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/skills': {} } } } },
    { _meta: { 'io.modelcontextprotocol/clientCapabilities': { tasks: true } } },
    { _meta: { clientCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } } },
    { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } },
  ]) {
    equal(clientDeclaresTasks(params), false, JSON.stringify(params));
  }
});

/* The honoured subset */

/** A listen asking for every field, from a client that declares the tasks extension. */
const EVERY_FIELD = {
  notifications: {
    toolsListChanged: true,
    promptsListChanged: true,
    resourcesListChanged: true,
    resourceSubscriptions: ['file:///a'],
    taskIds: ['t'],
  },
  _meta: TASKS_META,
};

test('honours every field when every capability is advertised', () => {
  const filter = parseListenFilter(
    EVERY_FIELD,
    ALL,
  );
  deepStrictEqual(filter, {
    toolsListChanged: true,
    promptsListChanged: true,
    resourcesListChanged: true,
    resourceSubscriptions: ['file:///a'],
    taskIds: ['t'],
  });
});

test('each field is honoured only under its own capability', () => {
  const params = EVERY_FIELD;
  deepStrictEqual(parseListenFilter(params, {}), {});
  deepStrictEqual(parseListenFilter(params, { tools: true }), { toolsListChanged: true });
  deepStrictEqual(parseListenFilter(params, { prompts: true }), { promptsListChanged: true });
  deepStrictEqual(parseListenFilter(params, { resources: true }), { resourcesListChanged: true, resourceSubscriptions: ['file:///a'] });
  deepStrictEqual(parseListenFilter(params, { tasks: true }), { taskIds: ['t'] });
  deepStrictEqual(parseListenFilter(params, { tools: false, prompts: true, resources: false, tasks: false }), { promptsListChanged: true });
});

test('false subscribes to nothing and is left out', () => {
  deepStrictEqual(
    parseListenFilter({ notifications: { toolsListChanged: false, promptsListChanged: false, resourcesListChanged: true } }, ALL),
    { resourcesListChanged: true },
  );
});

test('unknown fields are ignored and left out', () => {
  const filter = parseListenFilter(
    { notifications: { toolsListChanged: true, elicitationsChanged: true, 'x.vendor/thing': ['a'], __proto__: { promptsListChanged: true } } },
    ALL,
  );
  deepStrictEqual(filter, { toolsListChanged: true });
  deepStrictEqual(Object.keys(filter), ['toolsListChanged']);
});

test('an empty notifications object subscribes to nothing', () => {
  deepStrictEqual(parseListenFilter({ notifications: {} }, ALL), {});
});

test('resource URIs: duplicates collapsed in first-seen order, exact match without normalization', () => {
  const filter = parseListenFilter(
    { notifications: { resourceSubscriptions: ['file:///b', 'file:///a', 'file:///b', 'FILE:///a', 'file:///a/', 'file:///a'] } },
    ALL,
  );
  deepStrictEqual(filter.resourceSubscriptions, ['file:///b', 'file:///a', 'FILE:///a', 'file:///a/']);
});

test('task ids are deduplicated too', () => {
  deepStrictEqual(parseListenFilter({ notifications: { taskIds: ['t2', 't1', 't2'] }, _meta: TASKS_META }, ALL).taskIds, ['t2', 't1']);
});

test('an empty URI list leaves the field out', () => {
  const filter = parseListenFilter({ notifications: { resourceSubscriptions: [], toolsListChanged: true } }, ALL);
  deepStrictEqual(filter, { toolsListChanged: true });
  equal('resourceSubscriptions' in filter, false);
});

test('the result is frozen and does not alias the request arrays', () => {
  const list = ['file:///a'];
  const filter = parseListenFilter({ notifications: { resourceSubscriptions: list } }, ALL);
  ok(Object.isFrozen(filter));
  ok(Object.isFrozen(filter.resourceSubscriptions));
  list.push('file:///b');
  deepStrictEqual(filter.resourceSubscriptions, ['file:///a']);
});

test('the result lists fields in the acknowledgment order whatever the request order', () => {
  const filter = parseListenFilter(
    {
      notifications: {
        taskIds: ['t'],
        resourceSubscriptions: ['u'],
        resourcesListChanged: true,
        promptsListChanged: true,
        toolsListChanged: true,
      },
      _meta: TASKS_META,
    },
    ALL,
  );
  deepStrictEqual(Object.keys(filter), ['toolsListChanged', 'promptsListChanged', 'resourcesListChanged', 'resourceSubscriptions', 'taskIds']);
});

/* Authorization */

const readable = new Set(['file:///ok-1', 'file:///ok-2', 'file:///ok-3']);

test('authorize: canRead false (sync) drops the URI silently, order kept', async () => {
  const filter = await authorizeListenFilter(
    { toolsListChanged: true, resourceSubscriptions: ['file:///ok-2', 'file:///secret', 'file:///ok-1'] },
    { canRead: (uri) => readable.has(uri) },
  );
  deepStrictEqual(filter, { toolsListChanged: true, resourceSubscriptions: ['file:///ok-2', 'file:///ok-1'] });
});

test('authorize: canRead false (async), throw and reject each drop the URI', async () => {
  const filter = await authorizeListenFilter(
    { resourceSubscriptions: ['file:///ok-1', 'file:///async-no', 'file:///throws', 'file:///rejects', 'file:///ok-3'] },
    {
      canRead: async (uri) => {
        if (uri === 'file:///throws') throw new Error('scope lookup failed');
        if (uri === 'file:///rejects') return Promise.reject(new Error('denied'));
        await Promise.resolve();
        return readable.has(uri);
      },
    },
  );
  deepStrictEqual(filter, { resourceSubscriptions: ['file:///ok-1', 'file:///ok-3'] });
});

test('authorize: a canRead that throws synchronously drops the URI', async () => {
  const filter = await authorizeListenFilter(
    { resourceSubscriptions: ['file:///ok-1', 'file:///boom'] },
    {
      canRead: (uri) => {
        if (uri === 'file:///boom') throw new TypeError('boom');
        return true;
      },
    },
  );
  deepStrictEqual(filter, { resourceSubscriptions: ['file:///ok-1'] });
});

test('authorize: subscribeHook false (sync/async), throw and reject each drop the URI', async () => {
  const filter = await authorizeListenFilter(
    { resourceSubscriptions: ['file:///yes', 'file:///sync-no', 'file:///async-no', 'file:///throws', 'file:///rejects', 'file:///async-yes'] },
    {
      subscribeHook: (uri) => {
        switch (uri) {
          case 'file:///sync-no':
            return false;
          case 'file:///async-no':
            return Promise.resolve(false);
          case 'file:///throws':
            throw new Error('hook failed');
          case 'file:///rejects':
            return Promise.reject(new Error('refused'));
          case 'file:///async-yes':
            return Promise.resolve(true);
          default:
            return true;
        }
      },
    },
  );
  deepStrictEqual(filter, { resourceSubscriptions: ['file:///yes', 'file:///async-yes'] });
});

test('authorize: the hook is called only for readable URIs, after canRead', async () => {
  const calls: string[] = [];
  const filter = await authorizeListenFilter(
    { resourceSubscriptions: ['file:///ok-1', 'file:///secret', 'file:///ok-2'] },
    {
      canRead: async (uri) => {
        calls.push(`read ${uri}`);
        return readable.has(uri);
      },
      subscribeHook: (uri) => {
        calls.push(`hook ${uri}`);
        return uri !== 'file:///ok-2';
      },
    },
  );
  deepStrictEqual(filter, { resourceSubscriptions: ['file:///ok-1'] });
  ok(!calls.includes('hook file:///secret'), calls.join(', '));
  ok(calls.indexOf('read file:///ok-1') < calls.indexOf('hook file:///ok-1'));
  ok(calls.indexOf('read file:///ok-2') < calls.indexOf('hook file:///ok-2'));
  equal(calls.length, 5);
});

test('authorize: URIs are checked concurrently', async () => {
  let inFlight = 0;
  let peak = 0;
  const filter = await authorizeListenFilter(
    { resourceSubscriptions: ['file:///1', 'file:///2', 'file:///3'] },
    {
      canRead: async () => {
        inFlight++;
        peak = Math.max(peak, inFlight);
        await new Promise<void>((resolve) => setImmediate(resolve));
        inFlight--;
        return true;
      },
    },
  );
  equal(peak, 3);
  deepStrictEqual(filter.resourceSubscriptions, ['file:///1', 'file:///2', 'file:///3']);
});

test('authorize: a truthy non-boolean is not a yes', async () => {
  const filter = await authorizeListenFilter(
    { resourceSubscriptions: ['file:///a', 'file:///b'] },
    { canRead: ((uri: string) => (uri === 'file:///a' ? true : 'yes')) as unknown as (uri: string) => boolean },
  );
  deepStrictEqual(filter, { resourceSubscriptions: ['file:///a'] });
});

test('authorize: every URI refused leaves the field out, other fields unchanged', async () => {
  const filter = await authorizeListenFilter(
    { promptsListChanged: true, resourceSubscriptions: ['file:///secret'], taskIds: ['t'] },
    { canRead: () => false },
  );
  deepStrictEqual(filter, { promptsListChanged: true, taskIds: ['t'] });
  deepStrictEqual(JSON.parse(JSON.stringify(acknowledgedNotification(filter))).params.notifications, { promptsListChanged: true, taskIds: ['t'] });
});

test('authorize: without an authorizer everything is readable', async () => {
  const input: ListenFilter = { resourceSubscriptions: ['file:///a', 'file:///b'] };
  deepStrictEqual(await authorizeListenFilter(input), input);
  deepStrictEqual(await authorizeListenFilter(input, {}), input);
  let hooked = 0;
  deepStrictEqual(await authorizeListenFilter(input, { subscribeHook: () => (hooked++, true) }), input);
  equal(hooked, 2);
});

test('authorize: a filter without URIs never calls the checks', async () => {
  let called = false;
  const flag = (): boolean => {
    called = true;
    return false;
  };
  deepStrictEqual(await authorizeListenFilter({ toolsListChanged: true }, { canRead: flag, subscribeHook: flag }), { toolsListChanged: true });
  equal(called, false);
});

/* filterNames and the acknowledgment */

test('filterNames: fixed order, names only', () => {
  deepStrictEqual(filterNames({}), []);
  deepStrictEqual(
    filterNames({ taskIds: ['t'], resourceSubscriptions: ['file:///secret'], resourcesListChanged: true, promptsListChanged: true, toolsListChanged: true }),
    ['tools_list_changed', 'prompts_list_changed', 'resources_list_changed', 'resource_subscriptions', 'task_ids'],
  );
  deepStrictEqual(filterNames({ resourceSubscriptions: ['file:///secret'] }), ['resource_subscriptions']);
  deepStrictEqual(filterNames({ resourceSubscriptions: [], taskIds: [] }), []);
});

test('acknowledgment JSON is exact, fields in fixed order', () => {
  const filter: ListenFilter = {
    taskIds: ['t-1'],
    resourceSubscriptions: ['file:///project/config.json', 'file:///b'],
    resourcesListChanged: true,
    promptsListChanged: true,
    toolsListChanged: true,
  };
  equal(
    JSON.stringify(acknowledgedNotification(filter)),
    '{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":' +
      '{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true,' +
      '"resourceSubscriptions":["file:///project/config.json","file:///b"],"taskIds":["t-1"]}}}',
  );
});

test('acknowledgment of the seed example', () => {
  const filter = parseListenFilter(
    {
      notifications: { toolsListChanged: true, resourceSubscriptions: ['file:///project/config.json'] },
      _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} },
    },
    { tools: true, resources: true },
  );
  equal(
    JSON.stringify(acknowledgedNotification(filter)),
    '{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":' +
      '{"toolsListChanged":true,"resourceSubscriptions":["file:///project/config.json"]}}}',
  );
});

test('acknowledgment of an empty filter', () => {
  equal(
    JSON.stringify(acknowledgedNotification({})),
    '{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{}}}',
  );
});

test('acknowledgment never carries false or an empty list', () => {
  const loose = { toolsListChanged: false, resourceSubscriptions: [] } as unknown as ListenFilter;
  equal(
    JSON.stringify(acknowledgedNotification(loose)),
    '{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{}}}',
  );
});

test.run();
