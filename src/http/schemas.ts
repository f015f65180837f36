import { z } from 'zod';

/** Shapes shared by several routes. */

export const USER_ID_MAX_CHARS = 128;
export const SOURCE_MAX_CHARS = 1024;

const NO_CONTROL_CHARACTERS = /^[^\p{Cc}]*$/u;

/** Any printable text: user ids are chosen by the client and only scope data (spec §5.6). */
export const userIdSchema = z
  .string()
  .min(1, { message: 'must not be empty' })
  .max(USER_ID_MAX_CHARS, { message: `must be at most ${USER_ID_MAX_CHARS} characters` })
  .regex(NO_CONTROL_CHARACTERS, { message: 'must not contain control characters' })
  .describe('Identifies the user whose data the request reads or changes.');

export const sourceSchema = z
  .string()
  .min(1, { message: 'must not be empty' })
  .max(SOURCE_MAX_CHARS, { message: `must be at most ${SOURCE_MAX_CHARS} characters` })
  .regex(NO_CONTROL_CHARACTERS, { message: 'must not contain control characters' });

/**
 * An id that is a UUID, written in lower case as the database writes it: some ids are also
 * compared as text (a process's map of its live runs, a run's turn in JSON), where an id a
 * client sent in upper case would not match its own run or conversation.
 */
export const uuidSchema = (message: string) =>
  z.uuid({ message }).transform((id) => id.toLowerCase());

export { withoutNul } from '../visible-text.ts';
