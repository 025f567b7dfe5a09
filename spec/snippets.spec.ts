import { strict as assert } from 'node:assert';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { test } from 'uvu';

// Every fenced ```ts block of README.md and docs/*.md compiles under the repository's compiler
// options (strict) with the repository's TypeScript, as a user would write it: `mcp-rx-streams`,
// `mcp-rx-streams/client`, `…/redis` and `…/metrics` resolve (through `paths`, derived from
// package.json's exports) to the declarations a user gets, this checkout's dist/*.d.ts (npm test
// builds first), every other package to node_modules. One program for all of them, so it stays
// fast. Each block is its own module (no names shared between blocks): a snippet must be complete,
// imports included. An error is reported at its line in the Markdown file. examples/*.ts are
// type-checked with the specs (tsconfig.spec.json) and the framework ones run in
// spec/adapters/frameworks.spec.ts.

const root = fileURLToPath(new URL('..', import.meta.url));
// Inside the checkout, so that packages resolve from its node_modules; ignored by git.
const scratch = path.join(root, 'node_modules', '.cache', 'mcp-rx-streams-snippets');

interface Block {
  /** The Markdown file, relative to the root. */
  readonly doc: string;
  /** 1-based line of the block's first code line in `doc`. */
  readonly line: number;
  readonly code: string;
}

function blocks(doc: string): Block[] {
  const lines = readFileSync(path.join(root, doc), 'utf8').split('\n');
  const found: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const fence = /^(\s*)(`{3,}|~{3,})\s*(\w+)?/.exec(lines[i]!);
    if (fence === null) continue;
    const [, indent, marks, lang] = fence;
    const end = lines.findIndex((text, j) => j > i && text.trimEnd() === indent! + marks!);
    const stop = end < 0 ? lines.length : end;
    if (lang === 'ts' || lang === 'typescript') found.push({ doc, line: i + 2, code: lines.slice(i + 1, stop).join('\n') });
    i = stop;
  }
  return found;
}

/** `paths` for the package's own entries: `mcp-rx-streams/redis` → `adapters/redis/index.ts`, from the exports map. */
function selfPaths(): Record<string, string[]> {
  const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { name: string; exports: Record<string, { types?: string } | string> };
  const paths: Record<string, string[]> = {};
  for (const [subpath, target] of Object.entries(pkg.exports)) {
    if (typeof target !== 'object' || target.types === undefined) continue;
    paths[pkg.name + subpath.slice(1)] = [path.join(root, target.types)];
  }
  return paths;
}

function compilerOptions(): ts.CompilerOptions {
  assert.ok(existsSync(path.join(root, 'dist', 'index.d.ts')), 'dist/index.d.ts is missing: the snippets are checked against the built declarations; run npm run build first');
  const config = ts.readConfigFile(path.join(root, 'tsconfig.json'), (file) => ts.sys.readFile(file));
  assert.equal(config.error, undefined, 'tsconfig.json reads');
  const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, root);
  return { ...options, noEmit: true, declaration: false, sourceMap: false, inlineSources: false, paths: selfPaths() };
}

// Bun's and Deno's globals are not in this project's types (@types/node, lib.dom): the members the
// README's Bun and Deno recipe uses, as Bun 1.4 and Deno 2.9 document them. What they do is not
// taken on trust: spec/adapters/runtimes.spec.ts runs webHandler in Bun.serve and Deno.serve.
const RUNTIME_GLOBALS = `declare global {
  const Bun: {
    serve(options: {
      hostname?: string;
      port?: number;
      idleTimeout?: number;
      fetch(request: Request, server: { requestIP(request: Request): { address: string; family: string; port: number } | null }): Response | Promise<Response>;
    }): { readonly port: number; stop(closeActiveConnections?: boolean): Promise<void> };
  };
  const Deno: {
    serve(
      options: { hostname?: string; port?: number; onListen?(addr: { hostname: string; port: number }): void },
      handler: (request: Request, info: { remoteAddr: { transport: 'tcp' | 'udp'; hostname: string; port: number }; completed: Promise<void> }) => Response | Promise<Response>,
    ): { readonly finished: Promise<void>; shutdown(): Promise<void> };
  };
}
export {};
`;

const docs = ['README.md', ...readdirSync(path.join(root, 'docs')).filter((file) => file.endsWith('.md')).sort().map((file) => `docs/${file}`)];

test('every ```ts block of README.md and docs/*.md type-checks (strict) against the package as installed', () => {
  const all = docs.flatMap(blocks);
  assert.ok(all.filter((block) => block.doc === 'README.md').length >= 8, `README.md's ts blocks were found (${all.length} in all)`);

  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch, { recursive: true });
  // ES modules, as in a user's "type": "module" project (top-level await allowed).
  writeFileSync(path.join(scratch, 'package.json'), '{ "type": "module" }\n');
  writeFileSync(path.join(scratch, 'runtimes.d.ts'), RUNTIME_GLOBALS);
  const where = new Map<string, Block>();
  for (const block of all) {
    const file = path.join(scratch, `${block.doc.replace(/[^\w]+/g, '_')}_${block.line}.ts`);
    const isModule = /^\s*(import|export)\s/m.test(block.code);
    writeFileSync(file, isModule ? `${block.code}\n` : `${block.code}\nexport {};\n`);
    where.set(path.normalize(file), block);
  }

  const program = ts.createProgram([...where.keys(), path.join(scratch, 'runtimes.d.ts')], compilerOptions());
  const mine = new Set(where.keys());
  const errors = ts
    .getPreEmitDiagnostics(program)
    .filter((diagnostic) => diagnostic.file === undefined || mine.has(path.normalize(diagnostic.file.fileName)))
    .map((diagnostic) => {
      const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n  ');
      if (diagnostic.file === undefined || diagnostic.start === undefined) return `TS${diagnostic.code}: ${message}`;
      const { line, character } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
      const block = where.get(path.normalize(diagnostic.file.fileName));
      const at = block === undefined ? `${path.relative(root, diagnostic.file.fileName)}:${line + 1}:${character + 1}` : `${block.doc}:${block.line + line}:${character + 1} (the block at line ${block.line})`;
      return `${at}: TS${diagnostic.code}: ${message}`;
    });
  assert.deepEqual(errors, [], `snippets that do not compile:\n${errors.join('\n')}`);
});

test('examples/*.ts are in the spec project that npm test type-checks (tsc -p tsconfig.spec.json)', () => {
  const config = ts.readConfigFile(path.join(root, 'tsconfig.spec.json'), (file) => ts.sys.readFile(file));
  const { fileNames } = ts.parseJsonConfigFileContent(config.config, ts.sys, root);
  const examples = readdirSync(path.join(root, 'examples')).filter((file) => file.endsWith('.ts'));
  assert.ok(examples.length >= 2, 'the examples were found');
  for (const file of examples) assert.ok(fileNames.includes(path.join(root, 'examples', file).split(path.sep).join('/')), `examples/${file} is type-checked`);
});

test('the extraction finds blocks where they are and maps lines back to the Markdown', () => {
  const found = blocks('README.md');
  const lines = readFileSync(path.join(root, 'README.md'), 'utf8').split('\n');
  for (const block of found) {
    assert.equal(lines[block.line - 2]!.trim(), '```ts', `README.md:${block.line - 1} opens the block`);
    assert.equal(lines[block.line - 1], block.code.split('\n')[0], `README.md:${block.line} is the block's first line`);
  }
});

test.run();
