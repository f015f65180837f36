import type { BotCommand } from 'grammy/types';
import type { Logger } from 'pino';
import { callFailure, type TelegramApi } from './telegram-api.ts';

const COMMANDS: Record<'en' | 'ko', BotCommand[]> = {
  en: [
    { command: 'new', description: 'Start a new conversation' },
    { command: 'chats', description: 'Your conversations, to continue one' },
    { command: 'reminders', description: 'Upcoming reminders' },
    { command: 'help', description: 'What this bot can do' },
    { command: 'stop', description: 'Unlink this chat' },
  ],
  ko: [
    { command: 'new', description: '새 대화 시작' },
    { command: 'chats', description: '내 대화 목록, 이어 가기' },
    { command: 'reminders', description: '다가오는 리마인더' },
    { command: 'help', description: '이 봇으로 할 수 있는 일' },
    { command: 'stop', description: '이 채팅 연결 끊기' },
  ],
};

/** The command menu, in English (the default) and Korean; a failure is only logged. */
export async function registerCommands(telegram: TelegramApi, logger: Logger): Promise<void> {
  try {
    await telegram.bestEffort.setMyCommands(COMMANDS.en);
    await telegram.bestEffort.setMyCommands(COMMANDS.ko, { language_code: 'ko' });
  } catch (error) {
    logger.warn({ err: error, status: callFailure(error)?.status }, 'Telegram commands not set');
  }
}
