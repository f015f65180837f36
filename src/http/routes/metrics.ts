import { requireAdmin } from '../../accounts/principal.ts';
import type { App } from '../app-types.ts';
import { bearerCheck, unauthorized } from '../auth.ts';
import type { CredentialThrottle } from '../credential-throttle.ts';
import { errorResponses } from '../error-responses.ts';

export interface MetricsRouteSettings {
  /** The Prometheus text exposition: this process's metrics, or the whole cluster's. */
  text: () => Promise<string>;
  contentType: string;
  /** METRICS_TOKEN: when set, /metrics takes this bearer token instead of API_TOKEN. */
  token?: string | undefined;
}

/** GET /metrics (METRICS_ENABLED); not registered otherwise, so it answers 404. */
export function registerMetricsRoutes(
  app: App,
  settings: MetricsRouteSettings,
  throttle: CredentialThrottle,
): void {
  const authorized = settings.token ? bearerCheck(settings.token) : undefined;
  app.get(
    '/metrics',
    {
      // With its own token the API token's check is skipped: a scraper holds only its own.
      config: { public: authorized !== undefined },
      schema: {
        summary: 'Prometheus metrics (text format), when METRICS_ENABLED',
        description:
          'Needs `Authorization: Bearer <METRICS_TOKEN>` when that is set, otherwise the API ' +
          'token. With PARLEY_WORKERS > 1 the figures are the sum over all workers.',
        tags: ['service'],
        produces: ['text/plain'],
        response: errorResponses(401, 403),
      },
    },
    async (request, reply) => {
      // Its own token, its own check, under the API's throttle (METRICS_TOKEN may be weak).
      if (authorized && !throttle.verify(request, request.headers.authorization, authorized)) {
        return unauthorized(reply);
      }
      if (!authorized) requireAdmin(request.principal); // a user's key is not the operator's
      const text = await settings.text();
      return reply.header('content-type', settings.contentType).send(text);
    },
  );
}
