import pg from 'pg';
import type { Logger } from 'pino';

/** Any constant shared by all replicas: one start-up at a time runs its DDL. */
const STARTUP_LOCK_KEY = 0x7061726c; // "parl"
/** Opening the lock's own connection may take this long before the server counts as down. */
const CONNECT_TIMEOUT_MS = 5_000;

/** Runs `fn` while no other replica on the same database runs its own. */
export type StartupSerializer = <T>(fn: () => Promise<T>) => Promise<T>;

/**
 * Replicas starting together on one PostgreSQL server take turns with everything they create
 * at start-up: Parley's migrations, the pgvector extension, the job engine's schema and
 * queues. A library's own locking is not enough: pg-boss creates its schema inside a
 * transaction-level advisory lock, but a backend that looked the schema up before waiting
 * keeps its cached "no such schema" past the lock, and its `CREATE SCHEMA IF NOT EXISTS` then
 * fails on the catalog's unique index (one replica of three died that way). Here the lock is
 * a session lock held on a connection of its own while the start-up work runs on the pool,
 * so each piece of that work starts a new transaction after the lock is granted and sees the
 * catalog as the previous replica left it.
 *
 * The lock is released when `fn` ends, and by the server if this process dies holding it.
 */
export function serverStartupSerializer(
  connectionString: string,
  logger: Logger,
): StartupSerializer {
  return async (fn) => {
    const client = new pg.Client({ connectionString, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
    // A lost lock connection surfaces as a failed query below; it must not crash the process.
    client.on('error', () => {});
    await client.connect();
    try {
      const { rows } = await client.query<{ locked: boolean }>(
        'SELECT pg_try_advisory_lock($1) AS locked',
        [STARTUP_LOCK_KEY],
      );
      if (!rows[0]?.locked) {
        const waitStarted = performance.now();
        logger.info('another replica is starting on this database: waiting for its start-up');
        await client.query('SELECT pg_advisory_lock($1)', [STARTUP_LOCK_KEY]);
        logger.info(
          { waitedMs: Math.round(performance.now() - waitStarted) },
          'start-up lock taken',
        );
      }
      return await fn();
    } finally {
      // Closing the session releases its lock whether or not the unlock got through.
      await client.query('SELECT pg_advisory_unlock($1)', [STARTUP_LOCK_KEY]).catch(() => {});
      await client.end().catch(() => {});
    }
  };
}

/** The embedded engine belongs to one process (DATA_DIR's lock): nothing to take turns with. */
export const ownedStartupSerializer: StartupSerializer = (fn) => fn();

/** PostgreSQL error codes of a start-up step that lost a race for a catalog object. */
const RACE_CODES = new Set([
  '23505', // unique_violation (pg_namespace, pg_type, pg_class entries)
  '42P07', // duplicate_table
  '42710', // duplicate_object
  '42P06', // duplicate_schema
  '40001', // serialization_failure
  '40P01', // deadlock_detected
]);

/**
 * Runs a start-up step again when it lost a race with another replica (a catalog object
 * created at the same moment, a deadlock): its next try sees what the other one created.
 * The start-up lock makes such races unlikely; this keeps a replica that loses one anyway
 * (a library's DDL outside the lock) from exiting. Anything else fails at once.
 */
export async function retryStartupRace<T>(
  step: string,
  fn: () => Promise<T>,
  logger: Logger,
  attempts = 5,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (error) {
      const code = postgresCode(error);
      if (attempt >= attempts || code === undefined || !RACE_CODES.has(code)) throw error;
      const delayMs = 100 * 2 ** (attempt - 1) + Math.floor(Math.random() * 100);
      logger.warn(
        { step, code, attempt, delayMs },
        'a start-up step lost a race with another replica: trying again',
      );
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
  }
}

/** The SQLSTATE of a database error, also when a library wrapped it (`cause`). */
function postgresCode(error: unknown): string | undefined {
  for (let current = error, depth = 0; current && depth < 5; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}
