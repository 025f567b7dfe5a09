// The official MCP conformance runner (@modelcontextprotocol/conformance, on Node 22 or later:
// this Node, or the node-<platform>-<arch> package scripts/conformance-install.mjs fetched for it)
// against examples/conformance-server.ts, a server composed with the library: the six legacy-era
// scenarios issue 4 names must pass. `npm test` installs the runner before the specs, with progress.
import { spawn } from 'node:child_process';
import { test } from 'uvu';
import * as assert from 'uvu/assert';

const SCENARIOS = ['server-initialize', 'ping', 'resources-subscribe', 'resources-unsubscribe', 'server-sse-multiple-streams', 'dns-rebinding-protection'];

test('scripts/conformance.sh: every scenario passes', async () => {
  const { code, out } = await new Promise<{ code: number | null; out: string }>((resolve, reject) => {
    const child = spawn('bash', ['scripts/conformance.sh'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('error', reject);
    child.on('close', (exit) => resolve({ code: exit, out }));
  });
  for (const scenario of SCENARIOS) assert.match(out, new RegExp(`PASS\\s+${scenario}\\b`), `${scenario}:\n${out}`);
  assert.is(code, 0, out);
});

test.run();
