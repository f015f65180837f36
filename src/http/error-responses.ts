import { z } from 'zod';

/**
 * The error responses a route can give, for its OpenAPI schema, so generated clients know
 * them. Every error body is `{"detail": …}` (http/error-handler.ts writes them all); these
 * schemas also serialize those bodies, so they accept exactly what the handler sends.
 */

const validationItem = z.object({
  loc: z.array(z.union([z.string(), z.number()])),
  msg: z.string(),
  type: z.string(),
});

const message = (description: string) => z.object({ detail: z.string() }).describe(description);

const schemas = {
  401: message(
    'Missing or wrong `Authorization: Bearer <API_TOKEN or a user key>` (detail: "Unauthorized")',
  ),
  403: message("Not allowed with this key: another user's data, or an administrator's route"),
  404: message('No such resource'),
  409: message('It exists already'),
  413: message('The request body or upload is larger than the configured limit'),
  415: message('The body or upload is of a type this route does not accept'),
  422: z
    .object({ detail: z.union([z.array(validationItem), z.string()]) })
    .describe(
      'Invalid input: FastAPI-style `[{"loc", "msg", "type"}]` for the request shape, or a ' +
        'sentence for content that was well-formed but cannot be used',
    ),
  429: message(
    'Over a per-user limit, or too many wrong tokens from this address (any route that ' +
      'takes a credential); `Retry-After` says in how many seconds trying again can succeed',
  ),
  500: z
    .object({ detail: z.string(), request_id: z.string().optional() })
    .describe('Unexpected failure; quote the request_id when reporting it'),
  503: z
    .object({ detail: z.string(), code: z.literal('busy').optional() })
    .describe(
      'The database is unavailable; or, with code `busy` and `Retry-After`, Parley is busy ' +
        '(every database connection in use, or too many uploads waiting to be read): try ' +
        'again after Retry-After',
    ),
} as const;

export type ErrorStatus = keyof typeof schemas;

/**
 * Response schemas for these statuses; 500 is always included, and 429 with 401: a route that
 * checks a credential answers 429 to an address that sent too many wrong tokens
 * (http/credential-throttle.ts).
 */
export function errorResponses(...statuses: ErrorStatus[]) {
  const chosen: Partial<Record<ErrorStatus, (typeof schemas)[ErrorStatus]>> = {};
  const implied: ErrorStatus[] = statuses.includes(401) ? [429, 500] : [500];
  for (const status of [...statuses, ...implied]) chosen[status] = schemas[status];
  return chosen;
}

/** What every authenticated route that reads the database can answer. */
export const AUTHENTICATED = [401, 503] as const satisfies ErrorStatus[];

/** What a route that takes a `user_id` can answer (a key naming another user: 403). */
export const PER_USER = [401, 403, 503] as const satisfies ErrorStatus[];

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Fastify reads a body sent with any POST, PUT, PATCH or DELETE, whether the route takes one
 * or not: one over the limit is a 413, one of a type Parley does not read a 415, broken JSON a
 * 422. Every such operation says so in its schema (for /openapi.json); the OpenAI door's
 * routes name their own errors in OpenAI's shape.
 */
export function documentBodyErrors(route: {
  url: string;
  method: string | string[];
  schema?: { response?: unknown };
}): void {
  const methods = [route.method].flat();
  const response = route.schema?.response as Record<string, unknown> | undefined;
  if (!response || route.url.startsWith('/v1/') || !methods.some((m) => BODY_METHODS.has(m))) {
    return;
  }
  for (const [status, schema] of Object.entries(errorResponses(413, 415, 422))) {
    response[status] ??= schema;
  }
}
