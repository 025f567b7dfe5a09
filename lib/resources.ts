import type { ObservableInput } from 'rxjs';
import type { RequestContext } from './context.js';
import type { Hub } from './hub.js';
import { callback, hub as validHub, implementing, options as validOptions } from './validate.js';

/**
 * What a framework author implements so that clients can watch their resources, in both eras: a
 * legacy `resources/subscribe` (DESIGN L3, L5) and a modern listen's `resourceSubscriptions`
 * (DESIGN M4) are decided by the same checks. An endpoint asks its providers in order; the first
 * whose `subscribable` says yes owns the URI.
 *
 * - `subscribable(uri)`: does this provider know `uri` and have a change source for it?
 *   No provider saying yes → `-32602 resource is not subscribable: <uri>`; a listen drops the URI.
 * - `canRead(uri, context)`: may the caller read it (the same check `resources/read` makes)?
 *   No → `-32602 permission denied: <uri>`; a listen drops the URI, silently. The endpoint's own
 *   `canRead` and `subscribeHook` run after it, for both eras alike.
 * - `changes(uri, context)`: the changes of `uri` committed **after** the call (`omitCurrent`:
 *   nothing for the current state). Every value it emits sends one payload-less
 *   `notifications/resources/updated {uri}`; the values themselves are ignored. It may return an
 *   Observable, a Promise, an async iterable or any other `ObservableInput`. A collection URI's
 *   source should emit for every member's change, so that matching stays exact (DESIGN L5).
 *   A legacy session subscribes it once per subscribed URI; modern listens share one
 *   subscription per URI on a node (made with the context of the first listen that names the URI,
 *   ended with the last), so its values must not depend on who asked: who may hear them is
 *   `canRead`'s decision. For changes published on the endpoint's own hub, use
 *   {@link hubResources} (spread it to replace a check: `{ ...hubResources(hub), canRead }`):
 *   listens hear that hub already. A hand-written `changes` that returns that hub's topic works:
 *   each publish comes back once through the provider, in the same turn, and the hub collapses
 *   it into the first (`HubOptions.coalesce`; with `coalesce: false` a listen hears it twice).
 * - `templates(context)` (optional): the URI templates of the resources it serves, which
 *   `resources/templates/list` answers (merged with the other providers').
 *
 * Anything but `true` from `subscribable` or `canRead` is a no. A throw or rejection from any of
 * the three, or a source that errors as it is subscribed, answers `-32603 failed to subscribe:
 * <uri>` and drops the URI from a listen (the error goes to `channels.error`, never to the
 * client). A source that errors later is reported on `channels.error` and its subscription ends;
 * the URI stays on a legacy session's record and is restored on the next GET, and the next listen
 * that names it subscribes it again.
 *
 * @example
 * const products: ResourceProvider = {
 *   subscribable: (uri) => uri.startsWith('db://shop/Product'),
 *   canRead: (uri, { auth }) => auth.scopes.has('shop:read'),
 *   changes: (uri) => db.changeFeed(uri), // an AsyncIterable of commits
 *   templates: () => [{ uriTemplate: 'db://shop/Product/{id}', name: 'product', mimeType: 'application/json' }],
 * };
 * new McpEndpoint({ hub, resourceProviders: [products] });
 */
export interface ResourceProvider {
  subscribable(uri: string, context: RequestContext): boolean | Promise<boolean>;
  canRead(uri: string, context: RequestContext): boolean | Promise<boolean>;
  changes(uri: string, context: RequestContext): ObservableInput<unknown>;
  /**
   * The URI templates (RFC 6570) of the resources this provider serves, as the caller of
   * `context` may see them: what `resources/templates/list` answers, in both eras, wherever the
   * endpoint advertises `resources`. The endpoint merges every provider's, in provider order, each
   * `uriTemplate` once (the first provider's entry); a throw or rejection answers `-32603
   * resources/templates/list failed` and goes to `channels.error`. Optional: a provider without it
   * declares none, and an endpoint whose providers declare none answers an empty list.
   */
  templates?(context: RequestContext): readonly ResourceTemplate[] | Promise<readonly ResourceTemplate[]>;
}

/**
 * A template for resource URIs, as MCP's `resources/templates/list` carries it (2025-03-26 and
 * later): `uriTemplate` (RFC 6570) and `name` are required; `title`, `description` and `mimeType`
 * are optional, and any other member (`annotations`, `icons`, `_meta`) is passed through as is.
 *
 * @example
 * const product: ResourceTemplate = { uriTemplate: 'db://shop/Product/{id}', name: 'product', mimeType: 'application/json' };
 */
export interface ResourceTemplate {
  /** An RFC 6570 URI template, e.g. `db://shop/Product/{id}`. */
  readonly uriTemplate: string;
  /** A programmatic name, e.g. `product`. */
  readonly name: string;
  /** A name for people, e.g. `Product`. */
  readonly title?: string;
  /** What the matching resources are. */
  readonly description?: string;
  /** The MIME type of every matching resource, when they share one. */
  readonly mimeType?: string;
  readonly [member: string]: unknown;
}

/** Options of {@link hubResources}. */
export interface HubResourcesOptions {
  /** Which URIs can be subscribed to; defaults to every URI. */
  readonly subscribable?: (uri: string, context: RequestContext) => boolean | Promise<boolean>;
  /** The read check; defaults to allowing every caller. */
  readonly canRead?: (uri: string, context: RequestContext) => boolean | Promise<boolean>;
  /** The URI templates the provider declares (see {@link ResourceProvider.templates}); defaults to none. */
  readonly templates?: (context: RequestContext) => readonly ResourceTemplate[] | Promise<readonly ResourceTemplate[]>;
}

/**
 * A {@link ResourceProvider} whose changes are the hub's `notifyResourceUpdated(uri)` publishes,
 * matched exactly: the default provider of an endpoint, and the one to use when changes are
 * pushed from elsewhere (a file watcher, a database trigger, a Redis bus).
 *
 * @example
 * const provider = hubResources(hub, { subscribable: (uri) => files.exists(uri), canRead });
 * @param hub where the changes are published.
 * @param options which URIs are subscribable and who may read them (both default to yes), and the
 *   URI templates the provider declares (default none).
 * @throws InvalidOptionError naming `hubResources hub` when `hub` is not a Hub (an `McpEndpoint` is
 *   told to pass `endpoint.hub`), `hubResources options` when `options` is not an object, or the
 *   option (`subscribable`, `canRead`, `templates`) that is unknown or not a function.
 */
export function hubResources(hub: Hub, options: HubResourcesOptions = {}): ResourceProvider {
  validHub('hubResources hub', hub);
  const given = validOptions<keyof HubResourcesOptions>('hubResources options', options, ['subscribable', 'canRead', 'templates']);
  for (const name of ['subscribable', 'canRead', 'templates'] as const) if (given[name] !== undefined) callback(name, given[name]);
  const { subscribable = () => true, canRead = () => true, templates } = options;
  const changes = (uri: string) => hub.topic({ topic: 'resource', uri });
  HUB_CHANGES.set(changes, hub);
  const provider: ResourceProvider = templates === undefined ? { subscribable, canRead, changes } : { subscribable, canRead, changes, templates };
  if (options.subscribable === undefined && options.canRead === undefined) UNRESTRICTED.add(provider);
  return provider;
}

/**
 * `value`, checked to be a {@link ResourceProvider}: `subscribable`, `canRead` and `changes`
 * functions, and `templates` absent or a function.
 * @internal
 */
export function resourceProvider(label: string, value: unknown): ResourceProvider {
  const provider = implementing<ResourceProvider>(label, value, ['subscribable', 'canRead', 'changes'], 'a ResourceProvider (subscribable, canRead, changes), e.g. hubResources(hub)');
  if (provider.templates !== undefined) callback(`${label}.templates`, provider.templates);
  return provider;
}

// Keyed by the `changes` function, so that a provider spread into another object (`{ ...hubResources(hub), canRead }`) is still known.
const HUB_CHANGES = new WeakMap<ResourceProvider['changes'], Hub>();
// Providers made by `hubResources(hub)` without options: every URI, for everyone.
const UNRESTRICTED = new WeakSet<ResourceProvider>();

/**
 * The hub whose topics a provider's `changes` are, when it was made by {@link hubResources}: a
 * listen on that hub hears them already, so an endpoint does not subscribe them a second time.
 * @internal
 */
export function changesHub(provider: ResourceProvider): Hub | undefined {
  return HUB_CHANGES.get(provider.changes);
}

/**
 * The hub of a provider made by `hubResources(hub)` without options, which owns every URI, lets
 * everyone read it and takes its changes from that hub: nothing about it needs asking per URI.
 * @internal
 */
export function unrestrictedHub(provider: ResourceProvider): Hub | undefined {
  return UNRESTRICTED.has(provider) ? HUB_CHANGES.get(provider.changes) : undefined;
}
