import type { JobKind } from '../metrics/metrics.ts';

/** Why a job failed, in a word from a small fixed set (`http_400`, `timeout`, `ECONNREFUSED`). */
export interface JobFailure {
  errorKind: string;
  /**
   * `backoff`: try again later (until the kind's `maxAttempts`); `never`: bury it now (a
   * permanent refusal); `pause`: the whole kind waits `pauseMs` (a rate limit, a model that
   * cannot be had) and this job is due again then, the attempt not counted.
   */
  retry: 'backoff' | 'never' | 'pause';
  pauseMs?: number;
  /** Written by us or the upstream's refusal (never users' words), kept where a kind shows it. */
  detail?: string;
}

/**
 * A kind's own table is its outbox: the rows say what work is left (a feedback not yet
 * forwarded, a notice not yet sent), and stay the last word on it (a feedback's revision, a
 * notice's claim). The job engine (pg-boss) only carries "try this row now": it spreads the
 * tries over replicas, holds each one while it runs (a heartbeat), hands a dead process's job
 * to another and spaces retries out. A row whose job was lost (a process that died between
 * storing the row and queueing its job) is queued again by the next sweep.
 */
/** A row's work: `attempts` counts the failed tries the row has recorded. */
export interface Job {
  attempts: number;
}

export interface JobSource<J extends Job> {
  /** Scheduled kinds: reads what is due now, once per sweep, before `pending`. */
  startSweep?(): Promise<void>;
  /** Ids of rows with work left, oldest first: `limit` of them from `offset` on. */
  pending(limit: number, offset: number): Promise<string[]>;
  /** The row's work as it stands now; undefined when none is left (done, deleted, taken). */
  claim(id: string): Promise<J | undefined>;
  complete(job: J): Promise<void>;
  /**
   * A counted failure, `attempts` so far; it is tried again after the kind's back-off. With
   * `rowIsClaim`, the row keeps that time itself (`delayMs` from now, by its own clock).
   */
  retried(job: J, attempts: number, failure: JobFailure, delayMs?: number): Promise<void>;
  /** Not tried (stopping, paused) or not finished: due again, not counted. */
  release?(job: J): Promise<void>;
  /** Given up: kept as failed, for the administrator to see; never tried again. */
  bury(job: J, attempts: number, failure: JobFailure): Promise<void>;
}

export interface JobPolicy {
  /**
   * How long a process that died holding a job delays it: the job's heartbeat (10 s at the
   * least, pg-boss's floor). A live process keeps beating however long the job takes.
   */
  leaseSeconds: number;
  /** The longest one job may take: its signal aborts then and the attempt counts as failed. */
  budgetMs: number;
  /** Rows read a page by the sweep (which reads every page). */
  batch: number;
  /** Jobs run at once by one process. */
  concurrency: number;
  /**
   * Jobs that may run for minutes (an automation's answer): the process fetches them one at a
   * time in `concurrency` lanes, so a long one holds only its own lane. Otherwise jobs come in
   * batches of up to 20 (cheap for many short jobs, the reminders' notices), and the next batch
   * is fetched once every job of the last one has ended: one long job holds back the rest.
   */
  oneAtATime?: boolean;
  /** First retry delay, doubled per failed attempt up to `maxBackoffMs` (whole seconds). */
  backoffMs: number;
  maxBackoffMs: number;
  /** Failed attempts after which a job is buried; Infinity: retried for as long as it takes. */
  maxAttempts: number;
  /** Sweeps also run this often (rows other replicas stored, lost jobs); none: when kicked. */
  intervalMs?: number;
  /**
   * The row is the claim and keeps its own times (the reminders: a notice's row, on a clock a
   * test moves): a try that finds the row taken does nothing, so the queue keeps no key and a
   * new try may be queued while a dead process's job still looks active. A failed try is
   * recorded on the row with its back-off and ends; a later sweep queues the row again once
   * it is due. Otherwise one job per row waits and one runs at most, and pg-boss retries it.
   */
  rowIsClaim?: boolean;
}

export interface SweepReport {
  /** Jobs queued for rows with work left (the others had one already). */
  queued: number;
}

export interface JobKindDefinition<J extends Job> {
  kind: JobKind;
  source: JobSource<J>;
  /** Does the job; throws when it failed. `signal` aborts when Parley stops or time is up. */
  run(job: J, signal: AbortSignal): Promise<void>;
  /** What a failure means for the job (see JobFailure). */
  classify(error: unknown): JobFailure;
  policy: JobPolicy;
  /** The kind's clock for its pauses (the reminders' test clock); the system clock otherwise. */
  now?: () => number;
  /**
   * Told after every sweep (a scheduled kind logs its tick). `settled` resolves once the jobs
   * that sweep queued have been tried, here or by another replica (or after a budget).
   */
  swept?(report: SweepReport, settled: Promise<void>, error?: unknown): void | Promise<void>;
}

/** Thrown by `startSweep` or `claim` when the kind cannot run now (no embedding model yet). */
export class JobsUnavailable extends Error {
  override readonly name = 'JobsUnavailable';
  readonly retryAfterMs: number;

  constructor(retryAfterMs: number) {
    super('jobs of this kind cannot run now');
    this.retryAfterMs = retryAfterMs;
  }
}
