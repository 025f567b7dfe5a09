// jwtAuthenticator against a real authorization server (oidc-provider on 127.0.0.1, see
// spec/helpers/authServer.ts): its JWT access tokens for a resource indicator are accepted, found
// through its metadata; tokens for another audience, from another issuer, expired, not yet valid,
// without exp, `alg: none`, HS256 signed with the public key, badly signed or not JWTs at all are
// refused as invalid_token; a flood of made-up `kid`s costs at most one key fetch per cooldown;
// rotated keys are picked up; with the server hanging or refusing connections, kept keys go on
// working and nothing waits more than about a second. Time (token times, cooldowns, key ages) is
// the authenticator's `scheduler`, moved by hand.
import { strict as assert } from 'node:assert';
import { createPublicKey } from 'node:crypto';
import { asyncScheduler, type SchedulerLike } from 'rxjs';
import { generateKeyPair, SignJWT } from 'jose';
import { test } from 'uvu';
import { jwtAuthenticator, type JwtAuthenticatorOptions } from '../../adapters/auth/index.js';
import { AuthError, type AuthInfo, AuthUnavailableError } from '../../lib/auth.js';
import type { EndpointRequest } from '../../lib/context.js';
import { LISTEN_HEADERS, post, withEndpoint } from '../helpers/http.js';
import { type AuthServer, startAuthServer } from '../helpers/authServer.js';

const RESOURCE = 'http://127.0.0.1:8931/mcp';

/** A scheduler whose time the test moves (`now()` only is read by the authenticator). */
function manualClock(): SchedulerLike & { advance(ms: number): void } {
  let offset = 0;
  return {
    now: () => Date.now() + offset,
    schedule: asyncScheduler.schedule.bind(asyncScheduler) as SchedulerLike['schedule'],
    advance: (ms: number) => void (offset += ms),
  };
}

const request = (token: string | undefined): EndpointRequest => ({
  method: 'POST',
  header: (name) => (name === 'authorization' && token !== undefined ? `Bearer ${token}` : undefined),
  remoteAddress: '127.0.0.1',
  body: undefined,
});

/** The AuthError (or other error) a call refuses with. */
async function refusal(call: Promise<AuthInfo>): Promise<unknown> {
  return call.then(
    (info) => assert.fail(`accepted as ${info.principal}`),
    (error: unknown) => error,
  );
}

async function refusedAsInvalid(call: Promise<AuthInfo>, message: RegExp): Promise<void> {
  const error = await refusal(call);
  assert.ok(error instanceof AuthError, String(error));
  assert.equal(error.bearer?.error, 'invalid_token');
  assert.match(error.message, message);
}

let as: AuthServer;
let other: AuthServer;

test.before(async () => {
  as = await startAuthServer();
  other = await startAuthServer();
});

test.after(async () => {
  await as.close();
  await other.close();
});

function authenticator(options: Partial<JwtAuthenticatorOptions> = {}) {
  const clock = manualClock();
  const authenticate = jwtAuthenticator({ issuer: as.issuer, resource: RESOURCE, scheduler: clock, ...options });
  return { clock, authenticate };
}

test('a token of the authorization server for this resource: principal sub:<sub>, its scopes, its exp; keys found through the metadata, fetched once', async () => {
  const before = { metadata: as.requests('/.well-known/oauth-authorization-server'), jwks: as.requests('/jwks') };
  const { authenticate } = authenticator();
  const token = await as.token({ resource: RESOURCE, scope: 'mcp private' });
  const info = await authenticate(request(token));
  assert.equal(info.principal, 'sub:app');
  assert.deepEqual([...info.scopes].sort(), ['mcp', 'private']);
  const exp = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).exp as number;
  assert.equal(info.expiresAt, exp * 1000);
  assert.equal(info.recheck, undefined);
  for (let i = 0; i < 5; i++) await authenticate(request(await as.token({ resource: RESOURCE })));
  assert.equal(as.requests('/.well-known/oauth-authorization-server') - before.metadata, 1);
  assert.equal(as.requests('/jwks') - before.jwks, 1);
  assert.deepEqual(authenticate.protectedResource, { resource: RESOURCE, authorizationServers: [as.issuer] });
});

test('refused as invalid_token: another audience, another issuer, expired, not yet valid, no exp, alg none, HS256 with the public key, a bad signature, not a JWT', async () => {
  const { authenticate, clock } = authenticator();
  const now = Math.floor(clock.now() / 1000);
  const claims = { sub: 'app', scope: 'mcp', iss: as.issuer, aud: RESOURCE, iat: now, exp: now + 300 };
  // The server's own key and a good token, so that each refusal below is for the one thing changed.
  assert.equal((await authenticate(request(await as.sign(claims)))).principal, 'sub:app');
  await refusedAsInvalid(authenticate(request(await as.token({ resource: 'http://127.0.0.1:8931/other' }))), /issued for another resource/);
  await refusedAsInvalid(authenticate(request(await as.sign({ ...claims, aud: ['https://a.example', 'https://b.example'] }))), /issued for another resource/);
  await refusedAsInvalid(authenticate(request(await as.sign({ ...claims, iss: other.issuer }))), /issued by another authorization server/);
  // Another server's own token: signed with a key this server does not publish.
  await refusedAsInvalid(authenticate(request(await other.token({ resource: RESOURCE }))), /key the authorization server does not publish/);
  await refusedAsInvalid(authenticate(request(await as.sign({ ...claims, exp: now - 60 }))), /has expired/);
  // Within the clock tolerance (5 s by default): accepted.
  assert.equal((await authenticate(request(await as.sign({ ...claims, exp: now - 2 })))).principal, 'sub:app');
  await refusedAsInvalid(authenticate(request(await as.sign({ ...claims, nbf: now + 60 }))), /not valid yet/);
  const { exp: _exp, ...noExp } = claims;
  await refusedAsInvalid(authenticate(request(await as.sign(noExp))), /no exp claim/);
  const unsecured = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt' })).toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.`;
  await refusedAsInvalid(authenticate(request(unsecured)), /algorithm this server does not accept/);
  // The classic confusion: the public key (as PEM and as its JWK's modulus) used as an HMAC secret.
  const publicPem = createPublicKey({ key: as.signingKey as never, format: 'jwk' }).export({ type: 'spki', format: 'pem' }) as string;
  for (const secret of [publicPem, as.signingKey.n!]) {
    const confused = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'at+jwt', kid: as.signingKey.kid! }).sign(new TextEncoder().encode(secret));
    await refusedAsInvalid(authenticate(request(confused)), /algorithm this server does not accept/);
  }
  const good = await as.sign(claims);
  const tampered = `${good.slice(0, good.lastIndexOf('.') + 1)}${good.slice(good.lastIndexOf('.') + 1).split('').reverse().join('')}`;
  await refusedAsInvalid(authenticate(request(tampered)), /signature is invalid|not a valid signed JWT/);
  await refusedAsInvalid(authenticate(request('not-a-jwt')), /not a valid signed JWT/);
  // No token at all: no error code, the scope the request needs.
  const none = await refusal(authenticator({ requiredScopes: ['mcp'] }).authenticate(request(undefined)));
  assert.ok(none instanceof AuthError);
  assert.deepEqual(none.bearer, { scope: ['mcp'] });
});

test('required scopes: a good token without one is refused with insufficient_scope (403); principalClaim names the principal', async () => {
  const { authenticate } = authenticator({ requiredScopes: ['mcp', 'private'] });
  const error = await refusal(authenticate(request(await as.token({ resource: RESOURCE, scope: 'mcp' }))));
  assert.ok(error instanceof AuthError);
  assert.deepEqual(error.bearer, { error: 'insufficient_scope', scope: ['mcp', 'private'] });
  assert.equal(error.message, 'the token lacks the scope private');
  assert.equal((await authenticate(request(await as.token({ resource: RESOURCE, scope: 'mcp private' })))).principal, 'sub:app');
  const byClient = authenticator({ principalClaim: 'client_id' }).authenticate;
  assert.equal((await byClient(request(await as.token({ resource: RESOURCE })))).principal, 'client_id:app');
});

test('200 requests with made-up kids: at most one key fetch per cooldown (30 s); concurrent ones share it', async () => {
  const { authenticate, clock } = authenticator({ jwksUri: `${as.issuer}/jwks` });
  await authenticate(request(await as.token({ resource: RESOURCE })));
  // Past the cooldown of that first fetch: the first made-up kid may fetch.
  clock.advance(31_000);
  const before = as.requests('/jwks');
  const { privateKey } = await generateKeyPair('RS256');
  const now = Math.floor(clock.now() / 1000);
  const forged = (i: number) =>
    new SignJWT({ sub: 'mallory', iss: as.issuer, aud: RESOURCE, exp: now + 300 }).setProtectedHeader({ alg: 'RS256', kid: `kid-${i}-${Math.random()}` }).sign(privateKey);
  // 100 at once, then 100 one after the other over 20 s of the clock.
  const burst = await Promise.all(Array.from({ length: 100 }, async (_, i) => refusal(authenticate(request(await forged(i))))));
  for (const error of burst) assert.ok(error instanceof AuthError && /does not publish/.test(error.message), String(error));
  for (let i = 0; i < 100; i++) {
    if (i % 10 === 0) clock.advance(2_000);
    const error = await refusal(authenticate(request(await forged(100 + i))));
    assert.ok(error instanceof AuthError && /does not publish/.test(error.message), String(error));
  }
  const fetches = as.requests('/jwks') - before;
  console.log(`  kid flood: 200 requests with unknown kids caused ${fetches} JWKS fetch(es)`);
  assert.equal(fetches, 1);
  // Past the cooldown, the next unknown kid may fetch once more: still one per cooldown.
  clock.advance(30_000);
  for (let i = 0; i < 20; i++) await refusal(authenticate(request(await forged(200 + i))));
  assert.ok(as.requests('/jwks') - before <= 2);
});

test('keys rotated mid-test: the new kid is fetched once the cooldown allows; tokens of the old key still pass while it is published', async () => {
  const { authenticate, clock } = authenticator();
  const old = await as.token({ resource: RESOURCE });
  await authenticate(request(old));
  await as.rotate();
  const rotated = await as.token({ resource: RESOURCE });
  assert.notEqual(JSON.parse(Buffer.from(rotated.split('.')[0]!, 'base64url').toString()).kid, JSON.parse(Buffer.from(old.split('.')[0]!, 'base64url').toString()).kid);
  clock.advance(30_000);
  const before = as.requests('/jwks');
  assert.equal((await authenticate(request(rotated))).principal, 'sub:app');
  assert.equal(as.requests('/jwks') - before, 1);
  assert.equal((await authenticate(request(old))).principal, 'sub:app');
  assert.equal(as.requests('/jwks') - before, 1);
});

/** Runs `call`, resolving with what it settled to and how long it took (ms). */
async function timed<T>(call: () => Promise<T>): Promise<{ value: T | unknown; ms: number }> {
  const start = performance.now();
  const value = await call().catch((error: unknown) => error);
  return { value, ms: performance.now() - start };
}

test('the authorization server hangs, then refuses connections: kept keys go on working (stale ones too), an unknown key or no keys at all get 503 within 2 s', async () => {
  const { authenticate, clock } = authenticator();
  const token = await as.token({ resource: RESOURCE, ttl: 7_200 });
  await authenticate(request(token));
  const { privateKey } = await generateKeyPair('RS256');
  const stranger = () =>
    new SignJWT({ sub: 'x', iss: as.issuer, aud: RESOURCE, exp: Math.floor(clock.now() / 1000) + 300 }).setProtectedHeader({ alg: 'RS256', kid: `new-${Math.random()}` }).sign(privateKey);
  const timings: string[] = [];
  try {
    for (const mode of ['hang', 'refuse'] as const) {
      as.mode = mode;
      const kept = await timed(() => authenticate(request(token)));
      assert.equal((kept.value as AuthInfo).principal, 'sub:app', `${mode}: ${String(kept.value)}`);
      assert.ok(kept.ms < 200, `${mode}: a kept key took ${kept.ms} ms`);
      // Keys older than jwksMaxAge: refreshed before use, which fails; the kept ones serve.
      clock.advance(601_000);
      const stale = await timed(() => authenticate(request(token)));
      assert.equal((stale.value as AuthInfo).principal, 'sub:app', `${mode}: ${String(stale.value)}`);
      assert.ok(stale.ms < 2_000, `${mode}: stale keys took ${stale.ms} ms`);
      // A key not held, past the cooldown: one fetch, which fails: 503, not 401.
      clock.advance(31_000);
      const unknown = await timed(async () => authenticate(request(await stranger())));
      assert.ok(unknown.value instanceof AuthUnavailableError, `${mode}: ${String(unknown.value)}`);
      assert.ok(unknown.ms < 2_000, `${mode}: an unknown key took ${unknown.ms} ms`);
      // An authenticator that never got keys (its discovery fails too): 503.
      const fresh = authenticator().authenticate;
      const nothing = await timed(() => fresh(request(token)));
      assert.ok(nothing.value instanceof AuthUnavailableError, `${mode}: ${String(nothing.value)}`);
      assert.ok(nothing.ms < 2_000, `${mode}: no keys took ${nothing.ms} ms`);
      timings.push(`${mode}: kept ${kept.ms.toFixed(0)} ms, stale ${stale.ms.toFixed(0)} ms, unknown kid ${unknown.ms.toFixed(0)} ms, no keys ${nothing.ms.toFixed(0)} ms`);
    }
  } finally {
    as.mode = 'up';
  }
  console.log(`  authorization server down: ${timings.join('; ')}`);
});

test('over HTTP: the endpoint answers 401 with the challenge, 200 with the token, 503 with Retry-After while the server hangs and keys are missing, each within 2 s', async () => {
  const clock = manualClock();
  await withEndpoint({ authenticate: jwtAuthenticator({ issuer: as.issuer, resource: RESOURCE, requiredScopes: ['mcp'], scheduler: clock }) }, async ({ url }) => {
    const ask = (token?: string) =>
      post(url, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: {} }), { ...LISTEN_HEADERS, ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) });
    const none = await ask();
    assert.equal(none.status, 401);
    assert.equal(none.headers['www-authenticate'], 'Bearer resource_metadata="http://127.0.0.1:8931/.well-known/oauth-protected-resource/mcp", scope="mcp"');
    const wrong = await ask(await as.token({ resource: 'http://127.0.0.1:8931/elsewhere' }));
    assert.equal(wrong.status, 401);
    assert.match(wrong.headers['www-authenticate']!, /error="invalid_token", error_description="the token was issued for another resource/);
    assert.equal((await ask(await as.token({ resource: RESOURCE }))).status, 200);
    as.mode = 'hang';
    try {
      const { privateKey } = await generateKeyPair('RS256');
      const stranger = await new SignJWT({ sub: 'app', iss: as.issuer, aud: RESOURCE, scope: 'mcp', exp: Math.floor(clock.now() / 1000) + 60 }).setProtectedHeader({ alg: 'RS256', kid: 'rotated-in' }).sign(privateKey);
      clock.advance(31_000);
      const start = performance.now();
      const hanging = await ask(stranger);
      const ms = performance.now() - start;
      assert.equal(hanging.status, 503);
      assert.equal(hanging.headers['retry-after'], '5');
      assert.ok(ms < 2_000, `${ms} ms`);
    } finally {
      as.mode = 'up';
    }
  });
});

test.run();
