import type { z } from 'zod';

/**
 * Characters that draw nothing: whitespace, controls, format characters (zero-width space and
 * joiners, word joiner, BOM, bidi marks) and the other default-ignorable ones (variation
 * selectors, Hangul fillers). Text made only of these passes a length check yet shows as empty.
 */
const VISIBLE = /[^\p{White_Space}\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}\u2800]/u;

export const hasVisibleCharacter = (value: string): boolean => VISIBLE.test(value);

export const VISIBLE_MESSAGE = 'must contain a visible character';

/**
 * "Not empty" for text a person reads back (a title, a name, a prompt, a reminder): at least
 * one visible character. One rule for the HTTP routes and the tools' inputs alike. Checked
 * only when the schema's own rules passed, so "" is told "must not be empty" once, not twice.
 */
export const visibleText = <T extends z.ZodType<string>>(schema: T) =>
  schema
    .refine(hasVisibleCharacter, {
      message: VISIBLE_MESSAGE,
      when: (payload) => payload.issues.length === 0,
    })
    // Such text is stored or sent to the database as a query: U+0000 would fail there, an
    // internal error for the client's mistake (the tools' inputs have no other NUL check).
    .refine(hasNoNul, { message: NUL_MESSAGE, when: (payload) => payload.issues.length === 0 });

const hasNoNul = (value: string): boolean => !value.includes('\u0000');
const NUL_MESSAGE = 'must not contain the NUL character (U+0000)';

/** PostgreSQL cannot store U+0000 in text or JSON: the insert would fail (a 500). */
export const withoutNul = <T extends z.ZodType<string>>(schema: T) =>
  schema.refine(hasNoNul, { message: NUL_MESSAGE });
