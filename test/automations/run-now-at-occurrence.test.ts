import { describe, expect, it } from 'vitest';
import { automationTickAt, call } from '../support/automation-ticks.ts';
import { ENGINES } from '../support/engines.ts';
import { reply } from '../support/fake-llm-server.ts';
import { useReminderStack } from '../support/reminder-stack.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * "Run now" pressed in the very millisecond a scheduled run falls due, before a tick claims
 * it: the press's run is named by that instant, as the scheduled one is. Both must run.
 * Waiting for the two to meet within a millisecond would make a flaky test, so the press is
 * made at that instant while the automation is paused, and the clock moved back a minute to
 * resume it: the tick at the occurrence then finds what it finds in the race, a "run now" run
 * at its instant.
 */
describe.each(ENGINES)('"run now" at a scheduled run’s instant on the %s engine', (engine) => {
  const stack = useReminderStack(engine, { start: '2030-06-03T08:00:00Z' });
  const api = (method: string, path: string, body?: unknown) =>
    call(stack().parley, method, path, body);

  it('leaves the scheduled run in place: both run and reach the user', async () => {
    expect((await stack().putProfile('pressed', { telegram_chat_id: '5501' })).status).toBe(200);
    const made = await api('POST', '/users/pressed/automations', {
      prompt: 'Morning summary',
      schedule: { type: 'daily', time: '09:00' },
    });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const base = `/users/pressed/automations/${made.body.id}`;
    const runs = async () =>
      (
        (await api('GET', `${base}/runs`)).body.runs as Array<{
          manual: boolean;
          occurrence: string;
          status: string;
        }>
      )
        .map((r) => [r.manual, r.occurrence, r.status])
        .sort();
    expect((await api('POST', `${base}/pause`)).status).toBe(200);

    stack().setClock('2030-06-03T09:00:00Z');
    stack().llm.enqueue(reply.text('Pressed by hand.'));
    expect((await api('POST', `${base}/run`)).status).toBe(202);
    await waitFor(async () => (await runs())[0]?.[2] === 'done');

    stack().setClock('2030-06-03T08:59:00Z');
    expect((await api('POST', `${base}/resume`)).body).toMatchObject({
      status: 'active',
      next_run_at: '2030-06-03T09:00:00.000Z',
    });
    stack().llm.enqueue(reply.text('On schedule.'));
    await automationTickAt(stack(), '2030-06-03T09:00:00Z');
    // Either process may run it (the server engine has two).
    await waitFor(async () => (await runs()).filter((r) => r[2] === 'done').length === 2);
    await stack().telegram.waitFor(() => stack().telegram.visibleIn('5501').length === 2);
    expect(stack().telegram.visibleIn('5501')).toEqual([
      '🔁 Morning summary\n\nPressed by hand.',
      '🔁 Morning summary\n\nOn schedule.',
    ]);
    expect(await runs()).toEqual([
      [false, '2030-06-03T09:00:00.000Z', 'done'],
      [true, '2030-06-03T09:00:00.000Z', 'done'],
    ]);
    expect((await api('GET', '/users/pressed/automations')).body.automations[0]).toMatchObject({
      status: 'active',
      next_run_at: '2030-06-04T09:00:00.000Z',
    });
  });
});
