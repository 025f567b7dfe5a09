import type { RequestContext } from '../lib/context.js';
import { ErrorCode, JsonRpcError } from '../lib/jsonrpc.js';
import type { Hub } from '../lib/hub.js';
import { type ResourceProvider, unrestrictedHub } from '../lib/resources.js';

/** A yes/no check of one resource URI for one caller (`canRead`, `subscribeHook`). */
export type ResourceCheck = (uri: string, context: RequestContext) => boolean | Promise<boolean>;

/** What decides who may watch a resource URI (an endpoint's `resourceProviders`, `canRead` and `subscribeHook`). */
export interface ResourceAccessOptions {
  /** Asked in order; the first whose `subscribable` says yes owns the URI. An empty list owns nothing. */
  readonly providers: readonly ResourceProvider[];
  /** The endpoint's read check, after the owner's `canRead`; absent: the owner's decides alone. */
  readonly canRead?: ResourceCheck | undefined;
  /** The endpoint's subscribe hook, after every read check; absent: none. */
  readonly subscribeHook?: ResourceCheck | undefined;
}

/** Why a URI was refused: the L3 wording (`resource is not subscribable`, `permission denied`). */
export type ResourceRefusal = 'not subscribable' | 'permission denied';

/** The outcome of {@link ResourceAccess.decide}: the provider that serves the URI, or why not. */
export type ResourceDecision =
  | { readonly allowed: true; readonly provider: ResourceProvider }
  | { readonly allowed: false; readonly refusal: ResourceRefusal };

const NOT_SUBSCRIBABLE: ResourceDecision = Object.freeze({ allowed: false, refusal: 'not subscribable' });
const PERMISSION_DENIED: ResourceDecision = Object.freeze({ allowed: false, refusal: 'permission denied' });

/**
 * The one authorization decision for resource URIs, shared by both eras: a modern listen's
 * `resourceSubscriptions` (DESIGN M4: a refused URI is dropped silently) and a legacy
 * `resources/subscribe` (DESIGN L3: a refused URI answers `-32602`).
 *
 * A URI is allowed when, in this order: some provider's `subscribable` says yes (the first one
 * owns it), the owner's `canRead` says yes, the endpoint's `canRead` (if given) says yes, and the
 * `subscribeHook` (if given) says yes. Each check runs only when the ones before it passed (the
 * hook never learns of a URI the caller cannot read). Anything but `true` is a no; a throw or a
 * rejection is not a decision: `decide` rejects with it, and each era answers it as a provider
 * failure.
 *
 * @example
 * const access = new ResourceAccess({ providers: [products], canRead, subscribeHook });
 * const decision = await access.decide('db://shop/Product/42', context);
 * if (!decision.allowed) throw refusalError('db://shop/Product/42', decision.refusal);
 * @internal
 */
export class ResourceAccess {
  readonly #providers: readonly ResourceProvider[];
  readonly #canRead: ResourceCheck | undefined;
  readonly #subscribeHook: ResourceCheck | undefined;
  /**
   * When nothing can refuse any URI and every change comes from one hub (the endpoint's default
   * provider, `hubResources(hub)`, and no hooks): that hub. A listen on it then skips the per-URI
   * checks. Otherwise undefined.
   */
  readonly openHub: Hub | undefined;

  /** @param options the providers and hooks, asked in the order documented on the class. */
  constructor(options: ResourceAccessOptions) {
    this.#providers = options.providers;
    this.#canRead = options.canRead;
    this.#subscribeHook = options.subscribeHook;
    const first = options.providers[0];
    this.openHub = options.canRead === undefined && options.subscribeHook === undefined && first !== undefined ? unrestrictedHub(first) : undefined;
  }

  /**
   * Decides whether the caller of `context` may watch `uri`.
   * @returns the owning provider, or the refusal; rejects when a provider's check or a hook throws.
   */
  async decide(uri: string, context: RequestContext): Promise<ResourceDecision> {
    let owner: ResourceProvider | undefined;
    for (const provider of this.#providers) {
      if ((await provider.subscribable(uri, context)) === true) {
        owner = provider;
        break;
      }
    }
    if (owner === undefined) return NOT_SUBSCRIBABLE;
    if ((await owner.canRead(uri, context)) !== true) return PERMISSION_DENIED;
    const canRead = this.#canRead;
    if (canRead !== undefined && (await canRead(uri, context)) !== true) return PERMISSION_DENIED;
    const hook = this.#subscribeHook;
    if (hook !== undefined && (await hook(uri, context)) !== true) return PERMISSION_DENIED;
    return { allowed: true, provider: owner };
  }
}

/** The legacy answer to a refused `resources/subscribe` (DESIGN L3). */
export function refusalError(uri: string, refusal: ResourceRefusal): JsonRpcError {
  return new JsonRpcError(ErrorCode.InvalidParams, refusal === 'not subscribable' ? `resource is not subscribable: ${uri}` : `permission denied: ${uri}`);
}
