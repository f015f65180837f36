import type { Logger } from 'pino';
import { errorKindOf } from '../background/error-kind.ts';
import type { JobKindDefinition, JobPolicy } from '../background/job-kind.ts';
import type { ConversationRepository } from '../storage/conversation-repository.ts';
import type { TitleRequest, TitleRequestRepository } from '../storage/title-request-repository.ts';
import type { TitleWriter } from './title-writer.ts';

/** A title is a nicety: a few spaced tries, then the question's first words stay. */
export const TITLE_POLICY: JobPolicy = {
  leaseSeconds: 120,
  budgetMs: 60_000,
  batch: 500,
  concurrency: 1,
  backoffMs: 10_000,
  maxBackoffMs: 3_600_000,
  maxAttempts: 4,
  intervalMs: 60_000,
};

/**
 * Titles a conversation after its first answer (CONVERSATION_TITLES=model), in the
 * background: the answer never waits for it. A title the user gave meanwhile is kept.
 */
export function conversationTitleJob(options: {
  requests: TitleRequestRepository;
  conversations: ConversationRepository;
  write: TitleWriter;
  logger: Logger;
  policy: JobPolicy;
}): JobKindDefinition<TitleRequest> {
  const { requests, conversations, write, logger, policy } = options;
  return {
    kind: 'conversation_title',
    policy,
    source: {
      pending: (limit, offset) => requests.pendingIds(limit, offset),
      claim: (id) => requests.pending(id),
      complete: (job) => requests.remove(job.conversationId),
      retried: (job, attempts, failure) =>
        requests.markRetry(job.conversationId, attempts, failure.errorKind),
      bury: (job, attempts, failure) =>
        requests.markFailed(job.conversationId, attempts, failure.errorKind),
    },
    async run(request, signal) {
      // Reset since it was asked for: the next answer asks again.
      if (!request.question || !request.answer) return;
      const title = await write(request, signal);
      if (title !== undefined) await conversations.setModelTitle(request.conversationId, title);
      logger.info(
        { conversationId: request.conversationId, userId: request.userId, titled: !!title },
        'conversation titled',
      );
    },
    classify: (error) => ({ errorKind: errorKindOf(error), retry: 'backoff' }),
  };
}
