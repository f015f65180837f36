/**
 * The two Bot API methods Parley uses (`sendMessage`, `getUpdates`), over plain fetch. See the
 * README for why not grammY. The token is part of every URL, so URLs are never logged or put
 * in an error message.
 */
export type TelegramFailure =
  /** 429: wait `retryAfterSeconds`, for every chat. */
  | 'rate_limited'
  /** 5xx, network, timeout, bad token, unreadable answer: try again later. */
  | 'temporary'
  /** 400/403/404: this chat will never take the message (not found, bot blocked). */
  | 'permanent';

export class TelegramError extends Error {
  override readonly name = 'TelegramError';
  readonly failure: TelegramFailure;
  readonly status: number | undefined;
  readonly retryAfterSeconds: number | undefined;

  constructor(
    failure: TelegramFailure,
    message: string,
    details: { status?: number | undefined; retryAfterSeconds?: number | undefined } = {},
  ) {
    super(message);
    this.failure = failure;
    this.status = details.status;
    this.retryAfterSeconds = details.retryAfterSeconds;
  }
}

export interface TelegramUpdate {
  update_id: number;
  message?: { chat: { id: number }; text?: string; from?: { language_code?: string } };
}

interface BotApiAnswer<T> {
  ok: boolean;
  result?: T;
  error_code?: number;
  description?: string;
  parameters?: { retry_after?: number };
}

export interface TelegramBotApiOptions {
  token: string;
  /** e.g. https://api.telegram.org (no trailing slash needed). */
  baseUrl: string;
  /** Longest a sendMessage may take; the reminder lease is sized from it. */
  timeoutMs?: number;
}

export class TelegramBotApi {
  readonly #base: string;
  readonly #timeoutMs: number;

  constructor(options: TelegramBotApiOptions) {
    this.#base = `${options.baseUrl.replace(/\/+$/, '')}/bot${options.token}`;
    this.#timeoutMs = options.timeoutMs ?? 15_000;
  }

  async sendMessage(chatId: string, text: string): Promise<{ messageId: number }> {
    const result = await this.#call<{ message_id: number }>(
      'sendMessage',
      { chat_id: chatId, text, link_preview_options: { is_disabled: true } },
      this.#timeoutMs,
    );
    return { messageId: result.message_id };
  }

  /** Long polling: waits up to `timeoutSeconds` on Telegram's side for new messages. */
  async getUpdates(
    offset: number,
    timeoutSeconds: number,
    signal?: AbortSignal,
  ): Promise<TelegramUpdate[]> {
    return this.#call<TelegramUpdate[]>(
      'getUpdates',
      { offset, timeout: timeoutSeconds, allowed_updates: ['message'] },
      timeoutSeconds * 1000 + this.#timeoutMs,
      signal,
    );
  }

  async #call<T>(
    method: string,
    body: unknown,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<T> {
    const timeout = AbortSignal.timeout(timeoutMs);
    let response: Response;
    try {
      response = await fetch(`${this.#base}/${method}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
    } catch (error) {
      if (signal?.aborted) throw error;
      const reason = timeout.aborted ? 'timed out' : describeNetworkError(error);
      throw new TelegramError('temporary', `Telegram ${method} ${reason}`);
    }
    let answer: BotApiAnswer<T>;
    try {
      answer = (await response.json()) as BotApiAnswer<T>;
    } catch {
      throw new TelegramError('temporary', `Telegram ${method}: unreadable answer`, {
        status: response.status,
      });
    }
    if (answer.ok && response.ok) return answer.result as T;
    const status = answer.error_code ?? response.status;
    const message = `Telegram ${method}: ${status} ${answer.description ?? ''}`.trim();
    if (status === 429) {
      return Promise.reject(
        new TelegramError('rate_limited', message, {
          status,
          retryAfterSeconds: answer.parameters?.retry_after ?? 1,
        }),
      );
    }
    // 401 (wrong token) and 409 (another getUpdates) are the operator's to fix, not the chat's.
    const permanent = status === 400 || status === 403 || status === 404;
    throw new TelegramError(permanent ? 'permanent' : 'temporary', message, { status });
  }
}

function describeNetworkError(error: unknown): string {
  const cause = (error as { cause?: { code?: string } })?.cause;
  return `failed: ${cause?.code ?? 'network error'}`;
}
