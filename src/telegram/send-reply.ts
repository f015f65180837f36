import type { InlineKeyboardMarkup } from 'grammy/types';
import type { Logger } from 'pino';
import { LimitExceededError } from '../accounts/limit-exceeded.ts';
import { AppError } from '../errors.ts';
import { callFailure, type TelegramApi } from './telegram-api.ts';
import { inWords, type Language, textsFor } from './telegram-texts.ts';

/** A short message that must arrive (waits out a 429); a failure is logged, not thrown. */
export async function sendReply(
  telegram: TelegramApi,
  chatId: number,
  text: string,
  logger: Logger,
  buttons?: InlineKeyboardMarkup,
): Promise<void> {
  try {
    await telegram.reliable.sendMessage(chatId, text, {
      link_preview_options: { is_disabled: true },
      ...(buttons ? { reply_markup: buttons } : {}),
    });
  } catch (error) {
    logger.warn({ err: error, status: callFailure(error)?.status }, 'Telegram reply not sent');
  }
}

/**
 * Over a limit (429): the reason and when to try again, in words, in the user's language;
 * undefined otherwise.
 */
export function overLimitText(error: unknown, language: Language): string | undefined {
  if (!AppError.isInstance(error) || error.status !== 429) return undefined;
  const t = textsFor(language);
  const when = inWords(error.retryAfterSeconds ?? 60, language);
  const reason =
    error instanceof LimitExceededError ? t.limitReason[error.limit](error.allowed) : error.message;
  return t.overLimit(reason, when);
}
