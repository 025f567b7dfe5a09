// A real OAuth 2.1 authorization server for the specs of issue 32: oidc-provider (the certified
// Node implementation) in this process on 127.0.0.1, issuing access tokens by the client
// credentials grant for a resource indicator (RFC 8707), as JWTs (RFC 9068) or opaque tokens, with
// introspection (RFC 7662), revocation (RFC 7009), its metadata (RFC 8414 / OpenID Connect
// Discovery) and its JWKS. Its signing keys can be rotated mid-test; it can be made to hang or
// to refuse connections; every request it gets is counted by path.
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';

/** A client of the server: `app` gets tokens (client credentials), `rs` introspects them (the resource server). */
export const APP_CLIENT = { id: 'app', secret: 'app-secret-0123456789' } as const;
export const RS_CLIENT = { id: 'rs', secret: 'rs-secret-0123456789' } as const;
/** The scopes it grants. */
export const SCOPES = ['mcp', 'private'] as const;

export interface TokenRequest {
  /** The resource indicator: the token's `aud`. */
  readonly resource: string;
  /** Space-separated; defaults to `mcp`. */
  readonly scope?: string;
  /** Seconds the token lives; defaults to 300. */
  readonly ttl?: number;
  /** `jwt` (the default) or `opaque`. */
  readonly format?: 'jwt' | 'opaque';
}

export interface AuthServer {
  /** `http://127.0.0.1:PORT`: its issuer identifier. */
  readonly issuer: string;
  /** `up` answers; `hang` accepts connections and never answers; `refuse` destroys every connection. */
  mode: 'up' | 'hang' | 'refuse';
  /** A token from the token endpoint, as the `app` client gets it. */
  token(request: TokenRequest): Promise<string>;
  /** Revokes a token (RFC 7009). */
  revoke(token: string): Promise<void>;
  /** A new signing key goes first (it signs from now on); the old ones stay published. */
  rotate(): Promise<void>;
  /** The current signing key (private), to forge tokens the server would sign. */
  readonly signingKey: JWK;
  /** Signs `claims` as this server would, with its current key, in one call (`header` overrides). */
  sign(claims: Record<string, unknown>, header?: Record<string, unknown>): Promise<string>;
  /** Requests it got on `path` (`/jwks`, `/token/introspection`, `/.well-known/openid-configuration`…). */
  requests(path: string): number;
  close(): Promise<void>;
}

type Provider = import('oidc-provider').default;

/** Loads oidc-provider without its warnings on stderr (unsupported runtime, development adapter). */
async function quietly<T>(make: () => Promise<T> | T): Promise<T> {
  const warn = console.warn;
  const info = console.info;
  console.warn = (...args: unknown[]) => (String(args[0]).includes('oidc-provider') ? undefined : warn(...args));
  console.info = (...args: unknown[]) => (String(args[0]).includes('oidc-provider') ? undefined : info(...args));
  try {
    return await make();
  } finally {
    console.warn = warn;
    console.info = info;
  }
}

/** Starts an authorization server on 127.0.0.1 (port 0). */
export async function startAuthServer(): Promise<AuthServer> {
  const { default: ProviderClass } = await quietly(() => import('oidc-provider'));
  const counts = new Map<string, number>();
  const sockets = new Set<Socket>();
  let current: Provider | undefined;
  const state = { mode: 'up' as AuthServer['mode'] };
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    counts.set(path, (counts.get(path) ?? 0) + 1);
    if (state.mode === 'hang') return;
    if (state.mode === 'refuse') return void req.socket.destroy();
    current!.callback()(req, res);
  });
  server.on('connection', (socket) => {
    if (state.mode === 'refuse') return void socket.destroy();
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // One store for every provider instance, so that a rotation keeps the tokens issued before it.
  const store = new Map<string, { payload: Record<string, unknown>; expiresAt: number | undefined }>();
  const keys: JWK[] = [];
  // What the next token request gets (one request at a time in the specs).
  const next = { ttl: 300, format: 'jwt' as 'jwt' | 'opaque' };

  const newKey = async () => {
    const { privateKey } = await generateKeyPair('RS256', { extractable: true });
    keys.unshift({ ...(await exportJWK(privateKey)), kid: `key-${keys.length + 1}-${Math.random().toString(36).slice(2, 8)}`, alg: 'RS256', use: 'sig' });
  };
  const make = () =>
    quietly(
      () =>
        new ProviderClass(issuer, {
          adapter: adapterOver(store),
          jwks: { keys: keys.map((key) => ({ ...key })) },
          clients: [
            { client_id: APP_CLIENT.id, client_secret: APP_CLIENT.secret, grant_types: ['client_credentials'], redirect_uris: [], response_types: [] },
            { client_id: RS_CLIENT.id, client_secret: RS_CLIENT.secret, grant_types: [], redirect_uris: [], response_types: [] },
          ],
          scopes: [...SCOPES],
          ttl: { ClientCredentials: () => next.ttl },
          features: {
            devInteractions: { enabled: false },
            clientCredentials: { enabled: true },
            introspection: { enabled: true, allowedPolicy: async () => true },
            revocation: { enabled: true, allowedPolicy: async () => true },
            resourceIndicators: {
              enabled: true,
              defaultResource: () => undefined,
              useGrantedResource: () => true,
              getResourceServerInfo: (_ctx: unknown, indicator: string) => ({
                scope: SCOPES.join(' '),
                audience: indicator,
                accessTokenTTL: next.ttl,
                accessTokenFormat: next.format,
                ...(next.format === 'jwt' ? { jwt: { sign: { alg: 'RS256' } } } : {}),
              }),
            },
          },
        }),
    );
  await newKey();
  current = await make();

  const basic = (client: { id: string; secret: string }) => `Basic ${Buffer.from(`${client.id}:${client.secret}`).toString('base64')}`;
  const form = async (path: string, client: { id: string; secret: string }, body: Record<string, string>) => {
    const response = await fetch(`${issuer}${path}`, {
      method: 'POST',
      headers: { authorization: basic(client), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(body),
    });
    const text = await response.text();
    if (response.status !== 200) throw new Error(`${path} answered ${response.status}: ${text}`);
    return text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
  };

  return {
    issuer,
    get mode() {
      return state.mode;
    },
    set mode(mode) {
      state.mode = mode;
      if (mode !== 'up') for (const socket of sockets) socket.destroy();
    },
    async token({ resource, scope = 'mcp', ttl = 300, format = 'jwt' }) {
      next.ttl = ttl;
      next.format = format;
      const answer = await form('/token', APP_CLIENT, { grant_type: 'client_credentials', resource, scope });
      return answer.access_token as string;
    },
    async revoke(token) {
      await form('/token/revocation', APP_CLIENT, { token });
    },
    async rotate() {
      await newKey();
      current = await make();
    },
    get signingKey() {
      return keys[0]!;
    },
    async sign(claims, header = {}) {
      const { importJWK } = await import('jose');
      const key = keys[0]!;
      return new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: key.kid!, ...header } as { alg: string })
        .sign(await importJWK(key, 'RS256'));
    },
    requests: (path) => counts.get(path) ?? 0,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** oidc-provider's storage interface over one Map (shared by the instances of one server). */
function adapterOver(store: Map<string, { payload: Record<string, unknown>; expiresAt: number | undefined }>) {
  return class MapAdapter {
    constructor(private readonly model: string) {}
    #key(id: string): string {
      return `${this.model}:${id}`;
    }
    async upsert(id: string, payload: Record<string, unknown>, expiresIn?: number): Promise<void> {
      store.set(this.#key(id), { payload, expiresAt: expiresIn === undefined ? undefined : Date.now() + expiresIn * 1000 });
    }
    async find(id: string): Promise<Record<string, unknown> | undefined> {
      const entry = store.get(this.#key(id));
      if (entry === undefined || (entry.expiresAt !== undefined && entry.expiresAt <= Date.now())) return undefined;
      return entry.payload;
    }
    async findByUserCode(): Promise<undefined> {
      return undefined;
    }
    async findByUid(): Promise<undefined> {
      return undefined;
    }
    async consume(id: string): Promise<void> {
      const entry = store.get(this.#key(id));
      if (entry !== undefined) entry.payload.consumed = Math.floor(Date.now() / 1000);
    }
    async destroy(id: string): Promise<void> {
      store.delete(this.#key(id));
    }
    async revokeByGrantId(grantId: string): Promise<void> {
      for (const [key, entry] of store) if (entry.payload.grantId === grantId) store.delete(key);
    }
  };
}
