import pg from 'pg';

/**
 * A pg pool in which a query can go ahead of the ones waiting for a connection. On the
 * embedded engine the pool has one connection, so in a burst every new chat's reads queue
 * for it; a finished chat's turn must not wait behind them, or its end event (which names
 * the stored run) waits seconds after the last token.
 *
 * pg-pool keeps its waiters in `_pendingQueue` and adds to it synchronously in `connect()`;
 * without that field (another pg-pool) the query simply waits its turn.
 */
export class PriorityPool extends pg.Pool {
  /** Runs one statement on the next free connection, before any query already waiting. */
  async queryFirst<R extends pg.QueryResultRow = pg.QueryResultRow>(
    config: pg.QueryConfig,
  ): Promise<pg.QueryResult<R>> {
    const connecting = this.connect();
    const waiting = (this as unknown as { _pendingQueue?: unknown[] })._pendingQueue;
    if (Array.isArray(waiting) && waiting.length > 1) waiting.unshift(waiting.pop());
    const client = await connecting;
    let broken: Error | undefined;
    try {
      return await client.query<R>(config);
    } catch (error) {
      // A connection that failed mid-statement is not given back to the pool.
      if (!(error instanceof pg.DatabaseError)) broken = error as Error;
      throw error;
    } finally {
      client.release(broken);
    }
  }
}
