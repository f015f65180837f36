import { randomUUID } from 'node:crypto';
import { tool, zodSchema } from 'ai';
import { z } from 'zod';
import type { ReminderRepository } from '../storage/reminder-repository.ts';

export interface ReminderToolContext {
  userId: string;
  /** Today's date in the user's timezone, YYYY-MM-DD. */
  today: string;
  reminders: ReminderRepository;
}

const isoDate = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, { message: 'use the form YYYY-MM-DD' })
  .refine((value) => !Number.isNaN(Date.parse(`${value}T00:00:00Z`)) && isRealDate(value), {
    message: 'is not a calendar date',
  });

// Built once: the AI SDK caches a schema's JSON Schema on the object, and tools are bound to
// a user on every chat.
const setReminderInput = zodSchema(
  z.object({
    title: z.string().min(1).max(200).describe('What to remind the user of'),
    date: isoDate.describe('The date, YYYY-MM-DD, in the user’s timezone'),
  }),
);
const listRemindersInput = zodSchema(z.object({}));

/** `set_reminder` / `list_reminders`, bound to one user. */
export function reminderTools(context: ReminderToolContext) {
  return {
    set_reminder: tool({
      description:
        'Save a reminder for the user on a calendar date. The user is notified 7 days before, 1 day before and on the day.',
      inputSchema: setReminderInput,
      execute: async ({ title, date }) => {
        if (date < context.today) {
          throw new Error(`The date ${date} is in the past (today is ${context.today}).`);
        }
        const id = randomUUID();
        await context.reminders.create({ id, userId: context.userId, title, dueOn: date });
        return { id, title, date };
      },
    }),
    list_reminders: tool({
      description: "List the user's reminders from today on, soonest first.",
      inputSchema: listRemindersInput,
      execute: async () => {
        const all = await context.reminders.listForUser(context.userId);
        return all
          .filter((reminder) => reminder.dueOn >= context.today)
          .map((reminder) => ({ title: reminder.title, date: reminder.dueOn }));
      },
    }),
  };
}

function isRealDate(value: string): boolean {
  return new Date(`${value}T00:00:00Z`).toISOString().startsWith(value);
}
