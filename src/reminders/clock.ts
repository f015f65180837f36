import { readFileSync } from 'node:fs';

/** What time it is: a port, so tests can drive the reminder scheduler through days in seconds. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/**
 * FOR TESTS ONLY (`PARLEY_TEST_CLOCK_FILE`): the current instant is whatever ISO timestamp the
 * file holds, read on every call, so a test that runs Parley as a child process can move time
 * by rewriting the file. An unreadable or malformed file throws: a test clock that silently
 * fell back to real time would make tests pass for the wrong reason.
 */
export function fileClock(path: string): Clock {
  return {
    now() {
      const text = readFileSync(path, 'utf8').trim();
      const instant = new Date(text);
      if (Number.isNaN(instant.getTime())) {
        throw new Error(`the test clock file ${path} does not hold an ISO timestamp`);
      }
      return instant;
    },
  };
}
