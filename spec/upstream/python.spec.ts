// The official Python SDK (`mcp`, which `npm test` installs, see scripts/test-setup.mjs) as an
// upstream over stdio (issue 34): its lowlevel Server in a 2025 session (initialize, resources/
// subscribe, notifications/resources/updated on the pipe), behind the gateway; the official clients
// of both eras in front.
import { deepStrictEqual } from 'node:assert';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';
import { upstreamUri } from '../../adapters/upstream/index.js';
import { legacyClient, modernClient, sleep, startGateway, until } from '../helpers/gateway.js';
import { within } from '../helpers/wait.js';

/** Python importing `mcp` takes seconds (six on a loaded machine). */
const START_MS = 40_000;
const SERVER = fileURLToPath(new URL('../fixtures/servers/python_notes.py', import.meta.url));

test('a Python SDK server over stdio behind the gateway: a 2026-07-28 listen and a 2025 session hear its resources/updated; what it refuses is left out; reads are its own', async () => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'mcp-rx-gateway-python-'));
  const trigger = path.join(dir, 'trigger');
  // The server sends an update for what is subscribed whenever this file changes (replaced at once, never half written).
  const touch = async (text: string) => {
    await fs.writeFile(`${trigger}.new`, text);
    await fs.rename(`${trigger}.new`, trigger);
  };
  await touch('0');
  const front = await startGateway({
    ackTimeout: START_MS,
    upstreams: [{ name: 'py', command: { command: ['python3', '-u', SERVER], env: { ...process.env, NOTES_TRIGGER: trigger } as Record<string, string>, stderr: 'ignore' }, era: 'legacy', reconnect: { initialDelay: 100, jitter: 0 } }],
  });
  const today = upstreamUri('py', 'note://today');
  const modern = await modernClient(front.url);
  const legacy = await legacyClient(front.url);
  try {
    const subscription = await within(modern.client.listen({ resourceSubscriptions: [today, upstreamUri('py', 'note://nope')] }), START_MS, 'listen()');
    deepStrictEqual(subscription.honoredFilter, { resourceSubscriptions: [today] });
    await until(() => front.endpoint.stats.streams === 2, 'the legacy GET stream');
    deepStrictEqual(await within(legacy.client.subscribeResource({ uri: today }), START_MS, 'resources/subscribe'), {});
    // One URI held for both eras (the refused one let go after its linger).
    await until(() => front.gateway.stats[0]!.uris === 1, 'one URI held');
    await touch('1');
    await until(() => modern.updated.length === 1 && legacy.updated.length === 1, 'the update in both eras');
    await sleep(100);
    deepStrictEqual([modern.updated, legacy.updated], [[today], [today]]);
    const read = await legacy.client.readResource({ uri: today });
    deepStrictEqual(read.contents, [{ uri: today, text: 'today' }]);
  } finally {
    await modern.client.close();
    await legacy.client.close();
    await front.close();
  }
});

test.run();
