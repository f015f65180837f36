import { z } from 'zod';
import { addDays, wallTimeOf, zonedInstant } from '../reminders/zoned-time.ts';
import { isRealDate } from './real-date.ts';

export const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
export type Weekday = (typeof WEEKDAYS)[number];

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** Longest an `every` schedule may wait between runs: a year. */
export const MAX_EVERY_HOURS = 8_760;

const time = z
  .string()
  .regex(/^([01]\d|2[0-3]):[0-5]\d$/, { message: 'use the 24-hour form HH:MM' })
  .describe('Local time of day, HH:MM (24-hour), in the automation’s timezone');

/**
 * When an automation runs, in its timezone's wall-clock time (08:00 stays 08:00 across
 * daylight-saving changes). `every` counts real hours from `starts_at` instead.
 */
export const scheduleSchema = z.discriminatedUnion('type', [
  z
    .object({
      type: z.literal('once'),
      date: z
        .string()
        .regex(/^\d{4}-\d{2}-\d{2}$/, { message: 'use the form YYYY-MM-DD' })
        .refine(isRealDate, { message: 'is not a calendar date' }),
      time,
    })
    .strict(),
  z.object({ type: z.literal('daily'), time }).strict(),
  z
    .object({ type: z.literal('weekdays'), time })
    .strict()
    .describe('Monday to Friday'),
  z
    .object({
      type: z.literal('weekly'),
      days: z
        .array(z.enum(WEEKDAYS))
        .min(1)
        .max(7)
        .refine((days) => new Set(days).size === days.length, { message: 'names a day twice' }),
      time,
    })
    .strict(),
  z
    .object({
      type: z.literal('monthly'),
      day: z.number().int().min(1).max(31).describe('Day of the month; shorter months: their last'),
      time,
    })
    .strict(),
  z
    .object({
      type: z.literal('every'),
      hours: z.number().int().min(1).max(MAX_EVERY_HOURS),
      starts_at: z.iso
        .datetime({ offset: true })
        .optional()
        .describe('The first run (default: one interval after it is set)'),
    })
    .strict(),
]);
export type Schedule = z.infer<typeof scheduleSchema>;

/** The first occurrence strictly after `after`; undefined when there is none (a past `once`). */
export function nextOccurrence(
  schedule: Schedule,
  timezone: string,
  after: Date,
): Date | undefined {
  if (schedule.type === 'once') {
    const at = zonedInstant(schedule.date, minutesOf(schedule.time), timezone);
    return at > after ? at : undefined;
  }
  if (schedule.type === 'every') {
    const step = schedule.hours * HOUR_MS;
    const start = Date.parse(schedule.starts_at ?? '');
    if (Number.isNaN(start)) throw new Error('an `every` schedule is stored with its starts_at');
    if (after.getTime() < start) return new Date(start);
    return new Date(start + (Math.floor((after.getTime() - start) / step) + 1) * step);
  }
  const minutes = minutesOf(schedule.time);
  // A day before `after`'s local date: its occurrence may still lie after `after` (the
  // timezone's day, not UTC's). Any schedule here has a day within 62 days of any other.
  const from = addDays(wallTimeOf(after, timezone).date, -1);
  for (let i = 0; i < 64; i++) {
    const day = addDays(from, i);
    if (!runsOn(schedule, day)) continue;
    const at = zonedInstant(day, minutes, timezone);
    if (at > after) return at;
  }
  throw new Error('a calendar schedule found no day in 64');
}

/**
 * The occurrence to run now: the latest one at or before `now`, from `due` (the first one not
 * yet settled) on. Occurrences missed while Parley was down collapse into this one (a run
 * once, not once each). Undefined when `due` has not come.
 */
export function latestOccurrence(
  schedule: Schedule,
  timezone: string,
  due: Date,
  now: Date,
): Date | undefined {
  if (due > now) return undefined;
  let latest = due;
  // After a long outage, start two days back: anything older is too late to run anyway.
  if (now.getTime() - due.getTime() > 2 * DAY_MS) {
    const recent = nextOccurrence(schedule, timezone, new Date(now.getTime() - 2 * DAY_MS));
    if (recent && recent <= now) latest = recent;
  }
  for (let next = nextOccurrence(schedule, timezone, latest); next && next <= now; ) {
    latest = next;
    next = nextOccurrence(schedule, timezone, latest);
  }
  return latest;
}

/** An occurrence this late is not run (it is recorded as skipped): a day, as documented. */
export const MAX_LATENESS_MS = DAY_MS;

/** The starting point an `every` schedule keeps (its first run), filled in when it is set. */
export function anchored(schedule: Schedule, now: Date): Schedule {
  if (schedule.type !== 'every' || schedule.starts_at) return schedule;
  return {
    ...schedule,
    starts_at: new Date(now.getTime() + schedule.hours * HOUR_MS).toISOString(),
  };
}

/** Shortest time between two runs of the schedule, in minutes (for the minimum interval). */
export function intervalMinutes(schedule: Schedule): number {
  if (schedule.type === 'every') return schedule.hours * 60;
  return schedule.type === 'once' ? Number.POSITIVE_INFINITY : 24 * 60;
}

function runsOn(schedule: Exclude<Schedule, { type: 'once' | 'every' }>, day: string): boolean {
  if (schedule.type === 'daily') return true;
  const weekday = WEEKDAYS[(new Date(`${day}T00:00:00Z`).getUTCDay() + 6) % 7] as Weekday;
  if (schedule.type === 'weekdays') return weekday !== 'sat' && weekday !== 'sun';
  if (schedule.type === 'weekly') return schedule.days.includes(weekday);
  const [year, month, date] = day.split('-').map(Number) as [number, number, number];
  const lastDay = new Date(Date.UTC(year, month, 0)).getUTCDate();
  return date === Math.min(schedule.day, lastDay);
}

export function minutesOf(time: string): number {
  const [hours, minutes] = time.split(':').map(Number) as [number, number];
  return hours * 60 + minutes;
}
