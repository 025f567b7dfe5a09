// The sample directory the reference server creates when the directory it should serve is missing.
import * as fsp from 'node:fs/promises';
import * as path from 'node:path';

const DEMO_TOOLS = [
  {
    name: 'echo',
    description: 'Returns the given text unchanged.',
    inputSchema: {
      type: 'object',
      properties: { text: { type: 'string', description: 'The text to echo back.' } },
      required: ['text'],
    },
  },
  {
    name: 'add',
    description: 'Adds two numbers and returns the sum.',
    inputSchema: {
      type: 'object',
      properties: { a: { type: 'number' }, b: { type: 'number' } },
      required: ['a', 'b'],
    },
  },
];

const DEMO_PROMPTS = [
  {
    name: 'summarize',
    description: 'Summarize a resource of this server in three sentences.',
    arguments: [{ name: 'uri', description: 'The file:// URI of the resource to summarize.', required: true }],
  },
];

const DEMO_README = `# Demo data of the mcp-rx-streams reference server

Every file in this directory is an MCP resource (\`file://\` + its absolute path), every
directory a collection (the same with a trailing \`/\`).

Try it: subscribe to a file or a collection, then edit, create, delete or rename files here.

- Editing a file sends \`notifications/resources/updated\` for the file and every enclosing
  directory up to this one.
- Creating, deleting or renaming a file sends \`notifications/resources/list_changed\`.
- \`tools.json\` and \`prompts.json\` are served by \`tools/list\` and \`prompts/list\`; an edit that
  changes what they list also sends \`notifications/tools/list_changed\` /
  \`notifications/prompts/list_changed\`.
- \`tools/call\`: \`echo\` returns its \`text\`, \`add\` the sum of \`a\` and \`b\`. \`prompts/get\`:
  \`summarize\` embeds the resource its \`uri\` names and asks for a three-sentence summary; any
  other prompt you add answers its description and the arguments given.
- Files under \`private/\` need the \`private\` scope.
`;

/**
 * Creates a directory of sample data for the reference server, unless it already exists.
 *
 * Writes `README.md`, `notes/todo.txt`, `config.json`, `tools.json` (two tools with `name`,
 * `description` and `inputSchema`), `prompts.json` (one prompt) and `private/secret.txt`. An
 * existing directory is left exactly as it is, so a user's edits survive restarts; the check
 * and the creation are one `mkdir`, so two starts racing do not both write.
 *
 * @example
 * if (await ensureDemoData('./data')) console.log('created ./data with sample files');
 * const files = await FileResources.open('./data');
 *
 * @param dir The directory to create; missing parent directories are created too.
 * @returns `true` when it created the directory, `false` when it existed.
 * @see FileResources.open
 */
/** The files {@link ensureDemoData} writes, relative to the directory it creates. */
export const DEMO_FILES: readonly string[] = Object.freeze(['README.md', 'notes/todo.txt', 'config.json', 'tools.json', 'prompts.json', 'private/secret.txt']);

export async function ensureDemoData(dir: string): Promise<boolean> {
  const target = path.resolve(dir);
  await fsp.mkdir(path.dirname(target), { recursive: true });
  try {
    await fsp.mkdir(target);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
  await fsp.mkdir(path.join(target, 'notes'));
  await fsp.mkdir(path.join(target, 'private'));
  await Promise.all([
    fsp.writeFile(path.join(target, 'README.md'), DEMO_README),
    fsp.writeFile(path.join(target, 'notes', 'todo.txt'), '- subscribe to this file\n- edit it and watch the notification\n'),
    fsp.writeFile(path.join(target, 'config.json'), `${JSON.stringify({ greeting: 'hello', retries: 3 }, null, 2)}\n`),
    fsp.writeFile(path.join(target, 'tools.json'), `${JSON.stringify(DEMO_TOOLS, null, 2)}\n`),
    fsp.writeFile(path.join(target, 'prompts.json'), `${JSON.stringify(DEMO_PROMPTS, null, 2)}\n`),
    fsp.writeFile(path.join(target, 'private', 'secret.txt'), 'Only callers with the private scope can read this.\n'),
  ]);
  return true;
}
