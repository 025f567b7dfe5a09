// The first step of `npm test`: gets what the default run needs beyond node_modules, saying what it
// does, so that a fresh machine runs every spec instead of failing some of them for a missing tool.
//   1. redis-server: the Redis specs (spec/redis/) start their own on a free loopback port.
//   2. chromium: the browser spec (spec/browser.spec.ts) drives Debian's headless Chromium with
//      puppeteer-core (which downloads no browser of its own). CHROMIUM_PATH names another binary.
//   Either one, when missing, is installed from Debian's package if this is root with apt-get;
//   otherwise the run stops at once with the one command to run.
//   3. the official conformance runner (spec/conformance.spec.ts), fetched once with progress by
//      scripts/conformance-install.mjs.
//   4. the official Python MCP SDK (`mcp`, 2.x) for python3: spec/interop-stdio.spec.ts runs its
//      stdio client against `serve --stdio`; installed with `python3 -m pip install mcp` when missing.
// Exit code 0 when everything is there, 1 otherwise.
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';

const say = (line) => process.stderr.write(`test setup: ${line}\n`);
const has = (command) => spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
const run = (command, args, env = process.env) => spawnSync(command, args, { stdio: ['ignore', 'inherit', 'inherit'], env }).status === 0;

let aptUpdated = false;

/**
 * Makes sure `found()` holds, installing Debian's package `pkg` with apt-get when it does not and
 * this is root; otherwise says what to run. `others` are the install commands of other systems.
 */
function ensurePackage({ what, pkg, why, found, others, after }) {
  if (found()) return true;
  const root = process.getuid?.() === 0;
  if (root && has('apt-get')) {
    say(`${what} is missing and ${why}: installing Debian's ${pkg} package with apt-get`);
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    const ok =
      (aptUpdated || (aptUpdated = run('apt-get', ['update', '-q'], env))) &&
      run('apt-get', ['install', '-y', '-q', '--no-install-recommends', pkg], env);
    if (!ok || !found()) {
      say(`apt-get could not install ${pkg} (above); install it and run npm test again`);
      return false;
    }
    after?.();
    return true;
  }
  const command = has('apt-get')
    ? `sudo apt-get install -y ${pkg}`
    : (Object.entries(others).find(([manager]) => has(manager))?.[1] ?? others.otherwise);
  say(`${what} is missing; ${why}. Install it with:\n\n    ${command}\n\nthen run npm test again.`);
  return false;
}

const ensureRedis = () =>
  ensurePackage({
    what: 'redis-server',
    pkg: 'redis-server',
    why: 'the Redis specs (spec/redis/) need it',
    found: () => has('redis-server'),
    others: { brew: 'brew install redis', dnf: 'sudo dnf install -y redis', otherwise: "your system's package manager's redis-server (Redis 6 or later)" },
    // The package may start a system-wide server on :6379; the specs start their own and need none of it.
    after: () => has('service') && spawnSync('service', ['redis-server', 'stop'], { stdio: 'ignore' }),
  });

function ensureChromium() {
  const given = process.env.CHROMIUM_PATH;
  if (given) {
    if (existsSync(given)) return true;
    say(`CHROMIUM_PATH=${given}: no such file (the browser spec runs it); unset it to use Debian's chromium`);
    return false;
  }
  return ensurePackage({
    what: 'chromium',
    pkg: 'chromium',
    why: 'the browser spec (spec/browser.spec.ts) runs it headless',
    found: () => has('chromium'),
    others: { brew: 'brew install --cask chromium (then CHROMIUM_PATH=<its binary> npm test)', dnf: 'sudo dnf install -y chromium', otherwise: "your system's Chromium, then CHROMIUM_PATH=<its binary> npm test" },
  });
}

function ensureConformanceRunner() {
  // stdout is the runner's node path, not wanted here; messages and progress are on stderr.
  const status = spawnSync(process.execPath, [new URL('./conformance-install.mjs', import.meta.url).pathname], { stdio: ['ignore', 'ignore', 'inherit'] }).status;
  return status === 0;
}

/** The official Python SDK's stdio client (spec/interop-stdio.spec.ts): `mcp` 2.x with `subscriptions/listen`. */
function ensurePythonMcp() {
  const found = () => spawnSync('python3', ['-c', 'import mcp.client.subscriptions'], { stdio: 'ignore' }).status === 0;
  if (found()) return true;
  if (!has('python3')) {
    say('python3 is missing; spec/interop-stdio.spec.ts runs the official Python MCP client. Install python3 (3.10 or later), then run npm test again.');
    return false;
  }
  say("the Python package mcp (2.x) is missing and spec/interop-stdio.spec.ts needs its stdio client: installing it with python3 -m pip install 'mcp>=2'");
  if (run('python3', ['-m', 'pip', 'install', '-q', '--disable-pip-version-check', '--retries', '1', 'mcp>=2']) && found()) return true;
  say("pip could not install mcp (above); install it with python3 -m pip install 'mcp>=2' and run npm test again");
  return false;
}

if (!ensureRedis() || !ensureChromium() || !ensureConformanceRunner() || !ensurePythonMcp()) process.exit(1);
