import { z } from 'zod';
import { APP_VERSION } from '../../version.ts';
import type { App } from '../app-types.ts';

const healthSchema = z.object({
  status: z.enum(['ok', 'unavailable']),
  version: z.string(),
  database: z.enum(['ok', 'unreachable']),
});

export function registerHealthRoutes(app: App, ping: () => Promise<boolean>): void {
  app.get(
    '/health',
    {
      config: { public: true },
      schema: {
        summary: 'Liveness and database reachability (no authentication)',
        tags: ['service'],
        response: { 200: healthSchema, 503: healthSchema },
      },
    },
    async (_request, reply) => {
      const up = await ping();
      return reply.code(up ? 200 : 503).send({
        status: up ? 'ok' : 'unavailable',
        version: APP_VERSION,
        database: up ? 'ok' : 'unreachable',
      });
    },
  );
}
