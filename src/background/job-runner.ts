import type { PgBoss } from 'pg-boss';
import type { Logger } from 'pino';
import type { JobKind, JobMetrics } from '../metrics/metrics.ts';
import { retryStartupRace, type StartupSerializer } from '../storage/startup-lock.ts';
import type { Job, JobKindDefinition } from './job-kind.ts';
import { KindQueue } from './kind-queue.ts';

/** How long a job told to stop may take to return before pg-boss stops waiting for it. */
export const RETURN_MS = 2_000;

/**
 * Every kind of background work (feedback forwarding, memory decisions, embedding backfill,
 * reminder notices) runs on one job engine, pg-boss, on both database engines: a queue per
 * kind whose jobs point at rows of the kind's own table (JobSource). pg-boss claims each job
 * for one process (SKIP LOCKED), keeps the claim alive with a heartbeat while the job runs,
 * gives a dead process's job to another once the heartbeat stops, and spaces retries out with
 * back-off. This runner adds what is Parley's: the sweep that queues a job for each row with
 * work left (after a kick, on the kind's interval, and at start for rows whose job was lost),
 * the classification of a failure (retry, bury, pause the kind) and the metrics.
 */
export class JobRunner {
  readonly #boss: PgBoss;
  readonly #logger: Logger;
  readonly #metrics: JobMetrics | undefined;
  readonly #kinds = new Map<JobKind, KindQueue<Job>>();
  /** The start under way or done; stop() waits for it (its DDL holds the database). */
  #starting: Promise<void> | undefined;
  #stopping = false;

  readonly #pollingSeconds: number | undefined;

  /** `pollingSeconds`: how often idle workers poll (benchmarks compare; the default is kept). */
  constructor(
    boss: PgBoss,
    logger: Logger,
    metrics?: JobMetrics,
    options: { pollingSeconds?: number } = {},
  ) {
    this.#boss = boss;
    this.#logger = logger;
    this.#metrics = metrics;
    this.#pollingSeconds = options.pollingSeconds;
  }

  add<J extends Job>(definition: JobKindDefinition<J>): void {
    if (this.#starting) throw new Error('add every kind before start()');
    const kind = new KindQueue(
      definition,
      this.#boss,
      this.#logger,
      this.#metrics,
      this.#pollingSeconds,
    );
    this.#kinds.set(definition.kind, kind as unknown as KindQueue<Job>);
  }

  /**
   * Starts pg-boss (creating or migrating its tables) when there is any kind of work, and
   * creates each kind's queue, inside `serializeStartup`: replicas starting together take
   * turns with that DDL (storage/startup-lock.ts says why pg-boss's own lock is not enough).
   * Then each kind's workers and a first sweep (work left from before) start, outside the
   * turn. A kick before its kind has started is ignored: that first sweep sees the row.
   */
  start(serializeStartup: StartupSerializer = (fn) => fn()): Promise<void> {
    // Nothing to run, or stopped before it started (a signal while the port was opening).
    if (this.#kinds.size === 0 || this.#stopping) return Promise.resolve();
    this.#starting = this.#start(serializeStartup);
    return this.#starting;
  }

  async #start(serializeStartup: StartupSerializer): Promise<void> {
    // A lost race (DDL of a library outside the turn) is tried again, never fatal: pg-boss's
    // start() and createQueue() are safe to repeat.
    await retryStartupRace(
      'job engine',
      () =>
        serializeStartup(async () => {
          await this.#boss.start();
          for (const kind of this.#kinds.values()) await kind.install();
        }),
      this.#logger,
    );
    // Stopped while its tables were being made: no worker starts after the stop.
    if (this.#stopping) return;
    for (const kind of this.#kinds.values()) await kind.start();
  }

  /** New work of this kind is due now: sweep it (calls while a sweep runs coalesce). */
  kick(kind: JobKind): void {
    this.#kinds.get(kind)?.kick();
  }

  /**
   * A sweep of this kind now; resolves once it (and, for a kind that waits, the jobs it
   * queued) is over. Benchmarks time a reminder tick with it.
   */
  sweep(kind: JobKind): Promise<void> {
    return this.#kinds.get(kind)?.sweepNow() ?? Promise.resolve();
  }

  /**
   * Stops sweeping and taking jobs at once. The jobs under way may finish until `interrupt`
   * aborts (the end of the grace period, `graceMs` from now; at once without one): then their
   * signal aborts, and their rows keep the work for the next start. pg-boss waits for them;
   * one that has not returned RETURN_MS after it was told is failed by pg-boss (retried after
   * its back-off) and no longer waited for.
   */
  async stop(options: { interrupt?: AbortSignal; graceMs?: number } = {}): Promise<void> {
    const { interrupt = AbortSignal.abort(), graceMs = 0 } = options;
    this.#stopping = true;
    // A stop during start-up (SIGTERM just after the port opened) lets pg-boss's DDL finish
    // first: the database is closed after this returns, and closing it under that DDL failed
    // the start. Its failure is the start's to report, not the stop's.
    await this.#starting?.catch(() => {});
    const kinds = [...this.#kinds.values()];
    const tell = () => {
      for (const kind of kinds) kind.interrupt();
    };
    if (interrupt.aborted) tell();
    else interrupt.addEventListener('abort', tell, { once: true });
    try {
      await Promise.all(kinds.map((kind) => kind.close()));
      if (this.#starting) {
        await this.#boss.stop({ graceful: true, close: false, timeout: graceMs + RETURN_MS });
      }
    } finally {
      interrupt.removeEventListener('abort', tell);
    }
  }
}
