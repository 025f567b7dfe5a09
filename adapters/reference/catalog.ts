// The tools and prompts of the reference server: what `tools.json` and `prompts.json` list, what
// the server does when one is called (`tools/call`, `prompts/get`), and whether a change of those
// files changed what is listed (so that `list_changed` means something changed).
import { isDeepStrictEqual } from 'node:util';
import { ErrorCode, JsonRpcError } from '../../lib/jsonrpc.js';
import type { FileResources } from './files.js';

/** A `tools/call` or `prompts/get` result, before the era's own fields (`resultType`) are added. */
export type CatalogResult = Record<string, unknown>;

/** The tools the reference server implements, by name: what `tools/call` does with the arguments. */
const TOOLS: Readonly<Record<string, (args: Readonly<Record<string, unknown>>) => CatalogResult>> = Object.freeze({
  echo: (args) => {
    const { text } = args;
    if (typeof text !== 'string') return toolError(`echo needs the argument text, a string; got ${shown(text)}`);
    return { content: [{ type: 'text', text }] };
  },
  add: (args) => {
    const { a, b } = args;
    if (typeof a !== 'number' || typeof b !== 'number') {
      const wrong = typeof a !== 'number' ? `a: ${shown(a)}` : `b: ${shown(b)}`;
      return toolError(`add needs arguments a and b, both numbers; got ${wrong}`);
    }
    return { content: [{ type: 'text', text: String(a + b) }] };
  },
});

const IMPLEMENTED_TOOLS = Object.keys(TOOLS).join(' and ');

/**
 * What the reference server lists as tools and prompts, and what it answers when one is used.
 *
 * The definitions are the JSON arrays of `DIR/tools.json` and `DIR/prompts.json` (the demo data
 * writes tools `echo` and `add` and prompt `summarize`): what is listed is what is served, and
 * nothing else.
 * - `tools/call` of `echo` answers its `text` argument unchanged; of `add`, the sum of its number
 *   arguments `a` and `b`, as text. Arguments they cannot use are a tool execution error
 *   (`isError: true`, a message saying what is wrong), as MCP 2025-11-25 asks ("Input validation
 *   errors" are reported in tool results, so that the model can correct itself); a listed tool the
 *   server has no implementation for is one too. A name `tools/list` does not list, a missing name
 *   or `arguments` that are not an object answer `-32602` (a protocol error).
 * - `prompts/get` of `summarize` answers two user messages: the resource named by its `uri`
 *   argument, embedded (as `resources/read` reads it for the caller), and the instruction to
 *   summarize it in three sentences; a `uri` the caller cannot read, or that names nothing, answers
 *   `-32602`. Any other listed prompt answers its `description` as one user message, followed by
 *   the arguments given (`name: value` lines). A required argument missing (as the definition, or
 *   `summarize` itself, requires it), `arguments` that are not an object of strings and a name
 *   `prompts/list` does not list answer `-32602`.
 *
 * `listChanged(kind)` tells whether a change of `tools.json` or `prompts.json` changed the list: a
 * rewrite of the same definitions (reformatted, or touched) is no change, and sends no
 * `list_changed`.
 *
 * @example
 * const catalog = new Catalog(files);
 * const result = await catalog.callTool({ name: 'add', arguments: { a: 1, b: 2 } }); // { content: [{ type: 'text', text: '3' }] }
 * files.changes().subscribe(async (change) => {
 *   if (change.kind === 'tools' && (await catalog.listChanged('tools'))) hub.notifyToolsChanged();
 * });
 */
export class Catalog {
  readonly #files: FileResources;
  /** Per kind: the definitions last announced (or read at start), as a promise so that checks run in order. */
  readonly #listed: Record<'tools' | 'prompts', Promise<unknown[] | undefined>>;

  /** @param files the served directory, whose `tools()` and `prompts()` are the definitions. */
  constructor(files: FileResources) {
    this.#files = files;
    this.#listed = { tools: this.#read('tools'), prompts: this.#read('prompts') };
  }

  /**
   * Whether what `tools/list` (or `prompts/list`) answers differs from when it was last asked here
   * (or from the start): call it for each change of the file; checks run in call order.
   * @returns true when the definitions changed (compared as JSON values: key order and formatting
   *   do not count), or when they cannot be read (a client then re-lists: better a needless
   *   notification than a missed one).
   */
  listChanged(kind: 'tools' | 'prompts'): Promise<boolean> {
    const previous = this.#listed[kind];
    const now = previous.then(() => this.#read(kind));
    this.#listed[kind] = now;
    return Promise.all([previous, now]).then(([before, after]) => before === undefined || after === undefined || !isDeepStrictEqual(before, after));
  }

  /**
   * Answers `tools/call` (see the class comment).
   * @param params the request's params: `name`, and optional `arguments`.
   * @throws JsonRpcError `-32602` for a missing name, arguments that are not an object, or a tool
   *   `tools/list` does not list.
   */
  async callTool(params: Readonly<Record<string, unknown>> | undefined): Promise<CatalogResult> {
    const name = params?.name;
    if (typeof name !== 'string') throw invalid('tools/call requires params.name, a string');
    const args = params?.arguments ?? {};
    if (!isObject(args)) throw invalid('tools/call params.arguments must be an object');
    if (named(await this.#files.tools(), name) === undefined) throw invalid(`unknown tool: ${name}; tools/list names the tools of this server`);
    const run = Object.hasOwn(TOOLS, name) ? TOOLS[name] : undefined;
    if (run === undefined) return toolError(`tool ${name} is listed in tools.json, but the reference server implements only ${IMPLEMENTED_TOOLS}`);
    return run(args);
  }

  /**
   * Answers `prompts/get` (see the class comment).
   * @param params the request's params: `name`, and optional `arguments` (strings).
   * @param scopes the caller's scopes: `summarize` embeds only a resource they may read.
   * @throws JsonRpcError `-32602` for a missing name, bad or missing arguments, an unknown prompt or
   *   a resource `summarize` cannot read; `ResourceTooLargeError` for a resource over `maxReadBytes`.
   */
  async getPrompt(params: Readonly<Record<string, unknown>> | undefined, scopes: ReadonlySet<string>): Promise<CatalogResult> {
    const name = params?.name;
    if (typeof name !== 'string') throw invalid('prompts/get requires params.name, a string');
    const args = params?.arguments ?? {};
    if (!isObject(args) || !Object.values(args).every((value) => typeof value === 'string')) {
      throw invalid('prompts/get params.arguments must be an object of strings');
    }
    const prompt = named(await this.#files.prompts(), name);
    if (prompt === undefined) throw invalid(`unknown prompt: ${name}; prompts/list names the prompts of this server`);
    const required = requiredArguments(prompt);
    if (name === 'summarize' && !required.includes('uri')) required.push('uri');
    const absent = required.find((argument) => args[argument] === undefined);
    if (absent !== undefined) throw invalid(`prompt ${name} needs the argument ${absent}`);
    const description = typeof prompt.description === 'string' ? prompt.description : undefined;
    const messages = name === 'summarize' ? await this.#summarize(args.uri as string, scopes) : [userText(described(description ?? name, args as Record<string, string>))];
    return description === undefined ? { messages } : { description, messages };
  }

  async #summarize(uri: string, scopes: ReadonlySet<string>): Promise<unknown[]> {
    const read = await this.#files.read(uri, scopes);
    const contents = read?.contents[0];
    // Unreadable and absent look the same, as for resources/read.
    if (contents === undefined) throw new JsonRpcError(ErrorCode.InvalidParams, `resource not found: ${uri}`, { uri });
    return [
      { role: 'user', content: { type: 'resource', resource: contents } },
      userText(`Summarize the resource ${uri} above in three sentences.`),
    ];
  }

  #read(kind: 'tools' | 'prompts'): Promise<unknown[] | undefined> {
    return (kind === 'tools' ? this.#files.tools() : this.#files.prompts()).catch(() => undefined);
  }
}

/** A tool execution error: the result the model reads (MCP `isError`). */
function toolError(text: string): CatalogResult {
  return { content: [{ type: 'text', text }], isError: true };
}

function userText(text: string): { role: 'user'; content: { type: 'text'; text: string } } {
  return { role: 'user', content: { type: 'text', text } };
}

/** A prompt's text: its description, then each argument given as a `name: value` line. */
function described(description: string, args: Readonly<Record<string, string>>): string {
  const lines = Object.entries(args).map(([argument, value]) => `${argument}: ${value}`);
  return lines.length === 0 ? description : `${description}\n\n${lines.join('\n')}`;
}

function invalid(message: string): JsonRpcError {
  return new JsonRpcError(ErrorCode.InvalidParams, message);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** The definition named `name` in a definitions file's array, if any. */
function named(definitions: readonly unknown[], name: string): Record<string, unknown> | undefined {
  return definitions.find((definition): definition is Record<string, unknown> => isObject(definition) && definition.name === name);
}

/** The names of a prompt definition's required arguments. */
function requiredArguments(prompt: Readonly<Record<string, unknown>>): string[] {
  const declared = Array.isArray(prompt.arguments) ? prompt.arguments : [];
  return declared.filter((argument): argument is { name: string } => isObject(argument) && argument.required === true && typeof argument.name === 'string').map((argument) => argument.name);
}

/** A value as a tool error message shows it: JSON, or `none`. */
function shown(value: unknown): string {
  return value === undefined ? 'none' : JSON.stringify(value);
}
