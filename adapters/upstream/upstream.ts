// An upstream MCP server as a source of change notifications: its resources' changes and its list
// changes, shared by every downstream stream that needs them, reconnected by policy, bounded.
import { asyncScheduler, concat, defer, from, map, merge, NEVER, Observable, of, ReplaySubject, type SchedulerLike, share, Subject, type Subscription, switchMap, take, timer } from 'rxjs';
import type { Dispatcher } from 'undici';
import { InvalidOptionError } from '../../lib/errors.js';
import { namesOf, readOptions } from '../../lib/optionTable.js';
import { httpUrl, implementing, object, oneOf, options as validOptions, recordOf, scheduler as validScheduler, string } from '../../lib/validate.js';
import { ChannelPeer } from './channelPeer.js';
import { ChannelConnection, HttpConnection, type UpstreamConnection } from './connection.js';
import { type Driver, type DriverContext, type ListKind, type StreamTracker } from './driver.js';
import { UpstreamError } from './errors.js';
import { LegacyDriver } from './legacy.js';
import { ModernDriver } from './modern.js';
import { Need } from './need.js';
import { UPSTREAM_SETTINGS, type UpstreamEra } from './options.js';
import { reconnect, type ReconnectPolicy, type ResolvedReconnectPolicy, resolveReconnectPolicy } from './reconnect.js';
import { commandWords, type StdioCommand, stdioProcess } from './stdio.js';
import { upstreamChannels, type UpstreamState, type UpstreamStateEvent, type UpstreamStats } from './telemetry.js';
import { upstreamName } from './uri.js';

export type { ListKind } from './driver.js';

export type { UpstreamEra } from './options.js';

/** Options of {@link Upstream}: where it is (`url` or `command`), and how it is spoken to. */
export interface UpstreamOptions {
  /** Its name: a DNS label in lower case (`notes`), what its URIs are namespaced with and its telemetry labelled by. */
  readonly name: string;
  /** Its MCP endpoint over HTTP, e.g. `http://127.0.0.1:4000/mcp`. Give this or `command`. */
  readonly url?: string | URL;
  /**
   * Its command, launched as a child process and spoken to over stdio: a command line (split as
   * {@link commandWords} says, nothing expanded), its words, or a {@link StdioCommand}. Give this or `url`.
   */
  readonly command?: string | readonly string[] | StdioCommand;
  /** Its revision; defaults to `auto` (`server/discover` at the first connection: answered with 2026-07-28, modern; else legacy). */
  readonly era?: UpstreamEra;
  /** Sent as `Authorization: Bearer <token>` over HTTP: the gateway's own credential, never a downstream caller's. */
  readonly token?: string;
  /** Extra HTTP request headers; the protocol's own win over them. */
  readonly headers?: Readonly<Record<string, string>>;
  /** The undici dispatcher for HTTP; defaults to undici's global one. */
  readonly dispatcher?: Dispatcher;
  /** How a failed or ended stream is opened again; see {@link ReconnectPolicy} (defaults: 500 ms doubling to 30 000 ms, half of it random). */
  readonly reconnect?: ReconnectPolicy;
  /**
   * Longest silence on an HTTP stream, in milliseconds, before it counts as dead and is opened again;
   * `0` (the default) waits forever. Set it for an upstream that sends keep-alives (this library's:
   * every 15 000 ms, so 45 000 is safe); an upstream that sends none would be reopened while quiet.
   */
  readonly bodyTimeout?: number;
  /** Largest message taken from the upstream, in bytes (a bigger one fails its stream); defaults to 1 048 576 (1 MiB). */
  readonly maxMessageBytes?: number;
  /** Most resource URIs held at once; one more is refused (`failed to subscribe` downstream); defaults to 10 000. */
  readonly maxUris?: number;
  /**
   * How long a URI (and a stream, or a process) no longer needed is kept, in milliseconds, in case
   * it is needed again (a client reconnecting); `0` releases it at the next turn. Defaults to 1 000.
   */
  readonly linger?: number;
  /** Where reconnect delays and lingers are timed; defaults to `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
}

const OPTION_NAMES: readonly (keyof UpstreamOptions)[] = ['name', 'url', 'command', ...namesOf(UPSTREAM_SETTINGS), 'token', 'headers', 'dispatcher', 'reconnect', 'scheduler'];
const COMMAND_OPTIONS: readonly (keyof StdioCommand)[] = ['command', 'cwd', 'env', 'stderr'];

/**
 * One upstream MCP server as a source of change notifications for a gateway (DESIGN 2.1, "Upstreams
 * as sources"): {@link Upstream.changes} is the changes of one of its resources, {@link
 * Upstream.listChanges} its list changes, whatever revision it speaks and whatever carries it (HTTP,
 * or stdio to a child process).
 *
 * Shared: however many subscribe to one URI's changes, the upstream carries it once (one listen per
 * set of URIs first needed together for a 2026-07-28 upstream, one `resources/subscribe` in one
 * session for a 2025 one), and closes what is no longer needed after `linger`; nothing is opened until
 * something is needed. Reconnected by the `reconnect` policy: a stream that fails or ends is opened
 * again (a legacy one with `Last-Event-ID` on the same session), and after a new listen or a new
 * session each URI honoured before hands on one change, since it may have changed meanwhile.
 * Bounded: at most `maxUris` URIs and `maxMessageBytes` per message; what it hands on goes straight
 * to the subscribers (the downstream streams' own bounded queues), nothing is queued here.
 *
 * Most applications use it through {@link upstreamGateway}, which serves every upstream's resources
 * under `upstream://<name>/…` beside its own.
 *
 * @example
 * const notes = new Upstream({ name: 'notes', url: 'http://127.0.0.1:4000/mcp' });
 * notes.changes('file:///srv/notes/today.md').subscribe(() => console.log('today.md changed'));
 * notes.listChanges().subscribe((list) => console.log(`the ${list} list changed`));
 * @param options see {@link UpstreamOptions}; `name` and one of `url` and `command` are required.
 * @throws InvalidOptionError naming `Upstream options` when `options` is not an object, else the
 *   option that is unknown, missing or unusable (`name` not a DNS label, both or neither of `url`
 *   and `command`, a `reconnect` member out of range…).
 * @see upstreamGateway
 */
export class Upstream {
  /** Its name. */
  readonly name: string;
  readonly #era: UpstreamEra;
  readonly #connection$: Observable<UpstreamConnection>;
  readonly #policy: ResolvedReconnectPolicy;
  readonly #scheduler: SchedulerLike;
  readonly #maxUris: number;
  readonly #linger: number;
  readonly #needs = new Map<string, Need>();
  readonly #lists = new Subject<ListKind>();
  readonly #states = new Subject<UpstreamStateEvent>();
  readonly #trackers = new Set<Tracker>();
  #listHolders = 0;
  #driver: Driver | undefined;
  #detected: 'modern' | 'legacy' | undefined;
  #state: UpstreamState = 'idle';
  #reconnects = 0;
  #framesIn = 0;
  #framesOut = 0;

  constructor(options: UpstreamOptions) {
    const given = validOptions<keyof UpstreamOptions>('Upstream options', options, OPTION_NAMES, { like: "{ name, url } or { name, command }" });
    this.name = upstreamName('name', given.name);
    const { era, bodyTimeout, maxMessageBytes, maxUris, linger } = readOptions(UPSTREAM_SETTINGS, given);
    this.#era = era;
    this.#policy = resolveReconnectPolicy('reconnect', options.reconnect);
    this.#scheduler = given.scheduler === undefined ? asyncScheduler : validScheduler<SchedulerLike>('scheduler', given.scheduler);
    this.#maxUris = maxUris;
    this.#linger = linger;
    if ((given.url === undefined) === (given.command === undefined)) {
      throw new InvalidOptionError('Upstream options', "an object with one of url (an http(s) URL) and command (a command line), e.g. { name: 'notes', url: 'http://127.0.0.1:4000/mcp' }", options);
    }
    if (given.url !== undefined) {
      const headers: Record<string, string> = { ...(given.headers === undefined ? {} : recordOf('headers', given.headers, 'an object of header names and string values', (label, value) => string(label, value))) };
      if (given.token !== undefined) headers.authorization = `Bearer ${string('token', given.token)}`;
      const http = new HttpConnection({
        upstream: this.name,
        url: httpUrl('url', given.url),
        headers,
        dispatcher: given.dispatcher === undefined ? undefined : implementing<Dispatcher>('dispatcher', given.dispatcher, ['dispatch'], 'an undici Dispatcher (an Agent, a Pool, a Client)'),
        bodyTimeout,
        maxMessageBytes,
      });
      // Over HTTP every call is its own exchange: the connection is there, and never fails as such.
      this.#connection$ = concat(of(http), NEVER);
    } else {
      for (const name of ['token', 'headers', 'dispatcher', 'bodyTimeout'] as const) {
        if (given[name] !== undefined) throw new InvalidOptionError(name, 'absent for an upstream launched with command (it applies to url only)', given[name]);
      }
      const command = stdioCommand('command', given.command);
      // One process for every stream, started with the first, stopped `linger` after the last; a
      // process that exits fails them all, and the first to come back starts the next one.
      this.#connection$ = defer(() => stdioProcess(this.name, command, maxMessageBytes)).pipe(
        switchMap((channel) => {
          const peer = new ChannelPeer(this.name, channel);
          return merge(
            of(new ChannelConnection(peer)),
            peer.ended.pipe(
              map((error): never => {
                throw error;
              }),
            ),
          );
        }),
        // Replayed: a stream that comes later gets the running process's connection.
        share({ connector: () => new ReplaySubject<UpstreamConnection>(1), resetOnError: true, resetOnComplete: true, resetOnRefCountZero: () => timer(this.#linger, this.#scheduler) }),
      );
    }
  }

  /** Its state now (see {@link UpstreamState}). */
  get state(): UpstreamState {
    return this.#state;
  }

  /** Each change of its state, as {@link upstreamChannels}.state publishes it. */
  get states(): Observable<UpstreamStateEvent> {
    return this.#states.asObservable();
  }

  /** Its counts now. */
  get stats(): UpstreamStats {
    return {
      upstream: this.name,
      state: this.#state,
      era: this.#era !== 'auto' ? this.#era : (this.#detected ?? 'unknown'),
      reconnects: this.#reconnects,
      framesIn: this.#framesIn,
      framesOut: this.#framesOut,
      uris: this.#needs.size,
      streams: this.#trackers.size,
    };
  }

  /**
   * The changes of the upstream's resource `uri` (its own URI, not the gateway's), one value per
   * `notifications/resources/updated` it sends for it (and one after a new upstream stream honours
   * it again). Subscribing holds the URI; the last unsubscribe lets it go after `linger`. It never
   * errors: a failed upstream stream is opened again by policy.
   * @throws UpstreamError (as the Observable's error) when `maxUris` URIs are held already or the upstream is closed.
   */
  changes(uri: string): Observable<void> {
    return new Observable<void>((subscriber) => {
      const need = this.hold(uri);
      const subscription = need.updates.subscribe(subscriber);
      return () => {
        subscription.unsubscribe();
        this.release(need);
      };
    });
  }

  /** The upstream's list changes (`tools`, `prompts`, `resources`): its list stream is open while this is subscribed. */
  listChanges(): Observable<ListKind> {
    return new Observable<ListKind>((subscriber) => {
      const subscription = this.#lists.subscribe(subscriber);
      if (this.#listHolders++ === 0) this.#driverNow().lists(true);
      return () => {
        subscription.unsubscribe();
        if (--this.#listHolders === 0) this.#driver?.lists(false);
      };
    });
  }

  /**
   * Sends a request to the upstream in its revision (a 2026-07-28 request with its `_meta`
   * envelope, or one in the gateway's legacy session) and resolves with its result.
   * @example
   * const { contents } = await notes.request('resources/read', { uri: 'file:///srv/notes/today.md' });
   * @throws UpstreamError (as a rejection) for a JSON-RPC error (`info.error`), an HTTP refusal (`info.status`) or a failed connection.
   */
  request(method: string, params: Readonly<Record<string, unknown>> = {}): Promise<Record<string, unknown>> {
    if (this.#state === 'closed') return Promise.reject(this.#closedError());
    return this.#driverNow().request(method, params);
  }

  /**
   * Holds `uri` for one more holder: what `changes(uri)` does as it is subscribed, and what a decision
   * waiting for the upstream's answer does meanwhile.
   * @throws UpstreamError when `maxUris` URIs are held already or the upstream is closed.
   * @internal
   */
  hold(uri: string): Need {
    if (this.#state === 'closed') throw this.#closedError();
    let need = this.#needs.get(uri);
    if (need === undefined) {
      if (this.#needs.size >= this.#maxUris) {
        throw new UpstreamError(`upstream ${this.name} holds ${this.#maxUris} resource URIs already (maxUris); raise maxUris to hold more`, { upstream: this.name });
      }
      need = new Need(uri);
      this.#needs.set(uri, need);
      this.#driverNow().add(need);
    }
    need.refs++;
    need.linger?.unsubscribe();
    need.linger = undefined;
    return need;
  }

  /** One holder fewer; the last one lets the URI go after `linger`. @internal */
  release(need: Need): void {
    if (--need.refs > 0 || need.dropped) return;
    need.linger = this.#scheduler.schedule(() => this.#drop(need), this.#linger);
  }

  /** Closes every stream (and the process) and refuses what is asked later. Idempotent. */
  close(): void {
    if (this.#state === 'closed') return;
    this.#driver?.close();
    this.#driver = undefined;
    for (const need of this.#needs.values()) {
      need.dropped = true;
      need.linger?.unsubscribe();
      need.updates.complete();
    }
    this.#needs.clear();
    this.#trackers.clear();
    this.#setState('closed', undefined, undefined);
    this.#lists.complete();
    this.#states.complete();
  }

  #closedError(): UpstreamError {
    return new UpstreamError(`upstream ${this.name} is closed`, { upstream: this.name });
  }

  #drop(need: Need): void {
    need.linger = undefined;
    if (need.refs > 0 || need.dropped) return;
    need.dropped = true;
    this.#needs.delete(need.uri);
    this.#driver?.drop(need);
    need.updates.complete();
  }

  /** The driver, made at the first need: the era's, or one that asks which era first. */
  #driverNow(): Driver {
    if (this.#driver !== undefined) return this.#driver;
    const ctx = this.#context();
    const make = (era: 'modern' | 'legacy'): Driver => (era === 'modern' ? new ModernDriver(ctx) : new LegacyDriver(ctx));
    this.#driver =
      this.#era === 'auto'
        ? new DetectingDriver(ctx, (era) => {
            this.#detected = era;
            return make(era);
          })
        : make(this.#era);
    return this.#driver;
  }

  #context(): DriverContext {
    return {
      name: this.name,
      connection$: this.#connection$,
      policy: this.#policy,
      scheduler: this.#scheduler,
      random: Math.random,
      needs: this.#needs,
      track: () => {
        const tracker = new Tracker(this);
        this.#trackers.add(tracker);
        this.changed(tracker);
        return tracker;
      },
      received: () => void this.#framesIn++,
      updated: (need) => {
        this.#framesOut++;
        need.updates.next();
      },
      listChanged: (kind) => {
        this.#framesOut++;
        this.#lists.next(kind);
      },
    };
  }

  /** A stream's state changed: the upstream's is recomputed, and published when it differs. @internal */
  changed(tracker: Tracker, error?: unknown, retryIn?: number): void {
    if (this.#state === 'closed') return;
    if (tracker.state === 'closed') this.#trackers.delete(tracker);
    if (tracker.state === 'retrying') this.#reconnects++;
    let state: UpstreamState = this.#trackers.size === 0 ? 'idle' : 'open';
    for (const each of this.#trackers) {
      if (each.state === 'retrying') state = 'retrying';
      else if (each.state === 'connecting' && state !== 'retrying') state = 'connecting';
    }
    if (state !== this.#state || tracker.state === 'retrying') this.#setState(state, error, retryIn);
  }

  #setState(state: UpstreamState, error: unknown, retryIn: number | undefined): void {
    const previous = this.#state;
    this.#state = state;
    const event: UpstreamStateEvent = state === 'retrying' ? { upstream: this.name, state, previous, error, retryIn } : { upstream: this.name, state, previous };
    if (upstreamChannels.state.hasSubscribers) upstreamChannels.state.publish(event);
    this.#states.next(event);
  }
}

/** One upstream stream's state, reported to its upstream. */
class Tracker implements StreamTracker {
  state: 'connecting' | 'open' | 'retrying' | 'closed' = 'connecting';

  constructor(private readonly upstream: Upstream) {}

  connecting(): void {
    this.#set('connecting');
  }

  open(): void {
    this.#set('open');
  }

  retrying(error: unknown, delay: number): void {
    if (this.state === 'closed') return;
    this.state = 'retrying';
    this.upstream.changed(this, error, delay);
  }

  closed(): void {
    this.#set('closed');
  }

  #set(state: Tracker['state']): void {
    if (this.state === state || this.state === 'closed') return;
    this.state = state;
    this.upstream.changed(this);
  }
}

/**
 * The driver of an `auto` upstream until it knows its era: asks `server/discover` (by the reconnect
 * policy until it is answered), then hands what is held to the era's driver.
 */
class DetectingDriver implements Driver {
  #real: Driver | undefined;
  #detection: Subscription | undefined;
  #lists = false;
  readonly #ready = new Subject<Driver>();

  constructor(
    private readonly ctx: DriverContext,
    private readonly make: (era: 'modern' | 'legacy') => Driver,
  ) {}

  add(need: Need): void {
    if (this.#real !== undefined) this.#real.add(need);
    else this.#detect();
  }

  drop(need: Need): void {
    this.#real?.drop(need);
  }

  lists(held: boolean): void {
    this.#lists = held;
    if (this.#real !== undefined) this.#real.lists(held);
    else if (held) this.#detect();
  }

  request(method: string, params: Readonly<Record<string, unknown>>): Promise<Record<string, unknown>> {
    if (this.#real !== undefined) return this.#real.request(method, params);
    const ready = new Promise<Driver>((resolve, reject) => this.#ready.pipe(take(1)).subscribe({ next: resolve, error: reject, complete: () => reject(new UpstreamError(`upstream ${this.ctx.name} is closed`, { upstream: this.ctx.name })) }));
    this.#detect();
    return ready.then((driver) => driver.request(method, params));
  }

  close(): void {
    this.#detection?.unsubscribe();
    this.#real?.close();
    this.#ready.complete();
  }

  #detect(): void {
    if (this.#detection !== undefined) return;
    const { ctx } = this;
    const tracker = ctx.track();
    this.#detection = defer(() => {
      tracker.connecting();
      return ctx.connection$;
    })
      .pipe(
        switchMap((connection) => from(connection.discover())),
        take(1),
        reconnect(ctx.policy, { scheduler: ctx.scheduler, random: ctx.random, onRetry: (error, _attempt, delay) => tracker.retrying(error, delay) }),
      )
      .subscribe((discovered) => {
        const real = (this.#real = this.make(discovered === undefined ? 'legacy' : 'modern'));
        for (const need of ctx.needs.values()) real.add(need);
        if (this.#lists) real.lists(true);
        // After the era's streams took their place, so that the upstream is never idle in between.
        tracker.closed();
        this.#ready.next(real);
      });
  }
}

/** `value` as a {@link StdioCommand}: a command line, its words, or the object. */
function stdioCommand(label: string, value: unknown): StdioCommand {
  if (typeof value === 'string') return { command: commandWords(value, label) };
  if (Array.isArray(value)) {
    if (value.length === 0 || !value.every((word) => typeof word === 'string' && word !== '')) throw new InvalidOptionError(label, 'a non-empty array of non-empty strings (a program and its arguments)', value);
    return { command: value as string[] };
  }
  const given = validOptions<keyof StdioCommand>(label, object(label, value, "a command line, its words, or { command: ['node', 'server.js'] }"), COMMAND_OPTIONS, { keyLabel: `${label}.` });
  const command = stdioCommand(`${label}.command`, given.command);
  if (given.cwd !== undefined) string(`${label}.cwd`, given.cwd, { nonEmpty: true });
  if (given.env !== undefined) recordOf(`${label}.env`, given.env, 'an object of variable names and string values', (entry, v) => string(entry, v));
  if (given.stderr !== undefined) oneOf(`${label}.stderr`, given.stderr, ['inherit', 'ignore']);
  return { ...(value as StdioCommand), command: command.command };
}

