// The first step of `npm test`: gets what the default run needs beyond node_modules, saying what it
// does, so that a fresh machine runs every spec instead of failing some of them for a missing tool.
//   1. redis-server: the Redis specs (spec/redis/) start their own on a free loopback port. When it
//      is missing, Debian's package is installed if this is root with apt-get; otherwise the run
//      stops at once with the one command to run.
//   2. the official conformance runner (spec/conformance.spec.ts), fetched once with progress by
//      scripts/conformance-install.mjs.
// Exit code 0 when everything is there, 1 otherwise.
import { spawnSync } from 'node:child_process';

const say = (line) => process.stderr.write(`test setup: ${line}\n`);
const has = (command) => spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
const run = (command, args, env = process.env) => spawnSync(command, args, { stdio: ['ignore', 'inherit', 'inherit'], env }).status === 0;

function ensureRedis() {
  if (has('redis-server')) return true;
  const root = process.getuid?.() === 0;
  if (root && has('apt-get')) {
    say("redis-server is missing (the Redis specs need it): installing Debian's redis-server package with apt-get");
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    const ok =
      run('apt-get', ['update', '-q'], env) && run('apt-get', ['install', '-y', '-q', '--no-install-recommends', 'redis-server'], env);
    if (!ok || !has('redis-server')) {
      say('apt-get could not install redis-server (above); install it and run npm test again');
      return false;
    }
    // The package may start a system-wide server on :6379; the specs start their own and need none of it.
    if (has('service')) spawnSync('service', ['redis-server', 'stop'], { stdio: 'ignore' });
    return true;
  }
  const command = has('apt-get')
    ? 'sudo apt-get install -y redis-server'
    : has('brew')
      ? 'brew install redis'
      : has('dnf')
        ? 'sudo dnf install -y redis'
        : "your system's package manager's redis-server (Redis 6 or later)";
  say(`redis-server is missing; the Redis specs (spec/redis/) need it. Install it with:\n\n    ${command}\n\nthen run npm test again.`);
  return false;
}

function ensureConformanceRunner() {
  // stdout is the runner's node path, not wanted here; messages and progress are on stderr.
  const status = spawnSync(process.execPath, [new URL('./conformance-install.mjs', import.meta.url).pathname], { stdio: ['ignore', 'ignore', 'inherit'] }).status;
  return status === 0;
}

if (!ensureRedis() || !ensureConformanceRunner()) process.exit(1);
