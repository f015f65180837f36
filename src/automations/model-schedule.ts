import { z } from 'zod';
import { MAX_EVERY_HOURS, scheduleSchema, WEEKDAYS } from './schedule.ts';

/**
 * The schedule as the model is asked for it: one flat object whose `type` says which of the
 * other fields it needs, read through the same `scheduleSchema` the API uses (every rule and
 * its message, `.strict()` included, applies).
 *
 * The API's own schema, a union of six strict objects with their patterns, is 2.9 KB of JSON
 * Schema (~800 tokens) once the tool is described to the model: 40 % of all built-in tools,
 * in every request of every chat, whether or not the user schedules anything (the date-time
 * pattern alone is 400 bytes). Its `oneOf` is also the form small local models fill in worst.
 * The flat form describes the same choices in about a quarter of that; a wrong value gets
 * the API's message back as the tool's error, and the model corrects it.
 */
export const modelScheduleSchema = z
  .object({
    // The union's own types: one added there is offered here too.
    type: z
      .enum(scheduleSchema.options.map((option) => option.shape.type.value))
      .describe('weekdays: Monday to Friday'),
    time: z.string().optional().describe('Local HH:MM (24-hour); all but every'),
    date: z.string().optional().describe('YYYY-MM-DD; once'),
    days: z.array(z.enum(WEEKDAYS)).optional().describe('weekly'),
    day: z.number().int().min(1).max(31).optional().describe('Day of the month; monthly'),
    hours: z.number().int().min(1).max(MAX_EVERY_HOURS).optional().describe('every'),
    starts_at: z
      .string()
      .optional()
      .describe('every: first run, ISO date-time with offset (default: one interval on)'),
  })
  // A field of another type (a `date` on a daily one) is refused by scheduleSchema, by name.
  .strict()
  .pipe(scheduleSchema);
