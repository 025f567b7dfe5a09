import { createLocalJWKSet, errors as joseErrors, type FlattenedJWSInput, type JWSHeaderParameters, type JWTVerifyGetKey } from 'jose';
import type { SchedulerLike } from 'rxjs';
import { AuthUnavailableError } from '../../lib/auth.js';
import { FetchFailure, fetchJson } from './fetchJson.js';

/** How a {@link RemoteKeys} set fetches and keeps an authorization server's keys. @internal */
export interface RemoteKeysOptions {
  /** Where the JWKS is: its URL, or a lookup (the issuer's metadata) that gives it. */
  readonly jwksUri: () => Promise<string>;
  /** Milliseconds one fetch may take. */
  readonly timeout: number;
  /** Milliseconds after a fetch (answered or not) before a token with an unknown `kid` may cause another. */
  readonly cooldown: number;
  /** Milliseconds after which keys are fetched again before use (kept when the fetch fails). */
  readonly maxAge: number;
  /** When to tell a client to try again while no keys can be had, in milliseconds. */
  readonly retryAfter: number;
  readonly scheduler: SchedulerLike;
}

/**
 * The signing keys of an authorization server, fetched from its JWKS and kept: what `jwtVerify`
 * asks for each token's key. jose picks the key (`kid`; the key's own `alg` when it has one, else
 * its type's algorithms; never a symmetric one), this class decides when to fetch:
 * - a token whose `kid` is unknown refetches, at most once per `cooldown` (a flood of made-up
 *   `kid`s costs one fetch per cooldown, not one per request);
 * - keys older than `maxAge` are refetched before use; if that fails, the keys held go on being used
 *   (an authorization server that is down does not stop tokens it already signed);
 * - every fetch gives up after `timeout`, and concurrent requests share one fetch.
 * Unlike jose's `createRemoteJWKSet`, a failed fetch counts for the cooldown as well, and stale keys
 * survive a failed refresh. @internal
 */
export class RemoteKeys {
  /** Fetches made (answered or not), for tests and diagnostics. */
  fetches = 0;
  readonly #options: RemoteKeysOptions;
  #keys: ReturnType<typeof createLocalJWKSet> | undefined;
  /** When keys were last fetched successfully (scheduler time); −∞ before. */
  #fetchedAt = Number.NEGATIVE_INFINITY;
  /** When a fetch last started. */
  #triedAt = Number.NEGATIVE_INFINITY;
  #pending: Promise<void> | undefined;
  /** Why the last fetch failed; `undefined` when it was answered. */
  #failure: string | undefined;

  constructor(options: RemoteKeysOptions) {
    this.#options = options;
  }

  /** The `getKey` of `jwtVerify`. */
  readonly getKey: JWTVerifyGetKey = async (header: JWSHeaderParameters, token: FlattenedJWSInput) => {
    const now = this.#options.scheduler.now();
    if (this.#keys === undefined || now - this.#fetchedAt >= this.#options.maxAge) await this.#refresh(now);
    const keys = this.#keys;
    if (keys === undefined) throw new AuthUnavailableError(`the authorization server's signing keys could not be fetched (${this.#failure})`, this.#options.retryAfter);
    try {
      return await keys(header, token);
    } catch (error) {
      if (!(error instanceof joseErrors.JWKSNoMatchingKey)) throw error;
      let missing: unknown = error;
      if (this.#mayFetch(now)) {
        // A key it does not hold yet: rotated in since the last fetch, or made up.
        await this.#refresh(now);
        try {
          return await this.#keys!(header, token);
        } catch (again) {
          missing = again;
        }
      }
      // Not among the keys held while the server cannot be asked: it may be a new one, so 503, not 401.
      if (missing instanceof joseErrors.JWKSNoMatchingKey && this.#failure !== undefined) {
        throw new AuthUnavailableError(`the token's key is not among those held, and the authorization server's keys could not be fetched again (${this.#failure})`, this.#options.retryAfter);
      }
      throw missing;
    }
  };

  /** A fetch is allowed: none for `cooldown` since the last one started. */
  #mayFetch(now: number): boolean {
    return now - this.#triedAt >= this.#options.cooldown;
  }

  /** Fetches the keys, unless one is under way (then waits for it) or the cooldown forbids (then keeps what is held). */
  async #refresh(now: number): Promise<void> {
    if (this.#pending === undefined) {
      if (!this.#mayFetch(now)) return;
      this.#triedAt = now;
      this.#pending = this.#fetch().finally(() => (this.#pending = undefined));
    }
    await this.#pending;
  }

  async #fetch(): Promise<void> {
    this.fetches++;
    try {
      const jwks = await fetchJson(await this.#options.jwksUri(), this.#options.timeout);
      this.#keys = createLocalJWKSet(jwks as never);
      this.#fetchedAt = this.#options.scheduler.now();
      this.#failure = undefined;
    } catch (error) {
      // Kept keys go on serving; without any, or for a key not among them, the caller answers 503 with the reason.
      this.#failure = error instanceof FetchFailure || error instanceof Error ? error.message : String(error);
    }
  }
}
