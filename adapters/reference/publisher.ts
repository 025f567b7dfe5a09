// Publishing the served folder's changes on the hub: by this process alone, or, in a fleet or on
// a machine of workers, by the one holder of the folder's watch lease, which records what it
// published so that the next holder announces what changed while nobody held it.
import { combineLatest, concatMap, distinctUntilChanged, EMPTY, ignoreElements, map, type Observable, of, retry, type Subscription, switchMap, tap } from 'rxjs';
import type { Hub, HubEvent } from '../../lib/hub.js';
import { reportError } from '../../lib/telemetry.js';
import type { ClusterWorker } from '../cluster/worker.js';
import type { Catalog } from './catalog.js';
import type { FileChange, FileResources, FolderState, SettledBatch } from './files.js';

/**
 * Where the publishers of a folder keep what they published, for the next one: the watch lease's
 * handover state (a `RedisLease`'s hash beside the lease key, or a machine's `ClusterLease`).
 */
export interface PublishedState {
  /** The state the publishers before this one recorded; `undefined` when none did. */
  state(): PromiseLike<FolderState | undefined>;
  /** Records entries as published (`null`: gone). */
  saveState(entries: Iterable<readonly [string, string | null]>): void;
}

/** A node of a fleet as the publisher sees it (the reference server's `Fleet`). */
export interface PublishingFleet {
  readonly lease: PublishedState & { readonly held$: Observable<boolean> };
  readonly sessionBus: { readonly connected$: Observable<boolean> };
  /** Whether this node publishes the folder's changes now: it holds the watch lease, or held it when Redis went away and Redis is not back. */
  readonly publishes: boolean;
}

/** Milliseconds before a publisher reads the recorded state again, when Redis did not answer. */
const STATE_RETRY = 500;

const NOTHING_RECORDED: PublishedState = { state: () => Promise.resolve(undefined), saveState: () => undefined };

/**
 * Publishes the changes of `files` on `hub` for as long as the subscription lives, as the reference
 * server does in each of its shapes:
 * - alone: every change, at once;
 * - a node of a fleet (`fleet`): it watches the folder (so that it knows which files exist and may
 *   be subscribed to) and publishes while it holds the watch lease (`fleet.publishes`);
 * - a worker of a machine (`worker`): it watches the folder and publishes while it holds the
 *   machine's watch lease; otherwise it rescans the folder when the holder says its list changed.
 *
 * Each time a node or worker starts publishing, it first announces what differs between the state
 * the publishers before it recorded (the lease's handover state) and the folder as it is, as one
 * batch (`FileResources.publishable`), then the changes as they settle; after each batch it records
 * the new state of what the batch settled. So a change made while the lease had no holder (the
 * holder killed, paused, cut off) is announced once a holder has it, and one the old holder
 * published just before it died may be announced twice, never not at all. The first batch also
 * re-reads `tools.json` and `prompts.json` (the {@link Catalog} compares each later change with
 * them), and announces their `list_changed` when the file differs from the record.
 *
 * @param where `fleet` or `worker` (not both: a worker's machine reaches the fleet through its primary).
 */
export function publishFolder(files: FileResources, hub: Hub, catalog: Catalog, where: { fleet?: PublishingFleet | undefined; worker?: ClusterWorker | undefined }): Subscription {
  const { fleet, worker } = where;
  if (worker !== undefined) {
    const lease = worker.lease(`watch:${files.root}`);
    return publishWhile(files, hub, catalog, lease.held$, lease, listRescans(files, hub));
  }
  if (fleet === undefined) return publishWhile(files, hub, catalog, of(true), NOTHING_RECORDED, EMPTY);
  // Every node watches; the publisher's batches come from the same watch.
  const watching = files.changes().subscribe();
  const publishes$ = combineLatest([fleet.lease.held$, fleet.sessionBus.connected$]).pipe(map(() => fleet.publishes));
  watching.add(publishWhile(files, hub, catalog, publishes$, fleet.lease, EMPTY));
  return watching;
}

/** Publishes while `publishes$` says so, catching up at the start of each period; `idle` runs in between. */
function publishWhile(
  files: FileResources,
  hub: Hub,
  catalog: Catalog,
  publishes$: Observable<boolean>,
  record: PublishedState,
  idle: Observable<never>,
): Subscription {
  let period = 0;
  let publishing = false;
  // Each batch is recorded once what it stands for is published, in batch order.
  let recorded = Promise.resolve();
  const subscription: Subscription = publishes$
    .pipe(
      distinctUntilChanged(),
      tap((publishes) => {
        period++;
        publishing = publishes;
      }),
      switchMap((publishes) => (publishes ? files.publishable(() => record.state()).pipe(retry({ delay: STATE_RETRY })) : idle)),
    )
    .subscribe((batch) => {
      const mine = period;
      const announced = publishBatch(hub, catalog, batch, () => publishing && period === mine && !subscription.closed);
      recorded = recorded.then(() => announced).then(() => record.saveState(batch.state), (error: unknown) => reportError('source', error));
    });
  return subscription;
}

/** Publishes what `batch` stands for; resolves once its `list_changed` of tools and prompts, if any, is decided. */
function publishBatch(hub: Hub, catalog: Catalog, batch: SettledBatch, publishing: () => boolean): Promise<unknown> {
  for (const change of batch.changes) {
    if (change.kind === 'updated' || change.kind === 'listChanged') for (const event of hubEvents(change)) notify(hub, event);
  }
  const decided: Promise<void>[] = [];
  for (const topic of ['tools', 'prompts'] as const) {
    const changed = batch.changes.some((change) => change.kind === topic);
    if (!changed && !batch.catchUp) continue;
    // A list change only when what is listed changed (a rewrite of the same definitions is none);
    // caught up, the file differs from the one last published: better a needless list_changed
    // than a missed one.
    decided.push(
      catalog.listChanged(topic).then((differs) => {
        if (changed && (differs || batch.catchUp) && publishing()) notify(hub, { topic });
      }),
    );
  }
  return Promise.all(decided);
}

/** A worker that does not watch keeps its list of files in step: it rescans when the watcher says the list changed. */
function listRescans(files: FileResources, hub: Hub): Observable<never> {
  // Rescanned one after the other (a burst of list changes is one rescan each, in order).
  return hub.topic({ topic: 'resources' }).pipe(
    concatMap(() =>
      files.rescan().catch((error: unknown) => {
        reportError('source', error);
      }),
    ),
    ignoreElements(),
  );
}

/**
 * The hub events a change of the folder's files stands for, in publishing order (a change of
 * `tools.json` or `prompts.json` is the {@link Catalog}'s to judge).
 *
 * A change under `private/` carries scope `private` on every event, the public collection URIs
 * (`DIR/`) and `resources/list_changed` included: those are published, not dropped, so that a
 * principal with the scope who watches `DIR/` hears every member's change (DESIGN L5), while
 * one without it hears nothing at all of activity it may not read (issue 11).
 */
function hubEvents(change: Extract<FileChange, { kind: 'updated' | 'listChanged' }>): HubEvent[] {
  const scoped = change.scope === undefined ? {} : { scope: change.scope };
  const uris = change.uris.map((uri): HubEvent => ({ topic: 'resource', uri, ...scoped }));
  return change.kind === 'updated' ? uris : [{ topic: 'resources', ...scoped }, ...uris];
}

/** Publishes `event` on the hub (with its read scope): to this node's streams and, with a bus, to the fleet's. */
function notify(hub: Hub, event: HubEvent): void {
  const options = event.scope === undefined ? undefined : { scope: event.scope };
  switch (event.topic) {
    case 'tools':
      return hub.notifyToolsChanged(options);
    case 'prompts':
      return hub.notifyPromptsChanged(options);
    case 'resources':
      return hub.notifyResourcesChanged(options);
    case 'resource':
      return hub.notifyResourceUpdated(event.uri, options);
    case 'task':
      return hub.notifyTask(event.task, options);
  }
}
