import type { InlineKeyboardMarkup } from 'grammy/types';
import type { Logger } from 'pino';
import { splitMessage } from './split-message.ts';
import { grammySignal, isBadMarkup, type TelegramApi } from './telegram-api.ts';
import { toTelegramHtml } from './telegram-html.ts';

/**
 * A finished Markdown text sent as Telegram messages, the way a chat's final answer is
 * (answer-stream.ts): cut into parts Telegram takes, each as Telegram HTML, plain text when
 * Telegram refuses the HTML; each part waits out a 429 (the reliable client). Throws when a
 * part could not be sent; the parts before it have arrived. `buttons` go under the last part.
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
    try {
      await telegram.reliable.sendMessage(
        chatId,
        toTelegramHtml(part),
        { ...options, parse_mode: 'HTML' },
        grammySignal(signal),
      );
    } catch (error) {
      if (!isBadMarkup(error)) throw error;
      logger.warn('Telegram refused the text as HTML: sent as plain text');
      await telegram.reliable.sendMessage(chatId, part, options, grammySignal(signal));
    }
  }
}
