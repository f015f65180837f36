import type { Logger } from 'pino';
import type { JobMetrics } from '../metrics/metrics.ts';
import { DrainLoop } from './drain-loop.ts';
import { type DrainReport, type Job, type JobKindDefinition, JobsUnavailable } from './job-kind.ts';

/**
 * Drains one kind of job: claims a batch from its table, runs up to `concurrency` at once,
 * and records each outcome in the same table (done, retried with back-off, or buried). One
 * drain at a time per process; other processes share the work through the claims.
 */
export class KindWorker<J extends Job> {
  readonly #definition: JobKindDefinition<J>;
  readonly #logger: Logger;
  readonly #metrics: JobMetrics | undefined;
  readonly #loop: DrainLoop;
  /** Aborts the jobs under way when Parley stops. */
  readonly #stopping = new AbortController();
  readonly #timers = new Set<NodeJS.Timeout>();
  /** After a rate limit (or while the kind cannot run), no job starts before this instant. */
  #pausedUntil = 0;
  #pauseTimer: NodeJS.Timeout | undefined;

  constructor(definition: JobKindDefinition<J>, logger: Logger, metrics?: JobMetrics) {
    this.#definition = definition;
    this.#logger = logger.child({ job: definition.kind });
    this.#metrics = metrics;
    this.#loop = new DrainLoop(
      async () => {
        await this.#drain();
      },
      (error) => this.#logger.warn({ err: error }, 'background jobs paused'),
      definition.policy.intervalMs,
    );
  }

  start(): void {
    this.#loop.start();
  }

  kick(): void {
    this.#loop.kick();
  }

  /** One drain now, awaited, outside the loop (benchmarks; never while started). */
  drainOnce(): Promise<DrainReport> {
    return this.#drain();
  }

  /** Starts no job after this; the ones under way are told (their signal) and awaited. */
  async stop(): Promise<void> {
    this.#stopping.abort();
    for (const timer of this.#timers) clearTimeout(timer);
    clearTimeout(this.#pauseTimer);
    await this.#loop.stop();
  }

  #now(): number {
    return this.#definition.now?.() ?? Date.now();
  }

  #paused(): boolean {
    return this.#now() < this.#pausedUntil;
  }

  async #drain(): Promise<DrainReport> {
    const { source, policy, drained } = this.#definition;
    const report: DrainReport = { leased: 0, done: 0, failed: 0 };
    // A kind that is only kicked is kicked by every ingestion and search, also while it is
    // paused (the model cannot be had): those kicks cost nothing, and the pause's own timer
    // drains once it is over. A scheduled kind still starts its drain each interval, since its
    // tick reads the time and reports what is due (it leases nothing while paused).
    if (policy.intervalMs === undefined && this.#paused()) {
      if (this.#pauseTimer === undefined) this.#wakeAtPauseEnd(); // it woke a moment early
      return report;
    }
    try {
      await source.startDrain?.();
      while (!this.#stopping.signal.aborted && !this.#paused()) {
        const jobs = await source.lease(policy.batch, policy.leaseMs);
        if (jobs.length === 0) break;
        report.leased += jobs.length;
        const lastStart = this.#now() + policy.leaseMs - policy.budgetMs;
        const queue = [...jobs];
        const lane = async () => {
          for (let job = queue.shift(); job; job = queue.shift()) {
            if (this.#stopping.signal.aborted || this.#paused() || this.#now() > lastStart) {
              // Not tried: due again at once (or when the pause ends), by any process.
              await source.release(job, new Date(Math.max(this.#now(), this.#pausedUntil)));
              continue;
            }
            if (await this.#runOne(job)) report.done++;
            else report.failed++;
          }
        };
        // Every lane ends before the drain does (a failing one must not leave the others
        // running past it, where a second drain or stop() would not see them).
        const lanes = Array.from({ length: Math.min(policy.concurrency, jobs.length) }, lane);
        const failed = (await Promise.allSettled(lanes)).find((l) => l.status === 'rejected');
        if (failed) throw failed.reason;
      }
    } catch (error) {
      if (!(error instanceof JobsUnavailable)) {
        drained?.(report, error);
        // A kind only kicked (no interval) would otherwise not look again until the next kick.
        if (policy.intervalMs === undefined) this.#kickIn(policy.backoffMs);
        throw error;
      }
      this.#pause(error.retryAfterMs);
    }
    drained?.(report);
    return report;
  }

  /** Runs one claimed job and records its outcome; true when it was done. */
  async #runOne(job: J): Promise<boolean> {
    const { kind, source, run, policy } = this.#definition;
    const stopping = this.#stopping.signal;
    try {
      await run(job, AbortSignal.any([stopping, AbortSignal.timeout(policy.budgetMs)]));
    } catch (error) {
      // Stopped under way: not the job's failure; it is done after the restart, or elsewhere.
      if (stopping.aborted) await source.release(job, new Date(this.#now()));
      else await this.#failed(job, error);
      return false;
    }
    await source.complete(job);
    this.#metrics?.job(kind, 'done');
    return true;
  }

  async #failed(job: J, error: unknown): Promise<void> {
    const { kind, source, classify, policy } = this.#definition;
    const failure = classify(error);
    const attempts = job.attempts + 1;
    const fields = { err: error, id: job.id, attempts, errorKind: failure.errorKind };
    if (failure.retry === 'never' || attempts >= policy.maxAttempts) {
      await source.bury(job, failure);
      this.#metrics?.job(kind, 'buried');
      this.#logger.warn(fields, 'background job failed for good');
      return;
    }
    const delay =
      failure.retry === 'pause'
        ? (failure.pauseMs ?? policy.backoffMs)
        : Math.min(policy.backoffMs * 2 ** job.attempts, policy.maxBackoffMs);
    this.#metrics?.job(kind, 'failed');
    if (failure.retry === 'pause') this.#pause(delay); // which kicks when the pause ends
    const at = failure.retry === 'pause' ? this.#pausedUntil : this.#now() + delay;
    await source.retry(job, new Date(at), failure);
    if (failure.retry !== 'pause') this.#kickIn(delay);
    this.#logger.warn({ ...fields, retryInMs: delay }, 'background job failed; will retry');
  }

  /** A pause that ends no later than the current one changes nothing. */
  #pause(ms: number): void {
    const until = this.#now() + ms;
    if (until <= this.#pausedUntil) return;
    this.#pausedUntil = until;
    this.#wakeAtPauseEnd();
  }

  /** One timer for the pause, whatever its length: it drains once the pause is over. */
  #wakeAtPauseEnd(): void {
    if (this.#stopping.signal.aborted) return;
    clearTimeout(this.#pauseTimer);
    this.#pauseTimer = setTimeout(
      () => {
        this.#pauseTimer = undefined;
        this.kick();
      },
      Math.max(1, this.#pausedUntil - this.#now()),
    );
    this.#pauseTimer.unref();
  }

  /** A retry comes due before the next interval (or a kind with none would never look). */
  #kickIn(ms: number): void {
    if (this.#stopping.signal.aborted) return;
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      this.kick();
    }, ms);
    timer.unref();
    this.#timers.add(timer);
  }
}
