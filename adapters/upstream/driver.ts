// What an era's driver is given by its upstream, and what it offers it.
import { concat, type MonoTypeOperatorFunction, type Observable, type SchedulerLike, throwError } from 'rxjs';
import type { UpstreamConnection } from './connection.js';
import { UpstreamError } from './errors.js';
import type { Need } from './need.js';
import type { ResolvedReconnectPolicy } from './reconnect.js';

/** A list whose changes an upstream announces. @internal */
export type ListKind = 'tools' | 'prompts' | 'resources';

/** The list-changed notification of each list. @internal */
export const LIST_METHODS: Readonly<Record<string, ListKind>> = Object.freeze({
  'notifications/tools/list_changed': 'tools',
  'notifications/prompts/list_changed': 'prompts',
  'notifications/resources/list_changed': 'resources',
});

/** One upstream stream's state, as its driver reports it. @internal */
export interface StreamTracker {
  /** An attempt starts (the first, or one after a failure). */
  connecting(): void;
  /** The upstream answered the stream (a listen's acknowledgment, a legacy stream opening). */
  open(): void;
  /** The stream failed or ended; the next attempt comes after `delay` ms. */
  retrying(error: unknown, delay: number): void;
  /** The stream is no longer needed and was closed. */
  closed(): void;
}

/** What an upstream gives its driver. @internal */
export interface DriverContext {
  readonly name: string;
  /** The upstream's connection, shared: subscribed while a stream needs it, erroring when it dies. */
  readonly connection$: Observable<UpstreamConnection>;
  readonly policy: ResolvedReconnectPolicy;
  readonly scheduler: SchedulerLike;
  readonly random: () => number;
  /** Every URI held now, by URI. */
  readonly needs: ReadonlyMap<string, Need>;
  /** A new stream's tracker (its state counts in the upstream's). */
  track(): StreamTracker;
  /** An upstream message arrived (telemetry). */
  received(): void;
  /** A change of a held URI: handed on to its holders. */
  updated(need: Need): void;
  /** A list changed upstream. */
  listChanged(kind: ListKind): void;
}

/** The era-specific part of an upstream: how held URIs and list changes become upstream streams. @internal */
export interface Driver {
  /** A URI is newly held. */
  add(need: Need): void;
  /** A URI is no longer held (after its linger). */
  drop(need: Need): void;
  /** Whether the upstream's list changes are wanted. */
  lists(held: boolean): void;
  /** A request in this era (a legacy one in the driver's session). */
  request(method: string, params: Readonly<Record<string, unknown>>): Promise<Record<string, unknown>>;
  /** Closes every stream. */
  close(): void;
}

/**
 * Turns the completion of an upstream stream (the upstream closed it: its lifetime cap, a restart)
 * into an error, so that the reconnect policy opens it again. @internal
 */
export function endedAsError<T>(ctx: DriverContext, what: string): MonoTypeOperatorFunction<T> {
  return (source) => concat(source, throwError(() => new UpstreamError(`upstream ${ctx.name} ended its ${what}`, { upstream: ctx.name })));
}
