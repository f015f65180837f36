import { defineConfig } from 'vitest/config';
import SlowFilesFirst from './test/support/slow-files-first.ts';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    // Tests start real servers and databases: give them time. Some tests start Parley two or
    // three times (restarts, take-overs); on a busy 2-core machine one start alone has taken
    // 30 s, so a test gets what a start-up hook gets. Waits inside tests carry their own,
    // shorter deadlines.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // Kills any server a test file left running (a forgotten stop, a failure before it).
    setupFiles: ['test/support/stop-left-servers.ts'],
    // One embedded database made by a real first start, copied into each test's new data
    // directory, or one a test gives without a database: ~1 s less per start
    // (test/support/embedded-template.ts).
    globalSetup: ['test/support/embedded-template.ts'],
    pool: 'forks',
    // Three files at a time on the 2-core CI machine: many tests spend seconds waiting out a
    // lease, a backoff or a pause, and two workers left the cores ~25 % idle. Measured on one
    // machine, the whole suite: 1,456 s with two workers, 1,103 s with three, all passing
    // (bench/RESULTS.md, "CI time").
    maxWorkers: 3,
    sequence: { sequencer: SlowFilesFirst },
  },
});
