import type { Schedule, Weekday } from './schedule.ts';

const DAY_NAMES: Record<Weekday, string> = {
  mon: 'Monday',
  tue: 'Tuesday',
  wed: 'Wednesday',
  thu: 'Thursday',
  fri: 'Friday',
  sat: 'Saturday',
  sun: 'Sunday',
};

/**
 * The schedule in words, for the assistant to repeat back ("every weekday at 08:00
 * (America/New_York)") and for the web client: the user checks what was understood.
 */
export function scheduleInWords(schedule: Schedule, timezone: string): string {
  const zone = ` (${timezone})`;
  switch (schedule.type) {
    case 'once':
      return `once, on ${schedule.date} at ${schedule.time}${zone}`;
    case 'daily':
      return `every day at ${schedule.time}${zone}`;
    case 'weekdays':
      return `every weekday (Monday to Friday) at ${schedule.time}${zone}`;
    case 'weekly':
      return `every ${list(inWeekOrder(schedule.days).map((day) => DAY_NAMES[day]))} at ${schedule.time}${zone}`;
    case 'monthly':
      return (
        `on day ${schedule.day} of every month at ${schedule.time}${zone}` +
        (schedule.day > 28 ? ', or the last day of a shorter month' : '')
      );
    case 'every': {
      const every = schedule.hours === 1 ? 'every hour' : `every ${schedule.hours} hours`;
      return schedule.starts_at ? `${every}, starting ${schedule.starts_at}` : every;
    }
  }
}

/** Monday first, whatever order the days were picked in (the web form adds them as clicked). */
function inWeekOrder(days: readonly Weekday[]): Weekday[] {
  const order = Object.keys(DAY_NAMES);
  return [...days].sort((a, b) => order.indexOf(a) - order.indexOf(b));
}

function list(items: string[]): string {
  if (items.length <= 1) return items.join('');
  return `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
}
