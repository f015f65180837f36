import type { Logger } from 'pino';
import { errorKindOf } from '../background/error-kind.ts';
import { type JobKindDefinition, JobsUnavailable } from '../background/job-kind.ts';
import type { MissingText, VectorStore } from '../storage/vector-store.ts';
import type { Embedder } from './embedder.ts';
import type { EmbeddingDimension } from './embedding-dimension.ts';
import { isUsableVector } from './usable-vector.ts';

interface EmbeddingBatch {
  attempts: number;
  items: MissingText[];
}

/** The one row this kind has: the vectors missing for the current model. */
const MISSING = 'missing-vectors';

/**
 * Embeds, in the background, every stored chunk text that has no vector for the current
 * model (or one of another dimension than the model gives now: `dimension`, learned from its
 * vectors, asked of the model at the first sweep): after each ingestion, at start (chunks
 * stored while the model was unavailable, under another model, or of another dimension), when
 * a query's vector shows a new dimension, and again after
 * `retryMs` while the model cannot be had or a batch failed (search stays lexical for those
 * chunks meanwhile). A job is one batch, and its end queues the next. No text is claimed: what
 * is missing is read from the vectors themselves when a batch starts. Replicas and workers
 * still ask the model for each text once: the kind has one row, so its stately queue runs one
 * batch at a time across every process sharing the database, and a batch's vectors are saved
 * before its job ends (test/scale-out/replica-embeddings.test.ts).
 */
export function embeddingJob(options: {
  embedder: Embedder;
  dimension: EmbeddingDimension;
  vectors: VectorStore;
  logger: Logger;
  /** Distinct texts embedded per batch. */
  batchSize: number;
  retryMs: number;
}): JobKindDefinition<EmbeddingBatch> {
  const { embedder, dimension, vectors, logger, batchSize, retryMs } = options;
  let embedded = 0;
  /**
   * Batches between their start and their count. A sweep can find nothing missing once a
   * batch's save is in and before that batch is counted (its query on another connection, or
   * the save's answer still on its way back): it does not say "done" then, with the batch left
   * out; the batch's end kicks the sweep that says it.
   */
  let running = 0;
  /** Dimension changes already logged, `from>to`: said once, not for every batch. */
  const warned = new Set<string>();
  /**
   * The dimension no stored vector of the model was found to differ from. Looking for vectors
   * of another dimension reads every vector of the model (their dimension is in the vector),
   * so it is done until none is left for the dimension the model gives now, not on every
   * sweep; after that only texts without any row are missing, and every new row is of it.
   */
  let checked: number | undefined;
  const stale = () => (dimension.value === checked ? undefined : dimension.value);
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
        if (dimension.value === undefined) await learnDimension();
        const against = stale();
        if ((await vectors.missing(embedder.id, against, 1)).length > 0) return [MISSING];
        if (against !== undefined) checked = against;
        if (running > 0) return [];
        if (embedded > 0) logger.info({ embedded, model: embedder.id }, 'chunks embedded');
        embedded = 0;
        return [];
      },
      async claim() {
        const items = await vectors.missing(embedder.id, stale(), batchSize);
        return items.length === 0 ? undefined : { attempts: 0, items };
      },
      complete: nothing,
      retried: nothing,
      bury: nothing,
    },
    async run(batch, signal) {
      running++;
      try {
        await embedBatch(batch, signal);
      } finally {
        running--;
      }
    },
    classify: (error) => ({ errorKind: errorKindOf(error), retry: 'pause', pauseMs: retryMs }),
  };

  /**
   * Asks the model for one vector to learn the dimension it gives now, once a process, at the
   * first sweep (the start's). Learned only from a search's or a batch's vectors, a model
   * changed while Parley was stopped went unnoticed until the first search after the start:
   * that user's search found the moved texts by their words only, and the re-embedding began
   * then rather than at the start. A failure leaves it unknown; the sweep goes on as before
   * (asked again at the next sweep).
   */
  async function learnDimension(): Promise<void> {
    // No vector stored: none can be stale, and the first batch tells the dimension. Texts
    // waiting for a vector: their batch tells it, without a call of the model's for nothing.
    if (!(await vectors.hasVectorsOf(embedder.id))) return;
    if ((await vectors.missing(embedder.id, undefined, 1)).length > 0) return;
    const probe = await embedder.embedQuery('dimension').catch(() => undefined);
    if (isUsableVector(probe)) dimension.observe(probe.length);
  }

  async function embedBatch({ items }: EmbeddingBatch, signal: AbortSignal): Promise<void> {
    const found = await embedder.embedDocuments(
      items.map((item) => item.content),
      signal,
    );
    // A server that answers fewer (or more) vectors than texts would pair texts with the
    // wrong vectors, or none: nothing of the batch is saved, and it is tried again.
    if (found.length !== items.length) {
      throw new Error(`the embedder returned ${found.length} vectors for ${items.length} texts`);
    }
    const batchDimension = dimensionOf(found);
    if (batchDimension !== undefined) {
      dimension.observe(batchDimension);
      for (const { staleDimension: from } of items) {
        if (from === null || from === batchDimension || warned.has(`${from}>${batchDimension}`)) {
          continue;
        }
        warned.add(`${from}>${batchDimension}`);
        // The texts the old model gave no vector are asked of the new one too (once: the
        // change is said, and this done, once a process).
        const retried = await vectors.forgetUnusable(embedder.id);
        logger.warn(
          { model: embedder.id, from, to: batchDimension, retried },
          'the embedding model now gives vectors of another dimension: re-embedding its chunks',
        );
      }
    }
    // A text the model gives no usable vector (empty, not finite, zero, or of another
    // dimension than the rest) is recorded as such and found by its words only: left
    // missing, it was picked by every batch again, for ever.
    const saved = items.map((item, i) => {
      const vector = found[i];
      const usable = isUsableVector(vector) && vector.length === batchDimension;
      return { hash: item.hash, vector: usable ? vector : null };
    });
    const unusable = saved.filter((item) => item.vector === null).length;
    if (unusable > 0) {
      logger.warn(
        { model: embedder.id, unusable, batch: items.length },
        'the embedding model gave no usable vector for some chunks: they are found by their words only',
      );
    }
    await vectors.save(embedder.id, saved);
    embedded += items.length;
    if (embedded % (batchSize * 10) === 0) logger.info({ embedded }, 'embedding chunks');
  }
}

/** The dimension most of a batch's usable vectors have (a model gives one; ties: the first). */
function dimensionOf(vectors: readonly unknown[]): number | undefined {
  const counts = new Map<number, number>();
  for (const vector of vectors) {
    if (isUsableVector(vector)) counts.set(vector.length, (counts.get(vector.length) ?? 0) + 1);
  }
  let best: number | undefined;
  for (const [length, count] of counts) {
    if (best === undefined || count > (counts.get(best) ?? 0)) best = length;
  }
  return best;
}
