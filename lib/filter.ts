/**
 * The `subscriptions/listen` filter (MCP 2026-07-28): parsing, the honoured subset,
 * resource authorization and the acknowledgment (DESIGN M2–M4).
 */
import { match, P } from 'ts-pattern';
import { ErrorCode, exceedsBytes, JsonRpcError } from './jsonrpc.js';
import type { JsonRpcNotification } from './jsonrpc.js';

/** Which notification kinds this server can deliver (what it advertises). */
export interface ServerCapabilities {
  /** The server advertises `tools` (honours `toolsListChanged`). */
  readonly tools?: boolean;
  /** The server advertises `prompts` (honours `promptsListChanged`). */
  readonly prompts?: boolean;
  /** The server advertises `resources` (honours `resourcesListChanged` and `resourceSubscriptions`). */
  readonly resources?: boolean;
  /** The server enables the tasks extension (honours `taskIds`). */
  readonly tasks?: boolean;
}

/** A honoured listen filter: only fields that subscribe to something. */
export interface ListenFilter {
  readonly toolsListChanged?: true;
  readonly promptsListChanged?: true;
  readonly resourcesListChanged?: true;
  /** Resource URIs, exact strings, no duplicates, never empty. */
  readonly resourceSubscriptions?: readonly string[];
  /** Task ids, no duplicates, never empty. */
  readonly taskIds?: readonly string[];
}

/** The most URIs (or task ids) one listen may name (MCP 2026-07-28). */
export const MAX_FILTER_ENTRIES = 1000;

/**
 * The longest resource URI accepted, in UTF-8 bytes: 8192 (8 KiB), in a listen filter and in a
 * legacy `resources/subscribe`/`unsubscribe`. A longer one is refused with `-32602` naming the field.
 */
export const MAX_URI_BYTES = 8192;

/** The longest task id accepted in a listen filter, in UTF-8 bytes: 1024 (1 KiB). */
export const MAX_TASK_ID_BYTES = 1024;

/** The request `_meta` key under which a 2026-07-28 client declares its capabilities, per request. */
export const CLIENT_CAPABILITIES_META_KEY = 'io.modelcontextprotocol/clientCapabilities';

/** The identifier of the official MCP Tasks extension (SEP-2663), a key of `clientCapabilities.extensions`. */
export const TASKS_EXTENSION_ID = 'io.modelcontextprotocol/tasks';

/** The method of the first frame of every listen stream. */
const ACKNOWLEDGED_METHOD = 'notifications/subscriptions/acknowledged';

type JsonObject = Readonly<Record<string, unknown>>;

const isObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Own properties only: a key inherited from `Object.prototype` is not something the client sent. */
const own = (object: JsonObject, key: string): unknown => (Object.hasOwn(object, key) ? object[key] : undefined);

const invalidParams = (message: string): JsonRpcError => new JsonRpcError(ErrorCode.InvalidParams, message);

/**
 * Reads the `notifications` filter of a `subscriptions/listen` request and keeps the part this server honours.
 *
 * Validation is strict and honouring is lenient. A known field of the wrong type,
 * `notifications` missing or not an object, or more than {@link MAX_FILTER_ENTRIES} URIs or
 * task ids is a `-32602` error whose message names the field — even when the server would
 * not honour that field. What passes is then cut down to what subscribes to something:
 * `false`, a field whose capability the server does not advertise and unknown fields
 * (a newer revision's, an extension's) are left out. URIs and task ids are deduplicated by
 * exact string, first occurrence kept; a list left empty is left out. Checks run in a fixed
 * order (params, notifications, `toolsListChanged`, `promptsListChanged`,
 * `resourcesListChanged`, `resourceSubscriptions`, `taskIds`; for a list its type, then its
 * length, then each element) so one request always gets the same message. Last,
 * `taskIds` honoured and non-empty from a client that did not declare the tasks extension
 * is `-32021` (see {@link clientDeclaresTasks}). The result is frozen; pass it through
 * {@link authorizeListenFilter} before subscribing anything.
 *
 * @example
 * ```ts
 * const filter = parseListenFilter(
 *   { notifications: { toolsListChanged: true, promptsListChanged: true, resourceSubscriptions: ['file:///a', 'file:///a'] } },
 *   { tools: true, resources: true },
 * );
 * // → { toolsListChanged: true, resourceSubscriptions: ['file:///a'] }  (no prompts capability)
 * ```
 *
 * @param params The whole `params` of the JSON-RPC request (holds `notifications` and maybe `_meta`); any value.
 * @param capabilities What this server advertises; an absent flag means not advertised.
 * @returns The honoured filter, frozen, its fields in the acknowledgment's order.
 * @throws {JsonRpcError} `-32602` (InvalidParams) for a malformed filter, `-32021`
 *   (MissingRequiredExtension) for `taskIds` without the tasks extension.
 * @see authorizeListenFilter
 * @see acknowledgedNotification
 * @see clientDeclaresTasks
 */
export function parseListenFilter(params: unknown, capabilities: ServerCapabilities): ListenFilter {
  if (!isObject(params)) throw invalidParams('subscriptions/listen requires params to be an object');
  const notifications = match(own(params, 'notifications'))
    .with(P.when(isObject), (value) => value)
    .otherwise(() => {
      throw invalidParams('subscriptions/listen requires params.notifications to be an object');
    });

  const toolsListChanged = readFlag(notifications, 'toolsListChanged');
  const promptsListChanged = readFlag(notifications, 'promptsListChanged');
  const resourcesListChanged = readFlag(notifications, 'resourcesListChanged');
  const resourceSubscriptions = readList(notifications, 'resourceSubscriptions', 'URI');
  const taskIds = readList(notifications, 'taskIds', 'task id');

  const honouredTaskIds = capabilities.tasks === true ? taskIds : [];
  if (honouredTaskIds.length > 0 && !clientDeclaresTasks(params)) {
    throw new JsonRpcError(
      ErrorCode.MissingRequiredExtension,
      `params.notifications.taskIds requires the tasks extension: declare "${TASKS_EXTENSION_ID}" in ` +
        `params._meta["${CLIENT_CAPABILITIES_META_KEY}"].extensions`,
      // The shape of the official SDK's MissingRequiredClientCapabilityError data.
      { requiredCapabilities: { extensions: { [TASKS_EXTENSION_ID]: {} } } },
    );
  }

  return buildFilter({
    toolsListChanged: toolsListChanged && capabilities.tools === true,
    promptsListChanged: promptsListChanged && capabilities.prompts === true,
    resourcesListChanged: resourcesListChanged && capabilities.resources === true,
    resourceSubscriptions: capabilities.resources === true ? dedupe(resourceSubscriptions) : [],
    taskIds: dedupe(honouredTaskIds),
  });
}

/**
 * Tells whether a listen request's client declared the MCP Tasks extension.
 *
 * On revision 2026-07-28 a client declares its capabilities on every request, in
 * `params._meta["io.modelcontextprotocol/clientCapabilities"]`, and declares an extension
 * by its identifier in that object's `extensions` map, with a settings object as the value
 * (SEP-2133; the official TypeScript client types `extensions` as
 * `Record<string, JSONObject>` and reads an extension as `capabilities.extensions?.[id]`).
 * The tasks extension is `"io.modelcontextprotocol/tasks"` (SEP-2663). For clients of the
 * 2025-11-25 era, where tasks were a first-class `tasks` capability object, that key is
 * accepted too. A value that is not a (non-array) object declares nothing, as in the
 * official SDK, where a malformed extension value counts as not declared.
 *
 * @example
 * ```ts
 * clientDeclaresTasks({
 *   notifications: { taskIds: ['t-1'] },
 *   _meta: { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } },
 * }); // → true
 * clientDeclaresTasks({ notifications: {} }); // → false
 * ```
 *
 * @param params The whole `params` of the request; any value.
 * @returns `true` when the tasks extension (or the 2025-11-25 `tasks` capability) is declared.
 * @see parseListenFilter
 * @see TASKS_EXTENSION_ID
 */
export function clientDeclaresTasks(params: unknown): boolean {
  return match(params)
    .with({ _meta: { [CLIENT_CAPABILITIES_META_KEY]: { extensions: { [TASKS_EXTENSION_ID]: P.when(isObject) } } } }, () => true)
    .with({ _meta: { [CLIENT_CAPABILITIES_META_KEY]: { tasks: P.when(isObject) } } }, () => true)
    .otherwise(() => false);
}

/** The server's checks for resource URIs named in a listen filter. */
export interface ResourceAuthorizer {
  /** The server's read-scope check (same as resources/read). Default: everything readable. */
  readonly canRead?: (uri: string) => boolean | Promise<boolean>;
  /** Optional subscribe hook: may refuse (false / rejects). */
  readonly subscribeHook?: (uri: string) => boolean | Promise<boolean>;
}

/**
 * Keeps only the resource URIs the caller may read and the subscribe hook accepts.
 *
 * Every URI is checked concurrently: first `canRead` (the same scope check as
 * `resources/read`), then, only for a readable URI, `subscribeHook`. Anything but `true` —
 * `false`, another value, a throw, a rejection — drops the URI silently, "exactly as if never
 * asked" (DESIGN M4), so the acknowledgment never reveals more than the caller could read.
 * The surviving URIs keep their order; if none survive the field is left out. The other
 * fields pass unchanged. Never rejects.
 *
 * @example
 * ```ts
 * const filter = await authorizeListenFilter(
 *   { resourceSubscriptions: ['user://1', 'user://2'] },
 *   { canRead: (uri) => uri === `user://${callerId}` },
 * );
 * // callerId 1 → { resourceSubscriptions: ['user://1'] }
 * ```
 *
 * @param filter A filter from {@link parseListenFilter}.
 * @param authorizer The checks; without one (or without `canRead`) every URI is readable,
 *   without `subscribeHook` the read check alone decides.
 * @returns The filter with refused URIs removed, frozen.
 * @see parseListenFilter
 */
export async function authorizeListenFilter(filter: ListenFilter, authorizer: ResourceAuthorizer = {}): Promise<ListenFilter> {
  const uris = filter.resourceSubscriptions;
  if (uris === undefined || uris.length === 0) return buildFilter(filter);
  const { canRead, subscribeHook } = authorizer;
  if (canRead === undefined && subscribeHook === undefined) return buildFilter(filter);

  const admitted = await Promise.all(uris.map((uri) => admits(uri, canRead, subscribeHook)));
  return buildFilter({ ...filter, resourceSubscriptions: uris.filter((_, index) => admitted[index]) });
}

async function admits(
  uri: string,
  canRead: ResourceAuthorizer['canRead'],
  subscribeHook: ResourceAuthorizer['subscribeHook'],
): Promise<boolean> {
  try {
    // The hook must never learn of a URI the caller cannot read.
    if (canRead !== undefined && (await canRead(uri)) !== true) return false;
    return subscribeHook === undefined || (await subscribeHook(uri)) === true;
  } catch {
    return false;
  }
}

/** The name of a honoured filter field, for telemetry (never the URIs or ids themselves). */
export type FilterName =
  | 'tools_list_changed'
  | 'prompts_list_changed'
  | 'resources_list_changed'
  | 'resource_subscriptions'
  | 'task_ids';

/**
 * Names the fields a filter subscribes to, for the `filters` of telemetry events.
 *
 * The names are fixed snake_case labels in the acknowledgment's field order; they say which
 * kinds a stream listens to and never which URIs or tasks (DESIGN M11).
 *
 * @example
 * ```ts
 * filterNames({ toolsListChanged: true, resourceSubscriptions: ['file:///a'] });
 * // → ['tools_list_changed', 'resource_subscriptions']
 * ```
 *
 * @param filter A honoured filter.
 * @returns The names, a new array each call.
 * @see parseListenFilter
 */
export function filterNames(filter: ListenFilter): FilterName[] {
  const ordered = buildFilter(filter);
  const names: FilterName[] = [];
  if (ordered.toolsListChanged) names.push('tools_list_changed');
  if (ordered.promptsListChanged) names.push('prompts_list_changed');
  if (ordered.resourcesListChanged) names.push('resources_list_changed');
  if (ordered.resourceSubscriptions) names.push('resource_subscriptions');
  if (ordered.taskIds) names.push('task_ids');
  return names;
}

/**
 * Builds the `notifications/subscriptions/acknowledged` message that opens a listen stream.
 *
 * "Acknowledgment first": it lists only the fields honoured, each with the value honoured,
 * in the fixed order `toolsListChanged`, `promptsListChanged`, `resourcesListChanged`,
 * `resourceSubscriptions`, `taskIds`, so equal filters always encode to equal bytes. It has
 * no `_meta`: the stream's `subscriptionId` is added when the frame is tagged.
 *
 * @example
 * ```ts
 * JSON.stringify(acknowledgedNotification({ resourceSubscriptions: ['file:///a'], toolsListChanged: true }));
 * // → '{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged",
 * //     "params":{"notifications":{"toolsListChanged":true,"resourceSubscriptions":["file:///a"]}}}'
 * ```
 *
 * @param filter The filter after {@link authorizeListenFilter}.
 * @returns The JSON-RPC notification (not yet tagged with the subscription id).
 * @see parseListenFilter
 * @see authorizeListenFilter
 */
export function acknowledgedNotification(filter: ListenFilter): JsonRpcNotification {
  return { jsonrpc: '2.0', method: ACKNOWLEDGED_METHOD, params: { notifications: buildFilter(filter) } };
}

/** A boolean field: `undefined` when absent, else it must be a boolean. */
function readFlag(notifications: JsonObject, field: string): boolean {
  return match(own(notifications, field))
    .with(P.boolean, (value) => value)
    .with(undefined, () => false)
    .otherwise(() => {
      throw invalidParams(`params.notifications.${field} must be a boolean`);
    });
}

/** A list field: absent is empty; else an array of at most MAX_FILTER_ENTRIES strings. */
function readList(notifications: JsonObject, field: string, noun: 'URI' | 'task id'): readonly string[] {
  const value = own(notifications, field);
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw invalidParams(`params.notifications.${field} must be an array of ${noun} strings`);
  // Length before elements: an oversized list is refused without walking it.
  if (value.length > MAX_FILTER_ENTRIES) {
    throw invalidParams(`params.notifications.${field} must list at most ${MAX_FILTER_ENTRIES} ${noun}s, got ${value.length}`);
  }
  const maxBytes = noun === 'URI' ? MAX_URI_BYTES : MAX_TASK_ID_BYTES;
  for (let index = 0; index < value.length; index++) {
    const entry: unknown = value[index];
    if (typeof entry !== 'string') throw invalidParams(`params.notifications.${field}[${index}] must be a string`);
    if (exceedsBytes(entry, maxBytes)) {
      throw invalidParams(`params.notifications.${field}[${index}] must be a ${noun} of at most ${maxBytes} bytes`);
    }
  }
  return value as readonly string[];
}

/** Exact-string deduplication, first occurrence kept. */
function dedupe(values: readonly string[]): readonly string[] {
  return [...new Set(values)];
}

interface FilterParts {
  readonly toolsListChanged?: boolean;
  readonly promptsListChanged?: boolean;
  readonly resourcesListChanged?: boolean;
  readonly resourceSubscriptions?: readonly string[];
  readonly taskIds?: readonly string[];
}

/** The one place a filter object is made: fixed key order, only fields that subscribe to something, frozen. */
function buildFilter(parts: FilterParts): ListenFilter {
  const filter: {
    toolsListChanged?: true;
    promptsListChanged?: true;
    resourcesListChanged?: true;
    resourceSubscriptions?: readonly string[];
    taskIds?: readonly string[];
  } = {};
  if (parts.toolsListChanged === true) filter.toolsListChanged = true;
  if (parts.promptsListChanged === true) filter.promptsListChanged = true;
  if (parts.resourcesListChanged === true) filter.resourcesListChanged = true;
  if (parts.resourceSubscriptions !== undefined && parts.resourceSubscriptions.length > 0) {
    filter.resourceSubscriptions = Object.isFrozen(parts.resourceSubscriptions)
      ? parts.resourceSubscriptions
      : Object.freeze([...parts.resourceSubscriptions]);
  }
  if (parts.taskIds !== undefined && parts.taskIds.length > 0) {
    filter.taskIds = Object.isFrozen(parts.taskIds) ? parts.taskIds : Object.freeze([...parts.taskIds]);
  }
  return Object.freeze(filter);
}
