import { from, type Subscription } from 'rxjs';
import type { RequestContext } from '../lib/context.js';
import type { Hub } from '../lib/hub.js';
import { changesHub, type ResourceProvider } from '../lib/resources.js';
import { reportError } from '../lib/telemetry.js';

/**
 * One provider's changes of one URI, subscribed while some listen of this node names the URI.
 * @internal
 */
export class Feed {
  refs = 0;
  subscription: Subscription | undefined;
  /** Set while this feed hands a change to the hub: a source that is the hub's own topic must not hear itself. */
  delivering = false;
  ended = false;

  constructor(
    readonly provider: ResourceProvider,
    readonly uri: string,
  ) {}
}

/**
 * What one listen holds of the shared feeds; given back once, whichever way the listen ends
 * (closed, cut, never opened).
 * @internal
 */
export class FeedLease {
  #feeds: Feed[] | undefined;

  constructor(
    private readonly owner: ProviderFeeds,
    feeds: Feed[],
  ) {
    this.#feeds = feeds;
  }

  /** Gives back every feed of the lease. Idempotent. */
  release(): void {
    const feeds = this.#feeds;
    if (feeds === undefined) return;
    this.#feeds = undefined;
    for (const feed of feeds) this.owner.release(feed);
  }
}

/**
 * Brings resource providers' changes to modern listen streams, which hear only the hub: while at
 * least one listen of this node names a URI that a provider serves, that provider's
 * `changes(uri)` is subscribed once (10 000 listens on one URI: one subscription) and each value
 * is delivered to the hub's topic of the URI on this node only (`hub.deliver`, never relayed by a
 * bus: every node subscribes its own providers for its own listens, as it does for its legacy
 * sessions). The subscription ends with the last listen that named the URI.
 *
 * A provider made by `hubResources` on this hub needs none of this: its changes are the hub's
 * topics already. A value that carries a hub scope (a scoped `hub.topic` frame) is delivered with
 * that scope, so that only principals holding it hear it.
 * @internal
 */
export class ProviderFeeds {
  readonly #hub: Hub;
  readonly #feeds = new Map<ResourceProvider, Map<string, Feed>>();
  #closed = false;

  constructor(hub: Hub) {
    this.#hub = hub;
  }

  /** Providers' change sources subscribed now (for leak checks). */
  get size(): number {
    let size = 0;
    for (const byUri of this.#feeds.values()) size += byUri.size;
    return size;
  }

  /** True when `provider`'s changes reach a listen without a feed (they are this hub's topics). */
  isHub(provider: ResourceProvider): boolean {
    return changesHub(provider) === this.#hub;
  }

  /**
   * Holds `provider`'s changes of `uri` for one more listen, subscribing them (with `context`)
   * when no listen of this node holds them yet.
   * @throws what the provider throws, or what its source errors with as it is subscribed.
   */
  acquire(provider: ResourceProvider, uri: string, context: RequestContext): Feed {
    let byUri = this.#feeds.get(provider);
    let feed = byUri?.get(uri);
    if (feed === undefined) {
      feed = this.#subscribe(provider, uri, context);
      if (byUri === undefined) this.#feeds.set(provider, (byUri = new Map()));
      if (!feed.ended) byUri.set(uri, feed);
    }
    feed.refs++;
    return feed;
  }

  /** A lease over `feeds`, to give them back together. */
  lease(feeds: Feed[]): FeedLease {
    return new FeedLease(this, feeds);
  }

  /** One listen fewer on `feed`: the last one unsubscribes its source. */
  release(feed: Feed): void {
    if (--feed.refs > 0) return;
    this.#forget(feed);
    feed.subscription?.unsubscribe();
  }

  /** Unsubscribes every source (the endpoint closed). Later acquisitions are not kept. */
  close(): void {
    this.#closed = true;
    for (const byUri of this.#feeds.values()) for (const feed of byUri.values()) feed.subscription?.unsubscribe();
    this.#feeds.clear();
  }

  #subscribe(provider: ResourceProvider, uri: string, context: RequestContext): Feed {
    const feed = new Feed(provider, uri);
    const hub = this.#hub;
    let subscribing = true;
    let failure: { readonly error: unknown } | undefined;
    // A value emitted as the source is subscribed is the current state, before the listen's
    // acknowledgment: not a change to announce (omitCurrent).
    feed.subscription = from(provider.changes(uri, context)).subscribe({
      next: (value: unknown) => {
        if (subscribing || feed.delivering || feed.ended) return;
        feed.delivering = true;
        try {
          const scope = scopeOf(value);
          hub.deliver(scope === undefined ? { topic: 'resource', uri } : { topic: 'resource', uri, scope });
        } finally {
          feed.delivering = false;
        }
      },
      error: (error: unknown) => {
        if (subscribing) failure = { error };
        else reportError('source', error);
        this.#end(feed);
      },
      complete: () => this.#end(feed),
    });
    subscribing = false;
    if (failure !== undefined) throw failure.error;
    if (this.#closed) {
      // Only a listen racing the endpoint's close gets here; it is closed at once.
      feed.subscription.unsubscribe();
      feed.ended = true;
    }
    return feed;
  }

  /** A source that completed or failed: the next listen that names the URI subscribes it again. */
  #end(feed: Feed): void {
    feed.ended = true;
    this.#forget(feed);
  }

  #forget(feed: Feed): void {
    const byUri = this.#feeds.get(feed.provider);
    if (byUri?.get(feed.uri) !== feed) return;
    byUri.delete(feed.uri);
    if (byUri.size === 0) this.#feeds.delete(feed.provider);
  }
}

/** The hub scope a provider's value carries (a scoped hub frame), if any. */
function scopeOf(value: unknown): string | undefined {
  const scope = (value as { scope?: unknown } | null)?.scope;
  return (value as { type?: unknown } | null)?.type === 'message' && typeof scope === 'string' && scope !== '' ? scope : undefined;
}
