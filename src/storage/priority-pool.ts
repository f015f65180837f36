import pg from 'pg';
import { PoolWaitTimeout } from './database-errors.ts';

type ConnectCallback = (
  error: Error | undefined,
  client: pg.PoolClient | undefined,
  done: (release?: unknown) => void,
) => void;

/** pg-pool's item of its `_pendingQueue`: a query waiting for a connection. */
interface PendingItem {
  callback: (error: Error | undefined, client: undefined, done: () => void) => void;
}

/** pg-pool's words for a query sent after end(). */
const ENDED = 'Cannot use a pool after calling end on the pool';

/** pg-pool's only words for a query that waited connectionTimeoutMillis for a busy pool. */
const WAIT_TIMED_OUT = 'timeout exceeded when trying to connect';

/**
 * A pg pool in which a query can go ahead of the ones waiting for a connection, and whose
 * wait for a connection ends in a PoolWaitTimeout (busy) rather than an error that reads like
 * an unreachable database. On the embedded engine the pool has one connection, so in a burst
 * every new chat's reads queue for it; a finished chat's turn must not wait behind them, or its
 * end event (which names the stored run) waits seconds after the last token.
 *
 * pg-pool keeps its waiters in `_pendingQueue` and adds to it synchronously in `connect()`;
 * without that field (another pg-pool) the query simply waits its turn.
 */
export class PriorityPool extends pg.Pool {
  override connect(): Promise<pg.PoolClient>;
  override connect(callback: ConnectCallback): void;
  override connect(callback?: ConnectCallback): Promise<pg.PoolClient> | undefined {
    // pg-pool's own query() takes its connection through this callback form.
    if (callback) {
      super.connect((error, client, done) =>
        callback(this.#explain(error), client as pg.PoolClient | undefined, done),
      );
      return undefined;
    }
    return super.connect().catch((error: Error) => {
      throw this.#explain(error);
    });
  }

  /** The next free connection, before any query already waiting. */
  connectFirst(): Promise<pg.PoolClient> {
    const connecting = this.connect();
    const waiting = (this as unknown as { _pendingQueue?: unknown[] })._pendingQueue;
    if (Array.isArray(waiting) && waiting.length > 1) waiting.unshift(waiting.pop());
    return connecting;
  }

  /**
   * Fails the queries waiting for a connection. pg-pool's end() hands none out any more and
   * leaves them waiting until their DB_POOL_WAIT_MS, holding whichever step of the stop awaits
   * them; they get the error a query sent after end() gets.
   */
  failWaiters(): void {
    const waiting = (this as unknown as { _pendingQueue?: PendingItem[] })._pendingQueue;
    if (!Array.isArray(waiting)) return;
    for (const item of waiting.splice(0)) {
      item.callback(new Error(ENDED), undefined, () => {});
    }
  }

  /** Whether a new query has to wait for a connection in use (none idle, no room for another). */
  get saturated(): boolean {
    return this.idleCount === 0 && this.totalCount >= (this.options.max ?? 10);
  }

  /** Runs one statement on the next free connection, before any query already waiting. */
  async queryFirst<R extends pg.QueryResultRow = pg.QueryResultRow>(
    config: pg.QueryConfig,
  ): Promise<pg.QueryResult<R>> {
    const client = await this.connectFirst();
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

  #explain(error: Error | undefined): Error | undefined {
    if (error?.message !== WAIT_TIMED_OUT) return error;
    return new PoolWaitTimeout({
      waiting: this.waitingCount,
      poolSize: this.totalCount,
      waitMs: this.options.connectionTimeoutMillis ?? 0,
    });
  }
}
