// The `--log-level` and `--log-format` values of `mcp-rx-streams serve`, apart from the logger
// itself (adapters/cli/log.ts) so that `--help` and `listen` do not load pino.
import type { Logger } from '../logTo.js';

/** The `--log-level` values, quietest first. */
export const LOG_LEVELS = ['error', 'warn', 'info', 'debug'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** The `--log-format` values: `pretty` one readable line per record, `json` one JSON object per line (pino's). */
export const LOG_FORMATS = ['pretty', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** The CLI's logger: a pino logger, of which the CLI uses the four methods `logTo` needs. */
export type CliLogger = Logger;
