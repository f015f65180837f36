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

/**
 * Whether the model server (LLM_BASE_URL) answered the last request sent to it, learnt from
 * the requests Parley makes anyway (chats, titles, memory decisions): it is not probed. Before,
 * `/health` said `ready` of a server nothing listened at, and nothing named the setting to
 * fix; now the first request that finds nobody there turns it `unreachable` (with why, once in
 * the log), and the first that gets any answer turns it back.
 */
export class ServerReachability {
  readonly #baseUrl: string;
  readonly #logger: Logger;
  #unreachable: { code: string; reason: string } | undefined;

  constructor(baseUrl: string, logger: Logger) {
    this.#baseUrl = shownUri(baseUrl);
    this.#logger = logger;
  }

  status(): ModelStatus {
    return this.#unreachable
      ? { source: 'server', state: 'unreachable', reason: this.#unreachable.reason }
      : { source: 'server', state: 'ready' };
  }

  /** `fetch` that notes whether each request found the server (an abort says nothing). */
  watch(fetch: typeof globalThis.fetch): typeof globalThis.fetch {
    return async (input, init) => {
      try {
        const response = await fetch(input, init);
        this.#answered();
        return response;
      } catch (error) {
        const code = connectionCode(error);
        if (code && !init?.signal?.aborted) this.#notAnswered(code);
        throw error;
      }
    };
  }

  #answered(): void {
    if (!this.#unreachable) return;
    this.#unreachable = undefined;
    this.#logger.info({ url: this.#baseUrl }, 'the model server (LLM_BASE_URL) answers again');
  }

  #notAnswered(code: string): void {
    if (this.#unreachable?.code === code) return;
    this.#unreachable = {
      code,
      reason:
        `Nothing answers at LLM_BASE_URL (${this.#baseUrl}): ${UNREACHABLE[code]}. ` +
        'Start the model server, or set LLM_BASE_URL to where it listens.',
    };
    this.#logger.warn(
      { url: this.#baseUrl, code },
      'the model server (LLM_BASE_URL) cannot be reached: chats fail until it answers',
    );
  }
}

/** The code of a connection that could not be made (fetch's `TypeError` names it in `cause`). */
function connectionCode(error: unknown): string | undefined {
  const cause = (error as { cause?: { code?: unknown } } | undefined)?.cause;
  const code = typeof cause?.code === 'string' ? cause.code : undefined;
  return code && code in UNREACHABLE ? code : undefined;
}
