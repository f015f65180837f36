import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { DrainLoop } from '../../src/background/drain-loop.ts';
import { PriorityPool } from '../../src/storage/priority-pool.ts';
import { importScratch, type ScratchPackage } from './scratch-install.ts';

/**
 * The job engines bench/job-engines.ts compares, behind one small interface: Parley's own
 * lease loop (the feedback outbox's claim), pg-boss (through Parley's pool, and with its own
 * pool and LISTEN/NOTIFY) and graphile-worker. The libraries are imported from a scratch
 * install (scratch-install.ts), so only the shapes used here are typed.
 */

/** Where the database is, and the pool size Parley itself uses there (src/storage/database.ts). */
export interface Target {
  engine: 'embedded' | 'server';
  connection: pg.PoolConfig;
  poolMax: number;
}

/** `default`: the library's own settings; `configured`: the shortest sensible recovery. */
export type Mode = 'default' | 'configured';

export interface JobInfo {
  /** The worker that holds the job (graphile-worker's `locked_by`), when the library says. */
  lockedBy?: string | undefined;
}

export interface JobEngine {
  /** Installs the schema and the queue; starts no worker. */
  start(): Promise<void>;
  /** Adds one job carrying `id`. */
  enqueue(id: string): Promise<void>;
  /** Starts one worker that calls `handler` for each job. */
  work(handler: (id: string, info: JobInfo) => Promise<void>): Promise<void>;
  /** What this engine can do, beyond waiting, once it learns that a worker died. */
  recover?(dead: JobInfo): Promise<void>;
  query(sql: string): Promise<Record<string, unknown>[]>;
  /** The pool's state, for the report when jobs do not run. */
  poolState?(): string;
  stop(): Promise<void>;
}

export interface Libraries {
  pgBoss: ScratchPackage;
  graphileWorker: ScratchPackage;
}

export interface Variant {
  name: string;
  /** The settings used, for the report. */
  settings: Record<Mode, string>;
  /** Whether the killed-worker runs apply (the LISTEN row only differs in pickup). */
  killTests: boolean;
  create(target: Target, mode: Mode, libs: Libraries): Promise<JobEngine>;
}

/** A pool as Parley opens it (src/storage/database.ts): one connection on the embedded engine. */
function parleyPool(target: Target): PriorityPool {
  const pool = new PriorityPool({
    ...target.connection,
    max: target.poolMax,
    connectionTimeoutMillis: 60_000,
    idleTimeoutMillis: 30_000,
  });
  pool.on('error', () => {}); // a killed peer's session ending is not this pool's failure
  return pool;
}

// ---------------------------------------------------------------------------------------------
// Parley's lease loop as it was before the kinds moved onto pg-boss (c053640):
// feedback-repository.ts leaseDue on a table of the feedback outbox's shape (without the
// foreign key), driven by a DrainLoop.

const OUTBOX_DDL = `
  CREATE TABLE IF NOT EXISTS bench_outbox (
    id uuid PRIMARY KEY,
    run_id uuid NOT NULL,
    key text NOT NULL,
    score double precision NOT NULL,
    comment text,
    created_at timestamptz NOT NULL DEFAULT now(),
    forwarded_at timestamptz,
    forward_attempts integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now()
  );
  CREATE INDEX IF NOT EXISTS bench_outbox_pending_idx ON bench_outbox (next_attempt_at)
    WHERE forwarded_at IS NULL`;

/** The statement of FeedbackRepository.leaseDue (c053640), word for word but for the table name. */
const LEASE_DUE = `
  UPDATE bench_outbox
  SET next_attempt_at = now() + make_interval(secs => $2)
  WHERE id IN (
    SELECT id FROM bench_outbox
    WHERE forwarded_at IS NULL AND next_attempt_at <= now()
    ORDER BY next_attempt_at
    LIMIT $1
    FOR UPDATE SKIP LOCKED
  )
  RETURNING id, run_id, key, score, comment, forward_attempts`;

/** The forwarder's batch; its lease and interval are Parley's (feedback-forwarder.ts). */
const LEASE_BATCH = 50;
const LEASE_SETTINGS = {
  default: { leaseMs: 5 * 60_000, intervalMs: 30_000 },
  configured: { leaseMs: 10_000, intervalMs: 1_000 },
};

const leaseLoop: Variant = {
  name: 'Parley lease loop',
  settings: {
    default: 'lease 5 min, loop every 30 s and kicked on enqueue, batch 50 (feedback forwarder)',
    configured: 'lease 10 s, loop every 1 s',
  },
  killTests: true,
  async create(target, mode) {
    const { leaseMs, intervalMs } = LEASE_SETTINGS[mode];
    const pool = parleyPool(target);
    let loop: DrainLoop | undefined;
    return {
      async start() {
        await pool.query(OUTBOX_DDL);
      },
      async enqueue(id) {
        await pool.query(
          'INSERT INTO bench_outbox (id, run_id, key, score) VALUES ($1, $2, $3, 1)',
          [randomUUID(), randomUUID(), id],
        );
        loop?.kick(); // as FeedbackService kicks the forwarder after storing feedback
      },
      async work(handler) {
        const drain = async () => {
          while (true) {
            const { rows } = await pool.query<{ id: string; key: string }>(LEASE_DUE, [
              LEASE_BATCH,
              leaseMs / 1000,
            ]);
            for (const row of rows) {
              await handler(row.key, {});
              await pool.query('UPDATE bench_outbox SET forwarded_at = now() WHERE id = $1', [
                row.id,
              ]);
            }
            if (rows.length < LEASE_BATCH) return;
          }
        };
        loop = new DrainLoop(drain, (error) => console.error('lease loop:', error), intervalMs);
        loop.start();
      },
      query: async (sql) => (await pool.query(sql)).rows,
      async stop() {
        await loop?.stop();
        await pool.end();
      },
    };
  },
};

// ---------------------------------------------------------------------------------------------
// pg-boss

interface PgBossJob {
  data: { id: string };
}
interface PgBoss {
  on(event: 'error' | 'warning', listener: (error: unknown) => void): void;
  start(): Promise<unknown>;
  stop(options?: { graceful?: boolean; close?: boolean; timeout?: number }): Promise<void>;
  createQueue(name: string, options?: Record<string, unknown>): Promise<void>;
  send(name: string, data: object): Promise<string | null>;
  work(
    name: string,
    options: Record<string, unknown>,
    handler: (jobs: PgBossJob[]) => Promise<void>,
  ): Promise<string>;
  notifyWorker(workerId: string): void;
  getDb(): { executeSql(text: string, values?: unknown[]): Promise<{ rows: unknown[] }> };
}
type PgBossModule = { PgBoss: new (options: Record<string, unknown>) => PgBoss };

/**
 * Options that apply to every pg-boss row. Its worker fetches one job per poll by default
 * (batchSize 1, then a 2-s wait): 50 a fetch and fetching again at once while fetches come
 * back full is what Parley's loops do; 0.5 s is its shortest polling interval.
 */
const PG_BOSS_WORK = { pollingIntervalSeconds: 0.5, batchSize: 50, burstWhenBatchFull: true };
/**
 * Shortest sensible recovery: a heartbeat (its minimum, 10 s) instead of a shorter expiry, so a
 * job may still run long; the monitor that fails silent jobs runs inside the supervise pass,
 * so both go from 60 s to their minimum, 1 s.
 */
const PG_BOSS_CONFIGURED = { superviseIntervalSeconds: 1, monitorIntervalSeconds: 1 };
const PG_BOSS_QUEUE = { default: {}, configured: { heartbeatSeconds: 10, retryDelay: 0 } };

/**
 * `kick`: wake this process's worker after each send (`notifyWorker`), as Parley's loops are
 * kicked after storing work; otherwise a job waits for the next poll.
 */
function pgBossEngine(
  boss: PgBoss,
  queue: string,
  queueOptions: Record<string, unknown>,
  kick = false,
): JobEngine {
  let workerId: string | undefined;
  boss.on('error', (error) => console.error('pg-boss error:', describe(error)));
  boss.on('warning', (warning) =>
    console.error('pg-boss warning:', (warning as { message?: string }).message ?? warning),
  );
  return {
    async start() {
      await boss.start();
      await boss.createQueue(queue, queueOptions);
    },
    async enqueue(id) {
      await boss.send(queue, { id });
      if (kick && workerId) boss.notifyWorker(workerId);
    },
    async work(handler) {
      workerId = await boss.work(queue, PG_BOSS_WORK, async (jobs) => {
        for (const job of jobs) await handler(job.data.id, {});
      });
    },
    query: async (sql) => (await boss.getDb().executeSql(sql)).rows as Record<string, unknown>[],
    async stop() {
      await boss.stop({ graceful: false, timeout: 2_000 });
    },
  };
}

/** pg-boss with Parley's own pool as its `db`; `kicked` wakes its worker after each send. */
async function pgBossOnParleyPool(
  target: Parameters<Variant['create']>[0],
  mode: Parameters<Variant['create']>[1],
  libs: Parameters<Variant['create']>[2],
  kicked: boolean,
) {
  const { PgBoss } = await importScratch<PgBossModule>(libs.pgBoss);
  const pool = parleyPool(target);
  const boss = new PgBoss({
    db: { executeSql: (text: string, values?: unknown[]) => pool.query(text, values) },
    ...(mode === 'configured' ? PG_BOSS_CONFIGURED : {}),
  });
  const engine = pgBossEngine(boss, `bench_${mode}`, PG_BOSS_QUEUE[mode], kicked);
  return { ...engine, stop: () => engine.stop().finally(() => pool.end()) };
}

const pgBoss: Variant = {
  name: 'pg-boss (Parley pool)',
  settings: {
    default: `defaults (supervise, schedule, migrate on; expiry 15 min; monitor 60 s); work ${JSON.stringify(PG_BOSS_WORK)}; Parley's pool passed as \`db\``,
    configured: `queue heartbeatSeconds 10, retryDelay 0; ${JSON.stringify(PG_BOSS_CONFIGURED)}`,
  },
  killTests: true,
  create: (target, mode, libs) => pgBossOnParleyPool(target, mode, libs, false),
};

const pgBossKicked: Variant = {
  name: 'pg-boss (Parley pool, kicked)',
  settings: {
    default: `as pg-boss (Parley pool), and \`notifyWorker\` after each send`,
    configured: '(not run)',
  },
  killTests: false,
  create: (target, mode, libs) => pgBossOnParleyPool(target, mode, libs, true),
};

const pgBossListen: Variant = {
  name: 'pg-boss (own pool, LISTEN/NOTIFY)',
  settings: {
    default: `useListenNotify, queue notify; own pool of Parley's size (+1 listener connection); work ${JSON.stringify(PG_BOSS_WORK)}`,
    configured: '(not run)',
  },
  killTests: false,
  async create(target, mode, libs) {
    const { PgBoss } = await importScratch<PgBossModule>(libs.pgBoss);
    const boss = new PgBoss({
      ...target.connection,
      max: target.poolMax,
      useListenNotify: true,
      ...(mode === 'configured' ? PG_BOSS_CONFIGURED : {}),
    });
    return pgBossEngine(boss, `bench_${mode}`, { ...PG_BOSS_QUEUE[mode], notify: true });
  },
};

// ---------------------------------------------------------------------------------------------
// graphile-worker

interface GraphileHelpers {
  job: { locked_by: string | null };
}
interface GraphileUtils {
  addJob(task: string, payload: object): Promise<unknown>;
  forceUnlockWorkers(workerIds: string[]): Promise<void>;
  release(): Promise<void>;
}
interface GraphileRunner {
  stop(): Promise<void>;
}
interface GraphileModule {
  Logger: new (factory: () => () => void) => unknown;
  makeWorkerUtils(options: Record<string, unknown>): Promise<GraphileUtils>;
  run(options: Record<string, unknown>): Promise<GraphileRunner>;
}

const graphileWorker: Variant = {
  name: 'graphile-worker',
  settings: {
    default:
      "defaults (pollInterval 2 s, LISTEN/NOTIFY, concurrency 1; stale locks freed after 4 h, scanned every 8-10 min); Parley's pool passed as `pgPool`",
    configured:
      'no setting shortens the 4-h lock; the surviving process calls `forceUnlockWorkers([dead worker id])` once it sees the worker die',
  },
  killTests: true,
  async create(target, mode, libs) {
    const worker = await importScratch<GraphileModule>(libs.graphileWorker);
    const pool = parleyPool(target);
    const logger = new worker.Logger(() => () => {}); // its info lines would flood the report
    let utils: GraphileUtils | undefined;
    let runner: GraphileRunner | undefined;
    return {
      async start() {
        utils = await worker.makeWorkerUtils({ pgPool: pool, logger }); // installs its schema
      },
      async enqueue(id) {
        await utils?.addJob('bench', { id });
      },
      async work(handler) {
        runner = await worker.run({
          pgPool: pool,
          logger,
          concurrency: 1,
          noHandleSignals: true,
          taskList: {
            bench: async (payload: { id: string }, helpers: GraphileHelpers) =>
              handler(payload.id, { lockedBy: helpers.job.locked_by ?? undefined }),
          },
        });
      },
      async recover(dead) {
        if (mode === 'configured' && dead.lockedBy)
          await utils?.forceUnlockWorkers([dead.lockedBy]);
      },
      query: async (sql) => (await pool.query(sql)).rows,
      poolState: () =>
        `pool of ${target.poolMax}: ${pool.totalCount} open, ${pool.idleCount} idle, ${pool.waitingCount} queries waiting`,
      async stop() {
        await runner?.stop();
        await utils?.release();
        await pool.end();
      },
    };
  },
};

export const VARIANTS: readonly Variant[] = [
  leaseLoop,
  pgBoss,
  pgBossKicked,
  pgBossListen,
  graphileWorker,
];

export const describe = (error: unknown): string =>
  error instanceof Error ? error.message : String(error);
