import type { ChatTurnQueue } from '../assistant/shared-user-chat-lock.ts';
import type { Db } from './database.ts';

/**
 * The chat queue of replicas sharing a PostgreSQL server, timed by the database's clock
 * (`now()`), so replicas with drifting clocks still agree on which tickets are dead. Each
 * method is one statement on a pooled connection, returned at once.
 */
export class ChatTurnRepository implements ChatTurnQueue {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  async join(userId: string, holder: string): Promise<number> {
    const { rows } = await this.#db.$client.query<{ id: string }>(
      'INSERT INTO chat_turns (user_id, holder) VALUES ($1, $2) RETURNING id',
      [userId, holder],
    );
    return Number(rows[0]?.id);
  }

  /**
   * One upsert on the user's lock row: inserting it, or handing it over from a dead ticket,
   * both require that no older live ticket waits. The row is locked by the upsert, so two
   * replicas racing for it are serialised by the database and only one gets it.
   */
  async tryTake(userId: string, ticket: number, ttlMs: number): Promise<boolean> {
    const { rowCount } = await this.#db.$client.query(
      `WITH dead AS (
         DELETE FROM chat_turns
          WHERE user_id = $1 AND heartbeat_at < now() - make_interval(secs => $3)
       )
       INSERT INTO chat_turn_locks AS l (user_id, ticket)
       SELECT $1, $2
        WHERE NOT EXISTS (
          SELECT 1 FROM chat_turns t
           WHERE t.user_id = $1 AND t.id < $2
             AND t.heartbeat_at >= now() - make_interval(secs => $3))
       ON CONFLICT (user_id) DO UPDATE SET ticket = EXCLUDED.ticket
        WHERE l.ticket = EXCLUDED.ticket
           OR NOT EXISTS (
             SELECT 1 FROM chat_turns t
              WHERE t.id = l.ticket AND t.heartbeat_at >= now() - make_interval(secs => $3))
       RETURNING 1`,
      [userId, ticket, ttlMs / 1000],
    );
    return rowCount === 1;
  }

  async heartbeat(holder: string): Promise<number[]> {
    const { rows } = await this.#db.$client.query<{ id: string }>(
      'UPDATE chat_turns SET heartbeat_at = now() WHERE holder = $1 RETURNING id',
      [holder],
    );
    return rows.map((row) => Number(row.id));
  }

  async leave(userId: string, ticket: number): Promise<void> {
    await this.#db.$client.query(
      `WITH unlocked AS (DELETE FROM chat_turn_locks WHERE user_id = $1 AND ticket = $2)
       DELETE FROM chat_turns WHERE id = $2`,
      [userId, ticket],
    );
  }
}
