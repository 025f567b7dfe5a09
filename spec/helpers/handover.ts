// What the handover specs (issue 31: spec/cluster/handover.spec.ts, spec/redis/handover.spec.ts)
// share: a session store whose answers a test can hold back, a session bus that hears claims late,
// a publisher of changes that keeps going while nodes stop, and the checks on what a reconnecting
// raw client read.
import { strict as assert } from 'node:assert';
import type { SessionBus, SessionChanges, SessionCommand, SessionStore } from '../../lib/session.js';
import { deferred, type Deferred, type GetStream, sleep } from './legacy.js';

/** `promise`, whose rejection is not unhandled when a test fails before awaiting it (a request left open). */
export function quiet<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => undefined);
  return promise;
}

/** `inner` with some of its members replaced; the others bound to it (private fields work). */
export function overriding<T extends object>(inner: T, overrides: Partial<T>): T {
  return new Proxy(inner, {
    get(target, key) {
      if (Object.prototype.hasOwnProperty.call(overrides, key)) return (overrides as Record<PropertyKey, unknown>)[key];
      const value = Reflect.get(target, key, target) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** A request to a store held back by a test: `reached` once it got there, `release()` lets it go on. */
export interface Held {
  readonly reached: Promise<void>;
  release(): void;
}

/**
 * `inner` whose next matching `get` reads the record and then waits for `release()` before it
 * answers (`holdGet(n)`: the n-th `get` from now), and whose next `update` that sets `streamNode`
 * (a GET's claim) waits for `release()` before it is made (`holdClaim()`).
 */
export function gatedStore(inner: SessionStore): { readonly store: SessionStore; holdGet(n?: number): Held; holdClaim(): Held } {
  let gets: { left: number; reached: Deferred<void>; released: Deferred<void> } | undefined;
  let claim: { reached: Deferred<void>; released: Deferred<void> } | undefined;
  const store = overriding(inner, {
    get: async (id: string) => {
      const gate = gets !== undefined && --gets.left === 0 ? gets : undefined;
      if (gate !== undefined) gets = undefined;
      const record = await inner.get(id);
      if (gate !== undefined) {
        gate.reached.resolve();
        await gate.released.promise;
      }
      return record;
    },
    update: async (id: string, changes: SessionChanges) => {
      const gate = typeof changes.streamNode === 'string' ? claim : undefined;
      if (gate !== undefined) {
        claim = undefined;
        gate.reached.resolve();
        await gate.released.promise;
      }
      await inner.update(id, changes);
    },
  });
  const held = (gate: { reached: Deferred<void>; released: Deferred<void> }): Held => ({ reached: gate.reached.promise, release: () => gate.released.resolve() });
  return {
    store,
    holdGet: (n = 1) => {
      gets = { left: n, reached: deferred(), released: deferred() };
      return held(gets);
    },
    holdClaim: () => held((claim = { reached: deferred(), released: deferred() })),
  };
}

/** `inner` whose node hears other nodes' `claimed` commands `ms` late (a slow relay between machines). */
export function lateClaims(inner: SessionBus, ms: number): SessionBus {
  return overriding(inner, {
    connect: (deliver: (sessionId: string, command: SessionCommand) => void) =>
      inner.connect((sessionId, command) => {
        if (command.kind === 'claimed') setTimeout(() => deliver(sessionId, command), ms);
        else deliver(sessionId, command);
      }),
  });
}

/**
 * Changes of `uris`, one every `every` ms, in turn (u0, u1, u2, u0, …), published by `publish`
 * (which may change, as nodes stop) until `stop()`: what a folder whose files keep changing looks
 * like to the sessions subscribed to them.
 */
export class Changes {
  readonly published: string[] = [];
  #stopped = false;
  readonly #done: Promise<void>;

  constructor(
    readonly uris: readonly string[],
    public publish: (uri: string) => void,
    every = 20,
  ) {
    this.#done = (async () => {
      for (let i = 0; !this.#stopped; i++) {
        const uri = uris[i % uris.length]!;
        this.publish(uri);
        this.published.push(uri);
        await sleep(every);
      }
    })();
  }

  /** Stops publishing; resolves once the last one is out. */
  stop(): Promise<void> {
    this.#stopped = true;
    return this.#done;
  }
}

/** The GET stream has opened: its priming event arrived (with an id or, from a log that cannot tell its newest id, `retry:` alone). */
export const opened = (stream: GetStream): boolean => stream.text.includes('retry: ');

/** The URIs of a stream's `resources/updated` frames and the methods of the others, in order. */
export function heard(stream: GetStream): string[] {
  return stream.frames.map(({ message }) => (message.method === 'notifications/resources/updated' ? message.params.uri : message.method));
}

/** `list` with each run of equal neighbours kept once (a change logged by two nodes during a handover is heard twice in a row). */
export function collapsed(list: readonly string[]): string[] {
  return list.filter((item, i) => i === 0 || list[i - 1] !== item);
}

/** The ids of `stream`'s frames are `from`, `from + 1`, … with none missing and none repeated. */
export function assertConsecutive(stream: GetStream, from: number, what: string): void {
  const ids = stream.ids;
  assert.ok(ids.length > 0, `${what}: no frames`);
  assert.deepEqual(ids, ids.map((_, i) => from + i), `${what}: ids ${ids.join(' ')}`);
}

/** One line of figures for the run's output: frames the reconnected stream got, their ids, the changes made meanwhile, the ones heard twice. */
export function report(what: string, stream: GetStream, published: number, extra: Record<string, unknown> = {}): void {
  const ids = stream.ids;
  const got = heard(stream);
  const figures = { frames: ids.length, ids: ids.length === 0 ? [] : [ids[0], ids.at(-1)], changesAfterLastSeen: published, heardTwiceInARow: got.length - collapsed(got).length, ...extra };
  process.stdout.write(`\n  ${what}: ${JSON.stringify(figures)}\n`);
}

/** What a re-read of a session subscribed to `uris` on an endpoint advertising tools, prompts and resources sends. */
export function rereadOf(uris: readonly string[]): string[] {
  return [...uris, 'notifications/tools/list_changed', 'notifications/prompts/list_changed', 'notifications/resources/list_changed'];
}
