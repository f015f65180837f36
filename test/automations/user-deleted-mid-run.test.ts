import { describe, expect, it } from 'vitest';
import { call } from '../support/automation-ticks.ts';
import { ENGINES } from '../support/engines.ts';
import { reply } from '../support/fake-llm-server.ts';
import { useReminderStack } from '../support/reminder-stack.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * An administrator deletes a user while one of the user's automations is being answered: the
 * conversation the answer was to go to is gone with the user. That is an ordinary race, not a
 * fault of Parley's: the answer is dropped without an error-level line (an operator's alert)
 * and nothing of the user is left behind.
 */
describe.each(ENGINES)('a user deleted during an automation run on the %s engine', (engine) => {
  const stack = useReminderStack(engine, { start: '2030-05-01T00:00:00Z' });

  it('drops the answer quietly and leaves nothing of the user', async () => {
    const api = (method: string, path: string, body?: unknown) =>
      call(stack().parley, method, path, body);
    expect((await stack().putProfile('leaving', { telegram_chat_id: '5601' })).status).toBe(200);
    const made = await api('POST', '/users/leaving/automations', {
      prompt: 'Summarise my day',
      schedule: { type: 'daily', time: '08:00' },
    });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const chats = stack().llm.chats.length;
    stack().llm.enqueue(reply.text('Your day was quiet.', { pace: () => held }));
    expect((await api('POST', `/users/leaving/automations/${made.body.id}/run`)).status).toBe(202);
    await waitFor(() => stack().llm.chats.length > chats);
    const mark = stack().parley.logs.length;
    expect((await api('DELETE', '/admin/users/leaving')).status).toBe(200);
    release();
    // The chat ends (its answer has nowhere to go) and says so once, as a code.
    await waitFor(
      () =>
        stack()
          .parley.logs.slice(mark)
          .some(
            (l) =>
              l.userId === 'leaving' && /^(chat not stored|could not record)/.test(String(l.msg)),
          ),
      30_000,
    );
    const since = stack().parley.logs.slice(mark);
    expect(since.filter((l) => Number(l.level) >= 50).map((l) => l.msg)).toEqual([]);
    expect(
      since.filter((l) => l.userId === 'leaving' && Number(l.level) >= 40).map((l) => l.msg),
    ).toEqual([]);
    expect(
      since.find((l) => l.msg === 'chat not stored: its conversation was deleted meanwhile'),
    ).toMatchObject({ code: 'conversation_deleted' });
    const exported = (await api('GET', '/users/leaving/export')).body;
    expect(exported).toMatchObject({
      conversations: [],
      messages: [],
      runs: [],
      automations: [],
    });
    expect(stack().telegram.visibleIn('5601')).toEqual([]);
  });
});
