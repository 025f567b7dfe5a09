// The package entries from source: the main entry exports every value the core's modules (lib/)
// export, but for the ones named internal below (so an export added to the core is not left out
// of the package by mistake), and each subpath keeps its own heavy dependency
// (spec/package.spec.ts checks the same on the installed tarball).
import { strict as assert } from 'node:assert';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';
import * as client from '../client.js';
import * as main from '../index.js';

/** The core's exports that are for the library's own layers (each marked `@internal` where it is defined). */
const INTERNAL: Readonly<Record<string, readonly string[]>> = {
  'auth.ts': ['NO_SCOPES'],
  'protectedResource.ts': ['bearerChallenge', 'isLoopbackHost', 'resourceMetadata', 'resourceMetadataOf', 'secureUrl'],
  'refusal.ts': ['Refusal'],
  'broadcast.ts': ['Broadcast', 'follow', 'unfollow'],
  'clock.ts': ['Clock', 'beginDispatch', 'endDispatch'],
  'encode.ts': ['encodeSubscriptionId'],
  'httpError.ts': ['HttpError'],
  'hub.ts': ['HubBusTargets'],
  'jsonrpc.ts': ['exceedsBytes', 'tryParseJson'],
  'notifications.ts': ['TopicRegistration', 'TopicsObservable', 'attachTopics', 'forEachTopic'],
  'pending.ts': ['Pending'],
  'options.ts': ['LISTEN_OPTIONS', 'STREAM_LIMITS'],
  'optionTable.ts': ['defaultsOf', 'namesOf', 'option', 'readOptions', 'resolveOptions'],
  'protocol.ts': ['NEWEST_LEGACY_PROTOCOL_VERSION', 'RECOGNIZED_LEGACY_VERSIONS'],
  'resources.ts': ['changesHub', 'resourceProvider', 'unrestrictedHub'],
  'replayBuffer.ts': ['loggedFrame', 'stamp'],
  'session.ts': ['keptByNode'],
  'slots.ts': ['isShared'],
  'subscribers.ts': ['BareSubscriber', 'LeanSubscriber'],
  'telemetry.ts': ['accountQueue', 'reportError', 'reportTrace'],
  'turn.ts': ['currentTurn', 'TurnBatch'],
  'validate.ts': [
    'arrayOf', 'boolean', 'callback', 'endpoint', 'epochMs', 'flags', 'functions', 'httpUrl', 'hub', 'implementing', 'isHub', 'knownKeys',
    'milliseconds', 'nonEmptyStrings', 'nonNegativeInteger', 'object', 'observable', 'oneOf', 'options', 'port', 'recordOf', 'requestId', 'scheduler', 'string',
  ],
};

test('every value export of the core (lib/) is exported by the package entry index.ts, or named internal here', async () => {
  const dir = fileURLToPath(new URL('../lib/', import.meta.url));
  const problems: string[] = [];
  for (const file of readdirSync(dir).filter((name) => name.endsWith('.ts') && !name.endsWith('.d.ts'))) {
    const core = (await import(`../lib/${file.replace(/\.ts$/, '.js')}`)) as Record<string, unknown>;
    const internal = INTERNAL[file] ?? [];
    for (const name of Object.keys(core)) {
      if (internal.includes(name)) {
        if (name in main) problems.push(`lib/${file}: ${name} is exported by index.ts but listed as internal`);
      } else if (!(name in main)) {
        problems.push(`lib/${file}: index.ts lacks ${name} (add it under its /* … */ header, or list it as internal)`);
      } else {
        assert.equal((main as Record<string, unknown>)[name], core[name], name);
      }
    }
  }
  assert.deepEqual(problems, []);
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
