// The package entries from source: the main entry re-exports every value lib/index.ts exports (so
// an export added to the core is not left out of the package), and each subpath keeps its own
// heavy dependency (spec/package.spec.ts checks the same on the installed tarball).
import { strict as assert } from 'node:assert';
import { test } from 'uvu';
import * as client from '../client.js';
import * as main from '../index.js';
import * as core from '../lib/index.js';

test('every value export of lib/index.ts is exported by the package entry index.ts', () => {
  const missing = Object.keys(core).filter((name) => !(name in main));
  assert.deepEqual(missing, [], `index.ts lacks ${missing.join(', ')}: add them under their /* … */ header`);
  for (const name of Object.keys(core)) assert.equal((main as Record<string, unknown>)[name], (core as Record<string, unknown>)[name], name);
});

test('the main entry has the operators and the server adapters, not the client; mcp-rx-streams/client has the client', () => {
  for (const name of ['ackThenNotify', 'closeWhen', 'dropWhenQueueExceeds', 'keepAlive', 'replayFrom', 'restoreSubscriptions', 'tagSubscriptionId', 'withEventIds', 'nodeHandler', 'webHandler']) {
    assert.equal(typeof (main as Record<string, unknown>)[name], 'function', name);
  }
  for (const name of ['listen', 'openSse', 'parseSse', 'SseParser', 'ListenClientError']) {
    assert.equal(name in main, false, `${name} is in the main entry (it would load undici)`);
    assert.equal(typeof (client as Record<string, unknown>)[name], 'function', name);
  }
});

test.run();
