import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { createJobEngine } from '../../src/background/job-engine.ts';
import { JobRunner } from '../../src/background/job-runner.ts';
import { parseConfig } from '../../src/config.ts';
import type { ChunkingOptions } from '../../src/documents/chunker.ts';
import { DocumentService } from '../../src/documents/document-service.ts';
import type { Embedder } from '../../src/documents/embedder.ts';
import { EmbeddingDimension } from '../../src/documents/embedding-dimension.ts';
import { embeddingJob } from '../../src/documents/embedding-job.ts';
import { type Database, openDatabase } from '../../src/storage/database.ts';
import { DocumentRepository } from '../../src/storage/document-repository.ts';
import { VectorStore } from '../../src/storage/vector-store.ts';
import { embedText } from '../../test/support/fake-llm/embeddings.ts';
import { createTestDatabase } from '../../test/support/postgres-server.ts';

export type Engine = 'embedded' | 'server';

export interface BenchStore {
  service: DocumentService;
  /** The same store searched with another cap on postings per query term (lexical only). */
  withPostingsPerTerm(cap: number): DocumentService;
  /** The same store, hybrid, with another HYBRID_VECTOR_WEIGHT (needs `embedder`). */
  withVectorWeight(weight: number): DocumentService;
  database: Database;
  indexer?: { kick(): void } | undefined;
  close(): Promise<void>;
}

/**
 * The real DocumentService on a fresh database of either engine, in this process (the
 * benchmark measures retrieval, not HTTP). With `embedder`, hybrid retrieval as in Parley.
 */
export async function openBenchStore(
  engine: Engine,
  chunking: ChunkingOptions,
  embedder?: Embedder,
  postingsPerTerm?: number,
  vectorWeight = parseConfig({}).HYBRID_VECTOR_WEIGHT,
): Promise<BenchStore> {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-docs-'));
  const server = engine === 'server' ? await createTestDatabase() : undefined;
  const config = parseConfig({ DATA_DIR: dataDir, DATABASE_URL: server?.url, DB_POOL_MAX: '4' });
  const logger = pino({ level: 'warn' });
  const database = await openDatabase(config, logger);
  const vectors =
    embedder && database.capabilities.vector ? new VectorStore(database.db) : undefined;
  const dimension = new EmbeddingDimension();
  const jobs = new JobRunner(
    createJobEngine(database.db.$client, logger, {
      leaseSeconds: 600,
    }),
    logger,
  );
  if (embedder && vectors) {
    jobs.add(
      embeddingJob({ embedder, dimension, vectors, logger, batchSize: 256, retryMs: 60_000 }),
    );
  }
  await jobs.start();
  const indexer = embedder && vectors ? { kick: () => jobs.kick('embedding_batch') } : undefined;
  const hybrid = (weight: number) =>
    new DocumentService({
      documents: new DocumentRepository(database.db, postingsPerTerm),
      chunking,
      logger,
      semantic:
        embedder && vectors && indexer
          ? { embedder, dimension, vectors, indexer, vectorWeight: weight }
          : undefined,
      verbose: false,
    });
  const service = hybrid(vectorWeight);
  return {
    service,
    withPostingsPerTerm: (cap) =>
      new DocumentService({
        documents: new DocumentRepository(database.db, cap),
        chunking,
        logger,
        verbose: false,
      }),
    withVectorWeight: hybrid,
    database,
    indexer,
    async close() {
      await jobs.stop();
      await database.close();
      await server?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The fake embeddings server's hashed bag of words, in-process: a stand-in, not a model. */
export function fakeEmbedder(dimension = 256): Embedder {
  return {
    id: `fake:bag-of-words:${dimension}`,
    available: true,
    ready: async () => true,
    embedDocuments: async (texts) => texts.map((text) => embedText(text, dimension)),
    embedQuery: async (text) => embedText(text, dimension),
  };
}

/**
 * Embeds every distinct chunk text of the store into the real vector store, all at once.
 * (The embedding indexer's rounds after each document slowed down as vectors accumulated,
 * ~20 min at load ~8: see RESULTS.md.) Deduplicated here: a DISTINCT ON over all texts sorts
 * ~13 MB, which stalled PGlite in two runs, as the indexer's first round over a backlog did.
 */
export async function embedAllChunks(store: BenchStore, embedder: Embedder): Promise<void> {
  const vectors = new VectorStore(store.database.db);
  const all = await store.database.db.$client.query<{ hash: string; content: string }>(
    'SELECT content_hash AS hash, content FROM chunks',
  );
  const rows = [...new Map(all.rows.map((row) => [row.hash, row])).values()];
  for (let i = 0; i < rows.length; i += 256) {
    const batch = rows.slice(i, i + 256);
    const found = await embedder.embedDocuments(batch.map((row) => row.content));
    await vectors.save(
      embedder.id,
      batch.map((row, j) => ({ hash: row.hash, vector: found[j] as number[] })),
    );
    process.stderr.write(`embedded ${Math.min(i + 256, rows.length)} of ${rows.length}\r`);
  }
  process.stderr.write('\n');
}
