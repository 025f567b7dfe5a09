// Every error class the package exports shares one base, McpRxError, with a stable string code
// (ERR_MCP_RX_…, unique per class) and an info object: a caller branches on `code` and reads the
// facts from `info`, never parses a message. The classes are found by walking the entries, so a
// new error class exported without joining the base (or without a case here) fails this spec.
import { strict as assert } from 'node:assert';
import { test } from 'uvu';
import * as client from '../client.js';
import * as main from '../index.js';
import * as metrics from '../adapters/metrics/index.js';
import * as otel from '../adapters/otel/index.js';
import * as redis from '../adapters/redis/index.js';
import * as cluster from '../adapters/cluster/index.js';
import * as auth from '../adapters/auth/index.js';
import { ResourceTooLargeError } from '../adapters/reference/files.js';
import { HttpError } from '../adapters/http/httpError.js';
import { Refusal } from '../lib/refusal.js';
import { InvalidParams } from '../protocol/envelope.js';
import { JsonRpcError } from '../lib/jsonrpc.js';

const { McpRxError } = main;

type ErrorClass = abstract new (...args: never[]) => Error;

/**
 * Error classes that do not join the base, each with its reason. JsonRpcError's `code` is the
 * JSON-RPC error code it answers with (a number, e.g. -32602), which a string code would replace.
 */
const OUTSIDE_THE_BASE = new Map<ErrorClass, string>([[JsonRpcError, 'its code is the numeric JSON-RPC error code']]);


/** One instance of each error class, built as the library builds it. */
const SAMPLES = new Map<ErrorClass, () => Error>([
  [main.McpRxError, () => new main.McpRxError('something failed')],
  [main.StalledStreamError, () => new main.StalledStreamError({ graceMs: 5000 })],
  [main.InvalidOptionError, () => new main.InvalidOptionError('keepAliveInterval', 'a positive integer of milliseconds', -5)],
  [main.FrameEncodingError, () => new main.FrameEncodingError('id', 'a\nb')],
  [main.AuthError, () => new main.AuthError('token expired')],
  [main.AuthUnavailableError, () => new main.AuthUnavailableError('the authorization server did not answer within 1000 ms')],
  [auth.DiscoveryError, () => new auth.DiscoveryError('https://auth.example.com', ['https://auth.example.com/.well-known/oauth-authorization-server answered HTTP 404'])],
  [main.RestoreError, () => new main.RestoreError('file:///a', new Error('disk gone'))],
  [main.MissingClientAddressError, () => new main.MissingClientAddressError('http://127.0.0.1/mcp')],
  [metrics.MissingPeerDependencyError, () => new metrics.MissingPeerDependencyError('prom-client', 'mcp-rx-streams/metrics', undefined)],
  [client.ListenClientError, () => new client.ListenClientError('the server answered 404', { status: 404, body: 'not found' })],
  [cluster.ClusterError, () => new cluster.ClusterError('store.create', 'the machine holds maxSessions (2) sessions', true)],
  [cluster.SharedSlotsError, () => new cluster.SharedSlotsError()],
  [main.RevokeRelayError, () => new main.RevokeRelayError({ streams: 2, sessions: 1 }, new Error('Redis is not connected'))],
  // Not exported from an entry, but thrown by the endpoint and the reference server.
  [HttpError, () => new HttpError(413, new JsonRpcError(-32600, 'request body exceeds 10 bytes'))],
  [Refusal, () => new Refusal('unknown-session', new JsonRpcError(-32001, 'session not found'))],
  [InvalidParams, () => new InvalidParams(new JsonRpcError(-32602, 'params must be an object'), 1)],
  [ResourceTooLargeError, () => new ResourceTooLargeError('file:///big', 9, 8)],
]);

/** Every exported class whose instances are Errors. */
function exportedErrorClasses(): ErrorClass[] {
  const found = new Set<ErrorClass>();
  for (const entry of [main, client, metrics, otel, redis, cluster, auth] as Record<string, unknown>[]) {
    for (const value of Object.values(entry)) {
      if (typeof value === 'function' && value.prototype instanceof Error) found.add(value as ErrorClass);
    }
  }
  return [...found];
}

test('the entries export the error classes this spec knows (the walk finds them)', () => {
  const names = exportedErrorClasses().map((c) => c.name).sort();
  for (const name of ['AuthError', 'AuthUnavailableError', 'DiscoveryError', 'ClusterError', 'FrameEncodingError', 'InvalidOptionError', 'ListenClientError', 'McpRxError', 'MissingClientAddressError', 'MissingPeerDependencyError', 'RestoreError', 'SharedSlotsError']) {
    assert.ok(names.includes(name), `${name} not found among ${names.join(', ')}`);
  }
});

test('every exported error class is an McpRxError with its own string code and an info object', () => {
  const codes = new Map<string, string>();
  const classes = new Set([...exportedErrorClasses(), HttpError, Refusal, InvalidParams, ResourceTooLargeError]);
  for (const errorClass of classes) {
    if (OUTSIDE_THE_BASE.has(errorClass)) continue;
    const make = SAMPLES.get(errorClass);
    assert.ok(make !== undefined, `${errorClass.name}: add a sample here (and make it extend McpRxError)`);
    const error = make() as InstanceType<typeof McpRxError>;
    assert.ok(error instanceof errorClass, errorClass.name);
    assert.ok(error instanceof McpRxError, `${errorClass.name} does not extend McpRxError`);
    assert.ok(error instanceof Error, errorClass.name);
    assert.equal(error.name, errorClass.name);
    assert.equal(typeof error.code, 'string', `${errorClass.name}.code`);
    assert.match(error.code, /^ERR_MCP_RX(_[A-Z]+)*$/, `${errorClass.name}.code`);
    assert.ok(error.info !== null && typeof error.info === 'object', `${errorClass.name}.info`);
    assert.ok(error.message.length > 0, `${errorClass.name}.message`);
    const other = codes.get(error.code);
    assert.equal(other, undefined, `${errorClass.name} and ${other} share the code ${error.code}`);
    codes.set(error.code, errorClass.name);
  }
});

test('info carries the facts of the case', () => {
  assert.deepEqual(new main.InvalidOptionError('maxStreams', 'a positive integer', 0).info, { option: 'maxStreams', value: 0 });
  assert.deepEqual(new main.AuthError('no token', 'Bearer realm="mcp"').info, { challenge: 'Bearer realm="mcp"' });
  assert.deepEqual(new main.AuthError('expired', { error: 'invalid_token' }).info, { challenge: 'Bearer error="invalid_token"', bearer: { error: 'invalid_token' } });
  assert.deepEqual(new main.AuthUnavailableError('no answer', 2_000).info, { retryAfterMs: 2_000 });
  assert.deepEqual(new auth.DiscoveryError('https://a.example', ['x']).info, { issuer: 'https://a.example', failures: ['x'] });
  assert.deepEqual(new main.RestoreError('file:///a', new Error('x')).info, { uri: 'file:///a' });
  assert.deepEqual(new HttpError(413, new JsonRpcError(-32600, 'too large')).info, { status: 413, rpcCode: -32600 });
  assert.deepEqual(new Refusal('busy', new JsonRpcError(-32000, 'full')).info, { kind: 'busy', rpcCode: -32000 });
  assert.deepEqual(new main.FrameEncodingError('event', 'a\rb').info, { field: 'event', value: 'a\rb' });
  assert.deepEqual(new cluster.ClusterError('store.create', 'full', true).info, { op: 'store.create', capacity: true });
  assert.deepEqual(new cluster.ClusterError('slot', 'the channel to the primary is closed').info, { op: 'slot' });
});

test('the errors outside the base say why', () => {
  for (const [errorClass, why] of OUTSIDE_THE_BASE) {
    assert.ok(!(errorClass.prototype instanceof McpRxError), `${errorClass.name} joined the base: remove it from OUTSIDE_THE_BASE (${why})`);
  }
  assert.equal(typeof new JsonRpcError(-32602, 'bad params').code, 'number');
});

test.run();
