// A gateway: other MCP servers' change streams served as sources of an endpoint, beside its own.
import { asyncScheduler, firstValueFrom, from, map, race, type SchedulerLike, Subscription, timer } from 'rxjs';
import type { MethodHandler, RequestContext } from '../../lib/context.js';
import { InvalidOptionError } from '../../lib/errors.js';
import type { Hub } from '../../lib/hub.js';
import { ErrorCode, JsonRpcError } from '../../lib/jsonrpc.js';
import type { ResourceProvider, ResourceTemplate } from '../../lib/resources.js';
import { namesOf, readOptions } from '../../lib/optionTable.js';
import { arrayOf, callback, functions, hub as validHub, options as validOptions, scheduler as validScheduler } from '../../lib/validate.js';
import { UpstreamError, UpstreamUnavailableError } from './errors.js';
import { type FailMode, GATEWAY_SETTINGS } from './options.js';
import type { UpstreamStats } from './telemetry.js';
import { Upstream, type UpstreamOptions } from './upstream.js';
import { splitUpstreamUri, upstreamUri } from './uri.js';

export type { FailMode } from './options.js';

/** Options of {@link upstreamGateway}. */
export interface UpstreamGatewayOptions {
  /** The hub of the endpoint the gateway serves: where upstream list changes are delivered. */
  readonly hub: Hub;
  /** The upstreams: made from options here (and closed with the gateway), or made by you. Names must differ. */
  readonly upstreams: readonly (Upstream | UpstreamOptions)[];
  /** How long a decision waits for an upstream's acknowledgment of a URI, in milliseconds; defaults to 5 000. */
  readonly ackTimeout?: number;
  /** What a URI still unacknowledged after `ackTimeout` gets (see {@link FailMode}); defaults to `open`. */
  readonly failMode?: FailMode;
  /** How long a request forwarded to an upstream (`resources/read`, `resources/list`, the templates) waits for its answer, in milliseconds; defaults to 30 000. */
  readonly requestTimeout?: number;
  /**
   * Who may watch and read an upstream's resources (the gateway URI, and the caller); defaults to
   * everyone. The upstream itself is asked with the gateway's credentials, never the caller's.
   */
  readonly canRead?: (uri: string, context: RequestContext) => boolean | Promise<boolean>;
  /** Where `ackTimeout` is timed; defaults to `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
}

const OPTION_NAMES: readonly (keyof UpstreamGatewayOptions)[] = ['hub', 'upstreams', ...namesOf(GATEWAY_SETTINGS), 'canRead', 'scheduler'];

/**
 * Serves other MCP servers' change notifications as sources of an endpoint (DESIGN 2.1, "Upstreams
 * as sources"): each upstream's resources under `upstream://<name>/<its URI>` (see {@link
 * upstreamUri}), its list changes on the endpoint's hub, in whichever era each downstream client
 * speaks, whatever era each upstream speaks.
 *
 * - **Sources, not a front**: {@link UpstreamGateway.resources} is a `ResourceProvider`; put it in the
 *   endpoint's `resourceProviders` beside your own. A downstream listen naming URIs of several
 *   upstreams is decided URI by URI, at once: each waits for its upstream's acknowledgment up to
 *   `ackTimeout`, so the listen's acknowledgment is the union of what the upstreams honour (and what
 *   the gateway serves itself). An upstream that refused a URI leaves it out, as the endpoint leaves
 *   out one it cannot serve; one that has not answered in time is `failMode`'s.
 * - **Shared**: however many downstream streams (of either era) watch a URI, its upstream carries it
 *   once ({@link Upstream}).
 * - **List changes** of every upstream are delivered to the hub's local streams (never relayed by a
 *   bus: every node of a fleet runs its own gateway); identical ones arriving in one turn are one
 *   frame (the hub's coalescing).
 * - **Failure is told**: when an upstream that was serving fails (a stream failed and waits for its
 *   reconnect), and again when it is back, the hub delivers `notifications/resources/list_changed`:
 *   every legacy session hears it, and every listen that asked for resource list changes. A URI whose
 *   upstream stream is opened again anew hears one `notifications/resources/updated` (it may have
 *   changed meanwhile). The other upstreams are not touched.
 *
 * @example
 * const hub = new Hub();
 * const gateway = upstreamGateway({ hub, upstreams: [{ name: 'notes', url: 'http://127.0.0.1:4000/mcp' }] });
 * const endpoint = new McpEndpoint({
 *   hub,
 *   resourceProviders: [gateway.resources, hubResources(hub)],
 *   methods: gateway.methods(),
 * });
 * // A client listens to 'upstream://notes/file:///srv/notes/today.md' on the endpoint.
 * @param options see {@link UpstreamGatewayOptions}.
 * @returns the gateway, forwarding list changes already ({@link UpstreamGateway.start}).
 * @throws InvalidOptionError naming `upstreamGateway options` when it is not an object, else the
 *   option that is unknown or unusable, an upstream's option as {@link Upstream} names it, or
 *   `upstreams[i].name` when two upstreams share a name.
 * @see Upstream
 */
export function upstreamGateway(options: UpstreamGatewayOptions): UpstreamGateway {
  return new UpstreamGateway(options).start();
}

/** Made by {@link upstreamGateway}; see there. */
export class UpstreamGateway {
  /** The upstreams, in the order given. */
  readonly upstreams: readonly Upstream[];
  /** The upstreams' resources as one `ResourceProvider`: it owns exactly the `upstream://<name>/…` URIs of its upstreams. */
  readonly resources: ResourceProvider;
  readonly #hub: Hub;
  readonly #byName = new Map<string, Upstream>();
  readonly #owned: Upstream[] = [];
  readonly #ackTimeout: number;
  readonly #requestTimeout: number;
  readonly #failMode: FailMode;
  readonly #canRead: (uri: string, context: RequestContext) => boolean | Promise<boolean>;
  readonly #scheduler: SchedulerLike;
  #forwarding: Subscription | undefined;

  /** Made by {@link upstreamGateway}, which also starts it. */
  constructor(options: UpstreamGatewayOptions) {
    const given = validOptions<keyof UpstreamGatewayOptions>('upstreamGateway options', options, OPTION_NAMES, { like: '{ hub, upstreams }' });
    this.#hub = validHub<Hub>('hub', given.hub);
    const { ackTimeout, failMode, requestTimeout } = readOptions(GATEWAY_SETTINGS, given);
    this.#ackTimeout = ackTimeout;
    this.#requestTimeout = requestTimeout;
    this.#failMode = failMode;
    this.#canRead = given.canRead === undefined ? () => true : callback('canRead', given.canRead);
    this.#scheduler = given.scheduler === undefined ? asyncScheduler : validScheduler<SchedulerLike>('scheduler', given.scheduler);
    const upstreams = arrayOf('upstreams', given.upstreams, 'an array of Upstreams or their options', (_label, entry) => entry).map((entry, index) => {
      if (entry instanceof Upstream) return entry;
      try {
        const made = new Upstream(entry as UpstreamOptions);
        this.#owned.push(made);
        return made;
      } catch (error) {
        for (const made of this.#owned) made.close();
        if (error instanceof InvalidOptionError) throw new InvalidOptionError(`upstreams[${index}].${error.info.option}`, expected(error), error.info.value);
        throw error;
      }
    });
    const list: Upstream[] = [];
    for (const [index, upstream] of upstreams.entries()) {
      if (this.#byName.has(upstream.name)) {
        for (const made of this.#owned) made.close();
        throw new InvalidOptionError(`upstreams[${index}].name`, 'a name no other upstream of the gateway has', upstream.name);
      }
      this.#byName.set(upstream.name, upstream);
      list.push(upstream);
    }
    this.upstreams = Object.freeze(list);
    this.resources = {
      subscribable: (uri) => {
        const target = this.#target(uri);
        return target === undefined ? false : this.#decide(target.upstream, target.uri);
      },
      canRead: (uri, context) => this.#canRead(uri, context),
      changes: (uri) => {
        const target = this.#target(uri);
        if (target === undefined) throw new UpstreamError(`not an upstream URI of this gateway: ${uri}`, { upstream: '' });
        return target.upstream.changes(target.uri);
      },
      templates: () => this.#templates(),
    };
  }

  /**
   * Starts delivering the upstreams' list changes and failures to the hub (each upstream's list
   * stream opens now and stays open until {@link UpstreamGateway.close}). Idempotent.
   */
  start(): this {
    if (this.#forwarding !== undefined) return this;
    const forwarding = (this.#forwarding = new Subscription());
    const hub = this.#hub;
    for (const upstream of this.upstreams) {
      forwarding.add(upstream.listChanges().subscribe((topic) => hub.deliver({ topic })));
      // Serving since it last failed: a failure now is news to its subscribers, and so is its return.
      let serving = false;
      let failed = false;
      forwarding.add(
        upstream.states.subscribe(({ state }) => {
          if (state === 'open' && failed) hub.deliver({ topic: 'resources' });
          if (state === 'open') [serving, failed] = [true, false];
          else if (state === 'retrying' && serving) {
            [serving, failed] = [false, true];
            hub.deliver({ topic: 'resources' });
          }
        }),
      );
    }
    return this;
  }

  /**
   * True when `uri` is one of this gateway's (`upstream://<name of one of its upstreams>/…`): what
   * its `resources` provider owns and its `methods` answer.
   * @example
   * gateway.owns('upstream://notes/file:///srv/notes/today.md'); // true when an upstream is named notes
   */
  owns(uri: string): boolean {
    return this.#target(uri) !== undefined;
  }

  /** Each upstream's counts now, in the order given. */
  get stats(): readonly UpstreamStats[] {
    return this.upstreams.map((upstream) => upstream.stats);
  }

  /**
   * `own`'s methods with `resources/read` and `resources/list` serving the union: a read of an
   * upstream URI is asked of its upstream (with the gateway's credentials, after `canRead`), its
   * contents' URIs rewritten (`-32603` when it fails or takes longer than `requestTimeout`); a list is
   * `own`'s followed by each upstream's first page, rewritten (an upstream that fails or takes longer
   * than `requestTimeout` is left out). Results are shaped for the
   * caller's era (a 2026-07-28 result is complete and cacheable; a legacy one has neither member),
   * whatever the upstream speaks.
   * @example
   * new McpEndpoint({ hub, resourceProviders: [gateway.resources, mine], methods: gateway.methods({ 'resources/read': readMine, 'resources/list': listMine }) });
   * @param own your methods (`resources/read` gets the URIs that are not an upstream's).
   * @throws InvalidOptionError naming `methods own` when it is not an object of functions.
   */
  methods(own: Readonly<Record<string, MethodHandler>> = {}): Record<string, MethodHandler> {
    functions('methods own', own, 'method handlers by method name');
    const read = own['resources/read'];
    const list = own['resources/list'];
    return {
      ...own,
      'resources/read': async (params, context) => {
        const uri = params?.uri;
        const target = typeof uri === 'string' ? this.#target(uri) : undefined;
        if (target === undefined) {
          if (read !== undefined) return read(params, context);
          throw notFound(typeof uri === 'string' ? uri : '', context);
        }
        if ((await this.#canRead(uri as string, context)) !== true) throw notFound(uri as string, context);
        let result: Record<string, unknown>;
        try {
          result = await this.#within(target.upstream.request('resources/read', { uri: target.uri }));
        } catch (error) {
          throw forwardedError(error, uri as string, context);
        }
        const contents = Array.isArray(result.contents) ? result.contents.map((entry) => rewritten(target.upstream.name, entry)) : [];
        return shaped({ ...result, contents }, context);
      },
      'resources/list': async (params, context) => {
        const mine = list === undefined ? { resources: [] } : ((await list(params, context)) as Record<string, unknown>);
        const theirs = await Promise.all(
          this.upstreams.map(async (upstream) => {
            const answer = await this.#bounded(upstream.request('resources/list', {}));
            const resources = Array.isArray(answer?.resources) ? answer.resources.map((entry) => rewritten(upstream.name, entry)) : [];
            const readable = await Promise.all(resources.map(async (entry) => typeof entry.uri === 'string' && (await this.#canRead(entry.uri, context)) === true));
            return resources.filter((_, index) => readable[index]);
          }),
        );
        const resources = [...(Array.isArray(mine.resources) ? mine.resources : []), ...theirs.flat()];
        return shaped({ ...mine, resources }, context);
      },
    };
  }

  /** Stops forwarding and closes the upstreams made from options here (those given as `Upstream`s are yours to close). Idempotent. */
  close(): void {
    this.#forwarding?.unsubscribe();
    for (const upstream of this.#owned) upstream.close();
  }

  #target(uri: string): { readonly upstream: Upstream; readonly uri: string } | undefined {
    const split = splitUpstreamUri(uri);
    const upstream = split === undefined ? undefined : this.#byName.get(split.name);
    return upstream === undefined ? undefined : { upstream, uri: split!.uri };
  }

  /**
   * Whether `uri` of `upstream` is subscribable: what its upstream answered, waiting for it up to
   * `ackTimeout` (then `failMode`'s answer). The URI is held meanwhile and for the upstream's linger
   * after, so that the subscription that follows a yes finds the upstream stream that said it.
   * @throws UpstreamError when the upstream failed to answer for it, or holds `maxUris` already.
   */
  async #decide(upstream: Upstream, uri: string): Promise<boolean> {
    const need = upstream.hold(uri);
    try {
      if (need.status === 'pending') await firstValueFrom(race(from(need.answered()), timer(this.#ackTimeout, this.#scheduler)));
      switch (need.status) {
        case 'honoured':
          return true;
        case 'refused':
          return false;
        case 'failed':
          throw need.failure;
        case 'pending':
          if (this.#failMode === 'open') return true;
          throw new UpstreamUnavailableError(`upstream ${upstream.name} did not acknowledge ${uri} within ackTimeout (${this.#ackTimeout} ms), and the gateway fails closed`, { upstream: upstream.name });
      }
    } finally {
      upstream.release(need);
    }
  }

  /** Every upstream's URI templates, rewritten; an upstream that fails or is later than `requestTimeout` declares none. */
  async #templates(): Promise<ResourceTemplate[]> {
    const all = await Promise.all(
      this.upstreams.map(async (upstream) => {
        const answer = await this.#bounded(upstream.request('resources/templates/list', {}));
        const templates = Array.isArray(answer?.resourceTemplates) ? answer.resourceTemplates : [];
        return templates
          .filter((entry): entry is ResourceTemplate => typeof entry?.uriTemplate === 'string' && typeof entry.name === 'string')
          .map((entry) => ({ ...entry, uriTemplate: upstreamUri(upstream.name, entry.uriTemplate) }));
      }),
    );
    return all.flat();
  }

  /** `answer`, or `undefined` when it fails or takes longer than `requestTimeout`. */
  #bounded(answer: Promise<Record<string, unknown>>): Promise<Record<string, unknown> | undefined> {
    return this.#within(answer).catch(() => undefined);
  }

  /** `answer`, or an {@link UpstreamError} when it takes longer than `requestTimeout`. */
  #within(answer: Promise<Record<string, unknown>>): Promise<Record<string, unknown>> {
    const late = timer(this.#requestTimeout, this.#scheduler).pipe(
      map((): never => {
        throw new UpstreamError(`an upstream did not answer within requestTimeout (${this.#requestTimeout} ms)`, { upstream: '' });
      }),
    );
    return firstValueFrom(race(from(answer), late));
  }
}

/** What an InvalidOptionError says is expected (the part of its message after "must be"). */
function expected(error: InvalidOptionError): string {
  const start = error.message.indexOf(' must be ') + ' must be '.length;
  const end = error.message.lastIndexOf(', got ');
  return error.message.slice(start, end === -1 ? undefined : end);
}

/** A resource (or contents) entry with its URI rewritten to the gateway's. */
function rewritten(upstream: string, entry: unknown): Record<string, unknown> {
  const record = entry !== null && typeof entry === 'object' ? (entry as Record<string, unknown>) : {};
  return typeof record.uri === 'string' ? { ...record, uri: upstreamUri(upstream, record.uri) } : record;
}

/** The members a 2026-07-28 result has and a legacy one does not. */
const MODERN_RESULT_MEMBERS = ['resultType', 'ttlMs', 'cacheScope'];

/** `result` as the caller's era writes it: complete and cacheable for no time for 2026-07-28, without those members for a legacy session. */
function shaped(result: Record<string, unknown>, context: RequestContext): Record<string, unknown> {
  if (context.session === undefined) return { ttlMs: 0, cacheScope: 'private', ...result, resultType: 'complete' };
  const legacy = { ...result };
  for (const member of MODERN_RESULT_MEMBERS) delete legacy[member];
  return legacy;
}

/** A missing resource in the caller's era: 2026-07-28 `-32602` with `data.uri`, legacy `-32002`. */
function notFound(uri: string, context: RequestContext): JsonRpcError {
  return new JsonRpcError(context.session === undefined ? ErrorCode.InvalidParams : ErrorCode.ResourceNotFound, `resource not found: ${uri}`, { uri });
}

/** An upstream's refusal of a read, as the caller's era says it; a failure to ask it, `-32603`. */
function forwardedError(error: unknown, uri: string, context: RequestContext): JsonRpcError {
  const answered = error instanceof UpstreamError ? error.info.error : undefined;
  if (answered === undefined) return new JsonRpcError(ErrorCode.InternalError, `upstream unavailable: ${uri}`);
  if (answered.code === ErrorCode.ResourceNotFound || answered.code === ErrorCode.InvalidParams) return notFound(uri, context);
  return new JsonRpcError(answered.code, answered.message);
}
