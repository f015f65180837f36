import { z } from 'zod';
import { visibleText } from '../visible-text.ts';

/** Shapes shared by several routes. */

export const USER_ID_MAX_CHARS = 128;
export const SOURCE_MAX_CHARS = 1024;

const NO_CONTROL_CHARACTERS = /^[^\p{Cc}]*$/u;

/**
 * Half of a surrogate pair (a client cutting text by UTF-16 units) is stored as U+FFFD, so
 * two names differing only there would name one row: refused where text names something.
 */
const wellFormed = <T extends z.ZodString>(schema: T) =>
  schema.refine((value) => value.isWellFormed(), {
    message: 'must be well-formed Unicode (half of a surrogate pair is not)',
    when: (payload) => payload.issues.length === 0,
  });

/**
 * Any printable text: user ids are chosen by the client and only scope data (spec §5.6). At
 * least one visible character: an id of spaces or zero-width characters lists as blank in
 * every listing of users and cannot be told apart from another such id.
 */
export const userIdSchema = wellFormed(
  visibleText(
    z
      .string()
      .min(1, { message: 'must not be empty' })
      .max(USER_ID_MAX_CHARS, { message: `must be at most ${USER_ID_MAX_CHARS} characters` })
      .regex(NO_CONTROL_CHARACTERS, { message: 'must not contain control characters' }),
  ),
).describe('Identifies the user whose data the request reads or changes.');

/**
 * A user id as earlier versions took it, visible or not: the administrator's routes for an
 * existing user (export, limits, keys, deletion) take it, so a user whose id shows nothing,
 * stored before such ids were refused, can still be exported and deleted.
 */
export const storedUserIdSchema = z
  .string()
  .min(1, { message: 'must not be empty' })
  .max(USER_ID_MAX_CHARS, { message: `must be at most ${USER_ID_MAX_CHARS} characters` })
  .regex(NO_CONTROL_CHARACTERS, { message: 'must not contain control characters' })
  .describe('Identifies the user whose data the request reads or changes.');

export const sourceSchema = wellFormed(
  z
    .string()
    .min(1, { message: 'must not be empty' })
    .max(SOURCE_MAX_CHARS, { message: `must be at most ${SOURCE_MAX_CHARS} characters` })
    .regex(NO_CONTROL_CHARACTERS, { message: 'must not contain control characters' }),
);

/**
 * An id that is a UUID, written in lower case as the database writes it: some ids are also
 * compared as text (a process's map of its live runs, a run's turn in JSON), where an id a
 * client sent in upper case would not match its own run or conversation.
 */
export const uuidSchema = (message: string) =>
  z.uuid({ message }).transform((id) => id.toLowerCase());

export { withoutNul } from '../visible-text.ts';
