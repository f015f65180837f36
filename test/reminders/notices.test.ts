import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ENGINES } from '../support/engines.ts';
import { type ReminderStack, startReminderStack } from '../support/reminder-stack.ts';

/** Starting Parley took over 60 s while this machine was shared; a wait, not a speed check. */
const START_TIMEOUT_MS = 180_000;

/**
 * The scheduler seen from outside: time moves only when a test moves the clock file, notices
 * arrive at a fake Telegram. Each scenario lives in its own month, after the previous one's
 * reminders are over, so scenarios never see each other's notices.
 */
describe.each(ENGINES)('reminder notices on the %s engine', (engine) => {
  let stack: ReminderStack;
  const texts = (chatId: string) => stack.telegram.sentTo(chatId).map((m) => m.text);
  const requestsTo = (chatId: string) =>
    stack.telegram.sendRequests.filter(
      (r) => String((r.body as { chat_id: unknown }).chat_id) === chatId,
    ).length;
  const profile = async (userId: string, body: Record<string, unknown>) => {
    const response = await stack.putProfile(userId, body);
    expect(response.status).toBe(200);
  };

  // Each scenario steps through a dozen ticks, each at once (Parley watches the clock file);
  // a shared machine may still be slow.
  vi.setConfig({ testTimeout: 120_000 });
  beforeAll(async () => {
    stack = await startReminderStack(engine, { start: '2030-01-01T00:00:00Z' });
  }, START_TIMEOUT_MS);
  afterEach(() => {
    stack.telegram.assertNoUnexpected();
    stack.llm.assertNoUnexpected();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('sends D-7, D-1 and D-0 each exactly once, at 09:00 where the user is, in Korean', async () => {
    await profile('seoul', { timezone: 'Asia/Seoul', telegram_chat_id: '1001' });
    const reminder = await stack.setReminder('seoul', {
      title: '치과 예약',
      date: '2030-01-20',
      time: '15:00',
      note: '보험증 챙기기',
    });
    expect(reminder).toMatchObject({
      timezone: 'Asia/Seoul',
      time: '15:00',
      note: '보험증 챙기기',
    });

    await stack.tickAt('2030-01-12T23:59:00Z'); // 08:59 in Seoul on D-7
    expect(texts('1001')).toEqual([]);
    await stack.tickAt('2030-01-13T00:00:00Z'); // 09:00 in Seoul
    expect(texts('1001')).toEqual([
      '🔔 리마인더 (D-7): 치과 예약\n📅 2030-01-20 (일) 15:00\n7일 남았습니다.\n📝 보험증 챙기기',
    ]);
    await stack.tickAt('2030-01-13T06:00:00Z');
    await stack.tickAt('2030-01-18T23:59:59Z');
    expect(texts('1001')).toHaveLength(1);
    await stack.tickAt('2030-01-19T00:00:00Z');
    expect(texts('1001')[1]).toContain('내일입니다.');
    await stack.tickAt('2030-01-19T12:00:00Z');
    await stack.tickAt('2030-01-20T00:00:00Z');
    await stack.tickAt('2030-01-20T04:00:00Z');
    await stack.tickAt('2030-01-21T00:00:00Z');
    expect(texts('1001')).toHaveLength(3);
    expect(texts('1001')[2]).toContain('오늘입니다.');

    const [stored] = await stack.reminders('seoul');
    expect(stored?.notices_sent).toEqual(['D-7', 'D-1', 'D-0']);
    expect(stored?.notices).toEqual([
      { notice: 'D-7', status: 'sent', sent_at: '2030-01-13T00:00:00.000Z' },
      { notice: 'D-1', status: 'sent', sent_at: '2030-01-19T00:00:00.000Z' },
      { notice: 'D-0', status: 'sent', sent_at: '2030-01-20T00:00:00.000Z' },
    ]);
  });

  it('keeps each user’s calendar day on both sides of midnight (Seoul, Los Angeles)', async () => {
    await stack.tickAt('2030-02-01T00:00:00Z');
    await profile('tz-seoul', { timezone: 'Asia/Seoul', telegram_chat_id: 2001 });
    await profile('tz-la', { timezone: 'America/Los_Angeles', telegram_chat_id: '2002' });
    await stack.setReminder('tz-seoul', { title: 'Flight', date: '2030-02-10' });
    await stack.setReminder('tz-la', { title: 'Flight', date: '2030-02-10' });

    await stack.tickAt('2030-02-03T00:00:00Z'); // Seoul: Feb 3 09:00; LA: Feb 2 16:00
    expect([texts('2001').length, texts('2002').length]).toEqual([1, 0]);
    await stack.tickAt('2030-02-03T16:59:00Z'); // LA: Feb 3 08:59
    expect(texts('2002')).toEqual([]);
    await stack.tickAt('2030-02-03T17:00:00Z'); // LA: Feb 3 09:00
    expect(texts('2002')).toEqual(['🔔 Reminder (D-7): Flight\n📅 Sun 2030-02-10\nIn 7 days.']);

    // Nothing ran from Feb 3 to Feb 10 00:00 UTC (the service was down). Seoul is at 09:00 on
    // the day itself: only D-0 goes out, the missed D-1 is superseded. LA is at 16:00 on Feb 9:
    // its D-1 is the latest due, and goes out late rather than never.
    await stack.tickAt('2030-02-10T00:00:00Z');
    expect(texts('2001').slice(1)).toEqual([
      '🔔 Reminder (D-0): Flight\n📅 Sun 2030-02-10\nToday.',
    ]);
    expect(texts('2002').slice(1)).toEqual([
      '🔔 Reminder (D-1): Flight\n📅 Sun 2030-02-10\nTomorrow.',
    ]);
    await stack.tickAt('2030-02-10T16:59:00Z');
    expect(texts('2002')).toHaveLength(2);
    await stack.tickAt('2030-02-10T17:00:00Z');
    await stack.tickAt('2030-02-11T12:00:00Z');
    expect(texts('2001')).toHaveLength(2);
    expect(texts('2002')).toHaveLength(3);
    expect((await stack.reminders('tz-seoul'))[0]?.notices_sent).toEqual(['D-7', 'D-0']);
  });

  it('gives a reminder set for tomorrow D-1 at once and D-0, one for today D-0 at once', async () => {
    await stack.tickAt('2030-03-01T12:00:00Z');
    await profile('soon', { telegram_chat_id: '3001' });
    await stack.setReminder('soon', { title: 'Tomorrow thing', date: '2030-03-02' });
    await stack.setReminder('soon', { title: 'Today thing', date: '2030-03-01', time: '18:30' });
    await stack.tickAt('2030-03-01T12:00:01Z');
    expect(texts('3001').sort()).toEqual([
      '🔔 Reminder (D-0): Today thing\n📅 Fri 2030-03-01 18:30\nToday.',
      '🔔 Reminder (D-1): Tomorrow thing\n📅 Sat 2030-03-02\nTomorrow.',
    ]);
    await stack.tickAt('2030-03-02T08:59:00Z');
    expect(texts('3001')).toHaveLength(2);
    await stack.tickAt('2030-03-02T09:00:00Z');
    await stack.tickAt('2030-03-03T09:00:00Z');
    expect(texts('3001')).toHaveLength(3);
  });

  it('loses no notice and sends none twice through an hour-long Telegram outage', async () => {
    await stack.tickAt('2030-04-01T00:00:00Z');
    await profile('outage', { telegram_chat_id: '4001' });
    await stack.setReminder('outage', { title: 'Taxes', date: '2030-04-10' });
    stack.telegram.down = true;
    await stack.tickAt('2030-04-03T09:00:00Z');
    expect(requestsTo('4001')).toBe(1);
    const [failing] = await stack.reminders('outage');
    expect(failing?.notices).toEqual([
      { notice: 'D-7', status: 'retry', error: 'Telegram sendMessage: unreadable answer' },
    ]);
    await stack.tickAt('2030-04-03T09:00:30Z'); // backoff: not before a minute has passed
    expect(requestsTo('4001')).toBe(1);
    for (const time of ['09:01:00', '09:03:00', '09:30:00', '10:00:00']) {
      await stack.tickAt(`2030-04-03T${time}Z`);
    }
    expect(requestsTo('4001')).toBe(5);
    stack.telegram.down = false;
    await stack.tickAt('2030-04-03T10:15:00Z'); // backoff capped at 15 minutes
    await stack.tickAt('2030-04-03T11:00:00Z');
    expect(texts('4001')).toEqual(['🔔 Reminder (D-7): Taxes\n📅 Wed 2030-04-10\nIn 7 days.']);
    expect((await stack.reminders('outage'))[0]?.notices).toEqual([
      { notice: 'D-7', status: 'sent', sent_at: '2030-04-03T10:15:00.000Z' },
    ]);
  });

  it('waits as long as a 429 says before sending again', async () => {
    await stack.tickAt('2030-05-01T00:00:00Z');
    await profile('limited', { telegram_chat_id: '5001' });
    await stack.setReminder('limited', { title: 'Rent', date: '2030-05-10' });
    stack.telegram.failNext({
      kind: 'error',
      status: 429,
      description: 'Too Many Requests: retry after 30',
      retryAfter: 30,
    });
    await stack.tickAt('2030-05-03T09:00:00Z');
    await stack.tickAt('2030-05-03T09:00:29Z');
    expect([requestsTo('5001'), texts('5001').length]).toEqual([1, 0]);
    await stack.tickAt('2030-05-03T09:00:30Z');
    await stack.tickAt('2030-05-03T09:05:00Z');
    expect([requestsTo('5001'), texts('5001').length]).toEqual([2, 1]);
  });

  it('records a blocked bot as failed and does not retry it; no chat as undeliverable', async () => {
    await stack.tickAt('2030-06-01T00:00:00Z');
    await profile('blocker', { telegram_chat_id: '6001' });
    stack.telegram.blocked.add('6001');
    await stack.setReminder('blocker', { title: 'Gym', date: '2030-06-10' });
    await stack.setReminder('nochat', { title: 'Lost', date: '2030-06-10' });
    await stack.tickAt('2030-06-03T09:00:00Z');
    await stack.tickAt('2030-06-03T12:00:00Z');
    await stack.tickAt('2030-06-04T09:00:00Z');
    expect(requestsTo('6001')).toBe(1);
    expect((await stack.reminders('blocker'))[0]?.notices).toEqual([
      {
        notice: 'D-7',
        status: 'failed',
        error: 'Telegram sendMessage: 403 Forbidden: bot was blocked by the user',
      },
    ]);
    expect((await stack.reminders('nochat'))[0]?.notices).toEqual([
      { notice: 'D-7', status: 'undeliverable', error: 'no Telegram chat linked' },
    ]);
    // The administrator sees both among the failed jobs: why, never the reminder's title.
    const failed = await stack.parley.fetch('/admin/jobs?state=failed');
    const listed = await failed.text();
    expect(listed).not.toContain('Gym');
    const jobs = (
      JSON.parse(listed) as { jobs: { kind: string; user_id: string; error_kind: string }[] }
    ).jobs;
    const mine = jobs.filter((job) => job.user_id === 'blocker' || job.user_id === 'nochat');
    expect(mine.map((job) => [job.kind, job.user_id, job.error_kind]).sort()).toEqual([
      ['reminder_notice', 'blocker', 'http_403'],
      ['reminder_notice', 'nochat', 'no_chat'],
    ]);
    await stack.tickAt('2030-06-09T09:00:00Z'); // D-1 is a new notice: tried once, refused
    await stack.tickAt('2030-06-09T10:00:00Z');
    expect(requestsTo('6001')).toBe(2);
    const undeliverable = stack.parley.logs.filter(
      (l) => l.msg === 'reminder notice undeliverable: no Telegram chat',
    );
    expect(undeliverable).toHaveLength(2); // once per notice (D-7, D-1), not once per tick
  });

  it('keeps reminders per user: DELETE answers 404 for another user’s or an unknown one', async () => {
    await stack.tickAt('2030-07-01T00:00:00Z');
    await profile('alice', { telegram_chat_id: '7001' });
    const keep = await stack.setReminder('alice', {
      title: 'private-title-5c1e',
      date: '2030-07-20',
    });
    const drop = await stack.setReminder('alice', { title: 'Cancelled', date: '2030-07-20' });
    await stack.setReminder('bob', { title: 'Bob’s', date: '2030-07-21' });

    const del = (path: string) => stack.parley.fetch(path, { method: 'DELETE' });
    const other = await del(`/reminders/bob/${keep.id}`);
    expect(other.status).toBe(404);
    expect(await other.json()).toEqual({ detail: `No reminder ${keep.id} for this user.` });
    expect((await del(`/reminders/alice/${randomUUID()}`)).status).toBe(404);
    const malformed = await del('/reminders/alice/not-an-id');
    expect(malformed.status).toBe(422);
    expect(await malformed.json()).toMatchObject({ detail: [{ loc: ['path', 'id'] }] });
    const own = await del(`/reminders/alice/${drop.id}`);
    expect([own.status, await own.json()]).toEqual([200, { deleted: drop.id }]);
    expect((await del(`/reminders/alice/${drop.id}`)).status).toBe(404);

    expect((await stack.reminders('alice')).map((r) => r.title)).toEqual(['private-title-5c1e']);
    expect((await stack.reminders('bob')).map((r) => r.title)).toEqual(['Bob’s']);
    await stack.tickAt('2030-07-13T09:00:00Z');
    expect(texts('7001')).toEqual([
      '🔔 Reminder (D-7): private-title-5c1e\n📅 Sat 2030-07-20\nIn 7 days.',
    ]);
    // The title went to Telegram, never into the log.
    expect(stack.parley.output()).not.toContain('private-title');
  });

  it('sends a notice falling in an hour the clocks skip or repeat at its first minute', async () => {
    await stack.tickAt('2030-09-01T00:00:00Z');
    await profile('santiago', { timezone: 'America/Santiago', telegram_chat_id: '8001' });
    await profile('sydney', { timezone: 'Australia/Sydney', telegram_chat_id: '8002' });
    await profile('berlin', { timezone: 'Europe/Berlin', telegram_chat_id: '8003' });
    // D-0 an hour before: Santiago's 00:00 on Sep 8 is skipped (23:59 → 01:00), Sydney's 02:30
    // on Oct 6 too (01:59 → 03:00), Berlin's 02:30 on Oct 27 happens twice (CEST, then CET).
    await stack.setReminder('santiago', { title: 'Train', date: '2030-09-08', time: '00:30' });
    await stack.setReminder('sydney', { title: 'Ferry', date: '2030-10-06', time: '03:30' });
    await stack.setReminder('berlin', { title: 'Flight', date: '2030-10-27', time: '03:30' });
    const last = (chatId: string) => texts(chatId).at(-1)?.split('\n')[0];

    await stack.tickAt('2030-09-08T03:00:00Z'); // 23:00 on Sep 7 in Santiago: not yet D-0
    expect(last('8001')).toBe('🔔 Reminder (D-1): Train');
    await stack.tickAt('2030-09-08T04:00:00Z'); // 01:00, the first minute of Sep 8
    expect(last('8001')).toBe('🔔 Reminder (D-0): Train');
    await stack.tickAt('2030-10-05T16:00:00Z'); // 03:00 AEDT
    expect(last('8002')).toBe('🔔 Reminder (D-0): Ferry');
    await stack.tickAt('2030-10-27T00:30:00Z'); // the first 02:30, CEST
    expect(last('8003')).toBe('🔔 Reminder (D-0): Flight');
  });
});
