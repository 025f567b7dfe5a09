import type { SchedulerLike } from 'rxjs';
import type { CredentialRecheck } from '../lib/auth.js';
import { Clock, type ClockEntry } from '../lib/clock.js';
import type { CloseReason } from '../lib/frame.js';
import { reportError } from '../lib/telemetry.js';

/** A stream, as a credential check ends it: with its closing frames and the reason. @internal */
export interface Closable {
  close(reason: CloseReason): void;
}

/** What a stream gives back when it ends: its place among its credential's streams. @internal */
export interface HeldCredential {
  release(): void;
}

/**
 * The credentials of open streams that ask to be checked again (`AuthInfo.recheck`: an opaque
 * token asked about by introspection), and the streams each one opened, for both eras and every
 * front: the core holds a stream here when it opens (a listen, a legacy GET stream) and lets go
 * of it when it ends.
 *
 * A credential is one entry on the endpoint's {@link Clock}, whatever number of streams it opened:
 * every `recheck.interval` from its first stream on, `recheck.active()` is asked; `false` ends
 * each of its streams with its closing frames, reason `revoked` (`token_expired` once past its
 * expiry); a rejection is reported on `channels.error` and asked again at the next interval. A
 * credential none of whose streams is open any longer is forgotten (its entry leaves the clock).
 * @internal
 */
export class CredentialChecks {
  readonly #clock: Clock;
  readonly #watched = new Map<CredentialRecheck, WatchedCredential>();

  constructor(scheduler: SchedulerLike) {
    this.#clock = Clock.of(scheduler);
  }

  /** Credentials checked now (for tests and leak checks). */
  get size(): number {
    return this.#watched.size;
  }

  /**
   * Holds `stream`, opened with a credential that asks to be rechecked, until it is released.
   * @param recheck the credential's `AuthInfo.recheck`.
   * @param expiresAt the credential's `AuthInfo.expiresAt` (what tells `token_expired` from `revoked`).
   */
  hold(recheck: CredentialRecheck, expiresAt: number | undefined, stream: Closable): HeldCredential {
    let watched = this.#watched.get(recheck);
    if (watched === undefined) {
      watched = new WatchedCredential(this.#clock, recheck, expiresAt, () => this.#watched.delete(recheck));
      this.#watched.set(recheck, watched);
      this.#clock.add(watched, this.#clock.now() + recheck.interval);
    }
    return watched.hold(stream);
  }
}

/** One credential on the clock, and its open streams. */
class WatchedCredential implements ClockEntry {
  due = 0;
  slot = -1;
  seq = 0;
  readonly #streams = new Set<Closable>();
  #forgotten = false;

  constructor(
    private readonly clock: Clock,
    private readonly recheck: CredentialRecheck,
    private readonly expiresAt: number | undefined,
    private readonly forget: () => void,
  ) {}

  hold(stream: Closable): HeldCredential {
    this.#streams.add(stream);
    return { release: () => this.#release(stream) };
  }

  #release(stream: Closable): void {
    if (!this.#streams.delete(stream) || this.#streams.size > 0) return;
    this.#forgotten = true;
    this.clock.remove(this);
    this.forget();
  }

  /** The interval came: ask. */
  fire(): void {
    let asked: Promise<boolean>;
    try {
      asked = Promise.resolve(this.recheck.active());
    } catch (error) {
      asked = Promise.reject(error);
    }
    asked.then(
      (active) => {
        if (this.#forgotten) return;
        if (active === true) return this.#again();
        const reason: CloseReason = this.expiresAt !== undefined && this.clock.now() >= this.expiresAt ? 'token_expired' : 'revoked';
        // Each close releases its stream (the stream's own teardown), the last one forgets the credential.
        for (const stream of [...this.#streams]) stream.close(reason);
      },
      (error: unknown) => {
        reportError('endpoint', error);
        if (!this.#forgotten) this.#again();
      },
    );
  }

  #again(): void {
    this.clock.add(this, this.clock.now() + this.recheck.interval);
  }
}
