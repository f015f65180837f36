import { createHash } from 'node:crypto';
import pino from 'pino';
import { parseConfig } from '../../src/config.ts';
import type { ChunkingOptions } from '../../src/documents/chunker.ts';
import { DocumentService } from '../../src/documents/document-service.ts';
import type { Embedder } from '../../src/documents/embedder.ts';
import { EmbeddingDimension } from '../../src/documents/embedding-dimension.ts';
import type { Database } from '../../src/storage/database.ts';
import { DocumentRepository, SHARED } from '../../src/storage/document-repository.ts';
import { VectorStore } from '../../src/storage/vector-store.ts';
import { type Summary, summarize } from './stats.ts';

const DEPTH = 50; // FUSION_DEPTH: what hybrid search asks the vector store for
const RECALL_AT = 10;
const RECALL_QUERIES = 50;
const WARM_UP = 20;
/** IVFFlat's lists for ~100k rows (pgvector: rows / 1000 up to 1M) and probes tried. */
const IVFFLAT_PROBES = [1, 10];

/**
 * Measures vector search on stored, embedded chunks: hybrid search as `search_documents` runs
 * it (Parley's HNSW index), the vector store's search alone, recall@10 of both indexes against
 * an exact scan, and the vector search on an IVFFlat index in place of the HNSW one (same
 * expression and predicate, so the same query uses it). Returns Markdown lines.
 */
export async function measureVectorSearch(
  database: Database,
  embedder: Embedder,
  chunking: ChunkingOptions,
  queries: readonly string[],
  count: number,
): Promise<string[]> {
  const logger = pino({ level: 'warn' });
  const vectors = new VectorStore(database.db);
  const service = new DocumentService({
    documents: new DocumentRepository(database.db),
    chunking,
    logger,
    semantic: {
      embedder,
      dimension: new EmbeddingDimension(),
      vectors,
      indexer: { kick() {} },
      vectorWeight: parseConfig({}).HYBRID_VECTOR_WEIGHT,
    },
    verbose: false,
  });
  const asked = Array.from(
    { length: count },
    (_, i) => queries[(i * 7) % queries.length] as string,
  );
  const queryVectors = await embedder.embedDocuments(asked);
  const owners = [SHARED];

  const timed = async (run: (i: number) => Promise<unknown>): Promise<Summary> => {
    for (let i = 0; i < WARM_UP; i++) await run(i);
    const times: number[] = [];
    for (let i = 0; i < count; i++) {
      const started = performance.now();
      await run(i);
      times.push(performance.now() - started);
    }
    return summarize(times);
  };
  const nearest = (i: number, limit = DEPTH) =>
    vectors.search(embedder.id, queryVectors[i] as number[], owners, limit);

  const hybrid = await timed((i) => service.search(asked[i] as string, { limit: 5 }));
  const hnsw = await timed((i) => nearest(i));
  const hnswRecall = await recall(database, embedder, queryVectors, (i) => nearest(i));

  // The same search on IVFFlat: Parley's HNSW index dropped, an IVFFlat one on the same
  // expression and predicate built in its place, probes set for the whole database.
  const client = database.db.$client;
  const dimension = (queryVectors[0] as number[]).length;
  const { rows: indexes } = await client.query<{ name: string }>(
    `SELECT indexname AS name FROM pg_indexes
      WHERE tablename = 'chunk_embeddings' AND indexdef LIKE '%hnsw%'`,
  );
  for (const { name } of indexes) await client.query(`DROP INDEX ${name}`);
  const rows = Number((await client.query('SELECT count(*) AS n FROM chunk_embeddings')).rows[0].n);
  const lists = Math.max(10, Math.round(rows / 1000));
  const buildStarted = performance.now();
  await client.query(
    `CREATE INDEX chunk_embeddings_ivfflat ON chunk_embeddings
     USING ivfflat ((embedding::vector(${dimension})) vector_cosine_ops) WITH (lists = ${lists})
     WHERE model = '${embedder.id.replaceAll("'", "''")}'`,
  );
  const ivfBuildSeconds = (performance.now() - buildStarted) / 1000;
  const ivf: { probes: number; s: Summary; recall: number }[] = [];
  for (const probes of IVFFLAT_PROBES) {
    await setForEveryConnection(database, `SET ivfflat.probes = ${probes}`);
    const s = await timed((i) => nearest(i));
    const r = await recall(database, embedder, queryVectors, (i) => nearest(i));
    ivf.push({ probes, s, recall: r });
  }

  const row = (name: string, s: Summary, recallAt10?: number) =>
    `| ${name} | ${s.p50.toFixed(2)} | ${s.p90.toFixed(2)} | ${s.p99.toFixed(2)} | ${s.max.toFixed(2)} | ${recallAt10 === undefined ? '–' : recallAt10.toFixed(3)} | ${s.p99 <= 25 ? 'PASS' : 'FAIL'} |`;
  return [
    `${count} SciFact claims, one at a time, after ${WARM_UP} warm-ups; recall@${RECALL_AT} over the first ${RECALL_QUERIES} against an exact scan (no index) of the same vectors.`,
    '',
    '| search | p50 ms | p90 ms | p99 ms | max ms | recall@10 | p99 ≤ 25 ms |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    row('hybrid `search_documents` (BM25 + HNSW, top 5)', hybrid),
    row(`vector store alone, HNSW (top ${DEPTH})`, hnsw, hnswRecall),
    ...ivf.map(({ probes, s, recall: r }) =>
      row(`vector store alone, IVFFlat lists ${lists} probes ${probes} (top ${DEPTH})`, s, r),
    ),
    '',
    `The IVFFlat index took ${ivfBuildSeconds.toFixed(0)} s to build over ${rows} vectors.`,
  ];
}

/** Mean share of the exact top-k (a sequential scan, ordered by true distance) found. */
async function recall(
  database: Database,
  embedder: Embedder,
  queryVectors: readonly number[][],
  search: (i: number) => Promise<{ content: string }[]>,
): Promise<number> {
  const client = database.db.$client;
  let found = 0;
  let expected = 0;
  for (let i = 0; i < Math.min(RECALL_QUERIES, queryVectors.length); i++) {
    const vector = `[${(queryVectors[i] as number[]).join(',')}]`;
    // No cast to the index's expression: no index applies, every vector is compared.
    const { rows } = await client.query<{ content_hash: string }>(
      `SELECT content_hash FROM chunk_embeddings WHERE model = $2
       ORDER BY embedding <=> $1::vector LIMIT ${RECALL_AT}`,
      [vector, embedder.id],
    );
    const exact = new Set(rows.map((row) => row.content_hash));
    // A text stored under several sources comes back once per chunk: its first ten texts.
    const hashes = new Set(
      [...new Set((await search(i)).map((hit) => hashOf(hit.content)))].slice(0, RECALL_AT),
    );
    for (const hash of exact) if (hashes.has(hash)) found++;
    expected += exact.size;
  }
  return expected === 0 ? Number.NaN : found / expected;
}

const hashOf = (text: string) => createHash('sha256').update(text).digest('hex');

/** A session setting on every pooled connection (the server's pool has several). */
async function setForEveryConnection(database: Database, statement: string): Promise<void> {
  const pool = database.db.$client;
  const clients = await Promise.all(
    Array.from({ length: pool.options.max ?? 1 }, () => pool.connect()),
  );
  try {
    for (const client of clients) await client.query(statement);
  } finally {
    for (const client of clients) client.release();
  }
}
