/**
 * Wall-clock time in an IANA timezone, without a timezone library: Intl gives the local
 * fields of an instant, and the instant of local fields is found by correcting a UTC guess
 * with the offset there (twice, which settles across DST changes).
 */
const partFormatters = new Map<string, Intl.DateTimeFormat>();

function partsFormatter(timezone: string): Intl.DateTimeFormat {
  let formatter = partFormatters.get(timezone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone: timezone,
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
      hourCycle: 'h23',
    });
    if (partFormatters.size >= 1_000) partFormatters.clear();
    partFormatters.set(timezone, formatter);
  }
  return formatter;
}

/** The local fields (year, month, day, hour, minute, second) of an instant in the timezone. */
function fieldsAt(instant: number, timezone: string): Record<string, number> {
  const fields: Record<string, number> = {};
  for (const part of partsFormatter(timezone).formatToParts(new Date(instant))) {
    if (part.type !== 'literal') fields[part.type] = Number(part.value);
  }
  return fields;
}

/** Milliseconds the timezone is ahead of UTC at that instant. */
function offsetAt(instant: number, timezone: string): number {
  const fields = fieldsAt(instant, timezone);
  const asUtc = Date.UTC(
    fields.year ?? 1970,
    (fields.month ?? 1) - 1,
    fields.day ?? 1,
    fields.hour ?? 0,
    fields.minute ?? 0,
    fields.second ?? 0,
  );
  return asUtc - Math.floor(instant / 1000) * 1000;
}

/** What a clock on the wall shows in a timezone at an instant: its date and minute of the day. */
export interface WallTime {
  /** YYYY-MM-DD. */
  date: string;
  minutes: number;
}

export function wallTimeOf(at: Date, timezone: string): WallTime {
  const fields = fieldsAt(at.getTime(), timezone);
  const two = (value: number | undefined) => String(value ?? 0).padStart(2, '0');
  return {
    date: `${String(fields.year ?? 1970).padStart(4, '0')}-${two(fields.month)}-${two(fields.day)}`,
    minutes: (fields.hour ?? 0) * 60 + (fields.minute ?? 0),
  };
}

/**
 * Results are kept: a tick asks for the same few (date, hour, timezone) for thousands of
 * reminders, and each answer costs two formatToParts calls (the bulk of an idle tick in
 * bench/reminder-tick.ts before this cache).
 */
const instants = new Map<string, number>();

/** The instant when it is `date` (YYYY-MM-DD) at `minutes` past midnight in the timezone. */
export function zonedInstant(date: string, minutes: number, timezone: string): Date {
  const key = `${date}|${minutes}|${timezone}`;
  let instant = instants.get(key);
  if (instant === undefined) {
    const [year, month, day] = date.split('-').map(Number) as [number, number, number];
    const guess = Date.UTC(year, month - 1, day, 0, minutes);
    instant = guess - offsetAt(guess, timezone);
    instant = guess - offsetAt(instant, timezone);
    if (instants.size >= 10_000) instants.clear();
    instants.set(key, instant);
  }
  return new Date(instant);
}

/** `date` plus `days` (may be negative), as YYYY-MM-DD. */
export function addDays(date: string, days: number): string {
  const [year, month, day] = date.split('-').map(Number) as [number, number, number];
  return new Date(Date.UTC(year, month - 1, day + days)).toISOString().slice(0, 10);
}

/** Whole days from `from` to `to` (both YYYY-MM-DD). */
export function daysBetween(from: string, to: string): number {
  return Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 86_400_000);
}
