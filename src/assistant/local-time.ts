/**
 * Dates and times in a user's timezone. Building an Intl.DateTimeFormat costs far more than
 * using one (it showed in the per-chat profile), so formatters are kept per timezone.
 */
const DEFAULT_TIMEZONE = 'UTC';
const MAX_CACHED = 1_000;
const formatters = new Map<string, { date: Intl.DateTimeFormat; dateTime: Intl.DateTimeFormat }>();

function formattersFor(timezone: string) {
  let cached = formatters.get(timezone);
  if (!cached) {
    cached = {
      date: new Intl.DateTimeFormat('en-CA', { timeZone: timezone }),
      dateTime: new Intl.DateTimeFormat('en-CA', {
        timeZone: timezone,
        weekday: 'long',
        year: 'numeric',
        month: '2-digit',
        day: '2-digit',
        hour: '2-digit',
        minute: '2-digit',
        hourCycle: 'h23',
      }),
    };
    if (formatters.size >= MAX_CACHED) formatters.clear();
    formatters.set(timezone, cached);
  }
  return cached;
}

/**
 * What a user may set as their timezone: a name the runtime knows, not an offset. Intl takes
 * "+05:00" and "-0330", which PostgreSQL (where the user's "today" is counted) reads as a
 * POSIX zone five hours the other way, or refuses.
 */
export function isTimezoneName(timezone: string): boolean {
  return /^[A-Za-z]/.test(timezone) && isKnownTimezone(timezone);
}

/**
 * True when the runtime knows the timezone (its formatters are then kept): an IANA name, or
 * an offset that an earlier version let a user store, which Intl reads the right way round.
 */
export function isKnownTimezone(timezone: string): boolean {
  try {
    formattersFor(timezone);
    return true;
  } catch {
    return false;
  }
}

/** The timezone if the runtime knows it, otherwise UTC. */
export function resolveTimezone(timezone: string | null | undefined): string {
  return timezone && isKnownTimezone(timezone) ? timezone : DEFAULT_TIMEZONE;
}

/** YYYY-MM-DD where the user is. */
export const localDate = (now: Date, timezone: string) => formattersFor(timezone).date.format(now);

/** e.g. "Sunday, 2026-11-22, 14:05" where the user is. */
export const localDateTime = (now: Date, timezone: string) =>
  formattersFor(timezone).dateTime.format(now);
