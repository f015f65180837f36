import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Principal } from '../accounts/principal.ts';
import type { WebSessions } from '../accounts/web-sessions.ts';
import { AppError } from '../errors.ts';

export const SESSION_COOKIE = 'parley_session';
/**
 * The header the web client sends with every request that changes something. A cross-site
 * form cannot send a header, and a cross-site script cannot send this one without a CORS
 * preflight, which Parley never grants.
 */
export const CLIENT_HEADER = 'x-parley-client';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The session cookie's value, if the request carries one. */
export function sessionToken(request: FastifyRequest): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/**
 * A cookie-authenticated request that changes state must come from Parley's own page: it
 * carries CLIENT_HEADER, and the browser's `Origin` and `Sec-Fetch-Site`, when sent, say it
 * is same-origin. Anything else is a 403, before any handler runs.
 */
export function assertFromOwnPage(request: FastifyRequest): void {
  if (SAFE_METHODS.has(request.method)) return;
  const origin = request.headers.origin;
  const site = request.headers['sec-fetch-site'];
  const sameOrigin =
    (origin === undefined || origin === ownOrigin(request)) &&
    (site === undefined || site === 'same-origin');
  if (!sameOrigin || request.headers[CLIENT_HEADER] === undefined) {
    throw new AppError(
      'cross_site_request',
      403,
      `A request signed in by the session cookie must come from Parley's own page (same origin, with the ${CLIENT_HEADER} header).`,
    );
  }
}

function ownOrigin(request: FastifyRequest): string {
  return `${isHttps(request) ? 'https' : 'http'}://${request.headers.host ?? ''}`;
}

/** Behind a TLS-terminating proxy the request arrives as http with `X-Forwarded-Proto: https`. */
function isHttps(request: FastifyRequest): boolean {
  return request.protocol === 'https' || request.headers['x-forwarded-proto'] === 'https';
}

/** For installAuth: the session cookie as a way in (null: a cookie whose session is gone). */
export function cookieAuthentication(sessions: WebSessions) {
  return async (request: FastifyRequest): Promise<Principal | null | undefined> => {
    const token = sessionToken(request);
    if (token === undefined) return undefined;
    assertFromOwnPage(request);
    return (await sessions.authenticate(token)) ?? null;
  };
}

/** Sets the session cookie: never readable by scripts, never sent cross-site. */
export function setSessionCookie(
  request: FastifyRequest,
  reply: FastifyReply,
  token: string,
  maxAgeSeconds: number,
): void {
  const secure = isHttps(request) ? '; Secure' : '';
  reply.header(
    'set-cookie',
    `${SESSION_COOKIE}=${token}; Path=/; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Strict${secure}`,
  );
}

export function clearSessionCookie(request: FastifyRequest, reply: FastifyReply): void {
  setSessionCookie(request, reply, '', 0);
}
