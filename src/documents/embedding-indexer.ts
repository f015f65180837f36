import type { Logger } from 'pino';
import type { JobMetrics } from '../metrics/metrics.ts';
import type { VectorStore } from '../storage/vector-store.ts';
import type { Embedder } from './embedder.ts';

export interface EmbeddingIndexerOptions {
  embedder: Embedder;
  vectors: VectorStore;
  logger: Logger;
  /** Distinct texts embedded per round. */
  batchSize: number;
  /** Delay before trying again after a failure or while the model is unavailable. */
  retryMs: number;
  metrics?: JobMetrics | undefined;
}

/**
 * Embeds, in the background, every stored chunk text that has no vector for the current
 * model: after each ingestion, at start (chunks stored while the model was unavailable, or
 * under another model), and again after `retryMs` while the model cannot be had. One round
 * at a time; a kick during a round makes it look again when done.
 */
export class EmbeddingIndexer {
  readonly #options: EmbeddingIndexerOptions;
  #running: Promise<void> | undefined;
  #again = false;
  #timer: NodeJS.Timeout | undefined;
  #retryScheduled = false;
  #stopped = false;

  constructor(options: EmbeddingIndexerOptions) {
    this.#options = options;
  }

  kick(): void {
    // While a retry is scheduled (model unavailable, or a failure), it will look then.
    if (this.#stopped || this.#retryScheduled) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = this.#run().finally(() => {
      this.#running = undefined;
      if (this.#again) {
        this.#again = false;
        this.kick();
      }
    });
  }

  /** Resolves when no round is running (tests and shutdown). */
  async idle(): Promise<void> {
    while (this.#running) await this.#running;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.idle();
  }

  async #run(): Promise<void> {
    const { embedder, vectors, logger, batchSize } = this.#options;
    try {
      // No chunks, nothing to embed and no query to serve: do not load a model for nothing.
      if (!(await vectors.hasChunks())) return;
      if (!(await embedder.ready())) return this.#retryLater();
      let embedded = 0;
      while (!this.#stopped) {
        const batch = await vectors.missing(embedder.id, batchSize);
        if (batch.length === 0) break;
        const found = await embedder.embedDocuments(batch.map((item) => item.content));
        await vectors.save(
          embedder.id,
          batch.map((item, i) => ({ hash: item.hash, vector: found[i] as number[] })),
        );
        this.#options.metrics?.job('embedding_batch', 'done');
        embedded += batch.length;
        if (embedded % (batchSize * 10) === 0) logger.info({ embedded }, 'embedding chunks');
      }
      if (embedded > 0) logger.info({ embedded, model: embedder.id }, 'chunks embedded');
    } catch (error) {
      this.#options.metrics?.job('embedding_batch', 'failed');
      logger.warn(
        {
          model: embedder.id,
          cause: error instanceof Error ? error.name : 'unknown',
          status: statusOf(error),
        },
        'embedding chunks failed; retrying later (search stays lexical for them meanwhile)',
      );
      this.#retryLater();
    }
  }

  #retryLater(): void {
    if (this.#stopped) return;
    clearTimeout(this.#timer);
    this.#retryScheduled = true;
    this.#timer = setTimeout(() => {
      this.#retryScheduled = false;
      this.kick();
    }, this.#options.retryMs);
    this.#timer.unref();
  }
}

function statusOf(error: unknown): number | undefined {
  const status =
    (error as { statusCode?: unknown; lastError?: { statusCode?: unknown } })?.statusCode ??
    (error as { lastError?: { statusCode?: unknown } })?.lastError?.statusCode;
  return typeof status === 'number' ? status : undefined;
}
