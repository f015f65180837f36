import type { Job as BossJob, JobInsert, JobResult, PgBoss } from 'pg-boss';
import type { Logger } from 'pino';
import type { JobKind, JobMetrics } from '../metrics/metrics.ts';
import { DrainLoop } from './drain-loop.ts';
import { errorKindOf } from './error-kind.ts';
import { type Job, type JobKindDefinition, JobsUnavailable, type SweepReport } from './job-kind.ts';

/** What a job carries: the row's id in its kind's table, never the row's contents. */
interface RowJob {
  id: string;
}

/** Jobs a worker takes a fetch (run `concurrency` at a time). */
const FETCH_BATCH = 20;
/** A retry limit for kinds retried for as long as it takes (pg-boss needs a number). */
const FOREVER = 1_000_000;
/**
 * How often an idle worker asks for jobs other replicas queued, and for retries that came due;
 * this process's own work wakes it at once. Each poll is a query on the embedded engine's one
 * connection: at 2 s, four kinds cost an idle process 26 ms of CPU a second (bench/RESULTS.md).
 */
export const POLLING_SECONDS = 5;
/** How long a sweep's `settled` waits for the jobs it queued before it gives up waiting. */
const SETTLE_LIMIT_MS = 60_000;
const SETTLE_POLL_MS = 50;
/** How often the lanes after the first of a `oneAtATime` kind poll when nothing wakes them. */
const EXTRA_LANE_POLL_SECONDS = 60;
/**
 * How long after a failure's back-off a retry wake-up comes: pg-boss records the failure (and
 * counts the back-off from then) only once the batch has returned, a moment after it is timed.
 */
const RETRY_WAKE_MARGIN_MS = 500;

const queueOf = (kind: JobKind) => `parley_${kind}`;
const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

/**
 * One kind on pg-boss: its queue, its worker (which claims the row, runs the job and records
 * the outcome) and its sweep (which queues a job for each row with work left).
 */
export class KindQueue<J extends Job> {
  readonly #definition: JobKindDefinition<J>;
  readonly #boss: PgBoss;
  readonly #logger: Logger;
  readonly #metrics: JobMetrics | undefined;
  readonly #queue: string;
  readonly #sweeps: DrainLoop;
  /** Aborted by close(): no sweep and no job starts after it. */
  readonly #closed = new AbortController();
  /** Aborted by interrupt(): the signal of the jobs under way (the grace period is over). */
  readonly #interrupted = new AbortController();
  /** pg-boss's workers of this kind: one, or a lane each (`oneAtATime`). */
  #workerIds: string[] = [];
  #started = false;
  /** After a rate limit (or while the kind cannot run), no job starts before this instant. */
  #pausedUntil = 0;
  #pauseTimer: NodeJS.Timeout | undefined;
  /** Wake-ups for this process's retries as they come due (#wakeForRetry). */
  readonly #retryTimers = new Set<NodeJS.Timeout>();

  readonly #pollingSeconds: number;

  constructor(
    definition: JobKindDefinition<J>,
    boss: PgBoss,
    logger: Logger,
    metrics: JobMetrics | undefined,
    pollingSeconds = POLLING_SECONDS,
  ) {
    this.#pollingSeconds = pollingSeconds;
    this.#definition = definition;
    this.#boss = boss;
    this.#logger = logger.child({ job: definition.kind });
    this.#metrics = metrics;
    this.#queue = queueOf(definition.kind);
    this.#sweeps = new DrainLoop(
      () => this.#sweep(),
      (error) => this.#logger.warn({ err: error }, 'background jobs paused'),
      definition.policy.intervalMs,
    );
  }

  /** Creates the kind's queue if it is new: start-up DDL, run in the replicas' turn. */
  async install(): Promise<void> {
    // A stately queue: one job waiting and one running per row at most (rowIsClaim says why
    // the notices' is not). A row changed while its job runs (a feedback's new score) gets one
    // more job, which reads the row as it then stands. The retry and heartbeat settings go
    // with each job (#jobOf): a restart with another JOB_LEASE_SECONDS applies to its jobs.
    await this.#boss.createQueue(this.#queue, {
      policy: this.#definition.policy.rowIsClaim ? 'standard' : 'stately',
    });
  }

  /** Takes jobs and starts sweeping (after `install`). */
  async start(): Promise<void> {
    const { oneAtATime, concurrency } = this.#definition.policy;
    // A pg-boss worker fetches its next batch once the whole last one has ended.
    const workers = oneAtATime ? concurrency : 1;
    for (let lane = 0; lane < workers; lane++) {
      let laneId = '';
      laneId = await this.#boss.work<RowJob, JobResult[]>(
        this.#queue,
        {
          // Up to FETCH_BATCH jobs a fetch, and fetching again at once while fetches come back
          // full: one job a fetch, then a poll's wait, sent 2 notices a second (bench/RESULTS.md).
          // pg-boss keeps that burst for batches above one: a lane of one job asks again itself.
          batchSize: oneAtATime ? 1 : FETCH_BATCH,
          burstWhenBatchFull: !oneAtATime,
          // An idle poll costs the embedded engine CPU (bench/RESULTS.md, job-idle): one lane
          // polls as often as any kind; the others are woken by this process's sweeps and by
          // their own jobs, and poll rarely, for what another replica queued.
          pollingIntervalSeconds: lane === 0 ? this.#pollingSeconds : EXTRA_LANE_POLL_SECONDS,
          // Each job of a batch settles on its own: one failing does not retry the others.
          perJobResults: true,
        },
        async (jobs) => {
          const results = await this.#runBatch(jobs);
          if (oneAtATime) this.#boss.notifyWorker(laneId);
          return results;
        },
      );
      this.#workerIds.push(laneId);
    }
    this.#started = true;
    this.#sweeps.start();
  }

  kick(): void {
    if (this.#started) void this.#sweeps.kick();
  }

  sweepNow(): Promise<void> {
    return this.#started ? this.#sweeps.kick() : Promise.resolve();
  }

  #jobOf(rowId: string): JobInsert<RowJob> {
    const { policy } = this.#definition;
    return {
      data: { id: rowId },
      ...(policy.rowIsClaim ? {} : { singletonKey: rowId }),
      retryLimit: Number.isFinite(policy.maxAttempts) ? policy.maxAttempts - 1 : FOREVER,
      retryDelay: seconds(policy.backoffMs),
      retryBackoff: true,
      retryDelayMax: seconds(policy.maxBackoffMs),
      heartbeatSeconds: Math.max(10, policy.leaseSeconds),
      // Finished and failed jobs are kept a day for an operator looking into pg-boss itself;
      // the rows say what the administrator sees (GET /admin/jobs).
      deleteAfterSeconds: 86_400,
    };
  }

  /**
   * Which of these rows have a job waiting (queued, or failed and due again later): read from
   * pg-boss's own job table, whose columns its documentation describes, in one statement.
   */
  async #openRows(rowIds: string[]): Promise<Set<string>> {
    if (rowIds.length === 0) return new Set();
    const { rows } = await this.#boss.getDb().executeSql(
      `SELECT data->>'id' AS id FROM pgboss.job
        WHERE name = $1 AND state IN ('created', 'retry') AND data->>'id' = ANY($2::text[])`,
      [this.#queue, rowIds],
    );
    return new Set((rows as { id: string }[]).map((row) => row.id));
  }

  /**
   * Queues these rows' jobs in one statement. A stately queue refuses the whole statement
   * when one row's job is already waiting (another replica's sweep got there first): those
   * are then queued one by one, and the one already waiting is skipped.
   */
  async #queueRows(rowIds: string[]): Promise<string[]> {
    if (rowIds.length === 0) return [];
    const jobs = rowIds.map((id) => this.#jobOf(id));
    try {
      return (await this.#boss.insert(this.#queue, jobs, { returnId: true })) ?? [];
    } catch (error) {
      if (this.#definition.policy.rowIsClaim || !refusedByPolicy(error)) throw error;
    }
    const queued: string[] = [];
    for (const { data, ...options } of jobs) {
      const id = await this.#boss.send(this.#queue, data as RowJob, options);
      if (id) queued.push(id);
    }
    return queued;
  }

  /**
   * No sweep and no job starts after this (a job fetched and not yet started leaves its row
   * due); resolves once the sweep under way has ended. The jobs under way go on.
   */
  async close(): Promise<void> {
    this.#closed.abort();
    clearTimeout(this.#pauseTimer);
    for (const timer of this.#retryTimers) clearTimeout(timer);
    this.#retryTimers.clear();
    await this.#sweeps.stop();
  }

  /** The jobs under way are told to stop (their signal aborts); their rows keep the work. */
  interrupt(): void {
    this.#interrupted.abort();
  }

  #now(): number {
    return this.#definition.now?.() ?? Date.now();
  }

  #paused(): boolean {
    return this.#now() < this.#pausedUntil;
  }

  /** Queues a job for each row with work left that has none queued yet. */
  async #sweep(): Promise<void> {
    const { source, policy, swept } = this.#definition;
    const report: SweepReport = { queued: 0 };
    const startedAt = { real: Date.now(), kind: this.#now() };
    const queuedIds: string[] = [];
    try {
      // A kind that is only kicked is kicked by every ingestion and search, also while it is
      // paused (the model cannot be had): those kicks cost nothing, and the pause's own timer
      // sweeps once it is over. A scheduled kind still reads what is due and reports it (the
      // reminders' tick), but queues nothing while paused.
      if (this.#paused() && policy.intervalMs === undefined) {
        if (this.#pauseTimer === undefined) this.#wakeAtPauseEnd(); // it woke a moment early
        return;
      }
      await source.startSweep?.();
      let again = false;
      // Every page: the rows a sweep leaves would wait for the next one (the interval's).
      // Stopping ends the sweep at the next page: the rows it has not read wait for the next start.
      for (
        let offset = 0;
        !this.#paused() && !this.#closed.signal.aborted;
        offset += policy.batch
      ) {
        const ids = await source.pending(policy.batch, offset);
        const open = await this.#openRows(ids);
        const queued = await this.#queueRows(ids.filter((id) => !open.has(id)));
        queuedIds.push(...queued);
        if (ids.length < policy.batch) break;
        // Rows done meanwhile move the later pages up, and one may be passed over: a sweep
        // that queued anything from a full page goes round once more.
        again ||= queued.length > 0;
      }
      report.queued = queuedIds.length;
      if (queuedIds.length > 0) this.#wakeWorkers();
      if (again) this.kick();
    } catch (error) {
      if (error instanceof JobsUnavailable) {
        this.#pause(error.retryAfterMs);
        await swept?.(report, Promise.resolve());
        return;
      }
      await swept?.(report, Promise.resolve(), error);
      // A kind only kicked (no interval) would otherwise not look again until the next kick.
      if (policy.intervalMs === undefined) this.#pause(policy.backoffMs);
      throw error;
    }
    await swept?.(report, this.#settled(queuedIds, startedAt));
  }

  /**
   * Resolves once none of these jobs waits or runs any more (or after SETTLE_LIMIT_MS). Jobs
   * are taken oldest first, so it watches the newest one, and checks the others once it is
   * done: a query a poll, whatever the tick's size.
   *
   * The limit counts from the sweep's start, in real time and on the kind's clock, whichever
   * runs out first: the same instant in production (the kind's clock is the system's); a test
   * clock that stands still cannot make a tick wait for ever, and one moved on by days ends
   * the wait at once, as a minute of real time would have (by the kind's time, the next tick
   * is due).
   */
  async #settled(jobIds: string[], since: { real: number; kind: number }): Promise<void> {
    const waiting = () =>
      Date.now() < since.real + SETTLE_LIMIT_MS && this.#now() < since.kind + SETTLE_LIMIT_MS;
    const isOpen = async (id: string) => {
      const [job] = await this.#boss.findJobs(this.#queue, { id });
      return job?.state === 'created' || job?.state === 'active';
    };
    let open = jobIds;
    while (open.length > 0 && waiting() && !this.#closed.signal.aborted) {
      if (!(await isOpen(open[open.length - 1] as string))) {
        const states = await Promise.all(open.map(isOpen));
        open = open.filter((_, i) => states[i]);
      }
      if (open.length > 0) await new Promise((resolve) => setTimeout(resolve, SETTLE_POLL_MS));
    }
  }

  /** Runs a fetched batch, `concurrency` jobs at a time; each job's outcome is its own. */
  async #runBatch(jobs: BossJob<RowJob>[]): Promise<JobResult[]> {
    const results: JobResult[] = [];
    const waiting = [...jobs];
    const lane = async () => {
      for (let job = waiting.shift(); job; job = waiting.shift()) {
        try {
          await this.#handle(job);
          results.push({ id: job.id, status: 'completed' });
        } catch (error) {
          // pg-boss keeps this as the try's output: the error kind, never the error's text.
          const retry = error instanceof RetryLater;
          const errorKind = retry ? error.message : errorKindOf(error);
          // Reading the row or recording the outcome failed (the database): tried again
          // after the back-off.
          if (!retry) this.#logger.warn({ err: error, id: job.data.id }, 'background job failed');
          results.push({ id: job.id, status: 'failed', output: { errorKind } });
        }
      }
    };
    const lanes = Math.min(this.#definition.policy.concurrency, jobs.length);
    await Promise.all(Array.from({ length: lanes }, lane));
    return results;
  }

  /** Runs one job; a failure pg-boss should retry is thrown, without the error's text. */
  async #handle(job: BossJob<RowJob>): Promise<void> {
    const { source, run, policy } = this.#definition;
    if (this.#paused() || this.#closed.signal.aborted) return; // the row stays due
    let claimed: J | undefined;
    try {
      claimed = await source.claim(job.data.id);
    } catch (error) {
      if (!(error instanceof JobsUnavailable)) throw error; // logged and retried (#runBatch)
      this.#pause(error.retryAfterMs);
      return;
    }
    if (claimed === undefined) return;
    if (this.#closed.signal.aborted) {
      // Stopping began while the row was read: the job does not start, and the row stays due.
      await source.release?.(claimed);
      return;
    }
    const interrupted = this.#interrupted.signal;
    const signal = AbortSignal.any([interrupted, job.signal, AbortSignal.timeout(policy.budgetMs)]);
    try {
      await run(claimed, signal);
    } catch (error) {
      // Stopped under way, or its hold lost (pg-boss aborts the job's signal): not the job's
      // failure; it is done after the restart, or elsewhere.
      if (interrupted.aborted || job.signal.aborted) {
        await source.release?.(claimed);
        return;
      }
      await this.#failed(job, claimed, error);
      return;
    }
    await source.complete(claimed);
    this.#metrics?.job(this.#definition.kind, 'done');
    // A kind whose rows come in batches (the embedding backfill) queues its next one now.
    if (policy.intervalMs === undefined) this.kick();
  }

  async #failed(job: BossJob<RowJob>, claimed: J, error: unknown): Promise<void> {
    const { kind, source, policy, classify } = this.#definition;
    const failure = classify(error);
    // The row's count survives a job queued anew (after a restart); pg-boss's is this job's.
    const attempts = Math.max(job.retryCount, claimed.attempts) + 1;
    const fields = { err: error, id: job.data.id, attempts, errorKind: failure.errorKind };
    if (failure.retry === 'pause') {
      const retryInMs = failure.pauseMs ?? policy.backoffMs;
      this.#pause(retryInMs); // the whole kind waits
      await source.release?.(claimed);
      this.#metrics?.job(kind, 'failed');
      this.#logger.warn({ ...fields, retryInMs }, 'background job failed; will retry');
      return;
    }
    if (failure.retry === 'never' || attempts >= policy.maxAttempts) {
      await source.bury(claimed, attempts, failure);
      this.#metrics?.job(kind, 'buried');
      this.#logger.warn(fields, 'background job failed for good');
      return;
    }
    this.#metrics?.job(kind, 'failed');
    const delayMs = Math.min(policy.backoffMs * 2 ** (attempts - 1), policy.maxBackoffMs);
    if (policy.rowIsClaim) {
      await source.retried(claimed, attempts, failure, delayMs);
      this.#logger.warn({ ...fields, retryInMs: delayMs }, 'background job failed; will retry');
      return;
    }
    await source.retried(claimed, attempts, failure);
    // pg-boss waits between this and twice as long (its jitter), in whole seconds.
    const retryInMs = seconds(delayMs) * 1000;
    this.#logger.warn({ ...fields, retryInMs }, 'background job failed; will retry');
    this.#wakeForRetry(retryInMs);
    throw new RetryLater(failure.errorKind);
  }

  /**
   * pg-boss makes a retry due between `retryInMs` and twice that, and an idle worker would find
   * it only at its next poll, up to POLLING_SECONDS later: a 1 s back-off took up to 7 s. The
   * worker is woken at both ends of that span, so the retry runs when due (another replica may
   * take it first; the poll still finds any retry these miss, one after a restart say).
   */
  #wakeForRetry(retryInMs: number): void {
    for (const afterMs of [retryInMs, 2 * retryInMs]) {
      const timer = setTimeout(() => {
        this.#retryTimers.delete(timer);
        if (!this.#closed.signal.aborted) this.#wakeWorkers();
      }, afterMs + RETRY_WAKE_MARGIN_MS);
      timer.unref();
      this.#retryTimers.add(timer);
    }
  }

  /** Its workers fetch now rather than at their next poll. */
  #wakeWorkers(): void {
    for (const id of this.#workerIds) this.#boss.notifyWorker(id);
  }

  /** A pause that ends no later than the current one changes nothing. */
  #pause(ms: number): void {
    const until = this.#now() + ms;
    if (until <= this.#pausedUntil) return;
    this.#pausedUntil = until;
    this.#wakeAtPauseEnd();
  }

  /** One timer for the pause, whatever its length: the rows stay due, and it sweeps them then. */
  #wakeAtPauseEnd(): void {
    if (this.#closed.signal.aborted) return;
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
}

/**
 * What pg-boss stores as a failed attempt's output: the error kind only. The error itself may
 * quote an upstream's answer, which may quote a user's words.
 */
class RetryLater extends Error {
  override readonly name = 'RetryLater';
}

/** The insert guard pg-boss raises when a queue's policy refused one of the jobs. */
function refusedByPolicy(error: unknown): boolean {
  const cause = (error as { cause?: { code?: unknown } } | undefined)?.cause;
  return cause?.code === '22012'; // division_by_zero, pg-boss's signal for a skipped insert
}
