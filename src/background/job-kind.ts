import type { JobKind } from '../metrics/metrics.ts';

/** One unit of background work, as its kind's table holds it. */
export interface Job {
  /** The row's id (shown to the administrator with a failure; never users' words). */
  id: string;
  /** Failed attempts so far. */
  attempts: number;
}

/** Why a job failed, in a word from a small fixed set (`http_400`, `timeout`, `ECONNREFUSED`). */
export interface JobFailure {
  errorKind: string;
  /**
   * `backoff`: try again later (until the kind's `maxAttempts`); `never`: bury it now (a
   * permanent refusal); `pause`: the whole kind waits `pauseMs` (a rate limit, a model that
   * cannot be had), and this job is due again then.
   */
  retry: 'backoff' | 'never' | 'pause';
  pauseMs?: number;
  /** Written by us or the upstream's refusal (never users' words), kept where a kind shows it. */
  detail?: string;
}

/**
 * A kind's claim on its own table: the rows stay where they are, so each kind's exactly-once
 * rule (a feedback row, a notice row) is its table's, and the runner only drives it.
 */
export interface JobSource<J extends Job> {
  /** Scheduled kinds: reads what is due now, once per drain, before the first `lease`. */
  startDrain?(): Promise<void>;
  /**
   * Claims up to `limit` due jobs for `leaseMs`: until then no other process takes them, and
   * a process that dies holding them only delays them that long. Empty when nothing is due.
   */
  lease(limit: number, leaseMs: number): Promise<J[]>;
  complete(job: J): Promise<void>;
  /** A counted failure: due again at `at`. */
  retry(job: J, at: Date, failure: JobFailure): Promise<void>;
  /** Not tried (shutting down, too late in the lease, paused): due at `at`, not counted. */
  release(job: J, at: Date): Promise<void>;
  /** Given up: kept as failed, for the administrator to see; never tried again. */
  bury(job: J, failure: JobFailure): Promise<void>;
}

export interface JobPolicy {
  /** How long a claim is owned. */
  leaseMs: number;
  /** The longest one job may take: none starts later than this before its lease ends. */
  budgetMs: number;
  /** Jobs claimed per statement. */
  batch: number;
  /** Jobs run at once by one process. */
  concurrency: number;
  /** First retry delay, doubled per failed attempt up to `maxBackoffMs`. */
  backoffMs: number;
  maxBackoffMs: number;
  /** Failed attempts after which a job is buried; Infinity: retried for as long as it takes. */
  maxAttempts: number;
  /** Drains also run this often (other replicas' work, retries due); none: only when kicked. */
  intervalMs?: number;
}

export interface DrainReport {
  leased: number;
  done: number;
  failed: number;
}

export interface JobKindDefinition<J extends Job> {
  kind: JobKind;
  source: JobSource<J>;
  /** Does the job; throws when it failed. `signal` aborts when Parley stops. */
  run(job: J, signal: AbortSignal): Promise<void>;
  /** What a failure means for the job (see JobFailure). */
  classify(error: unknown): JobFailure;
  policy: JobPolicy;
  /** The kind's clock (the reminders' test clock); the system clock otherwise. */
  now?: () => number;
  /** Told after every drain (a scheduled kind logs its tick). */
  drained?(report: DrainReport, error?: unknown): void;
}

/** Thrown by `lease` when the kind cannot run now (the embedding model is not loaded yet). */
export class JobsUnavailable extends Error {
  override readonly name = 'JobsUnavailable';
  readonly retryAfterMs: number;

  constructor(retryAfterMs: number) {
    super('jobs of this kind cannot run now');
    this.retryAfterMs = retryAfterMs;
  }
}
