// Issue 24, item 3: `resources/templates/list` is answered wherever `resources` is advertised, in
// both eras (the official clients call it as soon as they see the capability: the AI SDK throws,
// fastmcp raises and the Inspector exits on -32601). The answer merges the templates the resource
// providers declare (`ResourceProvider.templates`), in provider order; a `methods` entry of the
// same name wins; without the resources capability the method stays unknown (-32601). Byte-exact
// over loopback with raw requests, then through the official 2.x and 1.x clients.
import { strict as assert } from 'node:assert';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { test } from 'uvu';
import type { ResourceProvider, ResourceTemplate } from '../lib/resources.js';
import { channels, type ErrorEvent } from '../lib/telemetry.js';
import { LISTEN_HEADERS, post, startEndpoint } from './helpers/http.js';
import { call, initialize } from './helpers/legacy.js';
import { collecting } from './helpers/telemetry.js';
import { within } from './helpers/wait.js';

const WAIT_MS = 4_000;
const LIST = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'resources/templates/list', params: {} });

const PRODUCT: ResourceTemplate = { uriTemplate: 'db://shop/Product/{id}', name: 'product', title: 'Product', description: 'One product', mimeType: 'application/json' };
const ORDER: ResourceTemplate = { uriTemplate: 'db://shop/Order/{id}', name: 'order' };
const AUDIT: ResourceTemplate = { uriTemplate: 'db://shop/Audit/{day}', name: 'audit' };

/** A provider of `db://shop/…` that declares templates, the audit one only to callers with scope `audit`. */
const shop: ResourceProvider = {
  subscribable: (uri) => uri.startsWith('db://shop/'),
  canRead: () => true,
  changes: () => [],
  templates: async ({ auth }) => (auth.scopes.has('audit') ? [PRODUCT, AUDIT] : [PRODUCT]),
};

test('a bare endpoint answers resources/templates/list with no templates, in both eras (byte-exact)', async () => {
  const server = await startEndpoint();
  try {
    const modern = await post(server.url, LIST);
    assert.equal(modern.status, 200);
    assert.equal(modern.body, '{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","ttlMs":0,"cacheScope":"private","resourceTemplates":[]}}');
    const { sessionId } = await initialize(server.url);
    const legacy = await call(server.url, sessionId, 2, 'resources/templates/list', { cursor: 'ignored' });
    assert.equal(legacy.status, 200);
    assert.equal(legacy.body, '{"jsonrpc":"2.0","id":2,"result":{"resourceTemplates":[]}}');
  } finally {
    await server.close();
  }
});

test("providers' templates are merged in provider order, each uriTemplate once (the first provider's), per caller", async () => {
  const orders: ResourceProvider = {
    subscribable: (uri) => uri.startsWith('db://shop/Order/'),
    canRead: () => true,
    changes: () => [],
    templates: () => [ORDER, { ...PRODUCT, name: 'shadowed' }],
  };
  const server = await startEndpoint({
    resourceProviders: [shop, orders],
    authenticate: (request) => ({ principal: 'p', scopes: new Set((request.header('x-scopes') ?? '').split(' ').filter(Boolean)) }),
  });
  try {
    const plain = JSON.parse((await post(server.url, LIST)).body);
    assert.deepEqual(plain.result.resourceTemplates, [PRODUCT, ORDER]);
    const audited = JSON.parse((await post(server.url, LIST, { ...LISTEN_HEADERS, 'x-scopes': 'audit' })).body);
    assert.deepEqual(audited.result.resourceTemplates, [PRODUCT, AUDIT, ORDER]);
  } finally {
    await server.close();
  }
});

test('a methods entry named resources/templates/list wins; without the resources capability the method is unknown (-32601)', async () => {
  const own = await startEndpoint({ resourceProviders: [shop], methods: { 'resources/templates/list': () => ({ resourceTemplates: [ORDER] }) } });
  try {
    assert.equal((await post(own.url, LIST)).body, `{"jsonrpc":"2.0","id":1,"result":{"resourceTemplates":[${JSON.stringify(ORDER)}]}}`);
  } finally {
    await own.close();
  }
  const none = await startEndpoint({ capabilities: { tools: true }, resourceProviders: [shop] });
  try {
    const modern = await post(none.url, LIST);
    assert.equal(modern.status, 404);
    assert.equal(modern.body, '{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"method not found: resources/templates/list"}}');
    const { sessionId } = await initialize(none.url);
    const legacy = await call(none.url, sessionId, 2, 'resources/templates/list');
    assert.equal(legacy.body, '{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"method not found: resources/templates/list"}}');
  } finally {
    await none.close();
  }
});

test("a provider's templates() that throws: -32603, and the error goes to channels.error, not to the client", async () => {
  const failing: ResourceProvider = { ...shop, templates: () => Promise.reject(new Error('catalog offline')) };
  const server = await startEndpoint({ resourceProviders: [failing] });
  try {
    await collecting<ErrorEvent>(channels.error, async (errors) => {
      const reply = await post(server.url, LIST);
      assert.equal(reply.status, 200);
      assert.equal(reply.body, '{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"resources/templates/list failed"}}');
      assert.equal(errors.length, 1);
      assert.equal(errors[0]!.where, 'source');
    });
  } finally {
    await server.close();
  }
});

test('the official 2.x client (2026-07-28) lists the templates: listResourceTemplates()', async () => {
  const server = await startEndpoint({ resourceProviders: [shop] });
  const client = new ModernClient({ name: 'templates-spec', version: '0.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  try {
    await within(client.connect(new ModernTransport(new URL(server.url))), WAIT_MS, 'connect()');
    const listed = await within(client.listResourceTemplates(), WAIT_MS, 'resources/templates/list');
    assert.deepEqual(listed.resourceTemplates, [PRODUCT]);
  } finally {
    await client.close().catch(() => {});
    await server.close();
  }
});

test('the official 1.x client (legacy session) lists the templates: listResourceTemplates()', async () => {
  const server = await startEndpoint({ resourceProviders: [shop] });
  const client = new LegacyClient({ name: 'templates-spec', version: '0.0.0' });
  try {
    await within(client.connect(new LegacyTransport(new URL(server.url))), WAIT_MS, 'connect()');
    const listed = await within(client.listResourceTemplates(), WAIT_MS, 'resources/templates/list');
    assert.deepEqual(listed, { resourceTemplates: [PRODUCT] });
  } finally {
    await client.close().catch(() => {});
    await server.close();
  }
});

test.run();
