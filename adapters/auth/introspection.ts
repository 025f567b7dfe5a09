import { createHash } from 'node:crypto';
import { AuthError, type AuthInfo, AuthUnavailableError, type CredentialRecheck } from '../../lib/auth.js';
import type { EndpointRequest } from '../../lib/context.js';
import { secureUrl } from '../../lib/protectedResource.js';
import { oneOf, options as validOptions, positiveInteger, string } from '../../lib/validate.js';
import { bearerToken } from './bearerToken.js';
import { DEFAULT_FETCH_TIMEOUT, issuerUrl } from './discovery.js';
import { FetchFailure, fetchJson } from './fetchJson.js';
import { authenticator, type Authenticator, authInfoOf, type Claims, duration, namesAudience, RESOURCE_SERVER_OPTIONS, resourceServer, type ResourceServer, type ResourceServerOptions } from './resourceServer.js';

/** Options of {@link introspectionAuthenticator}. */
export interface IntrospectionAuthenticatorOptions extends ResourceServerOptions {
  /** The authorization server's issuer identifier: named in the metadata, and the `iss` an answer must carry when it carries one. */
  readonly issuer: string;
  /** Its introspection endpoint (RFC 7662 §2; `introspection_endpoint` in its metadata). */
  readonly introspectionUrl: string;
  /** This resource server's client id at the authorization server. */
  readonly clientId: string;
  /** Its client secret. */
  readonly clientSecret: string;
  /** How the client authenticates: `client_secret_basic` (HTTP Basic, the default) or `client_secret_post` (in the form). */
  readonly clientAuthentication?: 'client_secret_basic' | 'client_secret_post';
  /** Milliseconds an answer is kept for its token (never past the token's `exp`); defaults to 60 000. */
  readonly cacheMaxAge?: number;
  /** Most tokens whose answers are kept; the oldest goes first; defaults to 10 000. */
  readonly cacheSize?: number;
  /** Milliseconds between two checks of a token while a stream it opened is open (a revoked token's streams end at the next one); defaults to 60 000. */
  readonly recheckInterval?: number;
  /** Milliseconds the authorization server gets to answer; defaults to 1 000. */
  readonly fetchTimeout?: number;
}

const KNOWN: readonly (keyof IntrospectionAuthenticatorOptions)[] = [
  ...RESOURCE_SERVER_OPTIONS, 'issuer', 'introspectionUrl', 'clientId', 'clientSecret', 'clientAuthentication', 'cacheMaxAge', 'cacheSize', 'recheckInterval', 'fetchTimeout',
];

/** What the cache keeps of a token: the authorization server's verdict and until when it holds. */
interface Verdict {
  /** The claims of an active token, or why it is refused. */
  readonly claims: Claims | AuthError;
  /** Until when (scheduler time) the verdict is used without asking again. */
  readonly until: number;
  /** The streams of the token ask through this one object (see `CredentialRecheck`). */
  readonly recheck: CredentialRecheck;
}

/**
 * An `authenticate` hook for opaque access tokens: each is asked about at the authorization
 * server's introspection endpoint (RFC 7662), and the answer kept until the token expires or for
 * `cacheMaxAge`, whichever is sooner.
 *
 * A token is accepted when the answer says `active: true`, names this resource in `aud`, carries
 * `iss` = `issuer` (when it carries `iss`), an `exp` not past and an `nbf` not ahead, and every
 * `requiredScopes`; the caller is then `sub:<sub>` (`client:<client_id>` without `sub`) with the
 * token's scopes until its `exp`. A stream the token opened is checked again every
 * `recheckInterval` on the endpoint's clock: once the authorization server says the token is no
 * longer active (revoked), the stream ends with its closing frames (`revoked`), in both eras and on
 * every transport. Refusals are answered as {@link jwtAuthenticator}'s are; an authorization server
 * that does not answer within `fetchTimeout` gets the client a 503 with a retry time (a token it
 * answered for already goes on being accepted from the cache).
 *
 * @example
 * import { introspectionAuthenticator } from 'mcp-rx-streams/auth';
 * const authenticate = introspectionAuthenticator({
 *   issuer: 'https://auth.example.com',
 *   introspectionUrl: 'https://auth.example.com/oauth2/introspect',
 *   clientId: 'mcp-server',
 *   clientSecret: process.env.INTROSPECTION_SECRET!,
 *   resource: 'https://mcp.example.com/mcp',
 * });
 * @param options see {@link IntrospectionAuthenticatorOptions}.
 * @returns the hook, with its `protectedResource`.
 * @throws InvalidOptionError naming the option that cannot be used.
 * @see jwtAuthenticator
 */
export function introspectionAuthenticator(options: IntrospectionAuthenticatorOptions): Authenticator {
  const given = validOptions('introspectionAuthenticator options', options, KNOWN, {
    like: "{ issuer, introspectionUrl, clientId, clientSecret, resource: 'https://mcp.example.com/mcp' }",
  });
  const issuer = issuerUrl('issuer', given.issuer);
  const server = resourceServer('introspectionAuthenticator options', options, [issuer]);
  const client = {
    url: secureUrl('introspectionUrl', given.introspectionUrl).href,
    id: string('clientId', given.clientId, { nonEmpty: true }),
    secret: string('clientSecret', given.clientSecret, { nonEmpty: true }),
    post: (given.clientAuthentication === undefined ? 'client_secret_basic' : oneOf('clientAuthentication', given.clientAuthentication, ['client_secret_basic', 'client_secret_post'])) === 'client_secret_post',
    timeout: duration('fetchTimeout', given.fetchTimeout, DEFAULT_FETCH_TIMEOUT),
  };
  const cache = new Verdicts(
    server,
    issuer,
    client,
    duration('cacheMaxAge', given.cacheMaxAge, 60_000),
    given.cacheSize === undefined ? 10_000 : positiveInteger('cacheSize', given.cacheSize, 'tokens'),
    duration('recheckInterval', given.recheckInterval, 60_000),
  );
  const authenticate = async (request: EndpointRequest): Promise<AuthInfo> => {
    const verdict = await cache.verdict(bearerToken(request, server.requiredScopes));
    if (verdict.claims instanceof AuthError) throw verdict.claims;
    return authInfoOf(verdict.claims, server, verdict.recheck);
  };
  return authenticator(authenticate, server.protectedResource);
}

/** How the resource server calls the introspection endpoint. */
interface IntrospectionClient {
  readonly url: string;
  readonly id: string;
  readonly secret: string;
  readonly post: boolean;
  readonly timeout: number;
}

/**
 * The authorization server's answers, kept per token (by its SHA-256: the cache holds no token)
 * in insertion order, the oldest dropped past `size`; requests for one token while it is being
 * asked about share the question.
 */
class Verdicts {
  readonly #kept = new Map<string, Verdict>();
  readonly #asking = new Map<string, Promise<Verdict>>();

  constructor(
    private readonly server: ResourceServer,
    private readonly issuer: string,
    private readonly client: IntrospectionClient,
    private readonly maxAge: number,
    private readonly size: number,
    private readonly recheckInterval: number,
  ) {}

  /** The verdict on `token`: kept, being asked, or asked now. */
  verdict(token: string): Promise<Verdict> {
    const key = createHash('sha256').update(token).digest('base64url');
    const kept = this.#kept.get(key);
    if (kept !== undefined && this.server.scheduler.now() < kept.until) return Promise.resolve(kept);
    return this.#ask(key, token, kept?.recheck);
  }

  #ask(key: string, token: string, recheck: CredentialRecheck | undefined): Promise<Verdict> {
    let asking = this.#asking.get(key);
    if (asking === undefined) {
      asking = this.#introspect(key, token, recheck).finally(() => this.#asking.delete(key));
      this.#asking.set(key, asking);
    }
    return asking;
  }

  async #introspect(key: string, token: string, recheck: CredentialRecheck | undefined): Promise<Verdict> {
    const { url, id, secret, post, timeout } = this.client;
    const form = new URLSearchParams({ token, token_type_hint: 'access_token', ...(post ? { client_id: id, client_secret: secret } : {}) });
    let answer: Record<string, unknown>;
    try {
      answer = await fetchJson(url, timeout, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          // RFC 6749 §2.3.1: the id and secret are form-urlencoded before they are joined.
          ...(post ? {} : { authorization: `Basic ${Buffer.from(`${formEncode(id)}:${formEncode(secret)}`).toString('base64')}` }),
        },
        body: form.toString(),
      });
    } catch (error) {
      if (error instanceof FetchFailure) throw new AuthUnavailableError(`the token could not be introspected: ${error.message}`);
      throw error;
    }
    const now = this.server.scheduler.now();
    const claims = this.#judge(answer, now);
    const exp = typeof answer.exp === 'number' && Number.isFinite(answer.exp) ? answer.exp * 1000 : Number.POSITIVE_INFINITY;
    // One recheck per token for as long as its answers are kept: its streams are checked together.
    const own: CredentialRecheck = recheck ?? { interval: this.recheckInterval, active: () => this.#recheck(key, token, own) };
    const verdict: Verdict = { claims, until: claims instanceof AuthError ? now + this.maxAge : Math.min(now + this.maxAge, exp), recheck: own };
    this.#keep(key, verdict);
    return verdict;
  }

  /**
   * Whether the token is still active, asked now whatever is kept (the streams' periodic check);
   * the answer replaces the kept one, so that a revoked token's next request is refused at once.
   * Rejects when the authorization server does not answer (the kept answer stays).
   */
  async #recheck(key: string, token: string, recheck: CredentialRecheck): Promise<boolean> {
    const verdict = await this.#ask(key, token, recheck);
    return !(verdict.claims instanceof AuthError);
  }

  #keep(key: string, verdict: Verdict): void {
    this.#kept.delete(key);
    if (this.#kept.size >= this.size) this.#kept.delete(this.#kept.keys().next().value!);
    this.#kept.set(key, verdict);
  }

  /** The claims of an answer that accepts the token, or the AuthError that refuses it (RFC 7662 §2.2). */
  #judge(answer: Record<string, unknown>, now: number): Claims | AuthError {
    const invalid = (message: string) => new AuthError(message, { error: 'invalid_token' });
    if (answer.active !== true) return invalid('the token is not active (expired, revoked, or unknown to the authorization server)');
    if (answer.iss !== undefined && answer.iss !== this.issuer) return invalid('the token was issued by another authorization server');
    // MCP authorization: the server MUST check that the token was issued for it; an answer that does not say refuses the token.
    if (!namesAudience(answer.aud, this.server.audiences)) return invalid('the token was issued for another resource (its aud does not name this server)');
    const tolerance = this.server.clockTolerance;
    if (typeof answer.exp === 'number' && answer.exp * 1000 + tolerance <= now) return invalid('the token has expired');
    if (typeof answer.nbf === 'number' && answer.nbf * 1000 - tolerance > now) return invalid('the token is not valid yet (nbf)');
    return answer;
  }
}

/** `application/x-www-form-urlencoded` encoding of one value (RFC 6749 Appendix B). */
function formEncode(value: string): string {
  return new URLSearchParams({ v: value }).toString().slice(2);
}
