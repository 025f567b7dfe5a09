// Which build of the package the `ours` peer runs (bench/peers/ours.mjs imports BENCH_DIST, a
// file: URL of a build's index.js, or ../../dist/index.js without it), shared by bench/run.mjs
// (`--ours-build DIR`) and bench/compare-builds.mjs (`--before DIR --after DIR`).
//
// A build is copied once, at the start, under this checkout's node_modules/.cache/ and removed at
// exit: a rebuild of the source directory during a long run then cannot put two builds in one
// table, and every build copied resolves its dependencies (rxjs, …) from THIS checkout's
// node_modules, so two builds compared run on the same dependency versions (the other checkout's
// node_modules is not used, and need not exist).
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const CACHE = fileURLToPath(new URL('../node_modules/.cache/mcp-rx-streams-bench/', import.meta.url));

/** This checkout's own build directory (dist/). */
export const OWN_DIST = fileURLToPath(new URL('../dist', import.meta.url));

/**
 * The build directory `dir` names: a built `dist/` (holding index.js) or a checkout root holding
 * one (`<root>/dist/index.js`). Throws an Error whose message says what was expected.
 */
export function resolveBuild(dir) {
  const abs = path.resolve(dir);
  if (existsSync(path.join(abs, 'index.js'))) return abs;
  if (existsSync(path.join(abs, 'dist', 'index.js'))) return path.join(abs, 'dist');
  throw new Error(`${dir} is not a build: expected ${path.join(abs, 'index.js')} (a dist/ directory) or ${path.join(abs, 'dist', 'index.js')} (a checkout root after npm run build)`);
}

/**
 * What a build is, for a report's header: its directory, the commit of the checkout around it
 * (with `+changes` when that checkout has uncommitted changes outside dist/ and bench/), when its
 * index.js was written, and a warning when a tracked TypeScript source (spec/ and bench/ aside) is
 * newer than that: the commit is the checkout's HEAD, which is the build's only if it was built
 * after the last checkout or edit.
 */
export function describeBuild(dist) {
  const root = path.dirname(dist);
  const git = (...args) => spawnSync('git', ['-C', root, ...args], { encoding: 'utf8' });
  const head = git('rev-parse', '--short', 'HEAD');
  let commit = 'no git checkout';
  const builtAt = statSync(path.join(dist, 'index.js')).mtimeMs;
  let stale = false;
  if (head.status === 0) {
    const dirty = git('status', '--porcelain', '--untracked-files=no', '--', '.', ':!dist', ':!bench').stdout.trim() !== '';
    commit = `${head.stdout.trim()}${dirty ? '+changes' : ''}`;
    const sources = git('ls-files', '--', '*.ts', ':!*.d.ts', ':!spec', ':!bench').stdout.split('\n').filter(Boolean);
    stale = sources.some((file) => {
      try {
        return statSync(path.join(root, file)).mtimeMs > builtAt;
      } catch {
        return false;
      }
    });
  }
  const built = new Date(builtAt).toISOString().replace(/\.\d+Z$/, 'Z');
  return { dir: dist, commit, built, stale, text: `${dist} (${commit}, built ${built}${stale ? '; WARNING: sources newer than the build, npm run build there' : ''})` };
}

/**
 * Copies the build `dist` to node_modules/.cache/mcp-rx-streams-bench/<tag>-<pid>/ (removed when
 * this process exits) and returns the file: URL of its index.js, what BENCH_DIST takes.
 */
export function snapshotBuild(dist, tag) {
  const copy = path.join(CACHE, `${tag}-${process.pid}`);
  cpSync(dist, copy, { recursive: true });
  writeFileSync(path.join(copy, 'package.json'), '{"type":"module"}\n');
  process.on('exit', () => rmSync(copy, { recursive: true, force: true }));
  return pathToFileURL(path.join(copy, 'index.js')).href;
}
