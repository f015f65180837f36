/**
 * Wall-clock time in an IANA timezone, without a timezone library: Intl gives the local
 * fields of an instant, and the instant of local fields is found by correcting a UTC guess
 * with the offset there, then settling the days the clocks change.
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
 * reminders, and each answer costs a few formatToParts calls (the bulk of an idle tick in
 * bench/reminder-tick.ts before this cache).
 */
const instants = new Map<string, number>();

/**
 * The instant when it is `date` (YYYY-MM-DD) at `minutes` past midnight in the timezone. A time
 * the clocks skip that day (02:30 when they jump from 02:00 to 03:00, or midnight where they
 * change at midnight) is the first minute that exists after it (03:00); a time that happens
 * twice (the autumn change) is the first. Reminders' notices and automations both use this.
 */
export function zonedInstant(date: string, minutes: number, timezone: string): Date {
  const key = `${date}|${minutes}|${timezone}`;
  let instant = instants.get(key);
  if (instant === undefined) {
    instant = wallInstant(date, minutes, timezone);
    if (instants.size >= 10_000) instants.clear();
    instants.set(key, instant);
  }
  return new Date(instant);
}

const HOUR_MS = 3_600_000;

function wallInstant(date: string, minutes: number, timezone: string): number {
  const at = correctedGuess(date, minutes, timezone);
  if (isWallTime(at, date, minutes, timezone)) return firstOf(at, date, minutes, timezone);
  // In the gap: the answer is the jump itself, a few hours at most from `at`, on either side
  // (`at` falls before it in zones behind UTC, after it in zones ahead: 03:30 in Berlin for
  // 02:30). Find the first minute whose wall time is at or past the asked one.
  let low = at - 4 * HOUR_MS;
  let high = at + 4 * HOUR_MS;
  while (high - low > 60_000) {
    const middle = low + Math.floor((high - low) / 120_000) * 60_000;
    if (reached(middle, date, minutes, timezone)) high = middle;
    else low = middle;
  }
  return high;
}

/**
 * A UTC guess corrected by the offset there, twice: right on any ordinary day, but in a gap
 * it lands an hour off either side, and of a time that happens twice it gives the second in
 * zones ahead of UTC (the callers above settle both).
 */
function correctedGuess(date: string, minutes: number, timezone: string): number {
  const [year, month, day] = date.split('-').map(Number) as [number, number, number];
  const guess = Date.UTC(year, month - 1, day, 0, minutes);
  const first = guess - offsetAt(guess, timezone);
  return guess - offsetAt(first, timezone);
}

/** The longest change of the clocks there is (Antarctica/Troll's two hours). */
const LONGEST_CHANGE_MS = 2 * HOUR_MS;
/** How far clocks go back in the autumn: two hours, one, or half of one (Lord Howe Island). */
const CHANGES_BACK_MS = [2 * HOUR_MS, HOUR_MS, HOUR_MS / 2];

/**
 * The first instant showing this wall time: the corrected guess is the second one of a time
 * that happens twice in zones ahead of UTC (02:30 in Berlin on the autumn change is 00:30 UTC,
 * then 01:30 UTC). One look two hours back settles the usual day: the clock showed two hours
 * less.
 */
function firstOf(at: number, date: string, minutes: number, timezone: string): number {
  const before = wallTimeOf(new Date(at - LONGEST_CHANGE_MS), timezone);
  if (minuteIndex(before.date, before.minutes) === minuteIndex(date, minutes) - 120) return at;
  for (const back of CHANGES_BACK_MS) {
    if (isWallTime(at - back, date, minutes, timezone)) return at - back;
  }
  return at;
}

/** Minutes since 1970-01-01 00:00 of a wall time, to compare wall times across midnight. */
const minuteIndex = (date: string, minutes: number) =>
  Date.parse(`${date}T00:00:00Z`) / 60_000 + minutes;

function isWallTime(at: number, date: string, minutes: number, timezone: string): boolean {
  const wall = wallTimeOf(new Date(at), timezone);
  return wall.date === date && wall.minutes === minutes;
}

function reached(at: number, date: string, minutes: number, timezone: string): boolean {
  const wall = wallTimeOf(new Date(at), timezone);
  return wall.date > date || (wall.date === date && wall.minutes >= minutes);
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
