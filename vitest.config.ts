import { defineConfig } from 'vitest/config';
import SlowFilesFirst from './test/support/slow-files-first.ts';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    // Tests start real servers and databases: give them time, and keep the machine's two
    // cores from being oversubscribed. Some tests start Parley two or three times (restarts,
    // take-overs); on a busy 2-core machine one start alone has taken 30 s, so a test gets
    // what a start-up hook gets. Waits inside tests carry their own, shorter deadlines.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // Kills any server a test file left running (a forgotten stop, a failure before it).
    setupFiles: ['test/support/stop-left-servers.ts'],
    pool: 'forks',
    maxWorkers: 2,
    sequence: { sequencer: SlowFilesFirst },
  },
});
