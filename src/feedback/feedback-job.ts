import { errorKindOf, statusOf } from '../background/error-kind.ts';
import type { JobFailure, JobKindDefinition, JobPolicy } from '../background/job-kind.ts';
import type { FeedbackRepository, PendingFeedback } from '../storage/feedback-repository.ts';
import type { FeedbackSink } from './feedback-sink.ts';

/**
 * How feedback is forwarded. A replica that dies mid-send only delays it by the lease (its
 * heartbeat stops). The budget is the longest one send may take (the LangSmith client: 5
 * attempts of at most 10 s each, plus its own backoff), with margin.
 */
export const FEEDBACK_POLICY: JobPolicy = {
  leaseSeconds: 300,
  budgetMs: 2 * 60_000,
  batch: 500,
  concurrency: 1,
  backoffMs: 5_000,
  maxBackoffMs: 3_600_000,
  // Never lost: an outage is waited out, however long. Only a refusal is final.
  maxAttempts: Number.POSITIVE_INFINITY,
  intervalMs: 30_000,
};

/**
 * Forwards stored feedback to the tracing service. Feedback is saved before it is sent, so
 * an outage there never loses it nor fails the request: the row stays due and is retried
 * with back-off, from this replica or any other. A 4xx other than 401, 403, 408 and 429 means
 * LangSmith will never take this feedback (a malformed or unknown run, say): it is kept as
 * failed.
 */
export function feedbackJob(
  repository: FeedbackRepository,
  sink: FeedbackSink,
  policy: JobPolicy,
): JobKindDefinition<PendingFeedback> {
  return {
    kind: 'feedback_forward',
    policy,
    source: {
      pending: (limit, offset) => repository.pendingIds(limit, offset),
      claim: (id) => repository.pending(id),
      // A rating changed during its send stays due; its own job (queued by the change) sends it.
      complete: (item) => repository.markForwarded(item.id, item.revision),
      retried: (item, attempts, failure) =>
        repository.markRetry(item.id, attempts, failure.errorKind),
      bury: (item, attempts, failure) =>
        repository.markFailed(item.id, item.revision, attempts, failure.errorKind),
    },
    // The LangSmith client takes no signal, so a send can outlive the job's budget and its
    // claim, and another replica may send the same feedback again. That is harmless: it is
    // sent under its own feedback id, a second create is refused (409) and becomes an update.
    // (pg-boss aborts the job's signal when its heartbeat is lost; the send does not see it.)
    run: (item) => sink.send(item),
    classify: (error): JobFailure => {
      const status = statusOf(error);
      // 401 and 403 say the key is wrong, which the operator fixes: not this feedback's fault.
      const refused =
        status !== undefined &&
        status >= 400 &&
        status < 500 &&
        ![401, 403, 408, 429].includes(status);
      return { errorKind: errorKindOf(error), retry: refused ? 'never' : 'backoff' };
    },
  };
}
