import { AnswerTooLargeError, createBoundedFetch } from '../models/answer-bound.ts';

/**
 * The most a search answer is read to: a page of at most 20 results (Tavily, Brave; SearXNG
 * sends its own page of ~30 with infoboxes and suggestions) is tens of kB, a few hundred with
 * every extra a provider adds; 4 MiB leaves room for all of it many times over.
 */
export const SEARCH_ANSWER_MAX_BYTES = 4 * 1024 * 1024;

const searchFetch = createBoundedFetch('web search service', SEARCH_ANSWER_MAX_BYTES);

/** Why a search failed, in words the model can pass on to the user. */
export type WebSearchFailure =
  | 'timeout'
  | 'rate_limited'
  | 'refused'
  | 'upstream_error'
  | 'unreachable'
  | 'bad_response';

export class WebSearchError extends Error {
  override readonly name = 'WebSearchError';
  readonly reason: WebSearchFailure;
  readonly status: number | undefined;
  /** For the log: what was wrong with a bad answer, as a code. */
  readonly code: string | undefined;

  constructor(reason: WebSearchFailure, message: string, status?: number, code?: string) {
    super(message);
    this.reason = reason;
    this.status = status;
    this.code = code;
  }
}

/**
 * One HTTP request to a search provider, with a timeout, turned into JSON or a WebSearchError
 * carrying a short reason. Provider error bodies are not passed on: they may echo the query.
 */
export async function requestJson(
  url: URL,
  init: RequestInit,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<unknown> {
  const timeout = AbortSignal.timeout(timeoutMs);
  const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
  let response: Response;
  try {
    response = await searchFetch(url, { ...init, signal: combined });
  } catch (error) {
    if (signal?.aborted) throw error;
    if (timeout.aborted) {
      throw new WebSearchError('timeout', `The web search took longer than ${timeoutMs} ms.`);
    }
    throw new WebSearchError('unreachable', 'The web search service could not be reached.');
  }
  if (!response.ok) {
    await response.body?.cancel().catch(() => {});
    throw httpFailure(response);
  }
  try {
    return await response.json();
  } catch (error) {
    if (signal?.aborted) throw error;
    if (timeout.aborted) {
      throw new WebSearchError('timeout', `The web search took longer than ${timeoutMs} ms.`);
    }
    if (error instanceof AnswerTooLargeError) {
      throw new WebSearchError(
        'bad_response',
        'The web search service sent an answer too large to read.',
        undefined,
        error.code,
      );
    }
    throw new WebSearchError('bad_response', 'The web search service sent an unreadable answer.');
  }
}

function httpFailure(response: Response): WebSearchError {
  const status = response.status;
  if (status === 429 || status === 432 || status === 433) {
    const retry = response.headers.get('retry-after');
    const when = retry && /^\d+$/.test(retry) ? ` Try again in ${retry} s.` : ' Try again later.';
    return new WebSearchError(
      'rate_limited',
      `The web search service is limiting requests (HTTP ${status}).${when}`,
      status,
    );
  }
  if (status === 401 || status === 403) {
    return new WebSearchError(
      'refused',
      `The web search service refused the request (HTTP ${status}); its key or settings need fixing.`,
      status,
    );
  }
  if (status >= 500) {
    return new WebSearchError(
      'upstream_error',
      `The web search service failed (HTTP ${status}).`,
      status,
    );
  }
  return new WebSearchError(
    'refused',
    `The web search service rejected the request (HTTP ${status}).`,
    status,
  );
}
