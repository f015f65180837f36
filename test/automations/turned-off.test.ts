import { describe, expect, it } from 'vitest';
import { call } from '../support/automation-ticks.ts';
import { ENGINES } from '../support/engines.ts';
import { useReminderStack } from '../support/reminder-stack.ts';

/**
 * An operator turns automations off (AUTOMATIONS_PER_USER=0) after users made some: those are
 * kept (listed, deleted, exported) but nothing runs them, so "run now" is refused in words
 * rather than queued for ever (and then refused as "already queued" at every press).
 */
describe.each(ENGINES)(
  'automations turned off after they were made, on the %s engine',
  (engine) => {
    const stack = useReminderStack(engine, {
      start: '2030-06-01T10:00:00Z',
      env: { AUTOMATIONS_PER_USER: '2' },
    });
    const api = (method: string, path: string, body?: unknown) =>
      call(stack().parley, method, path, body);

    it('keeps them, refuses "run now" with the reason, and lets the user delete them', async () => {
      const made = await api('POST', '/users/kept/automations', {
        prompt: 'Morning news',
        schedule: { type: 'daily', time: '08:00' },
      });
      expect(made.status).toBe(201);
      stack().env.AUTOMATIONS_PER_USER = '0';
      await stack().restart();

      const turnedOff = {
        status: 422,
        body: { detail: expect.stringContaining('turned off on this server') },
      };
      const run = `/users/kept/automations/${made.body.id}/run`;
      expect(await api('POST', run)).toMatchObject(turnedOff);
      expect(await api('POST', run)).toMatchObject(turnedOff); // the same reason, not a 409
      expect(
        await api('POST', '/users/kept/automations', {
          prompt: 'Another',
          schedule: { type: 'daily', time: '09:00' },
        }),
      ).toMatchObject(turnedOff);
      const listed = (await api('GET', '/users/kept/automations')).body.automations;
      expect(listed).toMatchObject([{ id: made.body.id, unread: 0 }]);
      expect((await api('GET', `/users/kept/automations/${made.body.id}/runs`)).body.runs).toEqual(
        [],
      );
      expect((await api('DELETE', `/users/kept/automations/${made.body.id}`)).status).toBe(200);
    });
  },
);
