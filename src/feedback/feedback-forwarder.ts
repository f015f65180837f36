import type { Logger } from 'pino';
import { DrainLoop } from '../background/drain-loop.ts';
import type { JobMetrics } from '../metrics/metrics.ts';
import type { FeedbackRepository } from '../storage/feedback-repository.ts';
import type { FeedbackSink } from './feedback-sink.ts';

export interface FeedbackForwarderOptions {
  repository: FeedbackRepository;
  sink: FeedbackSink;
  logger: Logger;
  /** How often the outbox is checked even when nothing new arrived. */
  intervalMs?: number;
  /** First retry delay; doubles per failure up to `maxBackoffMs`. */
  backoffMs?: number;
  maxBackoffMs?: number;
  metrics?: JobMetrics | undefined;
}

const BATCH = 50;
/** How long a replica owns the rows it took; a replica that dies only delays them this much. */
const LEASE_MS = 5 * 60_000;
/**
 * The longest one send may take (the LangSmith client: 5 attempts of at most 10 s each, plus
 * its own backoff), with margin. No send starts later than this before the lease ends, so
 * another replica never takes a row that is still being sent here.
 */
const SEND_BUDGET_MS = 2 * 60_000;

/**
 * Forwards stored feedback to the tracing service. Feedback is saved before it is sent, so
 * an outage there never loses it nor fails the request: the row stays due and is retried
 * with exponential backoff, from this replica or any other.
 */
export class FeedbackForwarder {
  readonly #options: Required<Omit<FeedbackForwarderOptions, 'metrics'>> &
    Pick<FeedbackForwarderOptions, 'metrics'>;
  readonly #loop: DrainLoop;
  /** Wakes the loop when a retry sooner than the next interval comes due. */
  #retry: NodeJS.Timeout | undefined;

  constructor(options: FeedbackForwarderOptions) {
    this.#options = { intervalMs: 30_000, backoffMs: 5_000, maxBackoffMs: 3_600_000, ...options };
    this.#loop = new DrainLoop(
      () => this.#drain(),
      (error) => this.#options.logger.warn({ err: error }, 'feedback forwarding paused'),
      this.#options.intervalMs,
    );
  }

  start(): void {
    this.#loop.start();
  }

  /** Forward what is due now (after a new submission); calls while busy coalesce. */
  kick(): void {
    this.#loop.kick();
  }

  stop(): Promise<void> {
    clearTimeout(this.#retry);
    return this.#loop.stop();
  }

  #retryIn(ms: number): void {
    clearTimeout(this.#retry);
    this.#retry = setTimeout(() => this.kick(), ms);
    this.#retry.unref();
  }

  async #drain(): Promise<void> {
    const { repository, sink, logger, backoffMs, maxBackoffMs, intervalMs, metrics } =
      this.#options;
    let soonestRetry = Number.POSITIVE_INFINITY;
    while (true) {
      const due = await repository.leaseDue(BATCH, LEASE_MS);
      const lastStart = Date.now() + LEASE_MS - SEND_BUDGET_MS;
      // A rating changed while its send was under way is due again at once: look again.
      let changed = false;
      for (const item of due) {
        if (Date.now() > lastStart) break; // the rest are due again when the lease ends
        try {
          await sink.send(item);
          if (!(await repository.markForwarded(item.id, item.revision))) changed = true;
          metrics?.job('feedback_forward', 'done');
        } catch (error) {
          metrics?.job('feedback_forward', 'failed');
          const attempts = item.attempts + 1;
          const delay = Math.min(backoffMs * 2 ** (attempts - 1), maxBackoffMs);
          soonestRetry = Math.min(soonestRetry, delay);
          await repository.markFailed(item.id, attempts, new Date(Date.now() + delay));
          logger.warn(
            { err: error, feedbackId: item.id, attempts, retryInMs: delay },
            'feedback not forwarded yet',
          );
        }
      }
      if (due.length < BATCH && !changed) break;
    }
    // A retry due before the next interval is not left waiting for it.
    if (soonestRetry < intervalMs) this.#retryIn(soonestRetry);
  }
}
