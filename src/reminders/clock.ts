import { readFileSync, watch } from 'node:fs';
import { basename, dirname } from 'node:path';

/** What time it is: a port, so tests can drive the reminder scheduler through days in seconds. */
export interface Clock {
  now(): Date;
  /**
   * The test clock only: calls `moved` when a test moved time, so the scheduled kinds sweep at
   * once instead of at their next interval (which still comes). Returns a stop.
   */
  onMoved?(moved: () => void): () => void;
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
    onMoved(moved) {
      // The directory is watched: a test writes a new file and renames it over the old one.
      // A watch that cannot be had (or fails later) only loses the hurry: intervals still tick.
      const name = basename(path);
      try {
        const watcher = watch(dirname(path), (_event, changed) => {
          if (changed === name) moved();
        });
        watcher.on('error', () => watcher.close());
        watcher.unref();
        return () => watcher.close();
      } catch {
        return () => {};
      }
    },
  };
}
