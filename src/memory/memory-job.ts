import type { Logger } from 'pino';
import { errorKindOf } from '../background/error-kind.ts';
import type { JobKindDefinition, JobPolicy } from '../background/job-kind.ts';
import type { DocumentService } from '../documents/document-service.ts';
import type { MemoryQueueRepository, PendingExchange } from '../storage/memory-queue-repository.ts';
import { SOURCE_PREFIX } from './conversation-memory.ts';
import type { MemoryDecider } from './memory-decider.ts';

/**
 * A replica killed mid-decision (SIGKILL, a crash) delays that exchange by the lease (its
 * heartbeat stops); a clean shutdown leaves it due, for the next sweep. A decision that keeps
 * failing (the model down, answers that never fit the schema) is given up after 5 attempts:
 * the log and GET /admin/jobs say so.
 */
export const MEMORY_POLICY: JobPolicy = {
  leaseSeconds: 120,
  budgetMs: 60_000,
  batch: 500,
  concurrency: 1,
  backoffMs: 5_000,
  maxBackoffMs: 3_600_000,
  maxAttempts: 5,
  intervalMs: 30_000,
};

/** The remember-or-not decision after an answer (CONV_RAG_ENABLED; see ConversationMemory). */
export function memoryDecisionJob(options: {
  queue: MemoryQueueRepository;
  documents: DocumentService;
  decide: MemoryDecider;
  logger: Logger;
  policy: JobPolicy;
}): JobKindDefinition<PendingExchange> {
  const { queue, documents, decide, logger, policy } = options;
  return {
    kind: 'memory_decision',
    policy,
    source: {
      pending: (limit, offset) => queue.pendingIds(limit, offset),
      claim: (runId) => queue.pending(runId),
      complete: (job) => queue.remove(job.runId),
      retried: (job, attempts, failure) => queue.markRetry(job.runId, attempts, failure.errorKind),
      bury: (job, attempts, failure) => queue.markFailed(job.runId, attempts, failure.errorKind),
    },
    async run(exchange, signal) {
      const memory = await decide(exchange, signal);
      // Its conversation may have been deleted while the model decided (the row went with it).
      if (memory !== undefined && (await queue.pending(exchange.runId))) {
        await documents.ingestForUser(exchange.userId, {
          source: SOURCE_PREFIX + exchange.runId,
          filename: 'conversation',
          contentType: 'text/plain',
          bytes: Buffer.byteLength(memory),
          document: { kind: 'text', pages: [{ page: null, text: memory }], ocrPages: [] },
        });
      }
      logger.info(
        { runId: exchange.runId, userId: exchange.userId, remembered: memory !== undefined },
        'memory decided',
      );
    },
    classify: (error) => ({ errorKind: errorKindOf(error), retry: 'backoff' }),
  };
}
