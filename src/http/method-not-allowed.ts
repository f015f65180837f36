import type { FastifyInstance, HTTPMethods } from 'fastify';
import { errorBodyForUrl } from '../openai/openai-error.ts';

const METHODS: HTTPMethods[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

/**
 * Fastify answers 404 for a known path with the wrong method. Call `track` before routes
 * are added and `answer405` after: every other method on a known path then gets 405 with
 * an Allow header, as HTTP asks.
 */
export function methodNotAllowed(app: FastifyInstance) {
  const allowed = new Map<string, Set<string>>();

  return {
    track() {
      app.addHook('onRoute', (route) => {
        if (route.url.startsWith('/docs')) return; // the docs plugin manages its own routes
        const methods = allowed.get(route.url) ?? new Set<string>();
        for (const method of [route.method].flat()) methods.add(method);
        allowed.set(route.url, methods);
      });
    },
    answer405() {
      const known = [...allowed.entries()];
      for (const [url, methods] of known) {
        const missing = METHODS.filter((method) => !methods.has(method));
        if (missing.length === 0) continue;
        const allow = [...methods].join(', ');
        app.route({
          method: missing,
          url,
          config: { public: true },
          schema: { hide: true },
          // The OpenAI-compatible door answers in OpenAI's shape, as its clients read errors.
          handler: async (_request, reply) =>
            reply
              .code(405)
              .header('allow', allow)
              .send(errorBodyForUrl(url, 405, 'Method Not Allowed')),
        });
      }
    },
  };
}
