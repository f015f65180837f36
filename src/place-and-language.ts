import { z } from 'zod';
import { isTimezoneName } from './assistant/local-time.ts';

/**
 * A timezone and a language as a person may type them, checked and stored in their usual
 * spelling: Intl takes "asia/seoul" and "KO-kr", but a profile that shows them back that way,
 * or a web form whose list has "Asia/Seoul", would look broken. One schema for the HTTP
 * routes and the tools' inputs alike.
 */
export const timezoneName = (example: string) =>
  z
    .string()
    .max(64)
    .refine(isTimezoneName, { message: `is not an IANA timezone name (e.g. ${example})` })
    .transform(usualTimezoneSpelling);

export const localeTag = z
  .string()
  .max(35)
  .refine(isLocale, { message: 'is not a BCP 47 language tag (e.g. ko-KR, en-GB)' })
  .transform((value) => Intl.getCanonicalLocales(value)[0] ?? value);

let zoneNames: Map<string, string> | undefined;

/**
 * The name as the runtime lists it when only its case differs ("europe/paris"); a name typed
 * in its own case is kept as typed, even where the runtime's list has an older one (a user
 * who wrote "Asia/Kolkata" does not get "Asia/Calcutta" back); otherwise ("us/pacific") the
 * runtime's own name for that zone.
 */
export function usualTimezoneSpelling(name: string): string {
  zoneNames ??= new Map(
    Intl.supportedValuesOf('timeZone').map((zone) => [zone.toLowerCase(), zone]),
  );
  const listed = zoneNames.get(name.toLowerCase());
  if (listed) return listed;
  if (name.split('/').every((part) => /^[A-Z]/.test(part))) return name;
  return new Intl.DateTimeFormat('en', { timeZone: name }).resolvedOptions().timeZone;
}

function isLocale(value: string): boolean {
  try {
    return Intl.getCanonicalLocales(value).length === 1;
  } catch {
    return false;
  }
}
