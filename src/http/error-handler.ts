import type { FastifyError, FastifyInstance } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { AppError } from '../errors.ts';
import { BUSY, isDatabaseUnavailable, poolWaitTimeout } from '../storage/database-errors.ts';
import { afterBodyOverLimit } from './over-limit.ts';
import { toValidationDetails } from './validation-errors.ts';

/**
 * The one place where failures become HTTP responses. Every body is `{"detail": …}`; a
 * client's mistake gets a 4xx that says what to fix; anything unexpected is logged with its
 * stack and answered with a bare 500 carrying only the request id.
 */
export function installErrorHandling(app: FastifyInstance): void {
  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send({ detail: `Not Found: ${request.method} ${request.url.split('?')[0]}` });
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (hasZodFastifySchemaValidationErrors(error)) {
      return reply
        .code(422)
        .send({ detail: toValidationDetails(error.validationContext, error.validation) });
    }
    if (AppError.isInstance(error)) {
      // A busy refusal is load, not a fault: its code, not a stack trace per refused request.
      if (error.status >= 500) {
        request.log.warn(
          error.code === BUSY.code ? { code: error.code } : { err: error },
          error.message,
        );
      }
      if (error.retryAfterSeconds !== undefined) {
        reply.header('retry-after', String(error.retryAfterSeconds));
      }
      // Busy is told the same way whatever is full (the uploads' line here, the pool below).
      if (error.code === BUSY.code) {
        return reply.code(error.status).send({ detail: error.message, code: BUSY.code });
      }
      return reply.code(error.status).send({ detail: error.message });
    }
    const busy = poolWaitTimeout(error);
    if (busy) {
      // The database answers; Parley's connections were all in use for DB_POOL_WAIT_MS.
      request.log.warn(busy.logFields(), 'database pool wait timed out: Parley is busy');
      return reply
        .code(503)
        .header('retry-after', String(BUSY.retryAfterSeconds))
        .send({ detail: BUSY.message, code: BUSY.code });
    }
    if (isDatabaseUnavailable(error)) {
      request.log.warn({ err: error }, 'database unavailable');
      return reply.code(503).send({ detail: 'The database is unavailable; try again shortly.' });
    }
    const clientError = describeClientError(error);
    if (clientError) {
      if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
        afterBodyOverLimit(request, reply, request.routeOptions.bodyLimit ?? 0);
      }
      return reply.code(clientError.status).send({ detail: clientError.detail });
    }
    request.log.error({ err: error }, 'unhandled error');
    return reply.code(500).send({ detail: 'Internal Server Error', request_id: request.id });
  });
}

/** Fastify's own 4xx errors (body parsing, limits, media types) with their client-facing text. */
export function describeClientError(
  error: FastifyError,
): { status: number; detail: unknown } | null {
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return {
        status: 422,
        detail: [{ loc: ['body'], msg: 'The body is not valid JSON', type: 'json_invalid' }],
      };
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return {
        status: 422,
        detail: [{ loc: ['body'], msg: 'A JSON body is required', type: 'missing' }],
      };
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
    case 'FST_REQ_FILE_TOO_LARGE':
    case 'FST_PARTS_LIMIT':
    case 'FST_FILES_LIMIT':
    case 'FST_FIELDS_LIMIT':
      return { status: 413, detail: 'The request body is too large' };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_INVALID_MULTIPART_CONTENT_TYPE':
      return { status: 415, detail: 'Unsupported media type' };
  }
  const status = error.statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    return { status, detail: error.message };
  }
  return null;
}
