import type { Db } from './database.ts';

/**
 * Named leases shared by replicas through the database, timed by the database's own clock
 * (`now()`), so replicas with drifting clocks still agree on who holds one.
 */
export class LeaseRepository {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /**
   * Takes or renews the lease for `holder` for `ms`. Returns its state when held, undefined
   * when another holder's lease is still running.
   */
  async acquire(
    name: string,
    holder: string,
    ms: number,
  ): Promise<Record<string, unknown> | undefined> {
    const { rows } = await this.#db.$client.query<{ state: Record<string, unknown> }>(
      `INSERT INTO service_leases AS l (name, holder, expires_at)
       VALUES ($1, $2, now() + make_interval(secs => $3))
       ON CONFLICT (name) DO UPDATE
          SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
        WHERE l.holder = EXCLUDED.holder OR l.expires_at < now()
       RETURNING state`,
      [name, holder, ms / 1000],
    );
    return rows[0]?.state;
  }

  /** Saves the holder's state; false when the lease was lost meanwhile. */
  async save(name: string, holder: string, state: Record<string, unknown>): Promise<boolean> {
    const { rowCount } = await this.#db.$client.query(
      'UPDATE service_leases SET state = $3 WHERE name = $1 AND holder = $2',
      [name, holder, JSON.stringify(state)],
    );
    return rowCount === 1;
  }

  async release(name: string, holder: string): Promise<void> {
    await this.#db.$client.query(
      'UPDATE service_leases SET expires_at = now() WHERE name = $1 AND holder = $2',
      [name, holder],
    );
  }
}
