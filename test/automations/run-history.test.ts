import { describe, expect, it } from 'vitest';
import { automationTickAt, call } from '../support/automation-ticks.ts';
import { ENGINES } from '../support/engines.ts';
import { reply } from '../support/fake-llm-server.ts';
import { useReminderStack } from '../support/reminder-stack.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * An automation's history is bounded (AUTOMATION_RUNS_KEPT, here 2): older settled runs are
 * deleted as new ones finish, what was sent stays sent, and a deleted run's occurrence does
 * not run again.
 */
describe.each(ENGINES)('an automation’s run history on the %s engine', (engine) => {
  const stack = useReminderStack(engine, {
    start: '2030-06-03T07:00:00Z',
    env: { AUTOMATION_RUNS_KEPT: '2' },
  });
  const api = (method: string, path: string, body?: unknown) =>
    call(stack().parley, method, path, body);

  it('keeps the newest runs only, and runs a pruned occurrence no second time', async () => {
    expect((await stack().putProfile('keeper', { telegram_chat_id: '5601' })).status).toBe(200);
    const made = await api('POST', '/users/keeper/automations', {
      prompt: 'Morning summary',
      schedule: { type: 'daily', time: '09:00' },
    });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const base = `/users/keeper/automations/${made.body.id}`;
    const runs = async () =>
      (
        (await api('GET', `${base}/runs`)).body.runs as Array<{ manual: boolean; status: string }>
      ).map((run) => `${run.manual ? 'manual' : 'scheduled'} ${run.status}`);

    for (const [at, answer] of [
      ['2030-06-03T08:00:00Z', 'First by hand.'],
      ['2030-06-03T08:30:00Z', 'Second by hand.'],
    ] as const) {
      stack().setClock(at);
      stack().llm.enqueue(reply.text(answer));
      expect((await api('POST', `${base}/run`)).status).toBe(202);
      await waitFor(async () => (await runs())[0] === 'manual done');
    }
    expect(await runs()).toEqual(['manual done', 'manual done']);

    stack().llm.enqueue(reply.text('On schedule.'));
    await automationTickAt(stack(), '2030-06-03T09:00:00Z');
    await waitFor(async () => (await runs())[0] === 'scheduled done');
    // The first run is gone; the two newest are kept.
    expect(await runs()).toEqual(['scheduled done', 'manual done']);
    await stack().telegram.waitFor(() => stack().telegram.visibleIn('5601').length === 3);

    // Another tick at the same instant, and a restart: the 09:00 run is not run again.
    await automationTickAt(stack(), '2030-06-03T09:00:00Z');
    await stack().restart();
    await automationTickAt(stack(), '2030-06-03T09:00:01Z');
    expect(await runs()).toEqual(['scheduled done', 'manual done']);
    expect(stack().telegram.visibleIn('5601')).toEqual([
      '🔁 Morning summary\n\nFirst by hand.',
      '🔁 Morning summary\n\nSecond by hand.',
      '🔁 Morning summary\n\nOn schedule.',
    ]);
    const listed = await api('GET', '/users/keeper/automations');
    expect(listed.body.automations).toMatchObject([{ next_run_at: '2030-06-04T09:00:00.000Z' }]);
  });
});
