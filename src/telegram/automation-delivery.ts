import type { Logger } from 'pino';
import type { AutomationDelivery } from '../automations/run-automation.ts';
import { sendMarkdown } from './send-markdown.ts';
import type { TelegramApi } from './telegram-api.ts';

/** Automations' results and notices as Telegram messages, sent like a chat's final answer. */
export function telegramAutomationDelivery(
  telegram: TelegramApi,
  logger: Logger,
): AutomationDelivery {
  return {
    send: (chatId, markdown, signal) => sendMarkdown(telegram, chatId, markdown, signal, logger),
  };
}
