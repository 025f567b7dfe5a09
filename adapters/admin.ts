// The admin endpoints of `mcp-rx-streams serve --admin-token` (on its metrics port): the streams
// snapshot and the revoke of a principal, over HTTP, behind a token of their own.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { McpEndpoint } from './http/endpoint.js';
import type { StreamsOptions } from '../protocol/inspect.js';
import { reasonArgument, RevokeRelayError, type RevokeResult } from '../protocol/revoke.js';
import { InvalidOptionError } from '../lib/errors.js';
import type { CloseReason } from '../lib/frame.js';
import type { Logger } from './logTo.js';
import { answerHeaders, whenParsed } from './http/node.js';

/** The largest `POST /revoke` body read, in bytes. */
const MAX_REVOKE_BODY = 16_384;

/** The paths {@link adminRoutes} answers, with their methods. */
export const ADMIN_PATHS: Readonly<Record<string, string>> = Object.freeze({ '/streams': 'GET, HEAD', '/revoke': 'POST' });

/**
 * What the admin endpoints read and act on: an {@link McpEndpoint}, or the machine of
 * `serve --workers` (every worker's endpoint, through the primary).
 */
export interface AdminTarget {
  /** The snapshot `GET /streams` answers (see {@link McpEndpoint.streams}). */
  streams(options: StreamsOptions): readonly unknown[] | Promise<readonly unknown[]>;
  /** What `POST /revoke` does (see {@link McpEndpoint.revoke}); a RevokeRelayError is answered 502. */
  revoke(principal: string, reason: CloseReason): Promise<RevokeResult>;
}

/**
 * The admin endpoints of an endpoint (or of a machine of them), for a node:http server of the
 * operator's (the CLI mounts them on its metrics port): a function that answers `GET /streams` and
 * `POST /revoke` and returns true, or returns false for any other path (which it leaves alone).
 *
 * - `GET /streams` (`?uris=1` to include URIs and task ids): `{ takenAt, streams }`, the
 *   target's snapshot ({@link McpEndpoint.streams}); `takenAt` in milliseconds since the epoch.
 * - `POST /revoke` with the JSON body `{ "principal": "...", "reason"?: "revoked" }`:
 *   the target's revoke ({@link McpEndpoint.revoke}), answered `{ principal, reason, streams,
 *   sessions }` (what ended on this node: on every worker of a machine); 400 for a body that is
 *   not that, 502 when the other nodes of a fleet could not be told (this node's were ended).
 *
 * Every request needs `Authorization: Bearer <token>`, compared in constant time (a SHA-256 of
 * each side, so the time does not depend on where they differ nor on their lengths); without it,
 * 401 with `WWW-Authenticate: Bearer`. Answers are JSON and never cached.
 *
 * @param target the endpoint (or machine) inspected and revoked on.
 * @param token the admin token; at least 16 characters.
 * @param logger told (`info`) what each revoke ended; the principal only at `debug`.
 * @throws InvalidOptionError when the token is shorter than 16 characters.
 * @internal
 */
export function adminRoutes(target: AdminTarget, token: string, logger?: Logger): (req: IncomingMessage, res: ServerResponse) => boolean {
  if (typeof token !== 'string' || token.length < 16) throw new InvalidOptionError('admin token', 'a string of at least 16 characters', token === undefined ? token : '(hidden)');
  const expected = digest(token);
  return (req, res) => {
    const url = new URL(req.url ?? '/', 'http://admin');
    const allowed = ADMIN_PATHS[url.pathname];
    if (allowed === undefined) return false;
    const answer = (status: number, body: unknown, headers: Record<string, string> = {}) =>
      whenParsed(req, () => res.writeHead(status, answerHeaders(req, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store', ...headers })).end(req.method === 'HEAD' ? undefined : `${JSON.stringify(body)}\n`));
    if (!authorized(req.headers.authorization, expected)) {
      answer(401, { error: 'unauthorized: send Authorization: Bearer <the admin token> (serve --admin-token)' }, { 'WWW-Authenticate': 'Bearer realm="mcp-rx-streams admin"' });
      return true;
    }
    if (!allowed.split(', ').includes(req.method ?? '')) {
      answer(405, { error: `method ${req.method} is not allowed on ${url.pathname}; use ${allowed}` }, { Allow: allowed });
      return true;
    }
    if (url.pathname === '/streams') {
      const uris = ['1', 'true'].includes(url.searchParams.get('uris') ?? '');
      const takenAt = Date.now();
      Promise.resolve()
        .then(() => target.streams({ uris }))
        .then(
          (streams) => answer(200, { takenAt, streams }),
          () => answer(500, { error: 'the snapshot failed' }),
        );
      return true;
    }
    readBody(req).then(
      async (text) => {
        const request = revokeRequest(text);
        if (typeof request === 'string') return answer(400, { error: request });
        try {
          const result = await target.revoke(request.principal, request.reason);
          logger?.info({ event: 'admin_revoke', reason: request.reason, ...result }, `revoked a principal: ${result.streams} listen stream(s) and ${result.sessions} session(s) ended on this node`);
          logger?.debug({ event: 'admin_revoke', principal: request.principal, reason: request.reason }, 'revoked principal');
          answer(200, { principal: request.principal, reason: request.reason, ...result });
        } catch (error) {
          if (error instanceof InvalidOptionError) return answer(400, { error: error.message });
          if (error instanceof RevokeRelayError) {
            logger?.warn({ event: 'admin_revoke', reason: request.reason, ...error.info, err: error }, error.message);
            return answer(502, { error: error.message, principal: request.principal, reason: request.reason, ...error.info });
          }
          answer(500, { error: 'the revoke failed' });
        }
      },
      (error: unknown) => answer(error instanceof BodyTooLarge ? 413 : 400, { error: error instanceof Error ? error.message : 'the body could not be read' }),
    );
    return true;
  };
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

function authorized(header: string | undefined, expected: Buffer): boolean {
  const match = header === undefined ? null : /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  // Hashed either way, so a missing header costs what a wrong one does.
  return timingSafeEqual(digest(match?.[1] ?? ''), expected) && match !== null;
}

class BodyTooLarge extends Error {}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_REVOKE_BODY) {
        req.removeAllListeners('data');
        req.resume();
        reject(new BodyTooLarge(`the body is larger than ${MAX_REVOKE_BODY} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** The principal and reason of a `POST /revoke` body, or a sentence saying what is wrong with it. */
function revokeRequest(text: string): { principal: string; reason: CloseReason } | string {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return 'the body must be JSON: {"principal": "...", "reason": "revoked"} (reason optional)';
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return 'the body must be a JSON object: {"principal": "...", "reason": "revoked"}';
  const { principal, reason } = body as { principal?: unknown; reason?: unknown };
  if (typeof principal !== 'string' || principal === '') return 'principal must be a non-empty string: the principal your authenticate returns (the serve --token-secret server: sub:<sub>)';
  try {
    return { principal, reason: reasonArgument(reason ?? 'revoked') };
  } catch (error) {
    return (error as Error).message;
  }
}
