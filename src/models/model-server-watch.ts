import type { Logger } from 'pino';
import type { ModelStatus } from './model-status.ts';
import { shownUri } from './shown-uri.ts';

/** What a connection that could not be made means, for the operator. */
const UNREACHABLE: Record<string, string> = {
  ECONNREFUSED: 'the connection was refused',
  ENOTFOUND: 'the host name is unknown',
  EAI_AGAIN: 'the host name could not be looked up',
  EHOSTUNREACH: 'the host cannot be reached',
  ENETUNREACH: 'the network cannot be reached',
  ETIMEDOUT: 'the connection timed out',
  UND_ERR_CONNECT_TIMEOUT: 'the connection timed out',
};

type Problem = { state: 'unreachable' | 'refusing'; key: string; reason: string };

/**
 * Whether the model server (LLM_BASE_URL) can be used, learnt from the requests Parley makes
 * anyway (chats, titles, memory decisions): it is not probed. Before, `/health` said `ready` of
 * a server nothing listened at, or one that refused every request (a wrong key, a model it does
 * not serve), and nothing named the setting to fix. Now the first request that finds nobody
 * there makes it `unreachable`, one refused for its key or model `refusing`, each with why
 * (once in the log); the first request answered otherwise makes it `ready` again.
 */
export class ModelServerWatch {
  readonly #baseUrl: string;
  readonly #model: string;
  readonly #logger: Logger;
  #problem: Problem | undefined;

  constructor(settings: { baseUrl: string; model: string; logger: Logger }) {
    this.#baseUrl = shownUri(settings.baseUrl);
    this.#model = settings.model;
    this.#logger = settings.logger;
  }

  status(): ModelStatus {
    const problem = this.#problem;
    return problem
      ? { source: 'server', state: problem.state, reason: problem.reason }
      : { source: 'server', state: 'ready' };
  }

  /** `fetch` that notes what each request met (an abort says nothing). */
  watch(fetch: typeof globalThis.fetch): typeof globalThis.fetch {
    return async (input, init) => {
      let response: Response;
      try {
        response = await fetch(input, init);
      } catch (error) {
        const code = connectionCode(error);
        if (code && !init?.signal?.aborted) this.#unreachable(code);
        throw error;
      }
      const refusal = this.#refusal(response.status);
      if (refusal) this.#set({ state: 'refusing', key: String(response.status), reason: refusal });
      else this.#answered();
      return response;
    };
  }

  #refusal(status: number): string | undefined {
    const at = `The model server at LLM_BASE_URL (${this.#baseUrl}) answers HTTP ${status}`;
    if (status === 401 || status === 403) return `${at}: check LLM_API_KEY.`;
    if (status === 404) {
      return (
        `${at}: it does not serve LLM_MODEL ("${this.#model}"), or LLM_BASE_URL lacks the ` +
        "API's path (such as /v1)."
      );
    }
    return undefined;
  }

  #unreachable(code: string): void {
    this.#set({
      state: 'unreachable',
      key: code,
      reason:
        `Nothing answers at LLM_BASE_URL (${this.#baseUrl}): ${UNREACHABLE[code]}. ` +
        'Start the model server, or set LLM_BASE_URL to where it listens.',
    });
  }

  #set(problem: Problem): void {
    if (this.#problem?.key === problem.key) return;
    this.#problem = problem;
    this.#logger.warn(
      { url: this.#baseUrl, [problem.state === 'unreachable' ? 'code' : 'status']: problem.key },
      problem.state === 'unreachable'
        ? 'the model server (LLM_BASE_URL) cannot be reached: chats fail until it answers'
        : 'the model server (LLM_BASE_URL) refuses requests: chats fail until it takes them',
    );
  }

  #answered(): void {
    if (!this.#problem) return;
    this.#problem = undefined;
    this.#logger.info({ url: this.#baseUrl }, 'the model server (LLM_BASE_URL) answers again');
  }
}

/** The code of a connection that could not be made (fetch's `TypeError` names it in `cause`). */
function connectionCode(error: unknown): string | undefined {
  const cause = (error as { cause?: { code?: unknown } } | undefined)?.cause;
  const code = typeof cause?.code === 'string' ? cause.code : undefined;
  return code && code in UNREACHABLE ? code : undefined;
}
