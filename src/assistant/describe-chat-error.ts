import { APICallError, NoContentGeneratedError, RetryError } from 'ai';
import { ModelNotConfiguredError } from '../models/chat-model.ts';
import { ModelAnswerCutError } from '../models/finish-reasons.ts';
import { MODEL_EVENT_MAX_BYTES, ModelEventTooLargeError } from '../models/model-event-bound.ts';
import { ModelDownloadingError } from '../models/model-status.ts';
import { BUSY, isDatabaseUnavailable, poolWaitTimeout } from '../storage/database-errors.ts';
import type { ChatErrorCode } from './chat-events.ts';

/**
 * Turns anything that ended a chat early into the code and message the client sees in the
 * stream's `__error` event. Messages are written for the user; upstream bodies, stacks and
 * URLs stay in the log.
 */
export function describeChatError(thrown: unknown): {
  code: ChatErrorCode;
  message: string;
  percent?: number;
} {
  if (thrown instanceof ModelDownloadingError) {
    return { code: 'model_downloading', message: thrown.message, percent: thrown.percent };
  }
  if (thrown instanceof ModelNotConfiguredError) {
    return { code: 'model_not_configured', message: thrown.message };
  }
  // After its retries, the AI SDK throws a RetryError that holds the last failure.
  const error = RetryError.isInstance(thrown) ? thrown.lastError : thrown;
  if (poolWaitTimeout(error)) return { code: BUSY.code, message: BUSY.message };
  // A refused model server carries the same socket codes as a refused database.
  if (!fromModelCall(error) && isDatabaseUnavailable(error)) {
    return {
      code: 'database_unavailable',
      message: 'The database is unavailable; try again shortly.',
    };
  }
  if (isTimeout(error)) {
    return { code: 'model_timeout', message: 'The model took too long to answer.' };
  }
  // A server that ended the answer with `abort` cut it as surely as a broken connection, but
  // the connection was fine: telling the user it broke would send them to the wrong place.
  if (error instanceof ModelAnswerCutError) {
    return {
      code: 'model_stopped',
      message: 'The model server stopped the answer before its end.',
    };
  }
  // Read as far as it is sensible to: the server (or a proxy before it) sent an event that
  // did not end. Not a broken connection, and not the user's doing: the operator's to look at.
  if (chain(error).some((e) => e instanceof ModelEventTooLargeError)) {
    return {
      code: 'model_bad_response',
      message: `The model server sent a response that could not be read: one of its events went on past ${MODEL_EVENT_MAX_BYTES / 1024 / 1024} MiB without ending.`,
    };
  }
  if (isUnreachable(error)) {
    return {
      code: 'model_unreachable',
      message: 'The model server closed the connection or could not be reached.',
    };
  }
  if (APICallError.isInstance(error)) {
    if (error.statusCode === undefined) {
      return { code: 'model_unreachable', message: 'The model server could not be reached.' };
    }
    return {
      code: 'model_error',
      message: `The model server answered with an error (HTTP ${error.statusCode}).`,
    };
  }
  if (NoContentGeneratedError.isInstance(error) || isMalformed(error)) {
    return {
      code: 'model_bad_response',
      message: 'The model server sent a response that could not be read.',
    };
  }
  return { code: 'internal_error', message: 'Something went wrong while answering.' };
}

function chain(error: unknown): unknown[] {
  const found: unknown[] = [];
  for (let current = error, depth = 0; current && depth < 6; depth++) {
    found.push(current);
    current = (current as { cause?: unknown }).cause;
  }
  return found;
}

const fromModelCall = (error: unknown) => chain(error).some((e) => APICallError.isInstance(e));

const named = (error: unknown, names: string[]) =>
  chain(error).some((e) => names.includes((e as { name?: string }).name ?? ''));

function isTimeout(error: unknown): boolean {
  return named(error, ['TimeoutError']);
}

function isUnreachable(error: unknown): boolean {
  return chain(error).some((e) => {
    const { code, message } = e as { code?: string; message?: string };
    return (
      ['ECONNREFUSED', 'ECONNRESET', 'UND_ERR_SOCKET', 'EPIPE'].includes(code ?? '') ||
      /terminated|other side closed|fetch failed/i.test(message ?? '')
    );
  });
}

function isMalformed(error: unknown): boolean {
  return named(error, [
    'AI_JSONParseError',
    'AI_TypeValidationError',
    'AI_InvalidResponseDataError',
  ]);
}
