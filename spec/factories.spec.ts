// Every public constructor and factory of every package entry, called the wrong way (issue 24 item 5,
// issue 22): nothing missing, of the wrong type or misspelled may be accepted silently, nor fail
// later as a TypeError. Each call must throw an InvalidOptionError (no other error type) at
// construction, whose `info.option` is the option or argument it names and whose message starts
// with that name, then says what is allowed and what was given.
//
// The entries are walked: a function or class exported by an entry must have its rows here, or be
// listed in NOT_FACTORIES with the reason it takes no configuration (error classes are errors.spec's),
// so a factory added later without its checks is noticed.
import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Registry } from 'prom-client';
import { of } from 'rxjs';
import { test } from 'uvu';
import * as client from '../client.js';
import * as main from '../index.js';
import * as metrics from '../adapters/metrics/index.js';
import * as redis from '../adapters/redis/index.js';
import * as cluster from '../adapters/cluster/index.js';
import * as sdk from '../adapters/sdk/index.js';
import * as ws from '../adapters/channel/ws.js';
import * as otel from '../adapters/otel/index.js';
import * as upstream from '../adapters/upstream/index.js';
import * as auth from '../adapters/auth/index.js';
import * as reference from '../adapters/reference/server.js';
import { InvalidOptionError } from '../lib/errors.js';

/** One wrong call of a factory. */
interface Wrong {
  /** What is wrong with it (the test's name). */
  readonly what: string;
  /** The call: it throws, or (an async factory) it returns a Promise that rejects. */
  readonly call: () => unknown;
  /** The name the error carries (`info.option`); the message starts with it. */
  readonly option: string;
  /** What else the message must say: how to fix it. */
  readonly says?: RegExp;
}

type Module = Record<string, unknown>;

interface Entry {
  readonly name: string;
  readonly module: Module;
  /** Each factory (a class, or a function that builds something from its arguments) and its wrong calls. */
  readonly factories: Readonly<Record<string, readonly Wrong[]>>;
  /** The other functions, each with the reason it is not a factory. */
  readonly notFactories: Readonly<Record<string, string>>;
}

const { Hub, McpEndpoint } = main;
const hub = new Hub();
const endpoint = new McpEndpoint({ hub, legacy: false });
const url = 'http://127.0.0.1:9/mcp';
const noop = () => undefined;
const protectedResource = { resource: 'https://mcp.example.com/mcp', authorizationServers: ['https://auth.example.com'] };
const issuer = 'https://auth.example.com';
const resource = 'https://mcp.example.com/mcp';
const introspection = { issuer, resource, introspectionUrl: 'https://auth.example.com/introspect', clientId: 'rs', clientSecret: 'secret' };
const sender = { sendResourceUpdated: async () => undefined };
const sdkHandler = { fetch: async () => new Response(null) };
const silentLogger = { error: () => undefined, warn: () => undefined, info: () => undefined, debug: () => undefined };
const meter = { createObservableGauge: () => ({}), createObservableCounter: () => ({}), createCounter: () => ({}) } as never;
// A gateway with no upstream: opens nothing.
const gateway = upstream.upstreamGateway({ hub, upstreams: [] });
const tracer = { startSpan: () => ({}) } as never;
const fakeSocket = { readyState: 1, send: () => undefined, close: () => undefined, on: () => undefined, off: () => undefined };
const redisUrl = 'redis://127.0.0.1:9';
// A reference server that accepted wrong options would serve this folder, on a free port.
const scratch = mkdtempSync(path.join(tmpdir(), 'mcp-rx-factories-'));
const start = (options: Record<string, unknown>) => reference.startReferenceServer({ dir: scratch, port: 0, ...options } as never);

/** Data in, data out: per-message functions whose input is protocol data, frames or addresses, not configuration. */
const DATA = 'a function of protocol data (frames, messages, filters, addresses), not configuration';
const NO_ARGUMENTS = 'takes no arguments';

/** The wrong calls every options object of a class or factory gets: none, not an object, a misspelled key. */
function optionsRows(label: string, make: (options: unknown) => unknown, valid: Record<string, unknown>, like: RegExp): Wrong[] {
  return [
    { what: 'no options', call: () => make(undefined), option: label, says: like },
    { what: 'a string instead of the options', call: () => make('x'), option: label, says: like },
    { what: 'an unknown (misspelled) option', call: () => make({ ...valid, colour: 'blue' }), option: 'colour', says: /known/ },
  ];
}

/** The wrong calls of a Redis class or factory (each refuses before it connects). */
function redisRows(name: string, make: (options: unknown) => unknown): Wrong[] {
  return [
    ...optionsRows(`${name} options`, make, { redis: redisUrl }, /\{ redis/),
    { what: 'no redis', call: () => make({}), option: 'redis' },
    { what: 'redis a number', call: () => make({ redis: 6379 }), option: 'redis' },
  ];
}

const ENTRIES: readonly Entry[] = [
  {
    name: 'mcp-rx-streams',
    module: main,
    factories: {
      Hub: [
        { what: 'a string instead of the options', call: () => new Hub('x' as never), option: 'Hub options' },
        { what: 'an unknown option', call: () => new Hub({ coalesec: false } as never), option: 'coalesec', says: /known/ },
        { what: 'bus without publish and connect', call: () => new Hub({ bus: {} as never }), option: 'HubOptions.bus', says: /publish/ },
        { what: 'coalesce a string', call: () => new Hub({ coalesce: 'yes' as never }), option: 'HubOptions.coalesce' },
        { what: 'scheduler not a SchedulerLike', call: () => new Hub({ scheduler: {} as never }), option: 'HubOptions.scheduler' },
        { what: 'notifyResourceUpdated without a URI', call: () => hub.notifyResourceUpdated(undefined as never), option: 'hub.notifyResourceUpdated uri' },
        { what: 'notifyResourceUpdated with a number', call: () => hub.notifyResourceUpdated(42 as never), option: 'hub.notifyResourceUpdated uri' },
        { what: 'an empty scope', call: () => hub.notifyResourceUpdated('file:///a', { scope: '' }), option: 'hub.notifyResourceUpdated options.scope' },
        { what: 'a scope given as the options', call: () => hub.notifyToolsChanged('private' as never), option: 'hub.notifyToolsChanged options', says: /\{ scope/ },
        { what: 'a number scope', call: () => hub.notifyPromptsChanged({ scope: 5 as never }), option: 'hub.notifyPromptsChanged options.scope' },
        { what: 'a misspelled publish option', call: () => hub.notifyResourcesChanged({ scopes: 'x' } as never), option: 'hub.notifyResourcesChanged options.scopes' },
        { what: 'notifyTask without a task', call: () => hub.notifyTask(null as never), option: 'hub.notifyTask task' },
        { what: 'notifyTask without a taskId', call: () => hub.notifyTask({ status: 'working' } as never), option: 'hub.notifyTask task.taskId' },
        { what: 'notifyTask with a bad scope', call: () => hub.notifyTask({ taskId: 't', status: 'working' }, { scope: null as never }), option: 'hub.notifyTask options.scope' },
        { what: 'topic without a selector', call: () => hub.topic(undefined as never), option: 'hub.topic selector' },
        { what: 'topic of an unknown kind', call: () => hub.topic({ topic: 'tool' } as never), option: 'hub.topic selector.topic' },
        { what: 'a resource topic without a URI', call: () => hub.topic({ topic: 'resource' } as never), option: 'hub.topic selector.uri' },
        { what: 'a task topic with a number id', call: () => hub.topic({ topic: 'task', taskId: 5 } as never), option: 'hub.topic selector.taskId' },
      ],
      McpEndpoint: [
        { what: 'no options', call: () => new McpEndpoint(undefined as never), option: 'McpEndpoint options', says: /\{ hub \}/ },
        { what: 'a Hub instead of the options', call: () => new McpEndpoint(hub as never), option: 'McpEndpoint options', says: /got a Hub: pass \{ hub \}/ },
        { what: 'no hub', call: () => new McpEndpoint({} as never), option: 'hub' },
        { what: 'hub an empty object', call: () => new McpEndpoint({ hub: {} as never }), option: 'hub' },
        { what: 'hub an endpoint', call: () => new McpEndpoint({ hub: endpoint as never }), option: 'hub', says: /got an McpEndpoint: pass endpoint\.hub/ },
        { what: 'an unknown option', call: () => new McpEndpoint({ hub, keepAliveIntervall: 5000 } as never), option: 'keepAliveIntervall', says: /did you mean keepAliveInterval/ },
        { what: 'capabilities an array', call: () => new McpEndpoint({ hub, capabilities: ['tools'] as never }), option: 'capabilities', says: /tools, prompts, resources, tasks/ },
        { what: 'an unknown capability', call: () => new McpEndpoint({ hub, capabilities: { tool: true } as never }), option: 'capabilities', says: /tool is not one of them/ },
        { what: 'a capability not a boolean', call: () => new McpEndpoint({ hub, capabilities: { tools: { listChanged: true } } as never }), option: 'capabilities.tools' },
        { what: 'canRead a boolean', call: () => new McpEndpoint({ hub, canRead: true as never }), option: 'canRead' },
        { what: 'subscribeHook a string', call: () => new McpEndpoint({ hub, subscribeHook: 'x' as never }), option: 'subscribeHook' },
        { what: 'authenticate a string', call: () => new McpEndpoint({ hub, authenticate: 'x' as never }), option: 'authenticate' },
        { what: 'a method not a function', call: () => new McpEndpoint({ hub, methods: { foo: 1 } as never }), option: 'methods.foo' },
        { what: 'methods an array', call: () => new McpEndpoint({ hub, methods: [noop] as never }), option: 'methods' },
        { what: 'serverInfo a string', call: () => new McpEndpoint({ hub, serverInfo: 'me' as never }), option: 'serverInfo', says: /name/ },
        { what: 'serverInfo without a version', call: () => new McpEndpoint({ hub, serverInfo: { name: 'me' } as never }), option: 'serverInfo.version' },
        { what: 'instructions a number', call: () => new McpEndpoint({ hub, instructions: 5 as never }), option: 'instructions' },
        { what: 'extraCapabilities a string', call: () => new McpEndpoint({ hub, extraCapabilities: 'logging' as never }), option: 'extraCapabilities' },
        { what: 'slots a number', call: () => new McpEndpoint({ hub, slots: 1000 as never }), option: 'slots', says: /maxStreams/ },
        { what: 'principals without admit', call: () => new McpEndpoint({ hub, principals: {} as never }), option: 'principals' },
        { what: 'sessionStore without its methods', call: () => new McpEndpoint({ hub, sessionStore: new Map() as never }), option: 'sessionStore' },
        { what: 'sessionBus without its methods', call: () => new McpEndpoint({ hub, sessionBus: {} as never }), option: 'sessionBus' },
        { what: 'eventLog a ReplayBuffer', call: () => new McpEndpoint({ hub, eventLog: new main.ReplayBuffer() as never }), option: 'eventLog' },
        { what: 'scheduler not a SchedulerLike', call: () => new McpEndpoint({ hub, scheduler: {} as never }), option: 'scheduler' },
        { what: 'resourceProviders not an array', call: () => new McpEndpoint({ hub, resourceProviders: main.hubResources(hub) as never }), option: 'resourceProviders' },
        { what: 'a resource provider without its methods', call: () => new McpEndpoint({ hub, resourceProviders: [{}] as never }), option: 'resourceProviders[0]' },
        { what: 'legacy a string', call: () => new McpEndpoint({ hub, legacy: 'no' as never }), option: 'legacy' },
        { what: 'keepAliveInterval negative', call: () => new McpEndpoint({ hub, keepAliveInterval: -5 }), option: 'keepAliveInterval' },
        { what: 'allowedHosts a string', call: () => new McpEndpoint({ hub, allowedHosts: 'localhost' as never }), option: 'allowedHosts' },
      ],
      nodeHandler: [
        { what: 'no endpoint', call: () => main.nodeHandler(undefined as never), option: 'nodeHandler endpoint' },
        { what: 'a Hub instead of the endpoint', call: () => main.nodeHandler(hub as never), option: 'nodeHandler endpoint', says: /got a Hub: pass new McpEndpoint\(\{ hub \}\)/ },
        { what: 'an empty object', call: () => main.nodeHandler({} as never), option: 'nodeHandler endpoint' },
      ],
      webHandler: [
        { what: 'no endpoint', call: () => main.webHandler(undefined as never), option: 'webHandler endpoint' },
        { what: 'a Hub instead of the endpoint', call: () => main.webHandler(hub as never), option: 'webHandler endpoint', says: /new McpEndpoint\(\{ hub \}\)/ },
        { what: 'options a number', call: () => main.webHandler(endpoint, 65_536 as never), option: 'webHandler options' },
        { what: 'an unknown option', call: () => main.webHandler(endpoint, { highwaterMark: 1 } as never), option: 'highwaterMark' },
        { what: 'highWaterMark zero', call: () => main.webHandler(endpoint, { highWaterMark: 0 }), option: 'highWaterMark' },
      ],
      StreamSlots: [
        { what: 'a string capacity', call: () => new main.StreamSlots('10' as never), option: 'maxStreams' },
        { what: 'zero', call: () => new main.StreamSlots(0), option: 'maxStreams' },
      ],
      PrincipalRegistry: [
        { what: 'null', call: () => new main.PrincipalRegistry(null as never), option: 'maxListensPerPrincipal' },
        { what: 'a fraction', call: () => new main.PrincipalRegistry(1.5), option: 'maxListensPerPrincipal' },
      ],
      ReplayBuffer: [
        { what: 'a string capacity', call: () => new main.ReplayBuffer('5' as never), option: 'replayBufferSize' },
        { what: 'beyond the safe integers', call: () => new main.ReplayBuffer(2 ** 60), option: 'replayBufferSize' },
      ],
      hubResources: [
        { what: 'no hub', call: () => main.hubResources(undefined as never), option: 'hubResources hub' },
        { what: 'an endpoint instead of its hub', call: () => main.hubResources(endpoint as never), option: 'hubResources hub', says: /endpoint\.hub/ },
        { what: 'options a function', call: () => main.hubResources(hub, noop as never), option: 'hubResources options' },
        { what: 'canRead a boolean', call: () => main.hubResources(hub, { canRead: true as never }), option: 'canRead' },
        { what: 'subscribable a string', call: () => main.hubResources(hub, { subscribable: 'file://' as never }), option: 'subscribable' },
        { what: 'templates an array', call: () => main.hubResources(hub, { templates: [] as never }), option: 'templates' },
        { what: 'an unknown option', call: () => main.hubResources(hub, { canread: noop } as never), option: 'canread' },
      ],
      notifications: [
        { what: 'no hub', call: () => main.notifications(undefined as never, { toolsListChanged: true }), option: 'notifications hub' },
        { what: 'no filter', call: () => main.notifications(hub, undefined as never), option: 'notifications filter' },
        { what: 'a misspelled filter field', call: () => main.notifications(hub, { toolListChanged: true } as never), option: 'notifications filter.toolListChanged' },
        { what: 'a URI that is not a string', call: () => main.notifications(hub, { resourceSubscriptions: [5] } as never), option: 'notifications filter.resourceSubscriptions[0]' },
      ],
      resolveListenOptions: [
        { what: 'a string', call: () => main.resolveListenOptions('x' as never), option: 'options' },
        { what: 'an unknown option', call: () => main.resolveListenOptions({ keepAliveIntervall: 1 } as never), option: 'keepAliveIntervall' },
        { what: 'a negative interval', call: () => main.resolveListenOptions({ keepAliveInterval: -5 }), option: 'keepAliveInterval' },
      ],
      resolveStreamLimits: [
        { what: 'a string', call: () => main.resolveStreamLimits('x' as never), option: 'options' },
        { what: 'an unknown option', call: () => main.resolveStreamLimits({ maxStream: 1 } as never), option: 'maxStream' },
      ],
      resolveSessionOptions: [
        { what: 'a string', call: () => main.resolveSessionOptions('x' as never), option: 'options' },
        { what: 'an unknown option', call: () => main.resolveSessionOptions({ sessionIdleTimout: 1000 } as never), option: 'sessionIdleTimout' },
        { what: 'allowClientSessionDelete a string', call: () => main.resolveSessionOptions({ allowClientSessionDelete: 'no' as never }), option: 'allowClientSessionDelete' },
      ],
      positiveInteger: [{ what: 'zero', call: () => main.positiveInteger('maxStreams', 0), option: 'maxStreams' }],
      // Operators (checked in operators/ with validate.ts).
      ackThenNotify: [{ what: 'no ack', call: () => main.ackThenNotify(undefined as never), option: 'ackThenNotify ack' }],
      closeWhen: [
        { what: 'no triggers', call: () => main.closeWhen(undefined as never, 'end'), option: 'closeWhen triggers' },
        { what: 'onClose a string', call: () => main.closeWhen([], 'end', 'x' as never), option: 'closeWhen onClose' },
      ],
      expiresAt: [{ what: 'a string', call: () => main.expiresAt('soon' as never), option: 'expiresAt epochMs' }],
      idleTimeout: [{ what: 'negative', call: () => main.idleTimeout(-1), option: 'idleTimeout ms' }],
      lifetimeCap: [{ what: 'nothing', call: () => main.lifetimeCap(undefined as never), option: 'lifetimeCap ms' }],
      superseded: [{ what: 'a number', call: () => main.superseded(1 as never), option: 'superseded signal$' }],
      shutdown: [{ what: 'nothing', call: () => main.shutdown(undefined as never), option: 'shutdown signal$' }],
      listenPipeline: [
        { what: 'no init', call: () => main.listenPipeline(undefined as never), option: 'listenPipeline init' },
        { what: 'no requestId', call: () => main.listenPipeline({} as never), option: 'requestId' },
      ],
      listenStream: [
        { what: 'no init', call: () => main.listenStream(undefined as never), option: 'listenStream init' },
        { what: 'a hub that is not a Hub', call: () => main.listenStream({ requestId: 1, filter: {}, hub: {} } as never), option: 'notifications hub' },
      ],
      sessionPipeline: [{ what: 'no init', call: () => main.sessionPipeline(undefined as never), option: 'sessionPipeline init' }],
      dropWhenQueueExceeds: [{ what: 'no limit', call: () => main.dropWhenQueueExceeds(undefined as never, of(true)), option: 'dropWhenQueueExceeds limit' }],
      primeStream: [
        { what: 'a negative retry', call: () => main.primeStream(null, new main.ReplayBuffer(), -1), option: 'primeStream retry' },
        { what: 'no log', call: () => main.primeStream(null, undefined as never, 1000), option: 'primeStream log' },
      ],
      keepAlive: [{ what: 'nothing', call: () => main.keepAlive(undefined as never), option: 'keepAlive intervalMs' }],
      replayFrom: [{ what: 'no log', call: () => main.replayFrom('1', undefined as never), option: 'replayFrom log' }],
      restoreSubscriptions: [{ what: 'no subscribe', call: () => main.restoreSubscriptions([], undefined as never), option: 'restoreSubscriptions subscribe' }],
      tagSubscriptionId: [{ what: 'an object id', call: () => main.tagSubscriptionId({} as never), option: 'tagSubscriptionId id' }],
      withEventIds: [{ what: 'no log', call: () => main.withEventIds(undefined as never), option: 'withEventIds log' }],
      logTo: [
        { what: 'no logger', call: () => main.logTo(undefined as never), option: 'logger' },
        { what: 'console.log instead of a logger', call: () => main.logTo(console.log as never), option: 'logger' },
        { what: 'an unknown option', call: () => main.logTo(silentLogger, { dropWarnings: 1 } as never), option: 'dropWarnings' },
        { what: 'dropWarningInterval negative', call: () => main.logTo(silentLogger, { dropWarningInterval: -1 }), option: 'dropWarningInterval' },
      ],
      // Message channels (adapters/channel/).
      channelPair: [
        { what: 'options a number', call: () => main.channelPair(65_536 as never), option: 'channelPair options' },
        { what: 'an unknown option', call: () => main.channelPair({ highWatermark: 1 } as never), option: 'highWatermark' },
        { what: 'highWaterMark zero', call: () => main.channelPair({ highWaterMark: 0 }), option: 'highWaterMark' },
      ],
      channelTransport: [{ what: 'not a channel', call: () => main.channelTransport({} as never), option: 'channelTransport channel' }],
      serveChannel: [
        { what: 'a Hub instead of the endpoint', call: () => main.serveChannel(hub as never, main.channelPair()[0]), option: 'serveChannel endpoint', says: /new McpEndpoint\(\{ hub \}\)/ },
        { what: 'no channel', call: () => main.serveChannel(endpoint, undefined as never), option: 'serveChannel channel' },
        { what: 'a channel without its Observables', call: () => main.serveChannel(endpoint, { send: () => true, close: () => undefined } as never), option: 'serveChannel channel' },
        { what: 'an unknown option', call: () => main.serveChannel(endpoint, main.channelPair()[0], { principal: 'x' } as never), option: 'principal' },
        { what: 'auth without scopes', call: () => main.serveChannel(endpoint, main.channelPair()[0], { auth: { principal: 'x' } as never }), option: 'auth' },
      ],
      stdioChannel: [
        { what: 'options a string', call: () => main.stdioChannel('stdin' as never), option: 'stdioChannel options' },
        { what: 'an unknown option', call: () => main.stdioChannel({ stdin: process.stdin } as never), option: 'stdin' },
        { what: 'input a string', call: () => main.stdioChannel({ input: 'x' as never }), option: 'input' },
        { what: 'output without write', call: () => main.stdioChannel({ output: {} as never }), option: 'output' },
        { what: 'maxMessageBytes zero', call: () => main.stdioChannel({ maxMessageBytes: 0 }), option: 'maxMessageBytes' },
      ],
      protectResource: [
        { what: 'no hook', call: () => main.protectResource(undefined as never, protectedResource), option: 'protectResource authenticate' },
        { what: 'no resource', call: () => main.protectResource(noop, undefined as never), option: 'protectResource resource', says: /\{ resource: / },
        { what: 'an http resource off loopback', call: () => main.protectResource(noop, { ...protectedResource, resource: 'http://mcp.example.com/mcp' }), option: 'protectResource resource.resource', says: /https/ },
        { what: 'an unknown field', call: () => main.protectResource(noop, { ...protectedResource, audience: 'x' } as never), option: 'protectResource resource.audience' },
      ],
      serveStdio: [
        { what: 'no endpoint', call: () => main.serveStdio(undefined as never), option: 'serveStdio endpoint' },
        { what: 'an unknown option', call: () => main.serveStdio(endpoint, { maxMessageBytes: 10 } as never), option: 'maxMessageBytes' },
      ],
    },
    notFactories: {
      isCloseReason: DATA,
      MemorySessionStore: NO_ARGUMENTS,
      queueTotals: NO_ARGUMENTS,
      acceptsEventStream: DATA,
      acknowledgedNotification: DATA,
      addressBucket: DATA,
      anonymous: DATA,
      authorizeListenFilter: DATA,
      clientDeclaresTasks: DATA,
      controlFrame: DATA,
      encodeFrame: DATA,
      encodeMessage: DATA,
      encodeResourceUpdated: DATA,
      encodeSseEvent: DATA,
      encodedByteLength: DATA,
      filterNames: DATA,
      isJsonRpcId: DATA,
      isNotification: DATA,
      isThenable: DATA,
      mayReceive: DATA,
      messageJson: DATA,
      notificationFrame: DATA,
      parseListenFilter: `${DATA}: its errors are JSON-RPC -32602 answers`,
      taggedMessage: DATA,
    },
  },
  {
    name: 'mcp-rx-streams/client',
    module: client,
    factories: {
      listen: [
        ...optionsRows('listen options', (options) => client.listen(options as never), { url, notifications: {} }, /\{ url, notifications \}/),
        { what: 'no url', call: () => client.listen({ notifications: {} } as never), option: 'url' },
        { what: 'a url without a scheme', call: () => client.listen({ url: '127.0.0.1:3000/mcp', notifications: {} }), option: 'url', says: /http/ },
        { what: 'a url of a number', call: () => client.listen({ url: 3000 as never, notifications: {} }), option: 'url' },
        { what: 'no notifications', call: () => client.listen({ url } as never), option: 'notifications' },
        { what: 'an id object', call: () => client.listen({ url, notifications: {}, id: {} as never }), option: 'id' },
        { what: 'a token number', call: () => client.listen({ url, notifications: {}, token: 5 as never }), option: 'token' },
        { what: 'headers a string', call: () => client.listen({ url, notifications: {}, headers: 'x' as never }), option: 'headers' },
        { what: 'a header not a string', call: () => client.listen({ url, notifications: {}, headers: { 'x-n': 1 } as never }), option: 'headers.x-n' },
        { what: 'a dispatcher without dispatch', call: () => client.listen({ url, notifications: {}, dispatcher: {} as never }), option: 'dispatcher' },
        { what: 'onComment a string', call: () => client.listen({ url, notifications: {}, onComment: 'x' as never }), option: 'onComment' },
        { what: 'a negative bodyTimeout', call: () => client.listen({ url, notifications: {}, bodyTimeout: -1 }), option: 'bodyTimeout' },
      ],
      openSse: [
        { what: 'no url', call: () => client.openSse(undefined as never, { sessionId: 's' }), option: 'openSse url' },
        { what: 'no init', call: () => client.openSse(url, undefined as never), option: 'openSse init', says: /\{ sessionId \}/ },
        { what: 'no sessionId', call: () => client.openSse(url, {} as never), option: 'sessionId' },
        { what: 'an unknown option', call: () => client.openSse(url, { sessionId: 's', lastEventID: '4' } as never), option: 'lastEventID', says: /lastEventId/ },
        { what: 'a lastEventId number', call: () => client.openSse(url, { sessionId: 's', lastEventId: 4 as never }), option: 'lastEventId' },
        { what: 'a protocolVersion number', call: () => client.openSse(url, { sessionId: 's', protocolVersion: 2025 as never }), option: 'protocolVersion' },
      ],
      SseParser: [
        { what: 'no onEvent', call: () => new client.SseParser(undefined as never), option: 'SseParser onEvent' },
        { what: 'onComment a string', call: () => new client.SseParser(noop, 'x' as never), option: 'SseParser onComment' },
      ],
    },
    notFactories: { parseSse: DATA },
  },
  {
    name: 'mcp-rx-streams/redis',
    module: redis,
    factories: {
      RedisBus: [...redisRows('RedisBus', (options) => new redis.RedisBus(options as never))],
      RedisLease: [...redisRows('RedisLease', (options) => new redis.RedisLease(options as never))],
      RedisPrincipalCap: [...redisRows('RedisPrincipalCap', (options) => new redis.RedisPrincipalCap(options as never))],
      RedisSessionBus: [...redisRows('RedisSessionBus', (options) => new redis.RedisSessionBus(options as never))],
      RedisSessionStore: [...redisRows('RedisSessionStore', (options) => new redis.RedisSessionStore(options as never))],
      redisEventLogs: [...redisRows('redisEventLogs', (options) => redis.redisEventLogs(options as never))],
    },
    notFactories: {},
  },
  {
    // Every option is optional: a call without any would start serving (a primary) or wait for one (a worker).
    name: 'mcp-rx-streams/cluster',
    module: cluster,
    factories: {
      clusterPrimary: [
        { what: 'a number instead of the options', call: () => cluster.clusterPrimary(4 as never), option: 'clusterPrimary options' },
        { what: 'an unknown option', call: () => cluster.clusterPrimary({ maxStream: 4 } as never), option: 'maxStream', says: /maxStreams/ },
        { what: 'maxStreams zero', call: () => cluster.clusterPrimary({ maxStreams: 0 }), option: 'maxStreams' },
        { what: 'maxSessionsPerPrincipal a string', call: () => cluster.clusterPrimary({ maxSessionsPerPrincipal: '2' as never }), option: 'maxSessionsPerPrincipal' },
        { what: 'sessionIdleTimeout negative', call: () => cluster.clusterPrimary({ sessionIdleTimeout: -1 }), option: 'sessionIdleTimeout' },
        { what: 'a nodeId with a space', call: () => cluster.clusterPrimary({ nodeId: 'node a' }), option: 'nodeId' },
        { what: 'bus without publish and connect', call: () => cluster.clusterPrimary({ bus: {} as never }), option: 'bus', says: /HubBus/ },
        { what: 'principals without admit', call: () => cluster.clusterPrimary({ principals: {} as never }), option: 'principals' },
        { what: 'eventLog a ReplayBuffer', call: () => cluster.clusterPrimary({ eventLog: new main.ReplayBuffer() as never }), option: 'eventLog' },
        { what: 'lease a RedisLease instead of a function of the key', call: () => cluster.clusterPrimary({ lease: { held$: of(true) } as never }), option: 'lease' },
      ],
      clusterWorker: [
        { what: 'a number instead of the options', call: () => cluster.clusterWorker(5000 as never), option: 'clusterWorker options' },
        { what: 'an unknown option', call: () => cluster.clusterWorker({ timout: 10 } as never), option: 'timout', says: /timeout/ },
        { what: 'timeout zero', call: () => cluster.clusterWorker({ timeout: 0 }), option: 'timeout' },
        { what: 'capacityRetryAfter a string', call: () => cluster.clusterWorker({ capacityRetryAfter: '5000' as never }), option: 'capacityRetryAfter' },
      ],
    },
    notFactories: {},
  },
  {
    name: 'mcp-rx-streams/metrics',
    module: metrics,
    factories: {
      collectMetrics: [
        { what: 'no registry', call: () => metrics.collectMetrics(undefined as never, endpoint), option: 'collectMetrics registry' },
        { what: 'a Hub instead of the endpoint', call: () => metrics.collectMetrics(new Registry(), hub as never), option: 'collectMetrics endpoint', says: /new McpEndpoint\(\{ hub \}\)/ },
        { what: 'options a string', call: () => metrics.collectMetrics(new Registry(), endpoint, 'app_' as never), option: 'collectMetrics options' },
        { what: 'an unknown option', call: () => metrics.collectMetrics(new Registry(), endpoint, { prefx: 'app_' } as never), option: 'prefx' },
        { what: 'a prefix Prometheus cannot name with', call: () => metrics.collectMetrics(new Registry(), endpoint, { prefix: 'my-app.' }), option: 'prefix' },
        { what: 'a prefix number', call: () => metrics.collectMetrics(new Registry(), endpoint, { prefix: 5 as never }), option: 'prefix' },
      ],
      collectUpstreamMetrics: [
        { what: 'no registry', call: () => metrics.collectUpstreamMetrics(undefined as never, gateway), option: 'collectUpstreamMetrics registry' },
        { what: 'an endpoint instead of the gateway', call: () => metrics.collectUpstreamMetrics(new Registry(), endpoint as never), option: 'collectUpstreamMetrics gateway', says: /upstreamGateway\(/ },
        { what: 'a prefix Prometheus cannot name with', call: () => metrics.collectUpstreamMetrics(new Registry(), gateway, { prefix: 'my-app.' }), option: 'prefix' },
      ],
      collectClusterMetrics: [
        { what: 'no registry', call: () => metrics.collectClusterMetrics(undefined as never, {} as never), option: 'collectClusterMetrics registry' },
        { what: 'a plain object instead of the primary', call: () => metrics.collectClusterMetrics(new Registry(), {} as never), option: 'collectClusterMetrics primary' },
      ],
    },
    notFactories: {},
  },
  {
    name: 'mcp-rx-streams/sdk',
    module: sdk,
    factories: {
      HubEventBus: [
        { what: 'no hub', call: () => new sdk.HubEventBus(undefined as never), option: 'hub' },
        { what: 'an endpoint instead of its hub', call: () => new sdk.HubEventBus(endpoint as never), option: 'hub', says: /endpoint\.hub/ },
      ],
      ResourceUpdates: [
        { what: 'no server', call: () => new sdk.ResourceUpdates(undefined as never, { hub }), option: 'server' },
        { what: 'no options', call: () => new sdk.ResourceUpdates(sender, undefined as never), option: 'ResourceUpdates options', says: /\{ hub \}/ },
        { what: 'a Hub instead of the options', call: () => new sdk.ResourceUpdates(sender, hub as never), option: 'ResourceUpdates options', says: /got a Hub: pass \{ hub \}/ },
        { what: 'an unknown option', call: () => new sdk.ResourceUpdates(sender, { hub, listChange: ['tools'] } as never), option: 'listChange' },
        { what: 'hub an empty object', call: () => new sdk.ResourceUpdates(sender, { hub: {} as never }), option: 'hub' },
        { what: 'listChanges a string', call: () => new sdk.ResourceUpdates(sender, { hub, listChanges: 'tools' as never }), option: 'listChanges' },
        { what: 'authenticate a string', call: () => new sdk.ResourceUpdates(sender, { hub, authenticate: 'x' as never }), option: 'authenticate' },
        { what: 'onChange a number', call: () => new sdk.ResourceUpdates(sender, { hub, onChange: 1 as never }), option: 'onChange' },
        { what: 'a resource provider without its methods', call: () => new sdk.ResourceUpdates(sender, { resourceProviders: [{}] as never }), option: 'resourceProviders[0]' },
      ],
      eventLogStore: [
        { what: 'no eventLogs', call: () => sdk.eventLogStore(undefined as never, 's'), option: 'eventLogs' },
        { what: 'no sessionId', call: () => sdk.eventLogStore(() => new main.ReplayBuffer(), undefined as never), option: 'sessionId' },
      ],
      replayEventStore: [
        { what: 'options a number', call: () => sdk.replayEventStore(100 as never), option: 'replayEventStore options' },
        { what: 'an unknown option', call: () => sdk.replayEventStore({ capcity: 100 } as never), option: 'capcity' },
        { what: 'capacity zero', call: () => sdk.replayEventStore({ capacity: 0 }), option: 'capacity' },
      ],
      sdkRouter: [
        ...optionsRows('sdkRouter options', (options) => sdk.sdkRouter(options as never), { endpoint, sdk: sdkHandler }, /\{ endpoint, sdk \}/),
        { what: 'a Hub instead of the endpoint', call: () => sdk.sdkRouter({ endpoint: hub as never, sdk: sdkHandler }), option: 'endpoint', says: /new McpEndpoint\(\{ hub \}\)/ },
        { what: 'sdk without fetch', call: () => sdk.sdkRouter({ endpoint, sdk: {} as never }), option: 'sdk' },
        { what: 'highWaterMark zero', call: () => sdk.sdkRouter({ endpoint, sdk: sdkHandler, highWaterMark: 0 }), option: 'highWaterMark' },
      ],
      sdkStdio: [
        { what: 'no options', call: () => sdk.sdkStdio(undefined as never), option: 'sdkStdio options', says: /\{ endpoint, connect \}/ },
        { what: 'a Hub instead of the endpoint', call: () => sdk.sdkStdio({ endpoint: hub as never, connect: () => undefined }), option: 'endpoint', says: /new McpEndpoint\(\{ hub \}\)/ },
        { what: 'connect not a function', call: () => sdk.sdkStdio({ endpoint, connect: 'x' as never }), option: 'connect' },
        { what: 'an unknown option', call: () => sdk.sdkStdio({ endpoint, connect: () => undefined, stdin: process.stdin } as never), option: 'stdin' },
      ],
    },
    notFactories: {},
  },
  {
    name: 'mcp-rx-streams/otel',
    module: otel,
    factories: {
      collectOtelMetrics: [
        { what: 'no meter', call: () => otel.collectOtelMetrics(undefined as never, endpoint), option: 'collectOtelMetrics meter' },
        { what: 'a Hub instead of the endpoint', call: () => otel.collectOtelMetrics(meter, hub as never), option: 'collectOtelMetrics endpoint', says: /new McpEndpoint\(\{ hub \}\)/ },
        { what: 'an unknown option', call: () => otel.collectOtelMetrics(meter, endpoint, { prefx: 'app.' } as never), option: 'prefx' },
        { what: 'a prefix with a space', call: () => otel.collectOtelMetrics(meter, endpoint, { prefix: 'my app.' }), option: 'prefix' },
      ],
      collectUpstreamOtelMetrics: [
        { what: 'no meter', call: () => otel.collectUpstreamOtelMetrics(undefined as never, gateway), option: 'collectUpstreamOtelMetrics meter' },
        { what: 'an endpoint instead of the gateway', call: () => otel.collectUpstreamOtelMetrics(meter, endpoint as never), option: 'collectUpstreamOtelMetrics gateway', says: /upstreamGateway\(/ },
        { what: 'an unknown option', call: () => otel.collectUpstreamOtelMetrics(meter, gateway, { prefx: 'app.' } as never), option: 'prefx' },
      ],
      traceListens: [
        { what: 'no tracer', call: () => otel.traceListens(undefined as never), option: 'traceListens tracer' },
        { what: 'spanUntil another value', call: () => otel.traceListens(tracer, { spanUntil: 'end' as never }), option: 'spanUntil' },
      ],
    },
    notFactories: {},
  },
  {
    name: 'mcp-rx-streams/upstream',
    module: upstream,
    factories: {
      upstreamGateway: [
        ...optionsRows('upstreamGateway options', (options) => upstream.upstreamGateway(options as never), { hub, upstreams: [] }, /\{ hub, upstreams \}/),
        { what: 'an endpoint instead of its hub', call: () => upstream.upstreamGateway({ hub: endpoint as never, upstreams: [] }), option: 'hub', says: /endpoint\.hub/ },
        { what: 'upstreams not an array', call: () => upstream.upstreamGateway({ hub, upstreams: { name: 'a', url } as never }), option: 'upstreams' },
        { what: "an upstream's option out of range", call: () => upstream.upstreamGateway({ hub, upstreams: [{ name: 'a', url, linger: -1 }] }), option: 'upstreams[0].linger' },
        { what: 'two upstreams of one name', call: () => upstream.upstreamGateway({ hub, upstreams: [{ name: 'a', url }, { name: 'a', url }] }), option: 'upstreams[1].name' },
        { what: 'failMode another value', call: () => upstream.upstreamGateway({ hub, upstreams: [], failMode: 'strict' as never }), option: 'failMode', says: /"open" or "closed"/ },
        { what: 'ackTimeout 0', call: () => upstream.upstreamGateway({ hub, upstreams: [], ackTimeout: 0 }), option: 'ackTimeout' },
        { what: 'canRead not a function', call: () => upstream.upstreamGateway({ hub, upstreams: [], canRead: true as never }), option: 'canRead' },
      ],
      UpstreamGateway: [{ what: 'no options', call: () => new upstream.UpstreamGateway(undefined as never), option: 'upstreamGateway options', says: /\{ hub, upstreams \}/ }],
      Upstream: [
        ...optionsRows('Upstream options', (options) => new upstream.Upstream(options as never), { name: 'a', url }, /\{ name, url \} or \{ name, command \}/),
        { what: 'a name that is no DNS label', call: () => new upstream.Upstream({ name: 'My Notes', url }), option: 'name', says: /lower-case/ },
        { what: 'neither url nor command', call: () => new upstream.Upstream({ name: 'a' } as never), option: 'Upstream options', says: /one of url .* and command/ },
        { what: 'a url that is not http(s)', call: () => new upstream.Upstream({ name: 'a', url: 'ws://127.0.0.1:9/mcp' }), option: 'url' },
        { what: 'era another value', call: () => new upstream.Upstream({ name: 'a', url, era: '2026' as never }), option: 'era' },
        { what: 'a command with an open quote', call: () => new upstream.Upstream({ name: 'a', command: 'node "server.js' }), option: 'command' },
        { what: 'a token for a command', call: () => new upstream.Upstream({ name: 'a', command: 'node server.js', token: 't' }), option: 'token', says: /url only/ },
        { what: 'a reconnect member misspelled', call: () => new upstream.Upstream({ name: 'a', url, reconnect: { maxDelai: 5 } as never }), option: 'reconnect.maxDelai' },
      ],
      reconnect: [
        { what: 'a policy member out of range', call: () => upstream.reconnect({ jitter: 2 }), option: 'reconnect.jitter', says: /from 0 to 1/ },
        { what: 'a scheduler that is not one', call: () => upstream.reconnect({}, { scheduler: {} as never }), option: 'scheduler' },
        { what: 'onRetry not a function', call: () => upstream.reconnect({}, { onRetry: 'log' as never }), option: 'onRetry' },
      ],
      resolveReconnectPolicy: [{ what: 'maxDelay below initialDelay', call: () => upstream.resolveReconnectPolicy('reconnect', { initialDelay: 100, maxDelay: 10 }), option: 'reconnect.maxDelay', says: /at least reconnect\.initialDelay/ }],
      commandWords: [{ what: 'an unclosed quote', call: () => upstream.commandWords("node 'a", '--upstream'), option: '--upstream', says: /single quotes/ }],
      upstreamFromText: [{ what: 'no name', call: () => upstream.upstreamFromText('--upstream', 'http://127.0.0.1:9/mcp'), option: '--upstream', says: /NAME=URL/ }],
    },
    notFactories: {
      reconnectDelay: 'a pure function of a resolved policy and an attempt (resolveReconnectPolicy checks the policy)',
      upstreamUri: 'a pure string rewrite of any name and URI (no configuration)',
      splitUpstreamUri: 'a pure string parse of any URI (no configuration)',
    },
  },
  {
    name: 'mcp-rx-streams/ws',
    module: ws,
    factories: {
      webSocketChannel: [
        { what: 'no socket', call: () => ws.webSocketChannel(undefined as never), option: 'webSocketChannel socket' },
        { what: 'highWaterMark a string', call: () => ws.webSocketChannel(fakeSocket, { highWaterMark: '64k' as never }), option: 'highWaterMark' },
      ],
      serveWebSocket: [
        { what: 'a Hub instead of the endpoint', call: () => ws.serveWebSocket(hub as never, fakeSocket), option: 'serveWebSocket endpoint', says: /new McpEndpoint\(\{ hub \}\)/ },
        { what: 'no socket', call: () => ws.serveWebSocket(endpoint, undefined as never), option: 'serveWebSocket socket' },
      ],
      webSocketServer: [
        { what: 'no endpoint', call: () => ws.webSocketServer(undefined as never), option: 'webSocketServer endpoint' },
        { what: 'an unknown option', call: () => ws.webSocketServer(endpoint, { pathname: '/mcp' } as never), option: 'pathname' },
        { what: 'a port out of range', call: () => ws.webSocketServer(endpoint, { port: 70_000 }), option: 'port' },
        { what: 'a path without its slash', call: () => ws.webSocketServer(endpoint, { path: 'mcp' }), option: 'path' },
      ],
    },
    notFactories: {},
  },
  {
    name: 'mcp-rx-streams/auth',
    module: auth,
    factories: {
      jwtAuthenticator: [
        { what: 'no options', call: () => auth.jwtAuthenticator(undefined as never), option: 'jwtAuthenticator options', says: /\{ issuer/ },
        { what: 'an unknown option', call: () => auth.jwtAuthenticator({ issuer, resource, jwksUrl: 'x' } as never), option: 'jwksUrl', says: /did you mean jwksUri/ },
        { what: 'an http issuer off loopback', call: () => auth.jwtAuthenticator({ issuer: 'http://auth.example.com', resource }), option: 'issuer', says: /loopback|localhost/ },
        { what: 'no resource', call: () => auth.jwtAuthenticator({ issuer } as never), option: 'jwtAuthenticator options.resource' },
        { what: 'a symmetric algorithm', call: () => auth.jwtAuthenticator({ issuer, resource, algorithms: ['HS256'] }), option: 'algorithms[0]', says: /never HS/ },
        { what: 'fetchTimeout zero', call: () => auth.jwtAuthenticator({ issuer, resource, fetchTimeout: 0 }), option: 'fetchTimeout' },
        { what: 'an http jwksUri off loopback', call: () => auth.jwtAuthenticator({ issuer, resource, jwksUri: 'http://auth.example.com/jwks' }), option: 'jwksUri' },
        { what: 'an empty audience list', call: () => auth.jwtAuthenticator({ issuer, resource, audience: [] }), option: 'audience' },
        { what: 'clockTolerance negative', call: () => auth.jwtAuthenticator({ issuer, resource, clockTolerance: -1 }), option: 'clockTolerance' },
      ],
      introspectionAuthenticator: [
        { what: 'no options', call: () => auth.introspectionAuthenticator(undefined as never), option: 'introspectionAuthenticator options' },
        { what: 'no client secret', call: () => auth.introspectionAuthenticator({ ...introspection, clientSecret: undefined as never }), option: 'clientSecret' },
        { what: 'an http introspectionUrl off loopback', call: () => auth.introspectionAuthenticator({ ...introspection, introspectionUrl: 'http://auth.example.com/i' }), option: 'introspectionUrl' },
        { what: 'cacheSize zero', call: () => auth.introspectionAuthenticator({ ...introspection, cacheSize: 0 }), option: 'cacheSize' },
        { what: 'another client authentication', call: () => auth.introspectionAuthenticator({ ...introspection, clientAuthentication: 'private_key_jwt' as never }), option: 'clientAuthentication' },
      ],
      tokenVerifierAuthenticator: [
        { what: 'no verifier', call: () => auth.tokenVerifierAuthenticator(undefined as never, { resource, authorizationServers: [issuer] }), option: 'tokenVerifierAuthenticator verifier' },
        { what: 'no authorization servers', call: () => auth.tokenVerifierAuthenticator({ verifyAccessToken: async () => ({}) as never }, { resource, authorizationServers: [] }), option: 'authorizationServers' },
        { what: 'principal not a function', call: () => auth.tokenVerifierAuthenticator({ verifyAccessToken: async () => ({}) as never }, { resource, authorizationServers: [issuer], principal: 'sub' as never }), option: 'principal' },
      ],
      discoverAuthorizationServer: [
        { what: 'an http issuer off loopback', call: () => auth.discoverAuthorizationServer('http://auth.example.com'), option: 'issuer' },
        { what: 'timeout zero', call: () => auth.discoverAuthorizationServer(issuer, { timeout: 0 }), option: 'timeout' },
      ],
    },
    notFactories: {},
  },
  {
    // Not a package entry: the server of the `mcp-rx-streams` bin (adapters/cli.ts), started by examples and specs.
    name: 'adapters/reference/server.ts',
    module: reference,
    factories: {
      startReferenceServer: [
        { what: 'null instead of the options', call: () => reference.startReferenceServer(null as never), option: 'startReferenceServer options', says: /\{ dir/ },
        { what: 'an unknown option', call: () => start({ prot: 3000 }), option: 'prot', says: /port/ },
        { what: 'a port string', call: () => start({ port: '0' }), option: 'port' },
        { what: 'a port beyond 65535', call: () => start({ port: 70_000 }), option: 'port' },
        { what: 'a host number', call: () => start({ host: 127 }), option: 'host' },
        { what: 'a dir number', call: () => start({ dir: 5 }), option: 'dir' },
        { what: 'an empty tokenSecret', call: () => start({ tokenSecret: '' }), option: 'tokenSecret' },
        { what: 'redis a number', call: () => start({ redis: 6379 }), option: 'redis' },
        { what: 'cluster a string', call: () => start({ cluster: 'yes' }), option: 'cluster' },
        { what: 'cluster with redis (the primary is the fleet node)', call: () => start({ cluster: true, redis: 'redis://127.0.0.1:9' }), option: 'cluster', says: /primary/ },
        { what: 'maxReadBytes zero', call: () => start({ maxReadBytes: 0 }), option: 'maxReadBytes' },
        { what: 'keepAliveInterval negative', call: () => start({ keepAliveInterval: -1 }), option: 'keepAliveInterval' },
      ],
    },
    notFactories: {
      openReference: "startReferenceServer's own first half (internal, also serve --stdio's): the same checks, its rows above",
      openFleet: "startReferenceServer's Redis parts (internal, also serve --workers --redis's primary): given values startReferenceServer or the CLI checked",
    },
  },
];

/** Asserts `error` is the InvalidOptionError that `wrong` expects. */
function assertRefusal(error: unknown, wrong: Wrong): void {
  assert.ok(error instanceof InvalidOptionError, `expected an InvalidOptionError naming ${wrong.option}, got ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
  assert.equal(error.info.option, wrong.option, error.message);
  assert.ok(error.message.startsWith(`${wrong.option} must be `), `the message starts with the name and what is allowed: ${error.message}`);
  assert.match(error.message, /, got /, 'the message shows what was given');
  if (wrong.says !== undefined) assert.match(error.message, wrong.says);
}

for (const entry of ENTRIES) {
  for (const [name, rows] of Object.entries(entry.factories)) {
    for (const wrong of rows) {
      const title = `${entry.name} ${name}: ${wrong.what} → InvalidOptionError naming ${wrong.option}`;
      test(title, async () => {
        let result: unknown;
        try {
          result = wrong.call();
        } catch (error) {
          assertRefusal(error, wrong);
          return;
        }
        assert.ok(result instanceof Promise, `${name} accepted it: nothing was thrown`);
        const error = await result.then(
          () => assert.fail(`${name} accepted it: the Promise resolved`),
          (rejection: unknown) => rejection,
        );
        assertRefusal(error, wrong);
      });
    }
  }
}

test('every function and class an entry exports is in this table, or listed with the reason it takes no configuration', () => {
  for (const entry of ENTRIES) {
    const exported = Object.entries(entry.module)
      .filter(([, value]) => typeof value === 'function' && !((value as { prototype?: unknown }).prototype instanceof Error))
      .map(([name]) => name);
    for (const name of exported) {
      const rows = entry.factories[name];
      assert.ok(rows !== undefined || name in entry.notFactories, `${entry.name} exports ${name}: add its wrong calls to spec/factories.spec.ts (or list why it takes no configuration)`);
      if (rows !== undefined) assert.ok(rows.length > 0, `${entry.name} ${name}: give it at least one wrong call`);
    }
    for (const name of [...Object.keys(entry.factories), ...Object.keys(entry.notFactories)]) {
      assert.ok(exported.includes(name), `${entry.name} no longer exports ${name}: remove it from spec/factories.spec.ts`);
    }
  }
});

test.after(() => {
  gateway.close();
  endpoint.close();
  hub.close();
  rmSync(scratch, { recursive: true, force: true });
});

test.run();
