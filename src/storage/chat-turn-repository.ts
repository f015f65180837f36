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
   * One upsert on the user's lock row. Inserting it requires that no older live ticket waits
   * (the order); handing it over requires that its holder stopped refreshing it (the
   * exclusion). That second condition reads only the row being upserted, which the database
   * locks and re-reads at its latest version: two replicas racing for it can never both win,
   * whatever their snapshots saw of the tickets.
   */
  async tryTake(userId: string, ticket: number, holder: string, ttlMs: number): Promise<boolean> {
    const { rowCount } = await this.#db.$client.query(
      `WITH dead AS (
         DELETE FROM chat_turns
          WHERE user_id = $1 AND heartbeat_at < now() - make_interval(secs => $4)
       )
       INSERT INTO chat_turn_locks AS l (user_id, ticket, holder)
       SELECT $1, $2, $3
        WHERE NOT EXISTS (
          SELECT 1 FROM chat_turns t
           WHERE t.user_id = $1 AND t.id < $2
             AND t.heartbeat_at >= now() - make_interval(secs => $4))
       ON CONFLICT (user_id) DO UPDATE
          SET ticket = EXCLUDED.ticket, holder = EXCLUDED.holder, heartbeat_at = now()
        WHERE l.ticket = EXCLUDED.ticket
           OR l.heartbeat_at < now() - make_interval(secs => $4)
       RETURNING 1`,
      [userId, ticket, holder, ttlMs / 1000],
    );
    return rowCount === 1;
  }

  /**
   * Also clears what dead replicas left behind (their tickets, and turns they held), for
   * users who do not chat again: the tables stay as small as the chats running now.
   */
  async heartbeat(holder: string, tickets: readonly number[], ttlMs: number): Promise<number[]> {
    const { rows } = await this.#db.$client.query<{ id: string }>(
      `WITH dead AS (
         DELETE FROM chat_turns
          WHERE holder <> $1 AND heartbeat_at < now() - make_interval(secs => $2)
       ),
       freed AS (
         DELETE FROM chat_turn_locks
          WHERE holder <> $1 AND heartbeat_at < now() - make_interval(secs => $2)
       ),
       held AS (
         UPDATE chat_turn_locks SET heartbeat_at = now()
          WHERE holder = $1 AND ticket = ANY($3::bigint[])
       )
       UPDATE chat_turns SET heartbeat_at = now()
        WHERE holder = $1 AND id = ANY($3::bigint[]) RETURNING id`,
      [holder, ttlMs / 1000, tickets],
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
