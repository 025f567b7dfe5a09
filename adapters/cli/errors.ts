// How the `mcp-rx-streams` command fails: a command-line mistake is one line on stderr naming the
// flag, exit code 2 (an InvalidOptionError of a flag's value says the same); a failure after start
// (a port in use, Redis not there within --redis-timeout), exit code 1.
import { McpRxError } from '../../lib/errors.js';

/** A command-line mistake: printed as one line, exit code 2. */
export class UsageError extends McpRxError {
  override readonly name = 'UsageError';
  override readonly code = 'ERR_MCP_RX_CLI_USAGE';
}

/** A failure after the command started: printed as one line, exit code 1. */
export class RunError extends McpRxError {
  override readonly name = 'RunError';
  override readonly code = 'ERR_MCP_RX_CLI_RUN';
}
