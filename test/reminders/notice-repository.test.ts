import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/storage/database.ts';
import { NoticeRepository } from '../../src/storage/notice-repository.ts';
import { ENGINES, type OpenTestDatabase, openTestDatabase } from '../support/engines.ts';

/**
 * What GET /reminders shows of a notice not sent yet is its last real failure. A notice can
 * also be handed back untried (Parley stopping mid-drain, a pause after a 429, too late in
 * its lease); that is not a failure and must neither replace the error nor count an attempt.
 */
describe.each(ENGINES)('a notice handed back untried, on the %s engine', (engine) => {
  let opened: OpenTestDatabase | undefined;
  let database: Database;
  let notices: NoticeRepository;

  beforeAll(async () => {
    opened = await openTestDatabase(engine);
    database = opened.database;
    notices = new NoticeRepository(database.db);
  });
  afterAll(() => opened?.close());

  const sql = (text: string, values: unknown[]) => database.db.$client.query(text, values);
  const stored = async (reminderId: string) =>
    (
      await sql(
        'SELECT status, attempts, last_error FROM reminder_notices WHERE reminder_id = $1',
        [reminderId],
      )
    ).rows[0];

  it('keeps the error of its last attempt and its attempt count', async () => {
    const reminderId = randomUUID();
    await sql(
      `INSERT INTO reminders (id, user_id, title, due_on) VALUES ($1, 'notice-owner', 'Taxes', '2030-04-10')`,
      [reminderId],
    );
    const claimed = () =>
      sql(
        `INSERT INTO reminder_notices (reminder_id, days_before, status) VALUES ($1, 7, 'sending')
         ON CONFLICT (reminder_id, days_before) DO UPDATE SET status = 'sending'`,
        [reminderId],
      );
    const key = { reminderId, daysBefore: 7 };
    const later = new Date(Date.now() + 60_000);

    await claimed();
    await notices.markRetry(key, later, 'Telegram sendMessage: unreadable answer');
    expect(await stored(reminderId)).toEqual({
      status: 'retry',
      attempts: 1,
      last_error: 'Telegram sendMessage: unreadable answer',
    });

    await claimed();
    await notices.markRetry(key, later); // handed back untried
    expect(await stored(reminderId)).toEqual({
      status: 'retry',
      attempts: 1,
      last_error: 'Telegram sendMessage: unreadable answer',
    });
  });
});
