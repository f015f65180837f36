import { z } from 'zod';
import type { ReminderRepository } from '../../storage/reminder-repository.ts';
import type { App } from '../app-types.ts';
import { userIdSchema } from '../schemas.ts';

const reminderSchema = z.object({
  id: z.uuid(),
  title: z.string(),
  date: z.string().describe('The calendar date of the reminder, YYYY-MM-DD'),
  created_at: z.string(),
  notices_sent: z
    .array(z.enum(['D-7', 'D-1', 'D-0']))
    .describe('The push notices already delivered for this reminder'),
});

export function registerReminderRoutes(app: App, reminders: ReminderRepository): void {
  app.get(
    '/reminders/:user_id',
    {
      schema: {
        summary: "List a user's reminders, soonest first",
        tags: ['reminders'],
        params: z.object({ user_id: userIdSchema }),
        response: {
          200: z.object({ user_id: z.string(), reminders: z.array(reminderSchema) }),
        },
      },
    },
    async (request) => {
      const userId = request.params.user_id;
      const rows = await reminders.listForUser(userId);
      return {
        user_id: userId,
        reminders: rows.map((row) => ({
          id: row.id,
          title: row.title,
          date: row.dueOn,
          created_at: row.createdAt.toISOString(),
          notices_sent: row.noticesSent.map((days) => `D-${days}` as 'D-7' | 'D-1' | 'D-0'),
        })),
      };
    },
  );
}
