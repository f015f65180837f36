import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { looksLikeApiKey } from '../accounts/api-key.ts';
import { actingUser, type Principal } from '../accounts/principal.ts';
import type { CredentialThrottle } from './credential-throttle.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Served without the bearer token (health, API docs). */
    public?: boolean;
    /** The 401 body of a door with its own error shape; default `{"detail": "Unauthorized"}`. */
    unauthorizedBody?: unknown;
  }
  interface FastifyRequest {
    /** Who is asking (set before any handler of a route that is not public). */
    principal: Principal;
  }
}

export interface AuthSettings {
  /** API_TOKEN: the administrator's token; unset is development mode (no authentication). */
  adminToken: string | undefined;
  /** Resolves a user's key (`pk_…`); undefined for an unknown, revoked or expired key. */
  authenticateKey: (key: string) => Promise<Principal | undefined>;
  /**
   * Other ways in without an Authorization header (the web client's session cookie):
   * a principal, `undefined` when the request carries none, or `null` for a spent one.
   */
  authenticateOther?:
    | ((request: FastifyRequest) => Promise<Principal | null | undefined>)
    | undefined;
  /** Wrong bearer credentials per client address: past its limit, 429 before any check. */
  throttle: CredentialThrottle;
}

const DEVELOPMENT: Principal = { kind: 'admin', development: true };
const ADMIN: Principal = { kind: 'admin', development: false };

/**
 * Who a request is (spec §5, extended by accounts): `Authorization: Bearer <API_TOKEN>`
 * exactly is the administrator; `Bearer pk_…` a user's key; anything else is 401. Without
 * API_TOKEN (development mode) a request without a key is the administrator. The token is
 * compared in constant time (both sides hashed); a key is looked up by its hash, so an
 * unknown, revoked and expired key take the same path and get the same answer. Every refused
 * token (anything not shaped like a key) counts against the client's address
 * (credential-throttle.ts); once it must wait, a token is 429 before it is compared. Keys are
 * never throttled. Public routes never look at the header.
 *
 * Then one rule for every route: a `user_id` a request names (path, query or body) must be
 * the key's own user (src/accounts/principal.ts); the administrator may name anyone.
 */
export function installAuth(app: FastifyInstance, settings: AuthSettings): void {
  const isAdmin = settings.adminToken ? bearerCheck(settings.adminToken) : undefined;
  const adminLooksLikeKey =
    settings.adminToken !== undefined && looksLikeApiKey(settings.adminToken);
  app.decorateRequest('principal', undefined as unknown as { getter: () => Principal });

  app.addHook('onRequest', async (request, reply) => {
    if (request.routeOptions.config.public || request.is404) return;
    const header = request.headers.authorization;
    if (header !== undefined) {
      const key = header.startsWith('Bearer ') ? header.slice(7) : '';
      // A user's key cannot be guessed (256 random bits), so keys are neither throttled nor
      // counted: a client holding a stale or revoked key cannot make its address (say, the
      // trusted server in front) wait, and a throttled address's users still get in.
      if (looksLikeApiKey(key)) {
        const principal = await settings.authenticateKey(key);
        if (principal) {
          request.principal = principal;
          return;
        }
        // Only an API_TOKEN shaped like a key goes on, to be compared (and throttled) below.
        if (!adminLooksLikeKey) return unauthorized(reply);
      }
      settings.throttle.check(request);
      if (isAdmin?.(header)) {
        request.principal = ADMIN;
        return;
      }
      if (isAdmin) {
        settings.throttle.failed(request);
        return unauthorized(reply);
      }
    }
    const other = await settings.authenticateOther?.(request);
    if (other) {
      request.principal = other;
      return;
    }
    if (isAdmin || other === null) return unauthorized(reply);
    request.principal = DEVELOPMENT;
  });

  // The one authorization rule, for every route, including routes added later.
  app.addHook('preValidation', async (request) => {
    if (!request.principal || request.principal.kind === 'admin') return;
    for (const where of [request.params, request.query, request.body]) {
      const named = (where as { user_id?: unknown } | undefined)?.user_id;
      if (typeof named === 'string') actingUser(request.principal, named);
    }
  });
}

/** Whether an Authorization header is exactly `Bearer <token>`, compared in constant time. */
export function bearerCheck(token: string): (header: string | undefined) => boolean {
  const expected = digest(`Bearer ${token}`);
  return (header) => header !== undefined && timingSafeEqual(digest(header), expected);
}

export function unauthorized(reply: FastifyReply): FastifyReply {
  const body = reply.request.routeOptions.config.unauthorizedBody ?? UNAUTHORIZED;
  return reply.code(401).header('www-authenticate', 'Bearer').send(body);
}

const UNAUTHORIZED = { detail: 'Unauthorized' };

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();
