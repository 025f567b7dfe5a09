#!/usr/bin/env node
// The `mcp-rx-streams` command (the package's bin): `serve` runs the reference server, `listen`
// watches one. Each command is in adapters/cli/: its flags come from the option tables, so its
// `--help` and what it accepts cannot drift apart (cli/flags.ts). A command-line mistake is one line
// on stderr naming the flag, exit code 2; a failure after start (a port in use, Redis not there
// within --redis-timeout), exit code 1.
import { InvalidOptionError } from '../lib/errors.js';
import { UsageError } from './cli/errors.js';

const TOP_HELP = `usage:
  mcp-rx-streams serve [flags]      run the reference server (mcp-rx-streams serve --help)
  mcp-rx-streams listen URL [flags] watch a server's change notifications (mcp-rx-streams listen --help)
`;

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve':
      return (await import('./cli/serve.js')).serve(rest);
    case 'listen':
      return (await import('./cli/listen.js')).listenCommand(rest);
    case undefined:
    case '-h':
    case '--help':
    case 'help':
      process.stdout.write(TOP_HELP);
      return;
    default:
      throw new UsageError(`unknown command ${JSON.stringify(command)}; use serve or listen (mcp-rx-streams --help)`);
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`mcp-rx-streams: ${message}\n`);
  process.exit(error instanceof UsageError || error instanceof InvalidOptionError ? 2 : 1);
});
