import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { file, ingest, listedSources } from '../support/ingest-client.ts';
import { lockTable, waitForLockWaiter } from '../support/table-lock.ts';
import { startTelegramStack, type TelegramStack } from '../support/telegram-stack.ts';

/**
 * A document sent to the bot while the uploads' line is full (INGEST_QUEUE_MAX) is refused
 * like an upload to POST /ingest, and the user is told so in their words, not that something
 * broke. Only a PostgreSQL server can be held from outside (a lock on the documents table),
 * which keeps the line full for as long as the test needs.
 */
describe('a Telegram document while the uploads wait in a full line', () => {
  let stack: TelegramStack;
  beforeAll(async () => {
    stack = await startTelegramStack('server', { INGEST_CONCURRENCY: '1', INGEST_QUEUE_MAX: '1' });
    await stack.link('erin', 801);
    await stack.link('jiwoo', 802);
  }, 240_000);
  afterAll(async () => {
    await stack?.stop();
  });

  it('is refused with words the user understands, in English and Korean', async () => {
    const { parley, telegram } = stack;
    const databaseUrl = stack.env.DATABASE_URL as string;
    const logged = (msg: string) => parley.logs.filter((line) => line.msg === msg).length;
    const release = await lockTable(databaseUrl, 'documents');
    const uploads: ReturnType<typeof ingest>[] = [];
    try {
      // One upload is being stored (held by the lock), one is extracted and waits for storing
      // in its extraction slot, one waits in the line of one.
      uploads.push(ingest(parley, [file('stored.txt', 'the first upload')]));
      await waitForLockWaiter(databaseUrl);
      const storingQueued = logged('upload queued for storing');
      uploads.push(ingest(parley, [file('extracted.txt', 'the second upload')]));
      await expect.poll(() => logged('upload queued for storing')).toBe(storingQueued + 1);
      const queued = logged('upload queued');
      uploads.push(ingest(parley, [file('waiting.txt', 'the third upload')]));
      await expect.poll(() => logged('upload queued')).toBe(queued + 1);

      for (const [chatId, language, words] of [
        [
          801,
          'en',
          'The document was not added: Parley is busy reading other documents. Send it again in 30 seconds.',
        ],
        [
          802,
          'ko',
          '문서를 추가하지 못했습니다. 지금 다른 문서들을 읽느라 바쁩니다. 잠시 후 다시 보내 주세요.',
        ],
      ] as const) {
        const sent = telegram.addFile(Buffer.from('notes sent while Parley is busy'), 'txt');
        const from = telegram.sentTo(String(chatId)).length;
        telegram.pushUpdateMessage(
          chatId,
          {
            document: {
              file_id: sent.fileId,
              file_unique_id: `busy-${chatId}`,
              file_name: 'notes.txt',
              file_size: sent.size,
            },
          },
          { languageCode: language },
        );
        await telegram.waitFor(() => stack.sentSince(chatId, from).length > 0, 20_000);
        expect(stack.sentSince(chatId, from).map((message) => message.visible)).toEqual([words]);
      }
    } finally {
      await release();
    }
    // The uploads let in are all stored once the lock is gone.
    expect((await Promise.all(uploads)).map((answer) => answer.status)).toEqual([200, 200, 200]);
    expect((await listedSources(parley)).sort()).toEqual([
      'extracted.txt',
      'stored.txt',
      'waiting.txt',
    ]);
    expect(parley.logs.filter((line) => line.level >= 50)).toEqual([]);
  }, 60_000);
});
