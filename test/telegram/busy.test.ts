import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reply } from '../support/fake-llm-server.ts';
import { lockMessages, waitForLockWaiter } from '../support/table-lock.ts';
import { startTelegramStack, type TelegramStack } from '../support/telegram-stack.ts';

// Only a PostgreSQL server can be held from outside (a lock) at the moment an answer under way
// needs the database again; on the embedded engine that moment cannot be chosen.
describe('a Telegram answer that cannot store itself because Parley is busy', () => {
  let stack: TelegramStack;
  beforeAll(async () => {
    stack = await startTelegramStack('server', { DB_POOL_MAX: '1', DB_POOL_WAIT_MS: '1000' });
    // One user each: the user whose answer failed gets their turn back only once the database
    // answers again (releasing it needs the database too).
    await stack.link('erin', 701);
    await stack.link('jiwoo', 702);
  }, 240_000);
  afterAll(async () => {
    await stack?.stop();
  });

  it.each([
    ['en', 701, 'Parley is busy; try again in a few seconds.'],
    ['ko', 702, '지금 요청이 많아 바쁩니다. 잠시 후 다시 시도해 주세요.'],
  ])(
    'says so in the %s client’s words, not that the database is unavailable',
    async (language, chat, words) => {
      const databaseUrl = stack.env.DATABASE_URL as string;
      let letAnswer: () => void = () => {};
      const answering = new Promise<void>((resolve) => {
        letAnswer = resolve;
      });
      const chats = stack.llm.chats.length;
      stack.llm.enqueue(reply.text('late answer', { pace: () => answering }));
      const from = stack.telegram.sentTo(String(chat)).length;
      stack.telegram.pushMessage(chat, 'hello', language);
      await expect.poll(() => stack.llm.chats.length, { timeout: 20_000 }).toBe(chats + 1);

      // A chat on the HTTP door now holds the only connection, waiting for the history table.
      const release = await lockMessages(databaseUrl);
      try {
        stack.llm.enqueue(reply.text('other answer'));
        const holder = stack.parley.fetch('/chat', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ message: 'hold', user_id: `holder-${language}` }),
        });
        await waitForLockWaiter(databaseUrl);
        letAnswer();
        await stack.telegram.waitFor(() =>
          stack.sentSince(chat, from).some((m) => m.visible.includes(words)),
        );
        await release();
        await (await holder).text();
      } finally {
        await release().catch(() => {});
      }
      const shown = stack
        .sentSince(chat, from)
        .map((m) => m.visible)
        .join('\n');
      expect(shown).not.toMatch(/database|데이터베이스/i);
    },
    60_000,
  );
});
