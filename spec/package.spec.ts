// The package as a user gets it: `npm pack` (its prepack builds) in a copy of the sources, the
// tarball installed into a scratch project next to its peer dependencies, then what a user does
// with it: ESM import and CJS require() of every entry, TypeScript under node16, bundler and
// nodenext resolution, the bin, the main entry loading neither undici nor ioredis nor jose nor
// prom-client nor pino nor OpenTelemetry, and a missing optional peer reported by name.
import { strict as assert } from 'node:assert';
import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, readdir, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TSC = path.join(ROOT, 'node_modules/typescript/bin/tsc');
const ENTRIES = ['.', './client', './redis', './cluster', './metrics', './otel', './sdk', './ws', './auth', './upstream'] as const;
const specifier = (entry: string) => (entry === '.' ? 'mcp-rx-streams' : `mcp-rx-streams/${entry.slice(2)}`);

let work: string;
let app: string;
let installed: string;
let packed: string[];

interface Result {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

function run(command: string, args: string[], cwd: string): Promise<Result> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd, maxBuffer: 64 << 20, env: { ...process.env, NO_COLOR: '1', npm_config_loglevel: 'error' } }, (error, stdout, stderr) =>
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr }),
    );
  });
}

async function ok(command: string, args: string[], cwd: string): Promise<string> {
  const result = await run(command, args, cwd);
  assert.equal(result.code, 0, `${command} ${args.join(' ')} failed:\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

const versionOf = async (name: string) => JSON.parse(await readFile(path.join(ROOT, 'node_modules', name, 'package.json'), 'utf8')).version as string;

test.before(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'mcp-rx-package-'));
  // A copy of what a clone has (no dist/), with the dev dependencies linked: `npm pack` must build.
  const source = path.join(work, 'source');
  await mkdir(source);
  for (const entry of ['package.json', 'tsconfig.json', 'index.ts', 'client.ts', 'lib', 'operators', 'protocol', 'adapters', 'scripts', 'docs', 'README.md', 'LICENSE', 'SECURITY.md']) {
    await cp(path.join(ROOT, entry), path.join(source, entry), { recursive: true });
  }
  await symlink(path.join(ROOT, 'node_modules'), path.join(source, 'node_modules'), 'dir');
  const [report] = JSON.parse(await ok('npm', ['pack', '--json', '--pack-destination', work], source)) as [{ filename: string; files: { path: string }[] }];
  packed = report.files.map((file) => file.path).sort();
  // The scratch project: the tarball and the peers, each at the version this repository tests with.
  app = path.join(work, 'app');
  await mkdir(app);
  await writeFile(path.join(app, 'package.json'), JSON.stringify({ name: 'scratch', version: '1.0.0', private: true, type: 'module' }));
  const peers = await Promise.all(['rxjs', 'ioredis', 'prom-client', '@opentelemetry/api', '@types/node'].map(async (name) => `${name}@${await versionOf(name)}`));
  await ok('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', path.join(work, report.filename), ...peers], app);
  installed = path.join(app, 'node_modules/mcp-rx-streams');
});

test.after(async () => {
  if (work !== undefined) await rm(work, { recursive: true, force: true });
});

test('the tarball: dist (JS, .d.ts, maps carrying their sources), README, LICENSE, SECURITY.md and the docs; no sources, specs or tools', async () => {
  for (const file of ['package.json', 'README.md', 'LICENSE', 'SECURITY.md', 'dist/index.js', 'dist/index.d.ts', 'dist/client.js', 'dist/adapters/cli.js', 'dist/adapters/redis/index.js', 'dist/adapters/metrics/index.d.ts']) {
    assert.ok(packed.includes(file), `${file} is not in the tarball`);
  }
  for (const file of packed) {
    assert.match(file, /^(dist\/.*\.(js|d\.ts|js\.map)|docs\/[\w-]+\.md|README\.md|LICENSE|SECURITY\.md|package\.json)$/, `unexpected file in the tarball: ${file}`);
  }
  // Every markdown file the README or SECURITY.md names is shipped with it.
  for (const doc of ['README.md', 'SECURITY.md']) {
    const text = await readFile(path.join(installed, doc), 'utf8');
    for (const [named] of text.matchAll(/\b(?:docs\/[\w-]+\.md|SECURITY\.md|LICENSE)\b/g)) assert.ok(packed.includes(named), `${doc} names ${named}, which is not shipped`);
    assert.ok(!/\bDESIGN\.md\b/.test(text), `${doc} names a DESIGN.md that is not shipped`);
  }
  const maps = packed.filter((file) => file.endsWith('.js.map'));
  assert.ok(maps.length > 10);
  for (const file of maps) {
    const map = JSON.parse(await readFile(path.join(installed, file), 'utf8')) as { sources: string[]; sourcesContent?: (string | null)[] };
    assert.equal(map.sourcesContent?.length, map.sources.length, `${file} has no sourcesContent`);
    assert.ok(map.sourcesContent!.every((content) => typeof content === 'string' && content.length > 0), `${file}: empty sourcesContent`);
  }
  assert.equal(await readFile(path.join(installed, 'LICENSE'), 'utf8').then((text) => text.startsWith('MIT License')), true);
});

test('package.json: metadata, peers, and an exports map with types/import/default for every entry, each file present', async () => {
  const manifest = JSON.parse(await readFile(path.join(installed, 'package.json'), 'utf8'));
  assert.equal(manifest.license, 'MIT');
  assert.equal(manifest.sideEffects, false);
  assert.equal(manifest.type, 'module');
  assert.ok(manifest.repository?.url && manifest.homepage && manifest.bugs?.url && manifest.keywords?.length > 3);
  assert.equal(manifest.peerDependencies.rxjs, '^7.8.0');
  assert.equal(manifest.dependencies.rxjs, undefined);
  assert.equal(manifest.dependencies.ioredis, undefined);
  assert.deepEqual(manifest.peerDependenciesMeta, { '@opentelemetry/api': { optional: true }, ioredis: { optional: true }, 'prom-client': { optional: true }, ws: { optional: true } });
  assert.deepEqual(Object.keys(manifest.exports).sort(), [...ENTRIES, './package.json'].sort());
  for (const entry of ENTRIES) {
    const conditions = manifest.exports[entry];
    assert.deepEqual(Object.keys(conditions), ['types', 'import', 'default'], entry);
    for (const target of Object.values(conditions) as string[]) assert.ok(packed.includes(target.slice(2)), `${entry}: ${target} is not in the tarball`);
  }
});

const EXPECTED: Record<(typeof ENTRIES)[number], string[]> = {
  '.': ['Hub', 'McpEndpoint', 'nodeHandler', 'webHandler', 'keepAlive', 'channels', 'encodeFrame'],
  './client': ['listen', 'openSse', 'parseSse', 'SseParser', 'ListenClientError'],
  './redis': ['RedisBus', 'RedisLease', 'RedisSessionStore', 'redisChannels'],
  './cluster': ['clusterPrimary', 'clusterWorker', 'ClusterError'],
  './metrics': ['collectMetrics', 'MissingPeerDependencyError'],
  './otel': ['collectOtelMetrics', 'traceListens', 'MissingPeerDependencyError'],
  './sdk': ['sdkRouter', 'HubEventBus', 'replayEventStore', 'eventLogStore', 'ResourceUpdates'],
  './ws': ['webSocketServer', 'webSocketChannel', 'serveWebSocket'],
  './auth': ['jwtAuthenticator', 'introspectionAuthenticator', 'tokenVerifierAuthenticator', 'discoverAuthorizationServer', 'DiscoveryError'],
  './upstream': ['upstreamGateway', 'UpstreamGateway', 'Upstream', 'upstreamUri', 'splitUpstreamUri', 'reconnect', 'upstreamChannels', 'UpstreamError'],
};

test('ESM import and CJS require() (Node >= 20.19) of every entry give the same functions', async () => {
  const checks = ENTRIES.map((entry) => `[${JSON.stringify(specifier(entry))}, ${JSON.stringify(EXPECTED[entry])}]`).join(', ');
  const esm = `for (const [name, keys] of [${checks}]) { const m = await import(name); for (const key of keys) if (typeof m[key] !== 'function' && typeof m[key] !== 'object') throw new Error(name + ' lacks ' + key); } console.log('esm ok');`;
  await writeFile(path.join(app, 'esm.mjs'), esm);
  assert.equal((await ok(process.execPath, ['esm.mjs'], app)).trim(), 'esm ok');
  const cjs = `for (const [name, keys] of [${checks}]) { const m = require(name); for (const key of keys) if (typeof m[key] !== 'function' && typeof m[key] !== 'object') throw new Error(name + ' lacks ' + key); } console.log('cjs ok');`;
  await writeFile(path.join(app, 'cjs.cjs'), cjs);
  assert.equal((await ok(process.execPath, ['--no-warnings', 'cjs.cjs'], app)).trim(), 'cjs ok');
});

test('the main entry loads neither undici, ioredis, jose nor prom-client (its static import graph), and the client entry does load undici', async () => {
  const reached = async (entry: string) => {
    const seen = new Set<string>();
    const packages = new Set<string>();
    const visit = async (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const text = await readFile(file, 'utf8');
      for (const [, target] of text.matchAll(/^(?:import|export)\s[^'"]*?from\s+'([^']+)'|^import\s+'([^']+)'/gm)) {
        if (target === undefined) continue;
        if (target.startsWith('.')) await visit(path.resolve(path.dirname(file), target));
        else if (!target.startsWith('node:')) packages.add(target.startsWith('@') ? target.split('/').slice(0, 2).join('/') : target.split('/')[0]!);
      }
      // Optional peers are loaded through requirePeer('name', …).
      for (const [, name] of text.matchAll(/requirePeer\([^'"]*'([^']+)'/g)) packages.add(name!);
    };
    await visit(path.join(installed, entry));
    return packages;
  };
  const main = await reached('dist/index.js');
  for (const heavy of ['undici', 'ioredis', 'jose', 'prom-client', 'ws', 'pino', 'pino-pretty', '@opentelemetry/api']) assert.equal(main.has(heavy), false, `the main entry reaches ${heavy}: ${[...main].join(', ')}`);
  assert.ok(main.has('rxjs'));
  assert.ok((await reached('dist/client.js')).has('undici'));
  assert.ok((await reached('dist/adapters/redis/index.js')).has('ioredis'));
  // A machine's cluster needs node:cluster and what the main entry loads: nothing to install.
  const cluster = await reached('dist/adapters/cluster/index.js');
  for (const heavy of ['undici', 'ioredis', 'jose', 'prom-client', 'ws']) assert.equal(cluster.has(heavy), false, `the cluster entry reaches ${heavy}: ${[...cluster].join(', ')}`);
  assert.ok((await reached('dist/adapters/metrics/index.js')).has('prom-client'));
  assert.ok((await reached('dist/adapters/channel/ws.js')).has('ws'));
  assert.ok((await reached('dist/adapters/auth/index.js')).has('jose'));
  assert.ok((await reached('dist/adapters/otel/index.js')).has('@opentelemetry/api'));
  // Upstreams are reached with the undici client; nothing else to install.
  const upstream = await reached('dist/adapters/upstream/index.js');
  assert.ok(upstream.has('undici'));
  for (const heavy of ['ioredis', 'jose', 'prom-client', 'ws', '@opentelemetry/api']) assert.equal(upstream.has(heavy), false, `the upstream entry reaches ${heavy}: ${[...upstream].join(', ')}`);
  // The SDK entry is typed by shape: it loads no MCP SDK (the scratch project has none) and no ioredis.
  const sdk = await reached('dist/adapters/sdk/index.js');
  assert.deepEqual([...sdk].filter((name) => name.startsWith('@modelcontextprotocol/') || name === 'ioredis'), [], [...sdk].join(', '));
  // And at run time: the CommonJS ones would show in require.cache.
  const probe = `import { createRequire } from 'node:module'; await import('mcp-rx-streams'); const cache = Object.keys(createRequire(import.meta.url).cache); console.log(JSON.stringify(['undici', 'ioredis', 'prom-client', 'pino', '@opentelemetry/api'].filter((name) => cache.some((file) => file.includes('/node_modules/' + name + '/')))));`;
  await writeFile(path.join(app, 'probe.mjs'), probe);
  assert.equal((await ok(process.execPath, ['probe.mjs'], app)).trim(), '[]');
});

test('TypeScript: the types resolve under node16, bundler and (CommonJS) nodenext resolution', async () => {
  const use = (from: (entry: string) => string) => `
import { Hub, McpEndpoint, nodeHandler, type McpEndpointOptions, type Frame } from ${from('.')};
import { listen, type ListenClientOptions, type ParsedSseEvent } from ${from('./client')};
import { RedisBus, type RedisBusOptions } from ${from('./redis')};
import { clusterPrimary, type ClusterWorker } from ${from('./cluster')};
import { collectMetrics, type MetricsBridge } from ${from('./metrics')};
import { collectOtelMetrics, traceListens, type OtelMetricsBridge } from ${from('./otel')};
import { metrics, trace } from '@opentelemetry/api';
import { replayEventStore, sdkRouter, type SdkEventStore, type SdkRouter } from ${from('./sdk')};
import { webSocketChannel, type WebSocketLike } from ${from('./ws')};
import { upstreamGateway, type UpstreamOptions } from ${from('./upstream')};
import { serveStdio, type MessageChannel } from ${from('.')};
import { Registry } from 'prom-client';
import type { Observable } from 'rxjs';
const hub: Hub = new Hub();
const options: McpEndpointOptions = { hub, capabilities: { tools: true } };
const endpoint = new McpEndpoint(options);
const handler: (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => void = nodeHandler(endpoint);
const client: ListenClientOptions = { url: 'http://127.0.0.1:3000/mcp', notifications: { toolsListChanged: true } };
const stream: Observable<unknown> = listen(client);
const redis: RedisBusOptions = { redis: 'redis://127.0.0.1:6379' };
const machine: typeof clusterPrimary = clusterPrimary;
const worker = (node: ClusterWorker) => new McpEndpoint({ hub: new Hub({ bus: node.bus }), ...node.endpointOptions });
const bridge: MetricsBridge = collectMetrics(new Registry(), endpoint);
const otel: OtelMetricsBridge = collectOtelMetrics(metrics.getMeter('check'), endpoint);
traceListens(trace.getTracer('check')).close();
const store: SdkEventStore = replayEventStore({ capacity: 10 });
const router: SdkRouter = sdkRouter({ endpoint, sdk: { fetch: async () => new Response(null, { status: 405 }) } });
const channel: (socket: WebSocketLike) => MessageChannel = webSocketChannel;
const stdio: typeof serveStdio = serveStdio;
const notes: UpstreamOptions = { name: 'notes', url: 'http://127.0.0.1:4000/mcp' };
const gateway = upstreamGateway({ hub, upstreams: [notes] });
// @ts-expect-error a frame is not a number
const wrong: Frame = 1;
export { handler, stream, redis, machine, worker, bridge, otel, store, router, channel, stdio, gateway, wrong, RedisBus };
export type { ParsedSseEvent };
`;
  const esm = use((entry) => `'${specifier(entry)}'`);
  await writeFile(path.join(app, 'check.ts'), esm);
  await writeFile(path.join(app, 'check.cts'), esm);
  const base = { strict: true, noEmit: true, skipLibCheck: false, types: ['node'], target: 'ES2022', lib: ['ES2022', 'DOM'] };
  const configs = {
    'tsconfig.node16.json': { compilerOptions: { ...base, module: 'node16', moduleResolution: 'node16' }, files: ['check.ts'] },
    'tsconfig.bundler.json': { compilerOptions: { ...base, module: 'esnext', moduleResolution: 'bundler' }, files: ['check.ts'] },
    // A CommonJS file importing the package: TypeScript >= 5.8 allows it under nodenext (Node's require(esm)).
    'tsconfig.cjs.json': { compilerOptions: { ...base, module: 'nodenext', moduleResolution: 'nodenext' }, files: ['check.cts'] },
  };
  await Promise.all(Object.entries(configs).map(([name, config]) => writeFile(path.join(app, name), JSON.stringify(config))));
  for (const name of Object.keys(configs)) {
    const result = await run(process.execPath, [TSC, '-p', name], app);
    assert.equal(result.code, 0, `tsc -p ${name}:\n${result.stdout}${result.stderr}`);
  }
});

test('the bin runs from the installed package', async () => {
  const help = await ok(path.join(app, 'node_modules/.bin/mcp-rx-streams'), ['serve', '--help'], app);
  assert.match(help, /^usage: mcp-rx-streams serve \[flags\]/);
});

test('without ioredis, prom-client or @opentelemetry/api, their entries fail naming the package and the command that installs it', async () => {
  const script = (name: string, body: string) => writeFile(path.join(app, name), body);
  await script('redis.mjs', `try { await import('mcp-rx-streams/redis'); console.log('loaded'); } catch (error) { console.log(error.message); }`);
  await script('metrics.mjs', `import { collectMetrics } from 'mcp-rx-streams/metrics'; try { collectMetrics({}, {}); console.log('ran'); } catch (error) { console.log(error.message); }`);
  await script('otel.mjs', `import { collectOtelMetrics } from 'mcp-rx-streams/otel'; try { collectOtelMetrics({}, {}); console.log('ran'); } catch (error) { console.log(error.message); }`);
  await script('main.mjs', `const { Hub } = await import('mcp-rx-streams'); new Hub().close(); console.log('main ok');`);
  const peers = ['ioredis', 'prom-client', '@opentelemetry/api'];
  const aside = (name: string) => path.join(app, 'node_modules', name.replace(/([^/]+)$/, '_$1'));
  for (const name of peers) await rename(path.join(app, 'node_modules', name), aside(name));
  try {
    assert.equal((await ok(process.execPath, ['redis.mjs'], app)).trim(), 'mcp-rx-streams/redis needs the ioredis package, an optional peer dependency that is not installed: run npm install ioredis');
    assert.equal((await ok(process.execPath, ['metrics.mjs'], app)).trim(), 'mcp-rx-streams/metrics needs the prom-client package, an optional peer dependency that is not installed: run npm install prom-client');
    assert.equal((await ok(process.execPath, ['otel.mjs'], app)).trim(), 'mcp-rx-streams/otel needs the @opentelemetry/api package, an optional peer dependency that is not installed: run npm install @opentelemetry/api');
    assert.equal((await ok(process.execPath, ['main.mjs'], app)).trim(), 'main ok');
  } finally {
    for (const name of peers) await rename(aside(name), path.join(app, 'node_modules', name));
  }
  assert.ok((await readdir(path.join(app, 'node_modules'))).includes('ioredis'));
});

test.run();
