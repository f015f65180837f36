import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type ReminderStack, startReminderStack } from '../support/reminder-stack.ts';
import type { RunningParley } from '../support/start-parley.ts';

/** Starting Parley took over 60 s while this machine was shared; a wait, not a speed check. */
const START_TIMEOUT_MS = 180_000;

/** Only the server engine can be shared: the embedded one belongs to one process. */
describe('two Parley processes on one PostgreSQL database', () => {
  let stack: ReminderStack;
  let second: RunningParley;
  const USERS = Array.from({ length: 12 }, (_, i) => `replica-user-${i}`);

  vi.setConfig({ testTimeout: 180_000 });
  beforeAll(async () => {
    stack = await startReminderStack('server', {
      start: '2030-01-01T00:00:00Z',
      env: { TELEGRAM_POLLING: 'true', TELEGRAM_POLL_TIMEOUT_SECONDS: '2' },
    });
    second = await stack.startAnother();
  }, START_TIMEOUT_MS);
  afterAll(async () => {
    await stack?.stop();
  });

  it('send each notice once, and only one of them polls Telegram', async () => {
    for (const [i, userId] of USERS.entries()) {
      expect((await stack.putProfile(userId, { telegram_chat_id: String(9000 + i) })).status).toBe(
        200,
      );
      await stack.setReminder(userId, { title: `Meeting ${i}`, date: '2030-01-20' });
    }
    // Both processes tick at the same instant, many times over the notices' day.
    for (const time of ['09:00:00', '09:00:01', '09:02:00', '12:00:00']) {
      await stack.tickAt(`2030-01-13T${time}Z`);
    }
    expect(stack.telegram.sent).toHaveLength(USERS.length);
    for (const i of USERS.keys()) expect(stack.telegram.sentTo(String(9000 + i))).toHaveLength(1);
    const sentBy = (p: RunningParley) =>
      p.logs.filter((l) => l.msg === 'reminder notice sent').length;
    expect(sentBy(stack.parley) + sentBy(second)).toBe(USERS.length);

    // Both ran the Telegram poller for this whole test: the fake saw no concurrent getUpdates.
    expect(stack.telegram.conflicts).toBe(0);
    stack.telegram.assertNoUnexpected();
  });
});
