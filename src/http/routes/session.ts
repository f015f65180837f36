import { z } from 'zod';
import type { Principal } from '../../accounts/principal.ts';
import type { WebSessions } from '../../accounts/web-sessions.ts';
import type { App } from '../app-types.ts';
import { unauthorized } from '../auth.ts';
import {
  BEARER_FAILURES_PER_MINUTE,
  CredentialThrottle,
  FAILED_SIGN_INS,
} from '../credential-throttle.ts';
import { errorResponses } from '../error-responses.ts';
import { userIdSchema } from '../schemas.ts';
import {
  assertFromOwnPage,
  clearSessionCookie,
  sessionToken,
  setSessionCookie,
} from '../session-cookie.ts';

const who = z.object({
  signed_in: z.boolean(),
  role: z.enum(['admin', 'user']).nullable(),
  user_id: z.string().nullable().describe('The user the page acts as (null for the administrator)'),
  development: z.boolean().describe('No API_TOKEN is set: a person signs in by typing a user name'),
});

/**
 * The web client's sign-in and sign-out. A key (or the administrator's token; in development
 * mode a user name) is exchanged for a session cookie; API clients never need these routes.
 */
export function registerSessionRoutes(
  app: App,
  sessions: WebSessions,
  lifetimeMs: number,
  now?: () => number,
): void {
  const throttle = new CredentialThrottle(now, FAILED_SIGN_INS);
  const tags = ['web client'];
  const config = { public: true };
  const view = (principal: Principal | undefined) => ({
    signed_in: principal !== undefined,
    role: principal?.kind ?? null,
    user_id: principal?.kind === 'user' ? principal.userId : null,
    development: sessions.development,
  });

  app.post(
    '/session',
    {
      config,
      schema: {
        summary: 'Sign the web client in: a key (or API_TOKEN) becomes an HttpOnly session cookie',
        description:
          'Body `{"key": "pk_…"}` (or the API_TOKEN); in development mode (no API_TOKEN) ' +
          '`{"user_id": "…"}`. Needs the `x-parley-client` header and a same-origin request. ' +
          `After ${BEARER_FAILURES_PER_MINUTE} failed sign-ins in a minute from one client ` +
          'address, every sign-in from it gets 429 with `Retry-After` until the oldest is a ' +
          'minute old.',
        tags,
        security: [],
        body: z.union([
          z.object({ key: z.string().min(1).max(1024) }).strict(),
          z.object({ user_id: userIdSchema }).strict(),
        ]),
        response: { 200: who, ...errorResponses(401, 403, 413, 415, 422, 429) },
      },
    },
    async (request, reply) => {
      assertFromOwnPage(request);
      throttle.check(request);
      const body = request.body;
      const session = await sessions.signIn(
        'key' in body ? { credential: body.key } : { userId: body.user_id },
      );
      if (!session) {
        throttle.failed(request);
        return unauthorized(reply);
      }
      const maxAge = Math.floor((session.expiresAt.getTime() - Date.now()) / 1000);
      setSessionCookie(request, reply, session.token, Math.min(maxAge, lifetimeMs / 1000));
      return reply.header('cache-control', 'no-store').send(view(session.principal));
    },
  );

  app.get(
    '/session',
    {
      config,
      schema: {
        summary: 'Who the web client is signed in as, if anyone',
        tags,
        security: [],
        response: { 200: who, ...errorResponses(503) },
      },
    },
    async (request, reply) => {
      const token = sessionToken(request);
      const principal = token === undefined ? undefined : await sessions.authenticate(token);
      if (token !== undefined && !principal) clearSessionCookie(request, reply);
      return reply.header('cache-control', 'no-store').send(view(principal));
    },
  );

  app.delete(
    '/session',
    {
      config,
      schema: {
        summary: 'Sign out: the session ends on the server, the cookie is cleared',
        tags,
        security: [],
        response: { 200: z.object({ signed_out: z.literal(true) }), ...errorResponses(403, 503) },
      },
    },
    async (request, reply) => {
      assertFromOwnPage(request);
      const token = sessionToken(request);
      if (token !== undefined) await sessions.signOut(token);
      clearSessionCookie(request, reply);
      return reply.send({ signed_out: true as const });
    },
  );
}
