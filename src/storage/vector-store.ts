import { createHash } from 'node:crypto';
import type pg from 'pg';
import { type ChunkHit, type HitRow, toHit } from './chunk-hit.ts';
import type { Db } from './database.ts';
import { withTransaction } from './transaction.ts';

const DDL_LOCK = 0x76656374; // "vect"
/** HNSW candidates kept while searching (pgvector's default is 40): recall against speed. */
const SEARCH_EF = 100;

/**
 * Chunk vectors in pgvector, keyed by (embedding model, content hash): identical text is
 * embedded once per model, and each model has its own HNSW index (a partial index on its
 * rows, at its dimension), so vectors of different models are never compared. Only used
 * where the `vector` extension exists; the table is created on first use, so a server that
 * gains pgvector later gets it without a migration.
 */
export class VectorStore {
  readonly #db: Db;
  #table: Promise<void> | undefined;
  readonly #indexes = new Map<string, Promise<void>>();

  constructor(db: Db) {
    this.#db = db;
  }

  async hasChunks(): Promise<boolean> {
    const { rowCount } = await this.#db.$client.query('SELECT 1 FROM chunks LIMIT 1');
    return rowCount === 1;
  }

  /** Distinct chunk texts that have no vector for `model` yet. */
  async missing(model: string, limit: number): Promise<{ hash: string; content: string }[]> {
    await this.#ensureTable();
    const { rows } = await this.#db.$client.query<{ hash: string; content: string }>(
      `SELECT DISTINCT ON (c.content_hash) c.content_hash AS hash, c.content
       FROM chunks c
       WHERE NOT EXISTS (SELECT 1 FROM chunk_embeddings e
                         WHERE e.model = $1 AND e.content_hash = c.content_hash)
       ORDER BY c.content_hash
       LIMIT $2`,
      [model, limit],
    );
    return rows;
  }

  async save(model: string, items: readonly { hash: string; vector: number[] }[]): Promise<void> {
    const dimension = items[0]?.vector.length;
    if (!dimension) return;
    await this.#ensureIndex(model, dimension);
    // A text whose chunks were deleted while it was being embedded gets no vector: a deleted
    // document (or user) leaves none behind (pruneOrphanVectors removes the earlier ones).
    await this.#db.$client.query(
      `INSERT INTO chunk_embeddings (model, content_hash, embedding)
       SELECT $1, n.hash, n.embedding FROM unnest($2::text[], $3::vector[]) AS n(hash, embedding)
       WHERE EXISTS (SELECT 1 FROM chunks c WHERE c.content_hash = n.hash)
       ON CONFLICT DO NOTHING`,
      [model, items.map((item) => item.hash), items.map((item) => toVector(item.vector))],
    );
  }

  /**
   * Nearest chunks the owners may see, by cosine similarity (score in [-1, 1]). A chunk whose
   * vector is zero has no direction: pgvector's cosine is NaN, reported as the floor, −1
   * (NaN sorts after every number in PostgreSQL, so such chunks come last).
   *
   * The owners' filter is inside the index scan, which pgvector (0.8) continues past the
   * first candidates until `limit` rows pass it (iterative scan): taking the nearest vectors
   * of every user first and filtering afterwards left a user with fewer hits, or none, when
   * other users' texts were nearer. `ef_search` is raised to at least `limit` (at 40, its
   * default, an HNSW scan returns at most 40 rows) and above it for recall (bench/RESULTS.md).
   */
  async search(
    model: string,
    vector: readonly number[],
    owners: readonly string[],
    limit: number,
  ): Promise<ChunkHit[]> {
    await this.#ensureIndex(model, vector.length);
    const dim = vector.length;
    const efSearch = Math.min(1_000, Math.max(SEARCH_EF, limit));
    return withTransaction(this.#db.$client, async (client) => {
      await client.query(
        `SELECT set_config('hnsw.ef_search', $1, true),
                set_config('hnsw.iterative_scan', 'relaxed_order', true)`,
        [String(efSearch)],
      );
      const { rows } = await client.query<HitRow>(nearestChunksQuery(model, dim), [
        toVector(vector),
        owners,
        limit,
      ]);
      return rows.map(toHit);
    });
  }

  #ensureTable(): Promise<void> {
    this.#table ??= withTransaction(this.#db.$client, async (client) => {
      await client.query('SELECT pg_advisory_xact_lock($1)', [DDL_LOCK]);
      await client.query(
        `CREATE TABLE IF NOT EXISTS chunk_embeddings (
           model text NOT NULL,
           content_hash text NOT NULL,
           embedding vector NOT NULL,
           PRIMARY KEY (model, content_hash)
         )`,
      );
      // Pruning a deleted document's vectors looks them up by text, across models.
      await client.query(
        'CREATE INDEX IF NOT EXISTS chunk_embeddings_hash_idx ON chunk_embeddings (content_hash)',
      );
    }).catch((error: unknown) => {
      this.#table = undefined;
      throw error;
    });
    return this.#table;
  }

  #ensureIndex(model: string, dimension: number): Promise<void> {
    if (!Number.isInteger(dimension) || dimension < 1 || dimension > 16_000) {
      return Promise.reject(new Error(`unusable embedding dimension ${dimension}`));
    }
    const name = `chunk_embeddings_${createHash('sha256').update(`${model}/${dimension}`).digest('hex').slice(0, 16)}_hnsw`;
    const type = indexedType(dimension);
    let created = this.#indexes.get(name);
    if (!created) {
      created = this.#ensureTable()
        .then(() =>
          withTransaction(this.#db.$client, async (client) => {
            // Wider than any HNSW index takes: searched exactly, without one.
            if (type === undefined) return;
            await client.query('SELECT pg_advisory_xact_lock($1)', [DDL_LOCK]);
            await client.query(
              `CREATE INDEX IF NOT EXISTS ${name} ON chunk_embeddings
               USING hnsw ((embedding::${type}(${dimension})) ${type}_cosine_ops)
               WHERE model = ${literal(model)}`,
            );
          }),
        )
        .catch((error: unknown) => {
          this.#indexes.delete(name);
          throw error;
        });
      this.#indexes.set(name, created);
    }
    return created;
  }
}

/**
 * Deletes the vectors of these texts that no chunk has any more, in the transaction that
 * deleted or replaced their document: a deleted document's, or user's, words leave no vectors
 * behind. A text another chunk still has keeps its vector (it is shared by content hash).
 * Without pgvector, or before the first vector was saved, there is no table and nothing to do.
 */
export async function pruneOrphanVectors(
  client: pg.PoolClient,
  hashes: readonly string[],
): Promise<void> {
  if (hashes.length === 0) return;
  const { rows } = await client.query<{ present: boolean }>(
    "SELECT to_regclass('chunk_embeddings') IS NOT NULL AS present",
  );
  if (!rows[0]?.present) return;
  await client.query(
    `DELETE FROM chunk_embeddings e
     WHERE e.content_hash = ANY($1::text[])
       AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.content_hash = e.content_hash)`,
    [[...new Set(hashes)]],
  );
}

const toVector = (vector: readonly number[]) => `[${vector.join(',')}]`;

/**
 * The nearest chunks the owners ($2) may see of a query vector ($1), at most $3 (see
 * VectorStore.search); exported so bench/vector-buffers.ts explains the very query searched.
 * The expression and predicate must match the partial index exactly for it to be used; both
 * are literals built from our own model id and an integer.
 */
export const nearestChunksQuery = (model: string, dim: number): string => {
  const type = indexedType(dim) ?? 'vector';
  return `WITH nn AS MATERIALIZED (
     SELECT e.content_hash, e.embedding::${type}(${dim}) <=> $1::${type}(${dim}) AS distance
     FROM chunk_embeddings e
     WHERE e.model = ${literal(model)}
       AND EXISTS (SELECT 1 FROM chunks c
                   WHERE c.content_hash = e.content_hash AND c.owner = ANY($2::text[]))
     ORDER BY e.embedding::${type}(${dim}) <=> $1::${type}(${dim})
     LIMIT $3
   )
   SELECT c.id, d.source, c.chunk_index, c.page, c.content, c.metadata,
          coalesce(nullif(1 - nn.distance, 'NaN'), -1) AS score
   FROM nn
   JOIN chunks c ON c.content_hash = nn.content_hash AND c.owner = ANY($2::text[])
   JOIN documents d ON d.id = c.document_id
   ORDER BY nn.distance, c.id
   LIMIT $3`;
};

/**
 * The type a model's HNSW index is built on, by its vectors' dimension: pgvector's index takes
 * `vector` up to 2,000 dimensions and `halfvec` (16-bit floats, ample for cosine ranking) up
 * to 4,000; wider ones (Qwen3-Embedding-8B: 4,096) get no index and are searched exactly.
 * Before, an index was always made on `vector`, which failed above 2,000 dimensions (OpenAI's
 * text-embedding-3-large: 3,072), and no vector was ever saved nor any document searched.
 */
function indexedType(dimension: number): 'vector' | 'halfvec' | undefined {
  if (dimension <= 2_000) return 'vector';
  return dimension <= 4_000 ? 'halfvec' : undefined;
}

/** A SQL string literal (standard_conforming_strings is on in both engines). */
const literal = (value: string) => `'${value.replaceAll("'", "''")}'`;
