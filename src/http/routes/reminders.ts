import { z } from 'zod';
import type { ReminderService } from '../../reminders/reminder-service.ts';
import type { App } from '../app-types.ts';
import { errorResponses, PER_USER } from '../error-responses.ts';
import { userIdSchema } from '../schemas.ts';

const reminderSchema = z.object({
  id: z.uuid(),
  title: z.string(),
  date: z.string().describe('The calendar date of the reminder, YYYY-MM-DD'),
  time: z.string().optional().describe('Local time of day, HH:MM, when set'),
  timezone: z.string().describe('The IANA timezone the date and time are in'),
  note: z.string().optional(),
  created_at: z.string(),
  notices_sent: z
    .array(z.enum(['D-7', 'D-1', 'D-0']))
    .describe('The push notices already delivered for this reminder'),
  notices: z
    .array(
      z.object({
        notice: z.enum(['D-7', 'D-1', 'D-0']),
        status: z.enum(['sending', 'retry', 'sent', 'failed', 'undeliverable']),
        sent_at: z.string().optional().describe('When Telegram accepted it'),
        error: z.string().optional().describe('Why it was not delivered (yet)'),
      }),
    )
    .describe('Every notice the scheduler has taken up, and what became of it'),
});

type Offset = 'D-7' | 'D-1' | 'D-0';
const offset = (days: number) => `D-${days}` as Offset;

export function registerReminderRoutes(app: App, reminders: ReminderService): void {
  app.get(
    '/reminders/:user_id',
    {
      schema: {
        summary: "List a user's reminders, soonest first",
        tags: ['reminders'],
        params: z.object({ user_id: userIdSchema }),
        response: {
          200: z.object({ user_id: z.string(), reminders: z.array(reminderSchema) }),
          ...errorResponses(...PER_USER, 422),
        },
      },
    },
    async (request) => {
      const userId = request.params.user_id;
      const rows = await reminders.list(userId);
      return {
        user_id: userId,
        reminders: rows.map((row) => ({
          id: row.id,
          title: row.title,
          date: row.dueOn,
          ...(row.time ? { time: row.time } : {}),
          timezone: row.timezone,
          ...(row.note ? { note: row.note } : {}),
          created_at: row.createdAt.toISOString(),
          notices_sent: row.notices
            .filter((n) => n.status === 'sent')
            .map((n) => offset(n.daysBefore)),
          notices: row.notices.map((n) => ({
            notice: offset(n.daysBefore),
            status: n.status,
            ...(n.sentAt ? { sent_at: n.sentAt.toISOString() } : {}),
            ...(n.lastError && n.status !== 'sent' ? { error: n.lastError } : {}),
          })),
        })),
      };
    },
  );

  app.delete(
    '/reminders/:user_id/:id',
    {
      schema: {
        summary: "Cancel one of a user's reminders (no more notices)",
        tags: ['reminders'],
        params: z.object({
          user_id: userIdSchema,
          id: z.uuid({ message: 'must be a reminder id' }),
        }),
        response: {
          200: z.object({ deleted: z.uuid() }),
          ...errorResponses(...PER_USER, 404, 422),
        },
      },
    },
    async (request) => {
      await reminders.cancel(request.params.user_id, request.params.id);
      return { deleted: request.params.id };
    },
  );
}
