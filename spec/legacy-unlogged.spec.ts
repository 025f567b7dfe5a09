// A change whose frame a legacy session's shared log failed to take (Redis unreachable, or changing
// hands in a Sentinel failover: the append fails at once) is not lost: the session appends it again
// later, with the next id, so the client hears it once the log takes appends again — also when no
// later change comes (issue 31: a write made during a failover reached no legacy client when it was
// the last one). A later change of the same URI logged meanwhile stands for it (nothing is repeated).
import { strict as assert } from 'node:assert';
import { test } from 'uvu';
import type { MessageFrame } from '../lib/frame.js';
import { ReplayBuffer } from '../lib/replayBuffer.js';
import { channels } from '../lib/telemetry.js';
import { eventually, startEndpoint } from './helpers/http.js';
import { call, GetStream, initialize, send, sessionHeaders, sleep } from './helpers/legacy.js';

const A = 'file:///srv/a.txt';
const B = 'file:///srv/b.txt';

/** An asynchronous log (as on Redis) whose appends fail at once while `down`. */
function flakyLog() {
  const buffer = new ReplayBuffer(100);
  const state = { down: false, failed: 0 };
  return {
    state,
    log: {
      append: async (frame: MessageFrame) => {
        await Promise.resolve();
        if (state.down) {
          state.failed++;
          throw new Error('Stream isn\'t writeable and enableOfflineQueue options is false');
        }
        return buffer.append(frame);
      },
      after: async (lastEventId: string | null | undefined) => buffer.after(lastEventId),
      newestId: () => buffer.newestId(),
    },
  };
}

async function session(eventLogState: ReturnType<typeof flakyLog>) {
  const server = await startEndpoint({ subscribeStreamWait: 0, eventLog: () => eventLogState.log });
  const { sessionId } = await initialize(server.url);
  const get = GetStream.open(server.url, sessionId);
  await eventually(() => server.endpoint.stats.streams === 1, 2000, 'the GET stream');
  for (const [i, uri] of [A, B].entries()) assert.deepEqual((await call(server.url, sessionId, i + 2, 'resources/subscribe', { uri })).json.result, {});
  return { server, get, sessionId };
}

const uris = (get: GetStream) => get.frames.map((frame) => frame.message.params?.uri ?? frame.message.method);

test('changes the log failed to take are appended again once it takes appends, with the next ids, each URI once', async () => {
  const flaky = flakyLog();
  const { server, get } = await session(flaky);
  const errors: unknown[] = [];
  const onError = (event: unknown) => void errors.push(event);
  channels.error.subscribe(onError);
  try {
    server.hub.notifyResourceUpdated(A);
    await get.untilId(1);
    flaky.state.down = true;
    for (const uri of [A, B, A]) {
      server.hub.notifyResourceUpdated(uri);
      await sleep(5);
    }
    await sleep(400); // one attempt again (after 250 ms) fails too
    assert.deepEqual(get.ids, [1], 'nothing written while the log refuses');
    assert.ok(flaky.state.failed >= 5, `the appends and one attempt again failed (${flaky.state.failed})`);
    assert.ok(errors.length >= 5, 'each failed append is reported on channels.error');
    flaky.state.down = false;
    await get.untilId(3, 3000);
    await sleep(600);
    assert.deepEqual(get.ids, [1, 2, 3], 'consecutive ids');
    assert.deepEqual(uris(get).slice(1).sort(), [A, B], 'each URI changed meanwhile, once');
    server.hub.notifyResourceUpdated(B);
    await get.untilId(4);
    await sleep(300);
    assert.deepEqual(get.ids, [1, 2, 3, 4], 'nothing more is appended again');
  } finally {
    channels.error.unsubscribe(onError);
    get.destroy();
    await server.close();
  }
});

test('a later change of the same URI logged before the attempt again stands for the one that failed', async () => {
  const flaky = flakyLog();
  const { server, get } = await session(flaky);
  try {
    flaky.state.down = true;
    server.hub.notifyResourceUpdated(A);
    await eventually(() => flaky.state.failed === 1, 1000, 'the failed append');
    flaky.state.down = false;
    server.hub.notifyResourceUpdated(A);
    await get.untilId(1);
    await sleep(600);
    assert.deepEqual(get.ids, [1], 'A once: the later change was logged');
    assert.deepEqual(uris(get), [A]);
  } finally {
    get.destroy();
    await server.close();
  }
});

test('a session that ends (DELETE) drops what it would have appended again', async () => {
  const flaky = flakyLog();
  const { server, get, sessionId } = await session(flaky);
  try {
    flaky.state.down = true;
    server.hub.notifyResourceUpdated(A);
    await eventually(() => flaky.state.failed === 1, 1000, 'the failed append');
    assert.equal((await send(server.url, 'DELETE', sessionHeaders(sessionId))).status, 204);
    flaky.state.down = false;
    await sleep(600);
    assert.equal(flaky.log.newestId(), '0', 'nothing appended after the session ended');
    assert.equal(flaky.state.failed, 1);
  } finally {
    get.destroy();
    await server.close();
  }
});

test('a closed endpoint does not try again (its process can exit while the log is still down)', async () => {
  const flaky = flakyLog();
  const { server, get } = await session(flaky);
  flaky.state.down = true;
  server.hub.notifyResourceUpdated(A);
  await eventually(() => flaky.state.failed === 1, 1000, 'the failed append');
  get.destroy();
  await server.close();
  await sleep(600);
  assert.equal(flaky.state.failed, 1, 'no attempt again after close');
});

test.run();
