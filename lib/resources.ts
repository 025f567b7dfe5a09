import type { ObservableInput } from 'rxjs';
import type { RequestContext } from './context.js';
import type { Hub } from './hub.js';

/**
 * What a framework author implements so that legacy `resources/subscribe` can watch their
 * resources (DESIGN L3, L5). An endpoint asks its providers in order; the first whose
 * `subscribable` says yes owns the URI.
 *
 * - `subscribable(uri)`: does this provider know `uri` and have a change source for it?
 *   No provider saying yes → `-32602 resource is not subscribable: <uri>`.
 * - `canRead(uri, context)`: may the caller read it (the same check `resources/read` makes)?
 *   No → `-32602 permission denied: <uri>`.
 * - `changes(uri, context)`: the changes of `uri` committed **after** the call (`omitCurrent`:
 *   nothing for the current state). Every value it emits sends one payload-less
 *   `notifications/resources/updated {uri}`; the values themselves are ignored. It may return an
 *   Observable, a Promise, an async iterable or any other `ObservableInput`. A collection URI's
 *   source should emit for every member's change, so that matching stays exact (DESIGN L5).
 *
 * A throw or rejection from any of the three, or a source that errors as it is subscribed,
 * answers `-32603 failed to subscribe: <uri>` (the error goes to `channels.error`, never to the
 * client). A source that errors later is reported on `channels.error` and its subscription ends;
 * the URI stays on the session record and is restored on the next GET.
 *
 * @example
 * const products: ResourceProvider = {
 *   subscribable: (uri) => uri.startsWith('db://shop/Product'),
 *   canRead: (uri, { auth }) => auth.scopes.has('shop:read'),
 *   changes: (uri) => db.changeFeed(uri), // an AsyncIterable of commits
 * };
 * new McpEndpoint({ hub, resourceProviders: [products] });
 */
export interface ResourceProvider {
  subscribable(uri: string, context: RequestContext): boolean | Promise<boolean>;
  canRead(uri: string, context: RequestContext): boolean | Promise<boolean>;
  changes(uri: string, context: RequestContext): ObservableInput<unknown>;
}

/** Options of {@link hubResources}. */
export interface HubResourcesOptions {
  /** Which URIs can be subscribed to; defaults to every URI. */
  readonly subscribable?: (uri: string, context: RequestContext) => boolean | Promise<boolean>;
  /** The read check; defaults to allowing every caller. */
  readonly canRead?: (uri: string, context: RequestContext) => boolean | Promise<boolean>;
}

/**
 * A {@link ResourceProvider} whose changes are the hub's `notifyResourceUpdated(uri)` publishes,
 * matched exactly: the default provider of an endpoint, and the one to use when changes are
 * pushed from elsewhere (a file watcher, a database trigger, a Redis bus).
 *
 * @example
 * const provider = hubResources(hub, { subscribable: (uri) => files.exists(uri), canRead });
 * @param hub where the changes are published.
 * @param options which URIs are subscribable and who may read them; both default to yes.
 */
export function hubResources(hub: Hub, options: HubResourcesOptions = {}): ResourceProvider {
  const { subscribable = () => true, canRead = () => true } = options;
  return {
    subscribable,
    canRead,
    changes: (uri) => hub.topic({ topic: 'resource', uri }),
  };
}
