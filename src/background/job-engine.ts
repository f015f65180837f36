import type pg from 'pg';
import { type ConstructorOptions, PgBoss } from 'pg-boss';
import type { Logger } from 'pino';

/**
 * pg-boss over Parley's own pool, on either engine. Its own pool would need a second
 * connection, which the embedded engine's session server does not have (it serves one
 * connection at a time); for the same reason LISTEN/NOTIFY stays off (pg-boss 12's default):
 * a worker here is woken by `notifyWorker` when this process queues work, and polls for what
 * other replicas queued. Measured in bench/RESULTS.md, "Job engines on both engines".
 */
export function createJobEngine(
  pool: pg.Pool,
  logger: Logger,
  options: {
    /** The shortest heartbeat of any kind: a dead process's job is noticed within half of it. */
    leaseSeconds: number;
    /** pg-boss settings a benchmark compares against Parley's (never set by Parley itself). */
    overrides?: ConstructorOptions;
  },
): PgBoss {
  const checkSeconds = Math.min(60, Math.max(1, Math.floor(options.leaseSeconds / 2)));
  const boss = new PgBoss({
    db: { executeSql: (text: string, values?: unknown[]) => pool.query(text, values) },
    // Parley queues its own jobs: no cron schedules, and no flows (jobs waiting on others),
    // whose pass would otherwise query every 5 s.
    schedule: false,
    flowIntervalSeconds: 3_600,
    // Its registry of instances (for its dashboard) samples the event loop 50 times a second:
    // 3.5 ms of CPU a second in an idle process (bench/RESULTS.md). Parley reads nothing there.
    registerInstance: false,
    // The pass that fails jobs whose heartbeat stopped (a killed process): 60 s by default.
    superviseIntervalSeconds: checkSeconds,
    monitorIntervalSeconds: checkSeconds,
    ...options.overrides,
  });
  // Its errors are the database's (a lost connection): logged by code, and the work goes on.
  boss.on('error', (error) => logger.warn({ err: error }, 'job engine error'));
  boss.on('warning', (warning) =>
    logger.warn({ warning: (warning as { message?: string }).message }, 'job engine warning'),
  );
  return boss;
}
