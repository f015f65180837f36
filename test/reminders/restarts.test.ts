import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ENGINES } from '../support/engines.ts';
import { type ReminderStack, startReminderStack } from '../support/reminder-stack.ts';

/** Starting Parley took over 60 s while this machine was shared; a wait, not a speed check. */
const START_TIMEOUT_MS = 180_000;

describe.each(ENGINES)('reminder notices across restarts on the %s engine', (engine) => {
  let stack: ReminderStack;
  const texts = (chatId: string) => stack.telegram.sentTo(chatId).map((m) => m.text);
  const requestsTo = (chatId: string) =>
    stack.telegram.sendRequests.filter(
      (r) => String((r.body as { chat_id: unknown }).chat_id) === chatId,
    ).length;

  vi.setConfig({ testTimeout: 180_000 });
  beforeAll(async () => {
    stack = await startReminderStack(engine, { start: '2030-01-01T00:00:00Z' });
  }, START_TIMEOUT_MS);
  afterEach(() => stack.telegram.assertNoUnexpected());
  afterAll(async () => {
    await stack?.stop();
  });

  it('sends a notice once when the service restarts between ticks', async () => {
    expect((await stack.putProfile('restart', { telegram_chat_id: '8001' })).status).toBe(200);
    await stack.setReminder('restart', { title: 'Visa', date: '2030-01-20' });
    await stack.tickAt('2030-01-13T09:00:00Z');
    expect(texts('8001')).toHaveLength(1);
    expect(await stack.restart()).toBe(0); // the scheduler stopped cleanly with the server
    await stack.tickAt('2030-01-13T09:05:00Z');
    await stack.tickAt('2030-01-14T09:00:00Z');
    expect(texts('8001')).toHaveLength(1);
    await stack.tickAt('2030-01-19T09:00:00Z');
    expect(texts('8001')).toHaveLength(2);
    expect(texts('8001')[1]).toContain('(D-1)');
  });

  it('sends a notice claimed by a process killed mid-send once its claim runs out', async () => {
    await stack.tickAt('2030-02-01T00:00:00Z');
    expect((await stack.putProfile('crash', { telegram_chat_id: '8002' })).status).toBe(200);
    await stack.setReminder('crash', { title: 'Passport', date: '2030-02-10' });

    // Telegram takes the request and never answers; the process dies while waiting.
    stack.telegram.failNext({ kind: 'hang' });
    stack.setClock('2030-02-03T09:00:00Z');
    await stack.telegram.waitFor(() => requestsTo('8002') === 1);
    await stack.restart('SIGKILL');
    expect((await stack.reminders('crash'))[0]?.notices).toEqual([
      { notice: 'D-7', status: 'sending' },
    ]);

    // The claim is owned for 2 minutes: nobody sends it meanwhile...
    await stack.tickAt('2030-02-03T09:01:59Z');
    expect(requestsTo('8002')).toBe(1);
    // ...then it is taken over and sent, once.
    await stack.tickAt('2030-02-03T09:02:00Z');
    await stack.tickAt('2030-02-03T09:30:00Z');
    expect(requestsTo('8002')).toBe(2);
    expect(texts('8002')).toEqual(['🔔 Reminder (D-7): Passport\n📅 Sun 2030-02-10\nIn 7 days.']);
    expect((await stack.reminders('crash'))[0]?.notices).toEqual([
      { notice: 'D-7', status: 'sent', sent_at: '2030-02-03T09:02:00.000Z' },
    ]);
  });
});
