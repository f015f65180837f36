import { AppError } from '../errors.ts';
import { hasVisibleCharacter } from '../visible-text.ts';

/** Longest source or file name, in characters: the limit of `DELETE /documents/{source}`. */
export const NAME_MAX_CHARS = 1024;

const CONTROL = /\p{Cc}/u;

/**
 * A source is any text of 1–1,024 characters without control characters (NUL, newlines…):
 * slashes, dots, spaces and any script are fine, because a source is only a key in the
 * database and never becomes a path. The same rule holds for the uploaded file's name.
 */
export function checkName(field: 'source' | 'file name', value: string, hint = ''): string {
  const problem =
    value.trim() === ''
      ? 'must not be empty'
      : !hasVisibleCharacter(value) // zero-width spaces…: a name listed as a blank line
        ? 'must contain a visible character'
        : [...value].length > NAME_MAX_CHARS
          ? `must be at most ${NAME_MAX_CHARS} characters`
          : CONTROL.test(value)
            ? 'must not contain control characters (such as NUL or a line break)'
            : null;
  if (problem) {
    throw new AppError('invalid_name', 422, `The ${field} ${problem}.${hint}`);
  }
  return value;
}
