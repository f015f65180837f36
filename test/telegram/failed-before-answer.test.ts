import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lockTable } from '../support/table-lock.ts';
import { startTelegramStack, type TelegramStack } from '../support/telegram-stack.ts';

/**
 * A message whose handling fails before an answer starts (here: the bot's table of linked
 * chats is locked longer than Parley's sessions wait for a lock) was logged and never
 * answered: the user saw nothing, as if ignored. Now they are told something went wrong.
 * Only a PostgreSQL server can be held from outside at that moment (a lock, and PGOPTIONS
 * giving Parley's sessions a lock_timeout); the embedded engine has no outside client.
 */
describe('a Telegram message that fails before its answer starts', () => {
  let stack: TelegramStack;
  beforeAll(async () => {
    stack = await startTelegramStack('server', { PGOPTIONS: '-c lock_timeout=1000' });
    await stack.link('noor', 811);
    await stack.link('minji', 812);
  }, 240_000);
  afterAll(async () => {
    await stack?.stop();
  });

  it.each([
    ['en', 811, 'Something went wrong while answering.'],
    ['ko', 812, '답하는 중에 문제가 생겼습니다.'],
  ])(
    'tells the %s client so instead of saying nothing',
    async (language, chat, words) => {
      const chats = stack.llm.chats.length;
      const from = stack.telegram.sentTo(String(chat)).length;
      const release = await lockTable(stack.env.DATABASE_URL as string, 'telegram_chats');
      try {
        stack.telegram.pushMessage(chat, 'hello', language);
        await stack.telegram.waitFor(() =>
          stack.sentSince(chat, from).some((m) => m.visible.includes(words)),
        );
      } finally {
        await release();
      }
      expect(stack.sentSince(chat, from)).toHaveLength(1);
      expect(stack.llm.chats.length).toBe(chats); // nothing was asked of the model
    },
    60_000,
  );
});
