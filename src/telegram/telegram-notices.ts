import { NoticeFailure } from '../reminders/notice-channel.ts';
import { callFailure, grammySignal, type TelegramApi } from './telegram-api.ts';

/** Longest a notice's sendMessage may take; the reminder claim is sized from it. */
const SEND_TIMEOUT_MS = 15_000;

/**
 * Reminder notices over Telegram. Best effort (no retry here): the scheduler keeps its own
 * retry schedule in the database, and a 429 pauses every other send too.
 */
export function telegramNotices(telegram: TelegramApi) {
  return {
    async sendMessage(
      chatId: string,
      text: string,
      signal?: AbortSignal,
    ): Promise<{ messageId: number }> {
      const timeout = AbortSignal.timeout(SEND_TIMEOUT_MS);
      try {
        const sent = await telegram.bestEffort.sendMessage(
          chatId,
          text,
          { link_preview_options: { is_disabled: true } },
          grammySignal(signal ? AbortSignal.any([signal, timeout]) : timeout),
        );
        return { messageId: sent.message_id };
      } catch (error) {
        throw toNoticeFailure(error);
      }
    },
  };
}

export function toNoticeFailure(error: unknown): NoticeFailure {
  const failure = callFailure(error);
  const status = failure?.status;
  const reason =
    status === undefined ? networkReason(error) : `${status} ${failure?.description ?? ''}`;
  const message = `Telegram sendMessage: ${reason.trim()}`;
  if (status === 429) {
    return new NoticeFailure('rate_limited', message, {
      status,
      retryAfterSeconds: failure?.retryAfterSeconds ?? 1,
    });
  }
  // 401 (wrong token) and 409 are the operator's to fix, not the chat's.
  const permanent = status === 400 || status === 403 || status === 404;
  return new NoticeFailure(permanent ? 'permanent' : 'temporary', message, { status });
}

/** Why a call got no Bot API answer: codes only (grammY's messages name the URL's method). */
function networkReason(error: unknown): string {
  const cause = (error as { error?: unknown })?.error;
  if (cause instanceof SyntaxError) return 'unreadable answer'; // a proxy's HTML error page
  if ((cause as { name?: string })?.name === 'AbortError' || String(cause).includes('abort')) {
    return 'timed out';
  }
  const code = (cause as { cause?: { code?: string } })?.cause?.code;
  return `failed: ${code ?? 'network error'}`;
}
