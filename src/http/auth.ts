import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply } from 'fastify';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Served without the bearer token (health, API docs). */
    public?: boolean;
  }
}

/**
 * Bearer authentication (spec §5): when a token is configured, the Authorization header must
 * be exactly `Bearer <token>`. Both sides are hashed before the constant-time comparison so
 * neither the content nor the length of the token leaks through timing.
 */
export function installBearerAuth(app: FastifyInstance, token: string | undefined): void {
  if (!token) return; // development mode: every request passes
  const authorized = bearerCheck(token);

  app.addHook('onRequest', async (request, reply) => {
    if (request.routeOptions.config.public || request.is404) return;
    if (authorized(request.headers.authorization)) return;
    return unauthorized(reply);
  });
}

/** Whether an Authorization header is exactly `Bearer <token>`, compared in constant time. */
export function bearerCheck(token: string): (header: string | undefined) => boolean {
  const expected = digest(`Bearer ${token}`);
  return (header) => header !== undefined && timingSafeEqual(digest(header), expected);
}

export function unauthorized(reply: FastifyReply): FastifyReply {
  return reply.code(401).header('www-authenticate', 'Bearer').send({ detail: 'Unauthorized' });
}

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();
