import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { automationTickAt, call } from '../support/automation-ticks.ts';
import { changeFromOutside } from '../support/change-from-outside.ts';
import { ENGINES } from '../support/engines.ts';
import { reply } from '../support/fake-llm-server.ts';
import { type ReminderStack, startReminderStack } from '../support/reminder-stack.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * An automation whose stored schedule cannot be worked out any more (here a timezone no
 * runtime knows, as one a future Node drops would be) must not stop everyone's: the tick threw
 * at it, every time, and no automation of any user ran again. The API refuses such a timezone,
 * so only a row changed from outside makes one: on a PostgreSQL server while Parley runs, on
 * the embedded engine while it is stopped (its tick then meets the row after a start).
 */
describe.each(ENGINES)(
  'an automation whose schedule cannot be worked out, on the %s engine',
  (engine) => {
    let stack: ReminderStack;
    vi.setConfig({ testTimeout: 180_000 });
    beforeAll(async () => {
      stack = await startReminderStack(engine, { start: '2030-08-01T07:00:00Z' });
    }, 180_000);
    afterAll(async () => {
      await stack?.stop();
    });

    it('is passed over with a warning; the others run', async () => {
      const make = async (user: string, time: string) => {
        const made = await call(stack.parley, 'POST', `/users/${user}/automations`, {
          prompt: 'News',
          schedule: { type: 'daily', time },
        });
        expect(made.status, JSON.stringify(made.body)).toBe(201);
        return made.body.id as string;
      };
      // The broken one comes first in the tick's order (due earlier).
      const broken = await make('mars', '07:30');
      const fine = await make('earth', '08:00');
      await changeFromOutside(
        engine,
        { ...stack, restart: (whileStopped) => stack.restart('SIGTERM', whileStopped) },
        [
          {
            text: "UPDATE automations SET timezone = 'Mars/Olympus_Mons' WHERE id = $1",
            values: [broken],
          },
        ],
      );
      stack.llm.enqueue(reply.text('Fine news.'));
      await automationTickAt(stack, '2030-08-01T08:00:00Z');
      await waitFor(async () => {
        const runs = (await call(stack.parley, 'GET', `/users/earth/automations/${fine}/runs`)).body
          .runs as { status: string }[];
        return runs[0]?.status === 'done';
      }, 30_000);
      const passedOver = stack.parley.logs.filter(
        (line) => line.msg === 'automation passed over: its schedule cannot be worked out',
      );
      expect(passedOver[0]).toMatchObject({ automationId: broken, errorName: 'RangeError' });
      // Its owner still sees it listed, with the rest.
      const listed = await call(stack.parley, 'GET', '/users/mars/automations');
      expect(listed.status).toBe(200);
      expect(listed.body.automations.map((a: { id: string }) => a.id)).toEqual([broken]);
      expect(stack.parley.logs.filter((line) => line.level >= 50)).toEqual([]);
      stack.llm.assertNoUnexpected();
    });
  },
);
