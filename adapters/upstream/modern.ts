// A 2026-07-28 upstream: `subscriptions/listen` streams, each carrying the URIs first held together.
import { defer, firstValueFrom, from, type Subscription, switchMap } from 'rxjs';
import type { JsonRpcMessage, JsonRpcNotification } from '../../lib/jsonrpc.js';
import { type Driver, type DriverContext, endedAsError, LIST_METHODS, type StreamTracker } from './driver.js';
import type { Need } from './need.js';
import { reconnect } from './reconnect.js';

/** What the list-changed stream asks for: every list (an upstream acknowledges those it has). */
const LIST_FILTER = Object.freeze({ toolsListChanged: true, promptsListChanged: true, resourcesListChanged: true });

/**
 * The streams of a 2026-07-28 upstream. A listen's filter is fixed when it opens, so URIs held
 * together (within one turn: the URIs of one downstream listen, decided at once) open one upstream
 * listen, and a URI is carried by that listen as long as it is held: a thousand downstream streams
 * naming it hold one upstream stream, and a URI newly held never reopens the streams of the others.
 * A listen whose URIs are all dropped is closed; one that fails or ends is opened again by the
 * reconnect policy with the URIs it still carries. The list changes have a listen of their own,
 * held while they are wanted.
 * @internal
 */
export class ModernDriver implements Driver {
  readonly #groups = new Set<ListenGroup>();
  #batch: Need[] = [];
  #flush: Subscription | undefined;
  #lists: ListenGroup | undefined;

  constructor(private readonly ctx: DriverContext) {}

  add(need: Need): void {
    this.#batch.push(need);
    this.#flush ??= this.ctx.scheduler.schedule(() => this.#open());
  }

  drop(need: Need): void {
    const group = need.carrier as ListenGroup | undefined;
    if (group === undefined) return;
    need.carrier = undefined;
    group.uris.delete(need.uri);
    if (group.uris.size > 0) return;
    group.close();
    this.#groups.delete(group);
  }

  lists(held: boolean): void {
    if (held && this.#lists === undefined) {
      this.#lists = new ListenGroup(this.ctx, LIST_FILTER);
      this.#lists.start();
    } else if (!held && this.#lists !== undefined) {
      this.#lists.close();
      this.#lists = undefined;
    }
  }

  request(method: string, params: Readonly<Record<string, unknown>>): Promise<Record<string, unknown>> {
    // The connection is held until the answer (a stdio process is not closed under it).
    return firstValueFrom(this.ctx.connection$.pipe(switchMap((connection) => from(connection.request(method, params)))));
  }

  close(): void {
    this.#flush?.unsubscribe();
    this.#flush = undefined;
    this.#batch = [];
    for (const group of this.#groups) group.close();
    this.#groups.clear();
    this.lists(false);
  }

  /** The URIs held since the last flush open one listen. */
  #open(): void {
    this.#flush = undefined;
    const needs = this.#batch.filter((need) => !need.dropped);
    this.#batch = [];
    if (needs.length === 0) return;
    const group = new ListenGroup(this.ctx, undefined);
    for (const need of needs) {
      need.carrier = group;
      group.uris.set(need.uri, need);
    }
    this.#groups.add(group);
    group.start();
  }
}

/** One upstream listen: the URIs it carries (or the list filter), opened again by policy until closed. */
class ListenGroup {
  readonly uris = new Map<string, Need>();
  readonly #tracker: StreamTracker;
  #subscription: Subscription | undefined;

  constructor(
    private readonly ctx: DriverContext,
    private readonly lists: Readonly<Record<string, boolean>> | undefined,
  ) {
    this.#tracker = ctx.track();
  }

  start(): void {
    const { ctx } = this;
    const tracker = this.#tracker;
    this.#subscription = defer(() => {
      tracker.connecting();
      return ctx.connection$;
    })
      .pipe(
        // Each attempt asks for the URIs still carried.
        switchMap((connection) => connection.listen(this.lists ?? { resourceSubscriptions: [...this.uris.keys()] }).pipe(endedAsError(ctx, 'listen stream'))),
        reconnect(ctx.policy, { scheduler: ctx.scheduler, random: ctx.random, onRetry: (error, _attempt, delay) => tracker.retrying(error, delay) }),
      )
      .subscribe((message) => this.#receive(message));
  }

  close(): void {
    this.#subscription?.unsubscribe();
    this.#subscription = undefined;
    this.#tracker.closed();
  }

  #receive(message: JsonRpcMessage): void {
    this.ctx.received();
    const method = (message as JsonRpcNotification).method;
    if (method === undefined) return;
    const params = (message as JsonRpcNotification).params;
    if (method === 'notifications/subscriptions/acknowledged') {
      this.#tracker.open();
      const honoured = (params?.notifications as { resourceSubscriptions?: unknown } | undefined)?.resourceSubscriptions;
      const uris = new Set(Array.isArray(honoured) ? honoured : []);
      for (const need of [...this.uris.values()]) need.answer(uris.has(need.uri) ? 'honoured' : 'refused');
      return;
    }
    if (method === 'notifications/resources/updated') {
      const need = typeof params?.uri === 'string' ? this.uris.get(params.uri) : undefined;
      if (need !== undefined && need.status === 'honoured') this.ctx.updated(need);
      return;
    }
    const list = LIST_METHODS[method];
    if (list !== undefined) this.ctx.listChanged(list);
  }
}
