import { tool, zodSchema } from 'ai';
import { z } from 'zod';
import { MAX_YEARS_AHEAD, type ReminderService } from '../reminders/reminder-service.ts';
import type { ReminderRecord } from '../storage/reminder-repository.ts';
import { visibleText, withoutNul } from '../visible-text.ts';

export interface ReminderToolContext {
  userId: string;
  reminders: ReminderService;
}

export const isoDate = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, { message: 'use the form YYYY-MM-DD' })
  .refine((value) => isRealDate(value), { message: 'is not a calendar date' });
export const localTime = z
  .string()
  .regex(/^([01]\d|2[0-3]):[0-5]\d$/, { message: 'use the 24-hour form HH:MM' });
export const REMINDER_TITLE_MAX = 200;
export const REMINDER_NOTE_MAX = 1000;
/** A reminder's note: any text, but no NUL (which PostgreSQL cannot store). */
export const reminderNote = withoutNul(z.string().max(REMINDER_NOTE_MAX));

// Built once: the AI SDK caches a schema's JSON Schema on the object, and tools are bound to
// a user on every chat.
const setReminderInput = zodSchema(
  z.object({
    title: visibleText(z.string().trim().min(1).max(REMINDER_TITLE_MAX)).describe(
      'What to remind the user of',
    ),
    date: isoDate.describe(
      `The date, YYYY-MM-DD, in the user’s timezone: from today to ${MAX_YEARS_AHEAD} years ahead. ` +
        'Work out "next Friday" or "다음 주 금요일" from the current date in the system prompt.',
    ),
    time: localTime.optional().describe('The time of day, HH:MM (24-hour), if the user gave one'),
    note: reminderNote.optional().describe('Details worth repeating'),
  }),
);
const listRemindersInput = zodSchema(
  z.object({
    include_past: z.boolean().optional().describe('Also list reminders whose date has passed'),
  }),
);
const cancelReminderInput = zodSchema(
  z.object({ id: z.uuid().describe('The id of the reminder, from list_reminders') }),
);

/** `set_reminder` / `list_reminders` / `cancel_reminder`, bound to one user. */
export function reminderTools(context: ReminderToolContext) {
  return {
    set_reminder: tool({
      description:
        'Save a reminder for the user on a calendar date. The user is notified on Telegram ' +
        '7 days before, 1 day before and on the day.',
      inputSchema: setReminderInput,
      execute: async (input) =>
        describeReminder(await context.reminders.create(context.userId, input)),
    }),
    list_reminders: tool({
      description: "List the user's reminders from today on (or all), soonest first.",
      inputSchema: listRemindersInput,
      execute: async ({ include_past }) => {
        const all = await context.reminders.list(context.userId, include_past ?? false);
        return all.map(describeReminder);
      },
    }),
    cancel_reminder: tool({
      description: "Cancel (delete) one of the user's reminders by its id.",
      inputSchema: cancelReminderInput,
      execute: async ({ id }) => {
        // A refusal (an AppError: no such reminder) reaches the model in its own words.
        await context.reminders.cancel(context.userId, id);
        return { cancelled: id };
      },
    }),
  };
}

/** A reminder as a tool result shows it (the assistant's tools and the `/mcp` door's). */
export function describeReminder(reminder: ReminderRecord) {
  return {
    id: reminder.id,
    title: reminder.title,
    date: reminder.dueOn,
    ...(reminder.time ? { time: reminder.time } : {}),
    ...(reminder.note ? { note: reminder.note } : {}),
    timezone: reminder.timezone,
  };
}

function isRealDate(value: string): boolean {
  const parsed = new Date(`${value}T00:00:00Z`);
  return !Number.isNaN(parsed.getTime()) && parsed.toISOString().startsWith(value);
}
