// Notification storms collapse (issue 15 item 2): a registry that calls notifyToolsChanged() 1000
// times in one event-loop turn gives each stream one tools/list_changed, not 1000; repeated
// resources/updated of one URI likewise. The hub does it once per publish (HubOptions.coalesce):
// a notification identical to the one its topic delivered last, in the same turn, is not
// delivered again. A notification of another kind or URI is never collapsed, distinct
// notifications keep their order, a stream that subscribed in between still hears it, and on a
// legacy GET stream a collapsed frame takes no id.
import { strict as assert } from 'node:assert';
import fc from 'fast-check';
import type { SchedulerLike } from 'rxjs';
import { test } from 'uvu';
import { InvalidOptionError } from '../lib/errors.js';
import type { MessageFrame } from '../lib/frame.js';
import { Hub, type TaskStatus } from '../lib/hub.js';
import { queueTotals } from '../lib/telemetry.js';
import { listenStream } from '../operators/listenPipeline.js';
import { testScheduler } from './helpers/marbles.js';
import { listenBody, SseConnection, startEndpoint, eventually } from './helpers/http.js';
import { call, frameText, GetStream, initialize, listChangedMessage, nextTurn, updatedMessage } from './helpers/legacy.js';

/** What a frame says, short: `tools`, `prompts`, `resources`, `res:<uri>`, `task:<id>:<status>` (+ `@scope`). */
function label(frame: MessageFrame): string {
  const params = (frame.message as { params?: { uri?: string; taskId?: string; status?: string } }).params;
  const what = frame.topic === 'resource' ? `res:${params!.uri}` : frame.topic === 'task' ? `task:${params!.taskId}:${params!.status}` : String(frame.topic);
  return frame.scope === undefined ? what : `${what}@${frame.scope}`;
}

function record(hub: Hub, uris: string[] = ['file:///a', 'file:///b'], tasks: string[] = []): string[] {
  const got: string[] = [];
  const push = (frame: MessageFrame) => got.push(label(frame));
  for (const topic of ['tools', 'prompts', 'resources'] as const) hub.topic({ topic }).subscribe(push);
  for (const uri of uris) hub.topic({ topic: 'resource', uri }).subscribe(push);
  for (const taskId of tasks) hub.topic({ topic: 'task', taskId }).subscribe(push);
  return got;
}

const task = (taskId: string, status: string): TaskStatus => ({ taskId, status });

test('1000 tools/list_changed in one turn reach a stream once, counted as coalesced; the next turn is news again', async () => {
  const hub = new Hub();
  const first = record(hub);
  const second = record(hub);
  const before = queueTotals().coalesced;
  for (let i = 0; i < 1000; i++) hub.notifyToolsChanged();
  assert.deepEqual(first, ['tools']);
  assert.deepEqual(second, ['tools']);
  assert.equal(queueTotals().coalesced - before, 2 * 999, 'each stream-frame not sent is counted');
  await nextTurn();
  hub.notifyToolsChanged();
  hub.notifyToolsChanged();
  assert.deepEqual(first, ['tools', 'tools'], 'a new turn: the client may have read the first one by now');
});

test('a registration that fans out to several receivers counts each of them as coalesced', () => {
  const hub = new Hub();
  const got: string[] = [];
  const fanOut = { weight: 5, next: (frame: MessageFrame) => got.push(label(frame)) };
  hub.attach('tools', undefined, fanOut);
  hub.topic({ topic: 'tools' }).subscribe((frame) => got.push(label(frame)));
  const before = queueTotals().coalesced;
  for (let i = 0; i < 10; i++) hub.notifyToolsChanged();
  assert.deepEqual(got, ['tools', 'tools']);
  assert.equal(queueTotals().coalesced - before, 9 * (5 + 1));
  hub.detach('tools', undefined, fanOut);
  hub.notifyToolsChanged();
  assert.equal(queueTotals().coalesced - before, 9 * (5 + 1) + 1, 'detached: no longer counted');
});

test('no other kind or URI is collapsed, distinct notifications keep their order', async () => {
  const hub = new Hub();
  const got = record(hub, ['file:///a', 'file:///b']);
  hub.notifyResourceUpdated('file:///a');
  hub.notifyResourceUpdated('file:///a');
  hub.notifyResourceUpdated('file:///b');
  hub.notifyToolsChanged();
  hub.notifyPromptsChanged();
  hub.notifyResourcesChanged();
  hub.notifyResourceUpdated('file:///b');
  hub.notifyToolsChanged();
  hub.notifyResourceUpdated('file:///a');
  assert.deepEqual(got, ['res:file:///a', 'res:file:///b', 'tools', 'prompts', 'resources']);
});

test('a task status is collapsed only into the same status right before it: the last state always arrives', () => {
  const hub = new Hub();
  const got = record(hub, [], ['t1']);
  hub.notifyTask(task('t1', 'working'));
  hub.notifyTask(task('t1', 'working'));
  hub.notifyTask(task('t1', 'completed'));
  hub.notifyTask(task('t1', 'working'));
  assert.deepEqual(got, ['task:t1:working', 'task:t1:completed', 'task:t1:working']);
});

test('a stream that subscribed between two identical publishes hears the second', () => {
  const hub = new Hub();
  const early = record(hub);
  hub.notifyToolsChanged();
  const late = record(hub);
  hub.notifyToolsChanged();
  hub.notifyToolsChanged();
  assert.deepEqual(late, ['tools']);
  assert.deepEqual(early, ['tools', 'tools'], 'the early one hears it again: at least once, never missed');
});

test('a scoped publish and an unscoped one are different audiences: neither collapses the other', () => {
  const hub = new Hub();
  const got = record(hub);
  hub.notifyToolsChanged({ scope: 'admin' });
  hub.notifyToolsChanged({ scope: 'admin' });
  hub.notifyToolsChanged();
  hub.notifyToolsChanged({ scope: 'admin' });
  hub.notifyToolsChanged({ scope: 'ops' });
  assert.deepEqual(got, ['tools@admin', 'tools', 'tools@admin', 'tools@ops']);
});

test('coalesce: false delivers every publish; a non-boolean is rejected naming the option', () => {
  const hub = new Hub({ coalesce: false });
  const got = record(hub);
  for (let i = 0; i < 3; i++) hub.notifyResourceUpdated('file:///a');
  assert.deepEqual(got, ['res:file:///a', 'res:file:///a', 'res:file:///a']);
  assert.throws(() => new Hub({ coalesce: 'yes' as unknown as boolean }), (error: unknown) => error instanceof InvalidOptionError && /HubOptions\.coalesce/.test(error.message));
});

test('virtual time: with the scheduler given, publishes at different virtual instants are never collapsed; at one instant they are', () => {
  const scheduler = testScheduler();
  scheduler.run(({ flush }) => {
    const hub = new Hub({ scheduler });
    const got: string[] = [];
    const stream = listenStream({ requestId: 1, filter: { toolsListChanged: true, resourceSubscriptions: ['file:///a'] }, hub, scheduler }).subscribe((frame) => {
      if (frame.type === 'message') got.push(`${scheduler.now()} ${(frame.message as { method: string }).method.replace('notifications/', '')}`);
    });
    scheduler.schedule(() => {
      for (let i = 0; i < 100; i++) hub.notifyToolsChanged();
      hub.notifyResourceUpdated('file:///a');
      hub.notifyResourceUpdated('file:///a');
    }, 10);
    scheduler.schedule(() => hub.notifyToolsChanged(), 20);
    scheduler.schedule(() => hub.notifyResourceUpdated('file:///a'), 20);
    scheduler.schedule(() => hub.notifyToolsChanged(), 30);
    scheduler.schedule(() => stream.unsubscribe(), 40);
    flush();
    assert.deepEqual(got, [
      '0 subscriptions/acknowledged',
      '10 tools/list_changed',
      '10 resources/updated',
      '20 tools/list_changed',
      '20 resources/updated',
      '30 tools/list_changed',
    ]);
  });
  assert.throws(() => new Hub({ scheduler: {} as SchedulerLike }), (error: unknown) => error instanceof InvalidOptionError && /HubOptions\.scheduler/.test(error.message));
});

test('property: what a stream hears in one turn is the publishes minus each topic\'s immediate repeats, in order', () => {
  const publish = fc.constantFrom('tools', 'prompts', 'res:a', 'res:b', 'res:c', 'task:working', 'task:done');
  fc.assert(
    fc.property(fc.array(publish, { maxLength: 60 }), (script) => {
      const hub = new Hub();
      const got = record(hub, ['file:///a', 'file:///b', 'file:///c'], ['t']);
      const expected: string[] = [];
      const lastOnTopic = new Map<string, string>();
      for (const step of script) {
        const [kind, rest] = step.split(':') as [string, string | undefined];
        const topic = kind === 'res' ? `res:${rest}` : kind;
        const shown = kind === 'res' ? `res:file:///${rest}` : kind === 'task' ? `task:t:${rest}` : kind;
        if (lastOnTopic.get(topic) !== shown) expected.push(shown);
        lastOnTopic.set(topic, shown);
        if (kind === 'tools') hub.notifyToolsChanged();
        else if (kind === 'prompts') hub.notifyPromptsChanged();
        else if (kind === 'res') hub.notifyResourceUpdated(`file:///${rest}`);
        else hub.notifyTask(task('t', rest!));
      }
      assert.deepEqual(got, expected);
    }),
    { numRuns: 300, seed: 1202 },
  );
});

test('listen stream over HTTP: a storm is one frame after the acknowledgment', async () => {
  const server = await startEndpoint();
  try {
    const listen = await SseConnection.open(server.url, listenBody(5, { toolsListChanged: true, resourceSubscriptions: ['file:///a'] }));
    await listen.until((c) => c.text.includes('acknowledged'), 3000, 'the acknowledgment');
    const { hub } = server;
    for (let i = 0; i < 1000; i++) hub.notifyToolsChanged();
    for (let i = 0; i < 1000; i++) hub.notifyResourceUpdated('file:///a');
    hub.notifyToolsChanged();
    await nextTurn();
    hub.notifyResourceUpdated('file:///a');
    await listen.until((c) => c.text.split('resources/updated').length === 3, 3000, 'the second resources/updated');
    await new Promise((resolve) => setTimeout(resolve, 50));
    const tag = '"_meta":{"io.modelcontextprotocol/subscriptionId":5}';
    const notifications = listen.text.split('\n\n').filter((event) => event.includes('notifications/') && !event.includes('acknowledged'));
    assert.deepEqual(notifications, [
      `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{${tag}}}`,
      `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a",${tag}}}`,
      `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a",${tag}}}`,
    ]);
    listen.destroy();
  } finally {
    await server.close();
  }
});

test('legacy GET stream: a storm is one frame, and the collapsed frames take no id', async () => {
  const server = await startEndpoint();
  try {
    const { sessionId } = await initialize(server.url);
    const get = GetStream.open(server.url, sessionId);
    await eventually(() => server.endpoint.stats.streams === 1, 3000, 'the GET stream');
    assert.equal((await call(server.url, sessionId, 2, 'resources/subscribe', { uri: 'file:///a' })).status, 200);
    const { hub } = server;
    const coalescedBefore = queueTotals().coalesced;
    for (let i = 0; i < 1000; i++) hub.notifyToolsChanged();
    hub.notifyResourceUpdated('file:///a');
    hub.notifyToolsChanged();
    hub.notifyResourceUpdated('file:///a');
    await nextTurn();
    hub.notifyToolsChanged();
    await get.untilId(3);
    await new Promise((resolve) => setTimeout(resolve, 50));
    // 1000 + 1 tools/list_changed and 2 resources/updated in the first turn, each delivered once.
    assert.equal(queueTotals().coalesced - coalescedBefore, 1000 + 1, 'counted per session, as for listen streams');
    assert.equal(
      get.withoutKeepAlives,
      frameText(1, listChangedMessage('tools')) + frameText(2, updatedMessage('file:///a')) + frameText(3, listChangedMessage('tools')),
    );
    get.destroy();
  } finally {
    await server.close();
  }
});

test.run();
