// A real browser (issue 24, item 2): Debian's headless Chromium, driven by puppeteer-core (which
// downloads no browser; `npm test` installs the `chromium` package, scripts/test-setup.mjs), opens a
// page served from one loopback origin whose script (spec/fixtures/browser/page.ts, the official
// @modelcontextprotocol/client bundled by esbuild) uses an MCP server on another port, that is
// another origin. With `corsOrigins` naming the page: discover, a listen acknowledged, a change
// published on the server arrives; a legacy session's GET stream read with fetch gets its change
// too. Without it, the same page can do neither.
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { test } from 'uvu';
import { localhostHosts } from '../adapters/http/hostCheck.js';
import type { McpEndpointOptions } from '../adapters/http/options.js';
import { eventually, startEndpoint, type TestServer } from './helpers/http.js';
import { within } from './helpers/wait.js';

/** CHROMIUM_PATH, else the `chromium` on PATH (Debian's package: /usr/bin/chromium), as scripts/test-setup.mjs finds it. */
const CHROMIUM = process.env.CHROMIUM_PATH || spawnSync('sh', ['-c', 'command -v chromium'], { encoding: 'utf8' }).stdout.trim() || '/usr/bin/chromium';
/** Flags that work on this project's machines (a closed network, root, no GPU). */
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const WAIT_MS = 10_000;

let browser: Browser | undefined;
let profile: string | undefined;
let pageServer: http.Server | undefined;
/** The origin the page is served from, `http://127.0.0.1:N`. */
let pageOrigin = '';

test.before(async () => {
  const bundle = await build({
    entryPoints: [fileURLToPath(new URL('./fixtures/browser/page.ts', import.meta.url))],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'chrome120',
    write: false,
    logLevel: 'silent',
  });
  const script = bundle.outputFiles[0]!.text;
  pageServer = http.createServer((req, res) => {
    if (req.url === '/page.js') return void res.writeHead(200, { 'content-type': 'text/javascript' }).end(script);
    if (req.url === '/') return void res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>mcp page</title><script type="module" src="/page.js"></script>');
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => pageServer!.listen(0, '127.0.0.1', resolve));
  pageOrigin = `http://127.0.0.1:${(pageServer.address() as AddressInfo).port}`;
  profile = await mkdtemp(path.join(tmpdir(), 'mcp-rx-chromium-'));
  browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, userDataDir: profile, args: CHROMIUM_ARGS, protocolTimeout: WAIT_MS });
});

test.after(async () => {
  await browser?.close().catch(() => {});
  browser?.process()?.kill('SIGKILL');
  pageServer?.closeAllConnections();
  pageServer?.close();
  if (profile !== undefined) await rm(profile, { recursive: true, force: true });
});

/**
 * Opens the page in a fresh browser context (no preflight cache or cookies from another test) next
 * to an MCP server on its own port with `options`; always closes both. What the page logged is
 * added to a failure's message.
 */
async function withPage(options: Partial<McpEndpointOptions>, body: (page: Page, server: TestServer, logged: readonly string[]) => Promise<void>): Promise<void> {
  const server = await startEndpoint({ capabilities: { tools: true }, ...options });
  const context = await browser!.createBrowserContext();
  const logged: string[] = [];
  try {
    const page = await context.newPage();
    page.on('console', (message) => logged.push(`console.${message.type()}: ${message.text()}`));
    page.on('pageerror', (error) => logged.push(`pageerror: ${String(error)}`));
    await page.goto(`${pageOrigin}/`, { waitUntil: 'load', timeout: WAIT_MS });
    await page.waitForFunction(() => 'mcpPage' in window, { timeout: WAIT_MS });
    await body(page, server, logged);
  } catch (error) {
    if (error instanceof Error && logged.length > 0) error.message += `\nthe page logged:\n${logged.join('\n')}`;
    throw error;
  } finally {
    await context.close().catch(() => {});
    await server.close();
  }
}

test('with corsOrigins, a page on another origin: the official client discovers, listens and hears a change', async () => {
  // The rebinding check stays on: the page's origin is allowed as a CORS origin, every other one still gets 403.
  await withPage({ corsOrigins: [pageOrigin], allowedHosts: localhostHosts, allowedOrigins: ['localhost'] }, async (page, { url, hub, endpoint }) => {
    const connected = await within(page.evaluate((mcp) => window.mcpPage.modern(mcp), url), WAIT_MS, 'discover and the listen acknowledgment');
    assert.deepEqual(connected, { era: 'modern', version: '2026-07-28', honored: { toolsListChanged: true }, server: 'mcp-rx-streams' });
    await eventually(() => endpoint.stats.streams === 1, WAIT_MS, 'the server to count the listen');
    hub.notifyToolsChanged();
    assert.equal(await within(page.evaluate(() => window.mcpPage.modernChange()), WAIT_MS, 'the change in the page'), 'notifications/tools/list_changed');
  });
});

test("with corsOrigins, a page on another origin: a legacy session's GET stream, read with fetch, gets its change", async () => {
  await withPage({ corsOrigins: [pageOrigin] }, async (page, { url, hub, endpoint }) => {
    const opened = await within(page.evaluate((mcp) => window.mcpPage.legacy(mcp), url), WAIT_MS, 'the session and its GET stream');
    assert.equal(typeof opened.sessionId, 'string', 'Mcp-Session-Id readable by the page');
    assert.deepEqual({ ...opened, sessionId: 'sid' }, { sessionId: 'sid', initialized: 202, status: 200, contentType: 'text/event-stream', priming: 'id: 0\nretry: 1000\ndata:' });
    await eventually(() => endpoint.stats.streams === 1, WAIT_MS, 'the server to count the GET stream');
    hub.notifyToolsChanged();
    const event = await within(page.evaluate(() => window.mcpPage.legacyUntil('notifications/tools/list_changed')), WAIT_MS, 'the change on the GET stream');
    assert.equal(event, 'event: message\nid: 1\ndata: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}');
  });
});

test('without corsOrigins (the default), the same page can neither connect nor open a session', async () => {
  await withPage({}, async (page, { url, endpoint }, logged) => {
    const failure = (run: Promise<unknown>) => run.then(() => 'resolved', (error: unknown) => String(error));
    const modern = await within(failure(page.evaluate((mcp) => window.mcpPage.modern(mcp), url)), WAIT_MS, 'the modern attempt');
    const legacy = await within(failure(page.evaluate((mcp) => window.mcpPage.legacy(mcp), url)), WAIT_MS, 'the legacy attempt');
    // The client reports the failed discover as a failed negotiation; fetch itself says why.
    assert.match(modern, /Version negotiation failed/);
    assert.match(legacy, /TypeError: Failed to fetch/);
    const blocked = logged.filter((line) => line.includes(`from origin '${pageOrigin}' has been blocked by CORS policy`));
    assert.equal(blocked.length, 2, logged.join('\n'));
    assert.equal(endpoint.stats.streams, 0);
    assert.equal(endpoint.stats.sessions, 0, 'the preflight failed, so initialize never reached the server');
  });
});

test.run();
