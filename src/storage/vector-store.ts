import { createHash } from 'node:crypto';
import type pg from 'pg';
import { type ChunkHit, type HitRow, toHit } from './chunk-hit.ts';
import type { Db } from './database.ts';
import { HIDDEN } from './hidden-documents.ts';
import { withTransaction } from './transaction.ts';
import { adoptEarlierIndexes, upgradeTable } from './vector-table-upgrade.ts';

const DDL_LOCK = 0x76656374; // "vect"
/** HNSW candidates kept while searching (pgvector's default is 40): recall against speed. */
const SEARCH_EF = 100;

/**
 * Chunk vectors in pgvector, keyed by (embedding model, content hash): identical text is
 * embedded once per model. A vector's space is its model and its dimension together (a model
 * served under the same name may change dimension): each space has its own HNSW index (a
 * partial index on its rows, at its dimension), vectors of other spaces are never compared,
 * and a text whose vector is of another dimension than the model gives now counts as missing
 * and is replaced. A row without a vector records that the model gave the text none usable
 * (see isUsableVector): it is found by its words only, and not asked for again until the
 * model changes dimension. Only used
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

  /** Whether any vector of `model` is stored (of any dimension): only then can one be stale. */
  async hasVectorsOf(model: string): Promise<boolean> {
    await this.#ensureTable();
    const { rowCount } = await this.#db.$client.query(
      'SELECT 1 FROM chunk_embeddings WHERE model = $1 AND embedding IS NOT NULL LIMIT 1',
      [model],
    );
    return rowCount === 1;
  }

  /**
   * Distinct chunk texts that have no vector for `model` yet, or (when the model's current
   * `dimension` is known) one of another dimension, given as `staleDimension`.
   */
  async missing(
    model: string,
    dimension: number | undefined,
    limit: number,
  ): Promise<MissingText[]> {
    await this.#ensureTable();
    const { rows } = await this.#db.$client.query<MissingText>(
      `SELECT DISTINCT ON (c.content_hash) c.content_hash AS hash, c.content,
              (SELECT vector_dims(e.embedding) FROM chunk_embeddings e
               WHERE e.model = $1 AND e.content_hash = c.content_hash) AS "staleDimension"
       FROM chunks c
       WHERE NOT EXISTS (SELECT 1 FROM chunk_embeddings e
                         WHERE e.model = $1 AND e.content_hash = c.content_hash
                           AND (e.embedding IS NULL OR $3::int IS NULL
                                OR vector_dims(e.embedding) = $3::int))
       ORDER BY c.content_hash
       LIMIT $2`,
      [model, limit, dimension ?? null],
    );
    return rows;
  }

  /**
   * Saves texts' vectors, replacing a vector of another dimension; `null` records that the
   * model has no usable vector for the text. The vectors must share one dimension.
   */
  async save(
    model: string,
    items: readonly { hash: string; vector: readonly number[] | null }[],
  ): Promise<void> {
    if (items.length === 0) return;
    const dimensions = new Set(items.flatMap((item) => (item.vector ? [item.vector.length] : [])));
    if (dimensions.size > 1)
      throw new Error(`vectors of ${dimensions.size} dimensions in one save`);
    const [dimension] = dimensions;
    if (dimension === undefined) await this.#ensureTable();
    else await this.#ensureIndex(model, dimension);
    // A text whose chunks were deleted while it was being embedded gets no vector: a deleted
    // document (or user) leaves none behind (pruneOrphanVectors removes the earlier ones).
    await this.#db.$client.query(
      `INSERT INTO chunk_embeddings (model, content_hash, embedding)
       SELECT $1, n.hash, n.embedding FROM unnest($2::text[], $3::vector[]) AS n(hash, embedding)
       WHERE EXISTS (SELECT 1 FROM chunks c WHERE c.content_hash = n.hash)
       ON CONFLICT (model, content_hash) DO UPDATE SET embedding = excluded.embedding
       WHERE (chunk_embeddings.embedding IS NULL) <> (excluded.embedding IS NULL)
          OR vector_dims(chunk_embeddings.embedding) <> vector_dims(excluded.embedding)`,
      [
        model,
        items.map((item) => item.hash),
        items.map((item) => (item.vector ? toVector(item.vector) : null)),
      ],
    );
  }

  /**
   * Forgets that the model gave some texts no usable vector: after it changed dimension it is
   * another model, which may give them one. Returns how many texts are asked again.
   */
  async forgetUnusable(model: string): Promise<number> {
    await this.#ensureTable();
    const { rowCount } = await this.#db.$client.query(
      'DELETE FROM chunk_embeddings WHERE model = $1 AND embedding IS NULL',
      [model],
    );
    return rowCount ?? 0;
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
           embedding vector,
           PRIMARY KEY (model, content_hash)
         )`,
      );
      // Pruning a deleted document's vectors looks them up by text, across models.
      await client.query(
        'CREATE INDEX IF NOT EXISTS chunk_embeddings_hash_idx ON chunk_embeddings (content_hash)',
      );
      await upgradeTable(client);
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
    const name = indexName(model, dimension);
    const type = indexedType(dimension);
    let created = this.#indexes.get(name);
    if (!created) {
      created = this.#ensureTable()
        .then(() =>
          withTransaction(this.#db.$client, async (client) => {
            await client.query('SELECT pg_advisory_xact_lock($1)', [DDL_LOCK]);
            const adopted = await adoptEarlierIndexes(client, model, dimension);
            // Wider than any HNSW index takes: searched exactly, without one.
            if (type === undefined || adopted) return;
            await client.query(
              `CREATE INDEX IF NOT EXISTS ${name} ON chunk_embeddings
               USING hnsw ((embedding::${type}(${dimension})) ${type}_cosine_ops)
               WHERE ${spaceOf(model, dimension)}`,
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

export interface MissingText {
  hash: string;
  content: string;
  /** The dimension of the text's vector for the model, when it has one of another. */
  staleDimension: number | null;
}

/**
 * The rows of one vector space, as the partial index's predicate and the search's filter
 * (both must say it the same way for the index to be used): literals built from our own
 * model id and an integer. Without the dimension, a row of another dimension under the same
 * model made the index's cast fail, and with it every save and search of the model.
 */
const spaceOf = (model: string, dimension: number, alias?: string) => {
  const column = alias ? `${alias}.` : '';
  return `${column}model = ${literal(model)} AND vector_dims(${column}embedding) = ${dimension}`;
};

/** Named by the space; `space` tells them from the indexes made before by model alone. */
const indexName = (model: string, dimension: number) =>
  `chunk_embeddings_${createHash('sha256').update(`space/${model}/${dimension}`).digest('hex').slice(0, 16)}_hnsw`;

/**
 * The nearest chunks the owners ($2) may see of a query vector ($1), at most $3 (see
 * VectorStore.search); exported so bench/vector-buffers.ts explains the very query searched.
 * The expression and predicate must match the partial index exactly for it to be used; both
 * are literals built from our own model id and an integer. A text only a hidden document
 * holds (a large version being written) is no candidate: it took a place of the $3 and was
 * left out after.
 */
export const nearestChunksQuery = (model: string, dim: number): string => {
  const type = indexedType(dim) ?? 'vector';
  return `WITH nn AS MATERIALIZED (
     SELECT e.content_hash, e.embedding::${type}(${dim}) <=> $1::${type}(${dim}) AS distance
     FROM chunk_embeddings e
     WHERE ${spaceOf(model, dim, 'e')}
       AND EXISTS (SELECT 1 FROM chunks c
                   JOIN documents d ON d.id = c.document_id AND d.kind <> '${HIDDEN}'
                   WHERE c.content_hash = e.content_hash AND c.owner = ANY($2::text[]))
     ORDER BY e.embedding::${type}(${dim}) <=> $1::${type}(${dim})
     LIMIT $3
   )
   SELECT c.id, d.source, c.chunk_index, c.page, c.content, c.metadata,
          coalesce(nullif(1 - nn.distance, 'NaN'), -1) AS score
   FROM nn
   JOIN chunks c ON c.content_hash = nn.content_hash AND c.owner = ANY($2::text[])
   JOIN documents d ON d.id = c.document_id AND d.kind <> '${HIDDEN}'
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
