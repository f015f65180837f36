import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { errorBodyForUrl } from '../openai/openai-error.ts';

const ANSWERS: Record<string, { status: number; detail: string }> = {
  FST_ERR_BAD_URL: {
    status: 400,
    detail: 'The path is not valid: a percent-encoded part of it does not decode to UTF-8.',
  },
  FST_ERR_MAX_PARAM_LENGTH: { status: 414, detail: 'A part of the path is too long.' },
};

/**
 * Answers what Fastify's router refuses before any route or error handler sees the request (a
 * path whose percent-encoding is no UTF-8, such as a lone surrogate; a path part longer than
 * `maxParamLength`): Fastify's own answer has its own shape (`{"error", "code", "message"}`,
 * the path echoed back), which no client of Parley reads. Here it gets `{"detail": …}`, or
 * OpenAI's `{"error": …}` under `/v1/`, like every other client error.
 */
export function answerFrameworkError(
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): FastifyReply {
  const known = ANSWERS[error.code];
  if (!known) {
    request.log.error({ err: error }, 'unhandled error before routing');
    return reply.code(500).send({ detail: 'Internal Server Error', request_id: request.id });
  }
  const { status, detail } = known;
  request.log.info({ code: error.code, status }, 'request rejected before routing');
  return reply.code(status).send(errorBodyForUrl(request.url, status, detail, error.code));
}
