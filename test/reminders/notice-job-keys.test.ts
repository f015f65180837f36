import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NOTICE_POLICY, noticeJob } from '../../src/reminders/notice-job.ts';
import { NoticeRepository } from '../../src/storage/notice-repository.ts';
import { ENGINES, type OpenTestDatabase, openTestDatabase } from '../support/engines.ts';

/**
 * A notice's job names it as `<reminder id>/D-<days>`. One that names no notice (a key from
 * elsewhere, a cut or altered one) or a reminder that is gone claims nothing and asks the
 * database nothing it would refuse: no uuid cast of garbage, which would fail the job for
 * ever. Nothing is sent (the channel fails the test if it is called).
 */
describe.each(ENGINES)('the job of a notice, by its key, on the %s engine', (engine) => {
  let opened: OpenTestDatabase | undefined;
  let claim: (key: string) => Promise<unknown>;

  beforeAll(async () => {
    opened = await openTestDatabase(engine);
    const job = noticeJob({
      notices: new NoticeRepository(opened.database.db),
      channel: {
        sendMessage: async () => {
          throw new Error('no notice may be sent here');
        },
      },
      clock: { now: () => new Date('2030-01-01T09:00:00Z') },
      logger: pino({ level: 'silent' }),
      policy: NOTICE_POLICY,
    });
    claim = (key) => job.source.claim(key);
  });
  afterAll(() => opened?.close());

  it.each([
    ['no separator', 'not-a-notice'],
    ['a reminder id that is not a UUID', 'abc/D-7'],
    ['days that are not a notice (D-2)', `${randomUUID()}/D-2`],
    ['days that are not a number', `${randomUUID()}/D-seven`],
    ['no days', `${randomUUID()}/D-`],
    ['a key twice', `${randomUUID()}/D-1/D-1`],
    ['an empty key', ''],
  ])('claims nothing for a key with %s', async (_case, key) => {
    await expect(claim(key)).resolves.toBeUndefined();
  });

  it('claims nothing for the notice of a reminder that does not exist', async () => {
    await expect(claim(`${randomUUID()}/D-7`)).resolves.toBeUndefined();
  });
});
