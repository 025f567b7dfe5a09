#!/usr/bin/env node
// The layer check (docs/design.md, "A map of the code"): reads the TypeScript import graph (relative
// imports and re-exports, `import type` included: a shared type belongs to the lower layer) and
// reports
//   - an import that points up: lib/ ← operators/ ← protocol/ ← adapters/ ← the package entries
//     (index.ts, client.ts); a folder may import its own rank and the ranks below it only;
//   - any file-level import cycle;
//   - the file defining `class McpEndpoint` not reaching every named operator through its imports
//     (the served streams are built from the public operators, not from a twin).
// Usage: node scripts/layers.mjs [ROOT]   (ROOT defaults to the checkout). Prints one line per
// finding, or one `layers clean: …` line; exit 1 when anything was found. Run by spec/layers.spec.ts.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(process.argv[2] ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '..'));
const RANKS = ['lib', 'operators', 'protocol', 'adapters'];
const ENTRY_RANK = RANKS.length;
const OPERATORS = ['ackThenNotify', 'keepAlive', 'closeWhen', 'tagSubscriptionId', 'dropWhenQueueExceeds', 'withEventIds', 'replayFrom', 'restoreSubscriptions'];

/** The rank of a file: its top-level folder's place in RANKS, the entries above all; undefined outside the layers. */
function rank(file) {
  const parts = path.relative(root, file).split(path.sep);
  if (parts.length === 1) return ENTRY_RANK;
  const index = RANKS.indexOf(parts[0]);
  return index === -1 ? undefined : index;
}

const files = [];
(function walk(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (dir === root && !RANKS.includes(entry.name)) continue;
      walk(full);
    } else if (/\.(ts|mts)$/.test(entry.name) && !entry.name.endsWith('.d.ts') && rank(full) !== undefined) files.push(full);
  }
})(root);

const IMPORT = /(?:^|\n)\s*(?:import|export)\b[^'";]*?from\s*['"](\.{1,2}\/[^'"]+)['"]|(?:^|\n)\s*import\s*['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;
const edges = new Map();
for (const file of files) {
  const out = new Set();
  for (const match of fs.readFileSync(file, 'utf8').matchAll(IMPORT)) {
    const spec = match[1] ?? match[2] ?? match[3];
    let target = path.resolve(path.dirname(file), spec).replace(/\.js$/, '.ts');
    if (!fs.existsSync(target) && fs.existsSync(target.replace(/\.ts$/, '/index.ts'))) target = target.replace(/\.ts$/, '/index.ts');
    if (fs.existsSync(target)) out.add(target);
  }
  edges.set(file, out);
}

const rel = (file) => path.relative(root, file);
const problems = [];

for (const [file, out] of edges) {
  for (const target of out) {
    const from = rank(file);
    const to = rank(target);
    if (to === undefined) problems.push(`outside the layers: ${rel(file)} -> ${rel(target)}`);
    else if (to > from) problems.push(`points up: ${rel(file)} (${RANKS[from] ?? 'entry'}) -> ${rel(target)} (${RANKS[to] ?? 'entry'})`);
  }
}

// Tarjan's strongly connected components: any component of two or more files is a cycle.
let index = 0;
const indexOf = new Map();
const low = new Map();
const stack = [];
const onStack = new Set();
function connect(v) {
  indexOf.set(v, index);
  low.set(v, index++);
  stack.push(v);
  onStack.add(v);
  for (const w of edges.get(v) ?? []) {
    if (!indexOf.has(w)) {
      connect(w);
      low.set(v, Math.min(low.get(v), low.get(w)));
    } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), indexOf.get(w)));
  }
  if (low.get(v) !== indexOf.get(v)) return;
  const component = [];
  let w;
  do {
    w = stack.pop();
    onStack.delete(w);
    component.push(w);
  } while (w !== v);
  if (component.length > 1) problems.push(`file cycle: ${component.map(rel).sort().join(' <-> ')}`);
}
for (const file of files) if (!indexOf.has(file)) connect(file);

const endpoint = files.find((file) => /\bclass\s+McpEndpoint\b/.test(fs.readFileSync(file, 'utf8')));
if (endpoint === undefined) problems.push('no file defines class McpEndpoint');
else {
  const reached = new Set();
  const pending = [endpoint];
  while (pending.length > 0) {
    const file = pending.pop();
    if (reached.has(file)) continue;
    reached.add(file);
    pending.push(...(edges.get(file) ?? []));
  }
  for (const name of OPERATORS) {
    if (![...reached].some((file) => rel(file) === path.join('operators', `${name}.ts`))) problems.push(`${rel(endpoint)} does not reach operators/${name}.ts`);
  }
}

for (const problem of problems) console.log(problem);
if (problems.length > 0) {
  console.log(`${problems.length} layering problem(s)`);
  process.exit(1);
}
console.log(`layers clean: ${files.length} files, ${RANKS.join(' <- ')} <- entries, no cycles, the endpoint reaches all ${OPERATORS.length} operators`);
