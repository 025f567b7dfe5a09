import { type HubBus, HubBusTargets, type HubEvent } from '../../lib/hub.js';
import type { WorkerLink } from './link.js';

/** Counters of a {@link ClusterBus} since it was created. */
export interface ClusterBusStats {
  /** Local events handed to the primary for the other workers. */
  readonly relayed: number;
  /** Events from other workers (or, through the primary's fleet bus, other machines) delivered here. */
  readonly received: number;
  /** Local task events that could not be serialized: they reached this worker's streams only. */
  readonly unrelayed: number;
  /** Times the primary told this worker's streams to re-read (its fleet bus found a gap). */
  readonly resyncs: number;
}

/**
 * The {@link HubBus} of a cluster worker: a `notify*` on any worker reaches the matching streams of
 * every worker once, in order per topic.
 *
 * The hub serves this worker's streams first, then `publish` hands the event to the primary (one
 * IPC message per microtask for all the events of a synchronous run), which relays it to every
 * other worker in the order it received them, never back to this one. An IPC channel is a pipe:
 * nothing on it is lost, duplicated or reordered while both ends live, so there is nothing to
 * deduplicate and no gap to detect between the workers of a machine. A worker that dies takes its
 * streams with it; the one that replaces it starts with none, so it has nothing to catch up on.
 * Beyond the machine (the primary on a `RedisBus`), a gap the fleet bus finds makes every worker
 * resync its streams (`Hub.resync`).
 * @internal
 */
export class ClusterBus implements HubBus {
  readonly #link: WorkerLink;
  readonly #hubs = new HubBusTargets();
  #stats = { relayed: 0, received: 0, unrelayed: 0, resyncs: 0 };

  constructor(link: WorkerLink) {
    this.#link = link;
    link.on('hub', ({ e }) => {
      this.#stats.received++;
      this.#hubs.deliver(e);
    });
    link.on('resync', () => {
      this.#stats.resyncs++;
      this.#hubs.resync();
    });
  }

  /** A snapshot of the counters; see {@link ClusterBusStats}. */
  get stats(): ClusterBusStats {
    return { ...this.#stats };
  }

  /** Relays an event this worker's hub has already delivered locally; never waits, never throws. */
  publish(event: HubEvent): void {
    // A task status is the publisher's object: one that JSON cannot carry (a cycle, a BigInt) would
    // fail the whole batch it travels in. Every other event is strings only.
    if (event.topic === 'task' && !serializable(event)) {
      this.#stats.unrelayed++;
      return;
    }
    this.#stats.relayed++;
    this.#link.send({ k: 'hub', e: event });
  }

  /** Starts handing other workers' events to `deliver`, and resyncs to `resync`; returns the function that stops it. */
  connect(deliver: (event: HubEvent) => void, resync?: () => void): () => void {
    return this.#hubs.connect(deliver, resync);
  }
}

function serializable(event: HubEvent): boolean {
  try {
    JSON.stringify(event);
    return true;
  } catch {
    return false;
  }
}
