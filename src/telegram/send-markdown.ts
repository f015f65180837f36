import type { InlineKeyboardMarkup } from 'grammy/types';
import type { Logger } from 'pino';
import { partMessage } from './part-message.ts';
import { splitMessage } from './split-message.ts';
import { callFailure, grammySignal, isTextRefused, type TelegramApi } from './telegram-api.ts';

/**
 * A finished Markdown text sent as Telegram messages, the way a chat's final answer is
 * (answer-stream.ts): cut into parts Telegram takes, each as Telegram HTML, plain text when
 * the HTML does not fit or Telegram refuses it; each part waits out a 429 (the reliable
 * client). Throws when a part could not be sent; the parts before it have arrived. `buttons`
 * go under the last part.
 */
export async function sendMarkdown(
  telegram: TelegramApi,
  chatId: string,
  markdown: string,
  signal: AbortSignal,
  logger: Logger,
  buttons?: InlineKeyboardMarkup,
): Promise<void> {
  const parts = splitMessage(markdown);
  for (const [index, part] of parts.entries()) {
    const options = {
      link_preview_options: { is_disabled: true },
      ...(buttons && index === parts.length - 1 ? { reply_markup: buttons } : {}),
    };
    const message = partMessage(part);
    try {
      await telegram.reliable.sendMessage(
        chatId,
        message.text,
        { ...options, ...(message.html ? { parse_mode: 'HTML' as const } : {}) },
        grammySignal(signal),
      );
    } catch (error) {
      if (!message.html || !isTextRefused(error)) throw error;
      logger.warn(
        { reason: callFailure(error)?.description },
        'Telegram refused the text as HTML: sent as plain text',
      );
      await telegram.reliable.sendMessage(chatId, part, options, grammySignal(signal));
    }
  }
}
