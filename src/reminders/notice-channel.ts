/** How a notice failed to go out, which decides what the scheduler does next. */
export type NoticeFailureKind =
  /** 429: wait `retryAfterSeconds`, for every chat. */
  | 'rate_limited'
  /** 5xx, network, timeout, bad token, unreadable answer: try again later. */
  | 'temporary'
  /** 400/403/404: this chat will never take the message (not found, bot blocked). */
  | 'permanent';

export class NoticeFailure extends Error {
  override readonly name = 'NoticeFailure';
  readonly failure: NoticeFailureKind;
  readonly status: number | undefined;
  readonly retryAfterSeconds: number | undefined;

  constructor(
    failure: NoticeFailureKind,
    message: string,
    details: { status?: number | undefined; retryAfterSeconds?: number | undefined } = {},
  ) {
    super(message);
    this.failure = failure;
    this.status = details.status;
    this.retryAfterSeconds = details.retryAfterSeconds;
  }
}

/**
 * Where notices go: Telegram in production (src/telegram/), its fake in tests. A failure is
 * a NoticeFailure; anything else is treated as unexpected and retried.
 */
export interface NoticeChannel {
  /** `signal` ends the call when the job's budget is spent, before its claim runs out. */
  sendMessage(chatId: string, text: string, signal?: AbortSignal): Promise<unknown>;
}
