// `mcp-rx-streams listen URL`: a subscriptions/listen stream on a server, its notifications on
// stdout, one JSON line each, and what the user should know about them on stderr.
import { option } from '../../lib/optionTable.js';
import { acknowledgmentNotes, closeNote, relativeUriNotes } from '../listenNotes.js';
import { UsageError } from './errors.js';
import { flagsOf, HELP, helpText, readArgs, type Command } from './flags.js';

/** The command's options, one flag each. */
const LISTEN_OPTIONS = {
  tools: option.toggle({ description: 'hear notifications/tools/list_changed' }),
  prompts: option.toggle({ description: 'hear notifications/prompts/list_changed' }),
  resources: option.toggle({ description: 'hear notifications/resources/list_changed' }),
  resource: option.text({ placeholder: 'URI', rule: { nonEmpty: true }, description: 'hear notifications/resources/updated for URI (repeat for several)' }),
  token: option.text({ placeholder: 'TOKEN', rule: { nonEmpty: true }, shownDefault: 'none', description: 'send Authorization: Bearer TOKEN' }),
  id: option.text({ placeholder: 'ID', rule: { nonEmpty: true }, default: '1', description: 'the listen request id (digits are sent as a number)' }),
};

/** `mcp-rx-streams listen`. */
export const LISTEN: Command = {
  name: 'listen',
  usage: 'mcp-rx-streams listen URL [flags]',
  summary:
    'Opens a subscriptions/listen stream on the MCP endpoint URL and prints each notification as one JSON line until Ctrl-C. ' +
    'On stderr it says what the server did not honour and why the stream ended; the exit code is 1 when the server ended it for any reason but its shutdown.',
  flags: [...flagsOf(LISTEN_OPTIONS, { resource: { multiple: true } }), HELP],
  positionals: true,
};

/** Runs `listen` with the command line `argv` (after `listen`). */
export async function listenCommand(argv: readonly string[]): Promise<void> {
  const { values, positionals } = readArgs(LISTEN, argv);
  if (values.help === true) return void process.stdout.write(helpText(LISTEN));
  if (positionals.length !== 1) throw new UsageError('listen needs exactly one URL, e.g. mcp-rx-streams listen http://127.0.0.1:3000/mcp --resources');
  let url: URL;
  try {
    url = new URL(positionals[0]!);
  } catch {
    throw new UsageError(`listen URL is not a valid URL: ${JSON.stringify(positionals[0])}`);
  }
  const notifications: Record<string, unknown> = {};
  if (values.tools === true) notifications.toolsListChanged = true;
  if (values.prompts === true) notifications.promptsListChanged = true;
  if (values.resources === true) notifications.resourcesListChanged = true;
  if (values.resource !== undefined) notifications.resourceSubscriptions = values.resource;
  const given = values.id as string | undefined;
  const id = given === undefined ? 1 : /^\d+$/.test(given) ? Number(given) : given;
  const token = values.token as string | undefined;
  // Notifications go to stdout, one JSON line each; what the user should know about them to stderr.
  const note = (text: string) => process.stderr.write(`mcp-rx-streams: ${text}\n`);
  for (const text of relativeUriNotes((values.resource as string[] | undefined) ?? [])) note(text);
  // The client (undici) is loaded only by this command.
  const { listen } = await import('../client.js');
  let acknowledged = false;
  let reason: string | undefined;
  let result = false;
  let interrupted = false;
  await new Promise<void>((resolve, reject) => {
    const subscription = listen({ url, id, notifications, ...(token === undefined ? {} : { token }) }).subscribe({
      next: (message) => {
        if (!('method' in message)) {
          // The listen result: the server ended the stream on purpose (the client completes next).
          result = true;
          return;
        }
        process.stdout.write(`${JSON.stringify(message)}\n`);
        const params = (message as { params?: Record<string, unknown> }).params ?? {};
        if (message.method === 'notifications/subscriptions/acknowledged' && !acknowledged) {
          acknowledged = true;
          for (const text of acknowledgmentNotes(notifications, params.notifications)) note(text);
        } else if (message.method === 'notifications/cancelled') {
          reason = typeof params.reason === 'string' ? params.reason : undefined;
        }
      },
      error: reject,
      complete: resolve,
    });
    process.once('SIGINT', () => {
      interrupted = true;
      subscription.unsubscribe();
      resolve();
    });
  });
  if (interrupted) return;
  // Exit code 0 only when the server shut down; any other end is worth a script's attention.
  const { message, code } = closeNote(reason, result);
  note(message);
  process.exitCode = code;
}

