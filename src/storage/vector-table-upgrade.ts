import { createHash } from 'node:crypto';
import type pg from 'pg';

/*
 * What an earlier version left of `chunk_embeddings` (see VectorStore), brought to this one's
 * shape in the transaction that makes the table or a space's index, under the DDL lock.
 */

/**
 * Brings a table made by an earlier version to this one's shape: a text the model has no
 * vector for is a row without one.
 */
export async function upgradeTable(client: pg.PoolClient): Promise<void> {
  await client.query(
    `DO $$ BEGIN
       IF EXISTS (SELECT 1 FROM pg_attribute
                  WHERE attrelid = 'chunk_embeddings'::regclass AND attname = 'embedding'
                    AND attnotnull) THEN
         ALTER TABLE chunk_embeddings ALTER COLUMN embedding DROP NOT NULL;
       END IF;
     END $$`,
  );
}

/**
 * The HNSW indexes an earlier version made for `model` alone (named by model and dimension,
 * their predicate without the dimension). The one at `dimension` serves its space as it is (a
 * search of the space implies its predicate): it is kept, and true returned, so a large
 * index is not built again on upgrade. One at another dimension is dropped: a row of this
 * dimension fails its cast, and with it every save of the model.
 */
export async function adoptEarlierIndexes(
  client: pg.PoolClient,
  model: string,
  dimension: number,
): Promise<boolean> {
  const { rows } = await client.query<{ name: string; definition: string }>(
    `SELECT indexname AS name, indexdef AS definition FROM pg_indexes
     WHERE schemaname = current_schema() AND tablename = 'chunk_embeddings'
       AND indexdef LIKE '%USING hnsw%' AND indexdef NOT LIKE '%vector_dims%'`,
  );
  let adopted = false;
  for (const { name, definition } of rows) {
    const indexed = Number(/::(?:vector|halfvec)\((\d+)\)/.exec(definition)?.[1]);
    if (name !== earlierIndexName(model, indexed)) continue; // another model's
    if (indexed === dimension) adopted = true;
    else await client.query(`DROP INDEX IF EXISTS "${name}"`);
  }
  return adopted;
}

const earlierIndexName = (model: string, dimension: number) =>
  `chunk_embeddings_${createHash('sha256').update(`${model}/${dimension}`).digest('hex').slice(0, 16)}_hnsw`;
