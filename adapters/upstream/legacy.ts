// A 2025-era upstream: one session, its notification stream (the GET SSE stream over HTTP, the
// channel itself over stdio), `resources/subscribe` per URI held.
import { defer, firstValueFrom, from, map, type Subscription, switchMap, tap } from 'rxjs';
import { ErrorCode, type JsonRpcNotification } from '../../lib/jsonrpc.js';
import type { LegacySession, UpstreamConnection } from './connection.js';
import { type Driver, type DriverContext, endedAsError, LIST_METHODS, type StreamTracker } from './driver.js';
import { UpstreamError } from './errors.js';
import type { Incoming } from './http.js';
import type { Need } from './need.js';
import { reconnect } from './reconnect.js';

/** Subscribes sent at once, at most (as a legacy server restores a session's subscriptions, DESIGN L8). */
const SUBSCRIBE_CONCURRENCY = 8;

/** True for the answer of an upstream that no longer knows the session (MCP: 404 to a request carrying an unknown `Mcp-Session-Id`). */
function sessionGone(error: unknown): boolean {
  return error instanceof UpstreamError && error.info.status === 404;
}

/**
 * The streams of a 2025-era upstream: one session (`initialize`), whose notification stream is open
 * while anything is held (a legacy session has one stream for all its subscriptions and list
 * changes), and one `resources/subscribe` per URI held, `resources/unsubscribe` when it is dropped.
 * A stream cut off is opened again by the reconnect policy on the same session with `Last-Event-ID`:
 * what the upstream replays is all there is to hear, nothing is added. A session the upstream no
 * longer knows (404), or a new connection (a stdio process started again), is a new session: every
 * URI is subscribed again, and one honoured before hands on one change (it may have changed meanwhile).
 * @internal
 */
export class LegacyDriver implements Driver {
  /** The session, once `initialize` is under way on `#sessionConnection`. */
  #sessionPromise: Promise<LegacySession> | undefined;
  #session: LegacySession | undefined;
  #sessionConnection: UpstreamConnection | undefined;
  /** The session the notification stream was last open on: its event ids and subscriptions are the ones kept. */
  #streamSession: LegacySession | undefined;
  /** Where subscribes go: the open stream's connection and session. */
  #live: { readonly connection: UpstreamConnection; readonly session: LegacySession } | undefined;
  #stream: Subscription | undefined;
  #tracker: StreamTracker | undefined;
  #lastEventId: string | undefined;
  /** Needs subscribed (or being subscribed) in `#streamSession`. */
  readonly #subscribed = new Set<Need>();
  #queue: Need[] = [];
  #inFlight = 0;
  #listsHeld = false;

  constructor(private readonly ctx: DriverContext) {}

  add(need: Need): void {
    this.#ensure();
    if (this.#live !== undefined) this.#enqueue(need);
  }

  drop(need: Need): void {
    const live = this.#live;
    if (this.#subscribed.delete(need) && live !== undefined && need.status === 'honoured') {
      live.connection.request('resources/unsubscribe', { uri: need.uri }, live.session).catch(noop);
    }
    if (this.ctx.needs.size === 0 && !this.#listsHeld) this.#stop();
  }

  lists(held: boolean): void {
    this.#listsHeld = held;
    if (held) this.#ensure();
    else if (this.ctx.needs.size === 0) this.#stop();
  }

  request(method: string, params: Readonly<Record<string, unknown>>): Promise<Record<string, unknown>> {
    return firstValueFrom(this.ctx.connection$.pipe(switchMap((connection) => from(this.#request(connection, method, params)))));
  }

  close(): void {
    this.#stop();
  }

  async #request(connection: UpstreamConnection, method: string, params: Readonly<Record<string, unknown>>): Promise<Record<string, unknown>> {
    const session = await this.#sessionFor(connection);
    try {
      return await connection.request(method, params, session);
    } catch (error) {
      if (!sessionGone(error)) throw error;
      this.#forget(session);
      return connection.request(method, params, await this.#sessionFor(connection));
    }
  }

  /** The session on `connection`: the one there is, or a new one (`initialize`). */
  #sessionFor(connection: UpstreamConnection): Promise<LegacySession> {
    if (this.#sessionConnection !== connection || this.#sessionPromise === undefined) {
      this.#sessionConnection = connection;
      this.#session = undefined;
      const promise = connection.initialize();
      this.#sessionPromise = promise;
      promise.then(
        (session) => {
          if (this.#sessionPromise === promise) this.#session = session;
        },
        () => {
          if (this.#sessionPromise === promise) this.#sessionPromise = undefined;
        },
      );
    }
    return this.#sessionPromise;
  }

  #forget(session: LegacySession): void {
    if (this.#session !== session) return;
    this.#session = undefined;
    this.#sessionPromise = undefined;
  }

  /** Opens the notification stream, unless it is open. */
  #ensure(): void {
    if (this.#stream !== undefined) return;
    const { ctx } = this;
    const tracker = (this.#tracker = ctx.track());
    this.#stream = defer(() => {
      tracker.connecting();
      this.#live = undefined;
      return ctx.connection$;
    })
      .pipe(
        switchMap((connection) => {
          let session: LegacySession | undefined;
          return from(this.#sessionFor(connection)).pipe(
            switchMap((s) => {
              session = s;
              const resume = s === this.#streamSession ? this.#lastEventId : undefined;
              return connection.sessionStream(s, resume).pipe(map((incoming) => ({ connection, session: s, incoming })));
            }),
            endedAsError(ctx, 'session stream'),
            tap({ error: (error: unknown) => void (session !== undefined && sessionGone(error) && this.#forget(session)) }),
          );
        }),
        reconnect(ctx.policy, { scheduler: ctx.scheduler, random: ctx.random, onRetry: (error, _attempt, delay) => tracker.retrying(error, delay) }),
      )
      .subscribe(({ connection, session, incoming }) => this.#receive(connection, session, incoming));
  }

  #stop(): void {
    this.#stream?.unsubscribe();
    this.#stream = undefined;
    this.#tracker?.closed();
    this.#tracker = undefined;
    this.#live = undefined;
    this.#queue = [];
    this.#subscribed.clear();
    this.#streamSession = undefined;
    this.#lastEventId = undefined;
    const session = this.#session;
    if (session !== undefined) {
      this.#sessionConnection?.endSession(session);
      this.#forget(session);
    }
  }

  #receive(connection: UpstreamConnection, session: LegacySession, incoming: Incoming): void {
    if (incoming.kind === 'open') {
      this.#tracker?.open();
      if (session !== this.#streamSession) {
        // A new session: nothing of the last one's subscriptions or event ids holds.
        this.#streamSession = session;
        this.#subscribed.clear();
        this.#queue = [];
        this.#lastEventId = undefined;
      }
      this.#live = { connection, session };
      for (const need of this.ctx.needs.values()) this.#enqueue(need);
      return;
    }
    if (incoming.eventId !== undefined) this.#lastEventId = incoming.eventId;
    const message = incoming.message as JsonRpcNotification | undefined;
    if (message?.method === undefined) return;
    this.ctx.received();
    if (message.method === 'notifications/resources/updated') {
      const uri = message.params?.uri;
      const need = typeof uri === 'string' ? this.ctx.needs.get(uri) : undefined;
      if (need !== undefined && need.status === 'honoured') this.ctx.updated(need);
      return;
    }
    const list = LIST_METHODS[message.method];
    if (list !== undefined) this.ctx.listChanged(list);
  }

  #enqueue(need: Need): void {
    if (this.#subscribed.has(need)) return;
    this.#subscribed.add(need);
    this.#queue.push(need);
    this.#pump();
  }

  #pump(): void {
    while (this.#inFlight < SUBSCRIBE_CONCURRENCY && this.#queue.length > 0) {
      const need = this.#queue.shift()!;
      const live = this.#live;
      if (need.dropped || !this.#subscribed.has(need)) continue;
      if (live === undefined) {
        this.#subscribed.delete(need);
        continue;
      }
      this.#inFlight++;
      live.connection
        .request('resources/subscribe', { uri: need.uri }, live.session)
        .then(
          () => {
            if (this.#live?.session === live.session && this.#subscribed.has(need)) need.answer('honoured');
          },
          (error: unknown) => this.#refused(need, live.session, error),
        )
        .finally(() => {
          this.#inFlight--;
          this.#pump();
        });
    }
  }

  /** A subscribe answered with an error: refused (`-32602` not subscribable or permission denied, `-32601`), failed, or the session is gone. */
  #refused(need: Need, session: LegacySession, error: unknown): void {
    if (this.#live?.session !== session || !this.#subscribed.has(need)) return;
    if (sessionGone(error)) {
      // Open the stream again on a new session: its subscribes follow.
      this.#forget(session);
      this.#stream?.unsubscribe();
      this.#stream = undefined;
      this.#tracker?.closed();
      this.#live = undefined;
      this.#ensure();
      return;
    }
    const code = error instanceof UpstreamError ? error.info.error?.code : undefined;
    // Not subscribable, not readable, or no subscriptions at all: the upstream's answer, not a failure.
    if (code === ErrorCode.InvalidParams || code === ErrorCode.MethodNotFound) return need.answer('refused');
    this.#subscribed.delete(need);
    need.answer('failed', error instanceof UpstreamError ? error : new UpstreamError(`upstream ${this.ctx.name} failed to subscribe ${need.uri}`, { upstream: this.ctx.name }, { cause: error }));
  }
}

function noop(): void {}
