// Issue 30: docs/design.md's map is true to the code. Every source folder is a room of the map, and
// every source file is named in it (by its path, or by its name in backticks in its folder's row),
// so that a file added without a line in the map fails here instead of drifting; the walks name
// only files that exist.
import { strict as assert } from 'node:assert';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';

const root = fileURLToPath(new URL('..', import.meta.url));
const DESIGN = readFileSync(path.join(root, 'docs/design.md'), 'utf8');
const MAP = DESIGN.slice(DESIGN.indexOf('## A map of the code'), DESIGN.indexOf('### Three walks, file by file'));
// The walks themselves, without the closing note on what they were before (which names folded files).
const WALKS = DESIGN.slice(DESIGN.indexOf('### Three walks, file by file'), DESIGN.indexOf('Before (issue 30'));

/** The TypeScript sources of a layer folder, relative to the checkout (declarations left out). */
function sources(dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = `${dir}/${entry.name}`;
    if (entry.isDirectory()) files.push(...sources(rel));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) files.push(rel);
  }
  return files;
}

/** The map's row of `folder` (`| \`adapters/http/\` | … |`), or of `adapters/*.ts` for a file right under adapters/. */
function rowOf(folder: string): string | undefined {
  const key = folder === 'adapters' ? '`adapters/*.ts`' : `\`${folder}/\``;
  return MAP.split('\n').find((line) => line.startsWith(`| ${key} |`));
}

test('every source folder is a room of the map, and every source file is named in its row (or by its path)', () => {
  const missing: string[] = [];
  for (const file of ['lib', 'operators', 'protocol', 'adapters'].flatMap(sources)) {
    const folder = path.posix.dirname(file);
    // A folder without a row of its own (adapters/cli/) is named in its parent's, with its files.
    const parent = rowOf(path.posix.dirname(folder)) ?? '';
    const row = rowOf(folder) ?? (parent.includes(`\`${path.posix.basename(folder)}/\``) ? parent : undefined);
    if (row === undefined) {
      missing.push(`${folder}/ has no row in the map`);
      continue;
    }
    // By its name (`keepAlive.ts`), or, for a file named after what it holds, by that (`keepAlive`: an operator).
    const names = [`\`${path.posix.basename(file)}\``, `\`${path.posix.basename(file, '.ts')}\``];
    if (!names.some((name) => row.includes(name) || parent.includes(name)) && !MAP.includes(`\`${file}\``)) missing.push(file);
  }
  assert.deepEqual(missing, []);
});

test('the package entries of package.json are the map\'s, and the walks name files that exist', () => {
  const exports = (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { exports: Record<string, unknown> }).exports;
  for (const subpath of Object.keys(exports).filter((key) => key !== './package.json')) {
    const name = subpath === '.' ? 'mcp-rx-streams' : `mcp-rx-streams/${subpath.slice(2)}`;
    assert.ok(MAP.includes(`| \`${name}\` |`), `the map's entries table has no row for ${name}`);
  }
  const named = [...WALKS.matchAll(/`((?:lib|operators|protocol|adapters)\/[\w/]+\.ts)`/g)].map((match) => match[1]!);
  assert.ok(named.length > 20, 'the walks name their files by path');
  for (const file of named) assert.ok(existsSync(path.join(root, file)), `the walks name ${file}, which does not exist`);
});

test.run();
