import { describe, expect, it } from 'vitest';
import { automationTickAt, call } from '../support/automation-ticks.ts';
import { ENGINES } from '../support/engines.ts';
import { reply } from '../support/fake-llm-server.ts';
import { useReminderStack } from '../support/reminder-stack.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * Parley killed (SIGKILL: no time to let go of anything) under a run that hangs in the model,
 * then started again on the same data. The replica test shows this on PostgreSQL with another
 * process taking over; here it is one process and its restart, on both engines: the run's
 * claim is kept until it runs out (twice the time limit and a minute, 22 minutes here), then
 * the occurrence runs once and reaches the user once.
 */
describe.each(ENGINES)('an automation run killed under way on the %s engine', (engine) => {
  const stack = useReminderStack(engine, { start: '2030-07-01T07:00:00Z' });
  const api = (method: string, path: string, body?: unknown) =>
    call(stack().parley, method, path, body);
  const tick = (iso: string) => automationTickAt(stack(), iso);
  const runsOf = async (userId: string, id: string) =>
    (await api('GET', `/users/${userId}/automations/${id}/runs`)).body.runs as {
      occurrence: string;
      status: string;
      manual: boolean;
      error: string | null;
    }[];

  it('runs a scheduled occurrence once after its claim runs out, not before', async () => {
    expect((await stack().putProfile('killed', { telegram_chat_id: '6101' })).status).toBe(200);
    const made = await api('POST', '/users/killed/automations', {
      prompt: 'Morning brief',
      schedule: { type: 'daily', time: '08:00' },
    });
    expect(made.status).toBe(201);
    stack().llm.enqueue(reply.stall(), reply.text('Brief, after the crash.'));
    stack().setClock('2030-07-01T08:00:00Z');
    await waitFor(() => stack().llm.chats.at(-1)?.outcome === 'pending', 30_000);
    await stack().restart('SIGKILL');

    await tick('2030-07-01T08:10:00Z');
    expect(stack().telegram.visibleIn('6101')).toEqual([]);
    expect(await runsOf('killed', made.body.id)).toMatchObject([{ status: 'running' }]);
    await tick('2030-07-01T08:23:00Z');
    await tick('2030-07-01T08:23:30Z');
    expect(stack().telegram.visibleIn('6101')).toEqual([
      '🔁 Morning brief\n\nBrief, after the crash.',
    ]);
    expect(await runsOf('killed', made.body.id)).toMatchObject([
      { occurrence: '2030-07-01T08:00:00.000Z', status: 'done', manual: false },
    ]);
    expect((await api('POST', `/users/killed/automations/${made.body.id}/pause`)).status).toBe(200);
  });

  it('runs a "run now" run once after its claim runs out; pressed meanwhile, it is busy', async () => {
    stack().setClock('2030-07-02T12:00:00Z');
    expect((await stack().putProfile('killed2', { telegram_chat_id: '6102' })).status).toBe(200);
    const made = await api('POST', '/users/killed2/automations', {
      prompt: 'Weekly plan',
      schedule: { type: 'weekly', days: ['mon'], time: '06:00' },
    });
    expect(made.status).toBe(201);
    const run = `/users/killed2/automations/${made.body.id}/run`;
    const chats = stack().llm.chats.length;
    stack().llm.enqueue(reply.stall(), reply.text('The plan.'));
    expect((await api('POST', run)).status).toBe(202);
    await waitFor(
      () => stack().llm.chats.length > chats && stack().llm.chats.at(-1)?.outcome === 'pending',
      30_000,
    );
    await stack().restart('SIGKILL');

    await tick('2030-07-02T12:10:00Z');
    expect((await api('POST', run)).status).toBe(409);
    expect(stack().telegram.visibleIn('6102')).toEqual([]);
    await tick('2030-07-02T12:23:00Z');
    await tick('2030-07-02T12:23:30Z');
    expect(stack().telegram.visibleIn('6102')).toEqual(['🔁 Weekly plan\n\nThe plan.']);
    expect(await runsOf('killed2', made.body.id)).toMatchObject([{ status: 'done', manual: true }]);
  });
});
