// The layer check (scripts/layers.mjs, docs/design.md "A map of the code") on this checkout, and on
// small trees that break each rule, so that a check that cannot fail is caught too.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';

const SCRIPT = fileURLToPath(new URL('../scripts/layers.mjs', import.meta.url));
const OPERATORS = ['ackThenNotify', 'keepAlive', 'closeWhen', 'tagSubscriptionId', 'dropWhenQueueExceeds', 'withEventIds', 'replayFrom', 'restoreSubscriptions'];

function check(root?: string): { status: number | null; out: string } {
  const run = spawnSync(process.execPath, root === undefined ? [SCRIPT] : [SCRIPT, root], { encoding: 'utf8' });
  return { status: run.status, out: run.stdout + run.stderr };
}

/** A tree that passes: every operator, a protocol core reaching them, an endpoint in adapters/, an entry. */
function tree(files: Record<string, string> = {}): string {
  const root = mkdtempSync(path.join(os.tmpdir(), 'layers-'));
  const all: Record<string, string> = {
    'lib/hub.ts': 'export const hub = 1;\n',
    ...Object.fromEntries(OPERATORS.map((name) => [`operators/${name}.ts`, `import { hub } from '../lib/hub.js';\nexport const ${name} = hub;\n`])),
    'protocol/core.ts': OPERATORS.map((name) => `import { ${name} } from '../operators/${name}.js';`).join('\n') + `\nexport const core = [${OPERATORS.join(', ')}];\n`,
    'adapters/http/endpoint.ts': "import { core } from '../../protocol/core.js';\nexport class McpEndpoint { core = core; }\n",
    'index.ts': "export { McpEndpoint } from './adapters/http/endpoint.js';\n",
    ...files,
  };
  for (const [file, text] of Object.entries(all)) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), text);
  }
  return root;
}

test('this checkout: imports point one way, no cycles, the endpoint reaches every operator', () => {
  const { status, out } = check();
  assert.is(status, 0, out);
  assert.match(out, /^layers clean: \d+ files, lib <- operators <- protocol <- adapters <- entries/);
});

test('a well-layered tree passes; each broken rule is named and fails the check', () => {
  const cases: { what: string; files: Record<string, string>; says: RegExp }[] = [
    { what: 'lib imports the protocol core', files: { 'lib/hub.ts': "import { core } from '../protocol/core.js';\nexport const hub = core;\n" }, says: /points up: lib\/hub\.ts \(lib\) -> protocol\/core\.ts \(protocol\)/ },
    { what: 'the core imports an adapter (a type only)', files: { 'protocol/extra.ts': "import type { McpEndpoint } from '../adapters/http/endpoint.js';\nexport type E = McpEndpoint;\n" }, says: /points up: protocol\/extra\.ts \(protocol\) -> adapters\/http\/endpoint\.ts \(adapters\)/ },
    { what: 'an adapter imports the package entry', files: { 'adapters/x.ts': "import { McpEndpoint } from '../index.js';\nexport const x = McpEndpoint;\n" }, says: /points up: adapters\/x\.ts \(adapters\) -> index\.ts \(entry\)/ },
    { what: 'two files import each other', files: { 'protocol/a.ts': "import { b } from './b.js';\nexport const a = b;\n", 'protocol/b.ts': "import { a } from './a.js';\nexport const b = a;\n" }, says: /file cycle: protocol\/a\.ts <-> protocol\/b\.ts/ },
    { what: 'the endpoint misses an operator', files: { 'protocol/core.ts': "import { keepAlive } from '../operators/keepAlive.js';\nexport const core = keepAlive;\n" }, says: /adapters\/http\/endpoint\.ts does not reach operators\/replayFrom\.ts/ },
  ];
  const good = tree();
  try {
    const { status, out } = check(good);
    assert.is(status, 0, out);
  } finally {
    rmSync(good, { recursive: true, force: true });
  }
  for (const { what, files, says } of cases) {
    const root = tree(files);
    try {
      const { status, out } = check(root);
      assert.is(status, 1, `${what}: ${out}`);
      assert.match(out, says, what);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }
});

test.run();
