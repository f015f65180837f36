import pg from 'pg';
import { expect } from 'vitest';

/**
 * Another client holds the history table, so a chat that reads it keeps the pool's connection
 * meanwhile: how a test makes Parley busy (DB_POOL_MAX=1) on a PostgreSQL server it cannot see.
 */
export function lockMessages(databaseUrl: string) {
  return lockTable(databaseUrl, 'messages');
}

/** Another client holds `table` (no reads either) until the returned function is called. */
export async function lockTable(databaseUrl: string, table: string) {
  const blocker = new pg.Client({ connectionString: databaseUrl });
  // A failed test leaves it open; the suite then drops the database under it.
  blocker.on('error', () => {});
  await blocker.connect();
  await blocker.query('BEGIN');
  await blocker.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
  return async () => {
    await blocker.query('COMMIT');
    await blocker.end();
  };
}

/** Waits until a session of this database waits for a lock: the chat holds its connection. */
export async function waitForLockWaiter(databaseUrl: string) {
  const watcher = new pg.Client({ connectionString: databaseUrl });
  await watcher.connect();
  try {
    await expect
      .poll(
        async () =>
          (
            await watcher.query(
              `SELECT count(*)::int AS n FROM pg_stat_activity
                WHERE datname = current_database() AND wait_event_type = 'Lock'`,
            )
          ).rows[0].n,
        { timeout: 10_000 },
      )
      .toBeGreaterThan(0);
  } finally {
    await watcher.end();
  }
}
