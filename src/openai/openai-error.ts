import type { ChatErrorCode } from '../assistant/chat-events.ts';
import { AppError } from '../errors.ts';

/** OpenAI's error body: what the SDKs read into their typed exceptions. */
export interface OpenAiErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** OpenAI's `type` for each status; the SDKs pick their exception class by the status. */
const TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'invalid_request_error',
  403: 'permission_error',
  404: 'invalid_request_error',
  413: 'invalid_request_error',
  415: 'invalid_request_error',
  429: 'rate_limit_error',
};

export function openAiError(
  status: number,
  message: string,
  options: { param?: string | null; code?: string | null } = {},
): OpenAiErrorBody {
  return {
    error: {
      message,
      type: TYPES[status] ?? (status >= 500 ? 'server_error' : 'invalid_request_error'),
      param: options.param ?? null,
      code: options.code ?? null,
    },
  };
}

/** A request OpenAI's API would refuse with 400, naming the parameter (`messages[1].content`). */
export class InvalidRequest extends AppError {
  readonly param: string | null;

  constructor(message: string, param: string | null, code = 'invalid_value') {
    super(code, 400, message);
    this.param = param;
  }
}

/**
 * The status a non-streamed completion answers when the assistant failed: the model or the
 * database not there, or Parley busy (503, try again later) or a failure of the answer itself (500). The SDKs
 * retry both.
 */
export function chatErrorStatus(code: ChatErrorCode): 500 | 503 {
  switch (code) {
    case 'model_not_configured':
    case 'model_downloading':
    case 'model_unreachable':
    case 'model_stopped':
    case 'database_unavailable':
    case 'busy':
    case 'shutting_down':
    case 'turn_lost':
      return 503;
    default:
      return 500;
  }
}

/**
 * The error body of the door a URL belongs to, where no route's own error handler answers (a
 * path the router refuses, a method a path does not take, a request Node's parser refuses):
 * OpenAI's shape under `/v1/`, which that door's clients read, else Parley's `{"detail"}`.
 */
export function errorBodyForUrl(
  url: string | undefined,
  status: number,
  detail: string,
  code?: string,
): OpenAiErrorBody | { detail: string } {
  return url?.startsWith('/v1/') ? openAiError(status, detail, { code }) : { detail };
}
