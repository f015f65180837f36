import { localDate } from '../assistant/local-time.ts';
import { addDays, zonedInstant } from './zoned-time.ts';

/** Days before the date when a notice goes out, latest first. */
export const NOTICE_OFFSETS = [0, 1, 7] as const;
export type DaysBefore = (typeof NOTICE_OFFSETS)[number];

/** Local hour of a notice: early enough to plan the day, late enough not to wake anyone. */
export const NOTICE_HOUR = 9;
/** A D-0 notice of a reminder with a time goes out at least this long before that time. */
export const D0_LEAD_MINUTES = 60;

export interface SchedulableReminder {
  /** YYYY-MM-DD in `timezone`. */
  dueOn: string;
  /** HH:MM or null. */
  time: string | null;
  timezone: string;
  createdAt: Date;
}

/**
 * When a notice falls due: at 09:00 local time on its day; a D-0 notice of a reminder with a
 * time before 10:00 goes out an hour before that time (not before midnight). A notice whose day
 * is the day the reminder was set goes out at once, not at the next 09:00 (a reminder set today
 * at 09:30 for today still gets its D-0 notice).
 */
export function noticeDueAt(reminder: SchedulableReminder, daysBefore: DaysBefore): Date {
  const day = addDays(reminder.dueOn, -daysBefore);
  let minutes = NOTICE_HOUR * 60;
  if (daysBefore === 0 && reminder.time) {
    minutes = Math.max(0, Math.min(minutes, toMinutes(reminder.time) - D0_LEAD_MINUTES));
  }
  const scheduled = zonedInstant(day, minutes, reminder.timezone);
  // Set on the notice's own day (compared as instants: the cached day start is cheaper than
  // formatting every reminder's creation time).
  const dayStart = zonedInstant(day, 0, reminder.timezone);
  if (reminder.createdAt >= dayStart && reminder.createdAt < scheduled) {
    return reminder.createdAt;
  }
  return scheduled;
}

/**
 * The one notice to send now, if any. Catch-up rule: of the notices whose time has come, only
 * the latest is sent (after an outage spanning D-7 and D-1, the user gets D-1, not both);
 * nothing is sent once the reminder's own day is over where the user is; a notice whose day
 * was already past when the reminder was set is never sent (set for tomorrow: D-1 and D-0).
 */
export function dueNotice(reminder: SchedulableReminder, now: Date): DaysBefore | undefined {
  if (todayIn(now, reminder.timezone) > reminder.dueOn) return undefined;
  for (const daysBefore of NOTICE_OFFSETS) {
    // The notice's day was over when the reminder was set.
    const dayAfter = addDays(reminder.dueOn, 1 - daysBefore);
    if (reminder.createdAt >= zonedInstant(dayAfter, 0, reminder.timezone)) return undefined;
    if (now >= noticeDueAt(reminder, daysBefore)) return daysBefore;
  }
  return undefined;
}

/** A tick asks for the same instant's date in the same few timezones thousands of times. */
const todays = new Map<string, string>();
function todayIn(now: Date, timezone: string): string {
  const key = `${now.getTime()}|${timezone}`;
  let today = todays.get(key);
  if (today === undefined) {
    if (todays.size >= 1_000) todays.clear();
    today = localDate(now, timezone);
    todays.set(key, today);
  }
  return today;
}

function toMinutes(time: string): number {
  const [hours, minutes] = time.split(':').map(Number) as [number, number];
  return hours * 60 + minutes;
}
