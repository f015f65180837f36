import { describe, expect, it } from 'vitest';
import { automationTickAt, call } from '../support/automation-ticks.ts';
import { ENGINES } from '../support/engines.ts';
import { reply } from '../support/fake-llm-server.ts';
import { useReminderStack } from '../support/reminder-stack.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * Two automations of one user due at the same minute. A user's chats run one at a time, so
 * one waits for the other; the wait must not count against its time limit (here the least,
 * 10 s, and answers of 6 s each): else the second fails, through no fault of its own, and
 * counts towards the pause.
 */
describe.each(ENGINES)(
  'two automations of one user at the same time on the %s engine',
  (engine) => {
    const stack = useReminderStack(engine, {
      start: '2030-08-01T07:00:00Z',
      env: { ANSWER_MAX_SECONDS: '10' },
    });

    it('both run to their end and reach the user', async () => {
      expect((await stack().putProfile('busy', { telegram_chat_id: '6201' })).status).toBe(200);
      const ids: string[] = [];
      for (const prompt of ['News', 'Weather']) {
        const made = await call(stack().parley, 'POST', '/users/busy/automations', {
          prompt,
          schedule: { type: 'daily', time: '08:00' },
        });
        expect(made.status, JSON.stringify(made.body)).toBe(201);
        ids.push(made.body.id);
      }
      const answer = Array.from({ length: 6 }, (_, i) => `word${i}`).join(' ');
      for (let i = 0; i < 2; i++)
        stack().llm.enqueue(reply.text(answer, { chunks: 6, delayMs: 1_000 }));
      await automationTickAt(stack(), '2030-08-01T08:00:00Z');
      const runsOf = async (id: string) =>
        (await call(stack().parley, 'GET', `/users/busy/automations/${id}/runs`)).body.runs as {
          status: string;
          error: string | null;
        }[];
      await waitFor(async () => {
        const all = await Promise.all(ids.map(runsOf));
        return all.every((runs) => ['done', 'failed'].includes(runs[0]?.status ?? ''));
      }, 60_000);
      for (const id of ids)
        expect(await runsOf(id)).toMatchObject([{ status: 'done', error: null }]);
      expect(stack().telegram.visibleIn('6201').sort()).toEqual([
        `🔁 News\n\n${answer}`,
        `🔁 Weather\n\n${answer}`,
      ]);
    });
  },
);
