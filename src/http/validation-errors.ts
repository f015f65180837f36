import type { FastifySchemaValidationError } from 'fastify';

/** FastAPI's names for the parts of a request, which existing clients of the spec expect. */
const LOCATION: Record<string, string> = {
  body: 'body',
  querystring: 'query',
  params: 'path',
  headers: 'header',
};

export interface ValidationDetail {
  loc: (string | number)[];
  msg: string;
  type: string;
}

/** Converts schema validation failures into a FastAPI-style 422 `detail` list. */
export function toValidationDetails(
  context: string | undefined,
  errors: FastifySchemaValidationError[],
): ValidationDetail[] {
  const part = LOCATION[context ?? 'body'] ?? 'body';
  return errors.map((error) => ({
    loc: [
      part,
      ...error.instancePath
        .split('/')
        .filter(Boolean)
        .map((segment) => (/^\d+$/.test(segment) ? Number(segment) : segment)),
    ],
    msg: error.message ?? 'invalid value',
    type: error.keyword,
  }));
}
