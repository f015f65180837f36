/** What a clock on the wall shows in a timezone at an instant: its date and minute of the day. */
export interface WallTime {
  /** YYYY-MM-DD. */
  date: string;
  minutes: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(timezone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timezone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-CA', {
      timeZone: timezone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    });
    if (formatters.size >= 1_000) formatters.clear();
    formatters.set(timezone, formatter);
  }
  return formatter;
}

export function wallTimeOf(at: Date, timezone: string): WallTime {
  const fields: Record<string, string> = {};
  for (const part of formatterFor(timezone).formatToParts(at)) fields[part.type] = part.value;
  return {
    date: `${fields.year}-${fields.month}-${fields.day}`,
    minutes: Number(fields.hour) * 60 + Number(fields.minute),
  };
}
