import { strict as assert } from 'node:assert';
import { GCProfiler } from 'node:v8';
import { map } from 'rxjs';
import { test } from 'uvu';
import { messageJson } from '../lib/encode.js';
import { InvalidOptionError } from '../lib/errors.js';
import type { MessageFrame } from '../lib/frame.js';
import { Hub, type HubBus, type HubEvent } from '../lib/hub.js';
import { channels } from '../lib/telemetry.js';

const uris = (frames: MessageFrame[]) => frames.map((f) => (f.message as { params?: { uri?: string } }).params?.uri);

test('a resource topic hears its exact URI only', () => {
  const hub = new Hub();
  const got: MessageFrame[] = [];
  hub.topic({ topic: 'resource', uri: 'file:///a' }).subscribe((f) => got.push(f));
  hub.notifyResourceUpdated('file:///a/b');
  hub.notifyResourceUpdated('file:///A');
  hub.notifyResourceUpdated('file:///a/');
  hub.notifyResourceUpdated('file:///a');
  assert.deepEqual(uris(got), ['file:///a']);
  assert.equal(messageJson(got[0]!), '{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a"}}');
});

test('each list-changed topic hears its own notification', () => {
  const hub = new Hub();
  const got: string[] = [];
  for (const topic of ['tools', 'prompts', 'resources'] as const) {
    hub.topic({ topic }).subscribe((f) => got.push(`${topic}:${(f.message as { method: string }).method}`));
  }
  hub.notifyToolsChanged();
  hub.notifyPromptsChanged();
  hub.notifyResourcesChanged();
  assert.deepEqual(got, [
    'tools:notifications/tools/list_changed',
    'prompts:notifications/prompts/list_changed',
    'resources:notifications/resources/list_changed',
  ]);
});

test('a task topic hears its task id only, with the status as params', () => {
  const hub = new Hub();
  const got: MessageFrame[] = [];
  hub.topic({ topic: 'task', taskId: 't1' }).subscribe((f) => got.push(f));
  hub.notifyTask({ taskId: 't2', status: 'working' });
  hub.notifyTask({ taskId: 't1', status: 'completed', statusMessage: 'done' });
  assert.equal(got.length, 1);
  assert.equal(
    messageJson({ ...got[0]!, subscriptionId: 3 }),
    '{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"t1","status":"completed","statusMessage":"done","_meta":{"io.modelcontextprotocol/subscriptionId":3}}}',
  );
});

test('one publish is one shared frame for every stream, encoded once', () => {
  const hub = new Hub();
  const got: MessageFrame[] = [];
  for (let i = 0; i < 3; i++) hub.topic({ topic: 'resource', uri: 'u' }).subscribe((f) => got.push(f));
  hub.notifyResourceUpdated('u');
  assert.equal(got.length, 3);
  assert.ok(got[0] === got[1] && got[1] === got[2]);
  assert.ok(got[0]!.encoded !== undefined);
  assert.equal(got[0]!.coalesceKey, 'notifications/resources/updated u');
});

test('10 000 subscribe/unsubscribe cycles leave no topic entry behind', () => {
  const hub = new Hub();
  for (let i = 0; i < 10_000; i++) {
    const a = hub.topic({ topic: 'resource', uri: `file:///r/${i % 100}` }).subscribe();
    const b = hub.topic({ topic: 'task', taskId: `t${i}` }).subscribe();
    const c = hub.topic({ topic: 'tools' }).subscribe();
    if (i % 2 === 0) hub.notifyResourceUpdated(`file:///r/${i % 100}`);
    a.unsubscribe();
    b.unsubscribe();
    c.unsubscribe();
  }
  assert.deepEqual(hub.size, { topics: 0, subscriptions: 0 });
});

test('a topic entry lives exactly as long as its last subscriber', () => {
  const hub = new Hub();
  const a = hub.topic({ topic: 'resource', uri: 'x' }).subscribe();
  const b = hub.topic({ topic: 'resource', uri: 'x' }).subscribe();
  assert.deepEqual(hub.size, { topics: 1, subscriptions: 2 });
  a.unsubscribe();
  assert.deepEqual(hub.size, { topics: 1, subscriptions: 1 });
  b.unsubscribe();
  assert.deepEqual(hub.size, { topics: 0, subscriptions: 0 });
});

test('publishing to topics nobody listens to allocates nothing per call', () => {
  const hub = new Hub();
  hub.topic({ topic: 'resource', uri: 'file:///somebody' }).subscribe();
  const scavenges = (work: () => void) => {
    const profiler = new GCProfiler();
    profiler.start();
    work();
    return profiler.stop()!.statistics.filter((s) => s.gcType === 'Scavenge').length;
  };
  const uri = 'file:///nobody';
  const quiet = scavenges(() => {
    for (let i = 0; i < 2_000_000; i++) {
      hub.notifyResourceUpdated(uri);
      hub.notifyToolsChanged();
      hub.notifyTask({ taskId: 'nobody', status: 'working' } as const);
    }
  });
  // The control: the same loop with one small allocation per call must trigger collections,
  // or this test could not fail.
  let sink: unknown;
  const noisy = scavenges(() => {
    for (let i = 0; i < 2_000_000; i++) sink = { uri, i };
  });
  assert.ok(sink);
  assert.ok(noisy >= 2, `control loop should allocate (saw ${noisy} scavenges)`);
  assert.ok(quiet <= 1, `publishing to nobody triggered ${quiet} scavenges`);
});

test('publishing is synchronous and a failing stream neither throws into the caller nor stops the others', () => {
  // Two identical publishes in one turn, both delivered: storm collapse is spec/storm.spec.ts.
  const hub = new Hub({ coalesce: false });
  const errors: unknown[] = [];
  const onError = (event: unknown) => errors.push(event);
  channels.error.subscribe(onError);
  const got: string[] = [];
  const failed: unknown[] = [];
  hub.topic({ topic: 'tools' }).subscribe(() => got.push('first'));
  hub
    .topic({ topic: 'tools' })
    .pipe(map(() => { throw new Error('boom'); }))
    .subscribe({ error: (e) => failed.push(e) });
  hub.topic({ topic: 'tools' }).subscribe(() => got.push('third'));
  assert.doesNotThrow(() => hub.notifyToolsChanged());
  assert.deepEqual(got, ['first', 'third']);
  assert.equal(failed.length, 1);
  // The failed stream left the topic: the next publish reaches only the healthy two.
  hub.notifyToolsChanged();
  assert.deepEqual(got, ['first', 'third', 'first', 'third']);
  assert.equal(hub.size.subscriptions, 2);
  channels.error.unsubscribe(onError);
});

test('with a bus: local streams first, then the relay; events from the bus reach local streams', () => {
  const relayed: HubEvent[] = [];
  let deliverRemote: ((event: HubEvent) => void) | undefined;
  let disconnected = false;
  const bus: HubBus = {
    publish: (event) => relayed.push(event),
    connect: (deliver) => {
      deliverRemote = deliver;
      return () => (disconnected = true);
    },
  };
  // The remote event repeats the local one in the same turn: delivered (storm collapse is spec/storm.spec.ts).
  const hub = new Hub({ bus, coalesce: false });
  const order: string[] = [];
  hub.topic({ topic: 'resource', uri: 'u' }).subscribe((f) => order.push(`local ${uris([f])[0]} relayed=${relayed.length}`));
  hub.notifyResourceUpdated('u');
  assert.deepEqual(order, ['local u relayed=0']);
  assert.deepEqual(relayed, [{ topic: 'resource', uri: 'u' }]);
  deliverRemote!({ topic: 'resource', uri: 'u' });
  assert.equal(order.length, 2);
  assert.equal(relayed.length, 1, 'an event from the bus is not relayed back');
  hub.close();
  assert.ok(disconnected);
});

test('bad arguments are refused with an InvalidOptionError naming the argument (spec/factories.spec.ts has the rest)', () => {
  const hub = new Hub();
  const naming = (option: string) => (error: unknown) => error instanceof InvalidOptionError && error.info.option === option;
  assert.throws(() => hub.notifyResourceUpdated(42 as unknown as string), naming('hub.notifyResourceUpdated uri'));
  assert.throws(() => hub.notifyTask({ status: 'x' } as unknown as { taskId: string; status: string }), naming('hub.notifyTask task.taskId'));
});

test.run();
