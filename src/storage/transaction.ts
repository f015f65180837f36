import type pg from 'pg';

/**
 * Runs `work` in a transaction on one pooled connection: committed when it resolves, rolled
 * back when it throws (the error is rethrown). For repositories whose writes are explicit SQL.
 */
export async function withTransaction<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  // A connection whose rollback failed is in an unknown state: destroyed, not pooled.
  let broken = false;
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {
      broken = true;
    });
    throw error;
  } finally {
    client.release(broken);
  }
}
