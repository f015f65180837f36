import type { Logger } from 'pino';
import { errorKindOf } from '../background/error-kind.ts';
import { type JobKindDefinition, JobsUnavailable } from '../background/job-kind.ts';
import type { VectorStore } from '../storage/vector-store.ts';
import type { Embedder } from './embedder.ts';

interface EmbeddingBatch {
  attempts: number;
  items: { hash: string; content: string }[];
}

/** The one row this kind has: the vectors missing for the current model. */
const MISSING = 'missing-vectors';

/**
 * Embeds, in the background, every stored chunk text that has no vector for the current
 * model: after each ingestion, at start (chunks stored while the model was unavailable, or
 * under another model), and again after `retryMs` while the model cannot be had or a batch
 * failed (search stays lexical for those chunks meanwhile). A job is one batch, and its end
 * queues the next. Nothing is claimed: what is missing is read from the vectors themselves,
 * and saving one twice is harmless.
 */
export function embeddingJob(options: {
  embedder: Embedder;
  vectors: VectorStore;
  logger: Logger;
  /** Distinct texts embedded per batch. */
  batchSize: number;
  retryMs: number;
}): JobKindDefinition<EmbeddingBatch> {
  const { embedder, vectors, logger, batchSize, retryMs } = options;
  let embedded = 0;
  const nothing = async () => {};
  return {
    kind: 'embedding_batch',
    // Only kicked (an ingestion, a search finding no model yet, the start); a batch at a time.
    policy: {
      leaseSeconds: 600,
      budgetMs: 5 * 60_000,
      batch: 1,
      concurrency: 1,
      backoffMs: retryMs,
      maxBackoffMs: retryMs,
      maxAttempts: Number.POSITIVE_INFINITY,
    },
    source: {
      async pending(_limit, offset) {
        // The one row is the whole of the first page, and there is no other: a sweep reads
        // pages until one comes back short, so answering it on every page never ended a sweep
        // while chunks were missing (it queried without pause, and held shutdown for ever).
        if (offset > 0) return [];
        // No chunks, nothing to embed and no query to serve: do not load a model for nothing.
        if (!(await vectors.hasChunks())) return [];
        if (!(await embedder.ready())) throw new JobsUnavailable(retryMs);
        if ((await vectors.missing(embedder.id, 1)).length > 0) return [MISSING];
        if (embedded > 0) logger.info({ embedded, model: embedder.id }, 'chunks embedded');
        embedded = 0;
        return [];
      },
      async claim() {
        const items = await vectors.missing(embedder.id, batchSize);
        return items.length === 0 ? undefined : { attempts: 0, items };
      },
      complete: nothing,
      retried: nothing,
      bury: nothing,
    },
    async run({ items }, signal) {
      const found = await embedder.embedDocuments(
        items.map((item) => item.content),
        signal,
      );
      // A server that answers fewer (or more) vectors than texts would pair texts with the
      // wrong vectors, or none: nothing of the batch is saved, and it is tried again.
      if (found.length !== items.length) {
        throw new Error(`the embedder returned ${found.length} vectors for ${items.length} texts`);
      }
      await vectors.save(
        embedder.id,
        items.map((item, i) => ({ hash: item.hash, vector: found[i] as number[] })),
      );
      embedded += items.length;
      if (embedded % (batchSize * 10) === 0) logger.info({ embedded }, 'embedding chunks');
    },
    classify: (error) => ({ errorKind: errorKindOf(error), retry: 'pause', pauseMs: retryMs }),
  };
}
