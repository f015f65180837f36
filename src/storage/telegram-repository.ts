import type { Db } from './database.ts';

/**
 * Telegram's state in the database, shared by replicas: which chat talks as which user,
 * which updates were already taken, when an unlinked chat was last told how to link.
 */
export class TelegramRepository {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /**
   * Takes updates for processing: returns the ids no replica (nor an earlier run of this one)
   * took before. One statement, so two replicas handed the same update never both get it.
   */
  async claimUpdates(botId: string, updateIds: readonly number[]): Promise<Set<number>> {
    if (updateIds.length === 0) return new Set();
    const { rows } = await this.#db.$client.query<{ update_id: string }>(
      `INSERT INTO telegram_updates (bot_id, update_id)
       SELECT $1, id FROM unnest($2::bigint[]) AS id
       ON CONFLICT DO NOTHING
       RETURNING update_id`,
      [botId, updateIds],
    );
    return new Set(rows.map((row) => Number(row.update_id)));
  }

  /** Forgets updates taken longer ago than `olderThanSeconds` (Telegram keeps one for a day). */
  async forgetUpdates(olderThanSeconds: number): Promise<void> {
    await this.#db.$client.query(
      'DELETE FROM telegram_updates WHERE received_at < now() - make_interval(secs => $1)',
      [olderThanSeconds],
    );
  }

  /** The user a chat talks as; undefined for a chat never linked with a code, or stopped. */
  async userOfChat(chatId: string): Promise<string | undefined> {
    const { rows } = await this.#db.$client.query<{ user_id: string }>(
      'SELECT user_id FROM telegram_chats WHERE chat_id = $1 AND user_id IS NOT NULL',
      [chatId],
    );
    return rows[0]?.user_id;
  }

  /**
   * Spends a link code (unexpired at `now`): the code's user gets the chat for notices and as
   * the chat's assistant (taking it from any user who had it), and the code is gone, in one
   * statement. Returns the user id, or undefined for an unknown or old code.
   */
  async linkChat(codeHash: string, chatId: string, now: Date): Promise<string | undefined> {
    const { rows } = await this.#db.$client.query<{ user_id: string }>(
      `WITH linked AS (
         UPDATE users
            SET telegram_chat_id = $2, telegram_link_code_hash = NULL,
                telegram_link_expires_at = NULL, updated_at = now()
          WHERE telegram_link_code_hash = $1 AND telegram_link_expires_at > $3
          RETURNING user_id)
       INSERT INTO telegram_chats (chat_id, user_id, linked_at, hinted_at)
       SELECT $2, user_id, now(), NULL FROM linked
       ON CONFLICT (chat_id) DO UPDATE
          SET user_id = EXCLUDED.user_id, linked_at = EXCLUDED.linked_at, hinted_at = NULL
       RETURNING user_id`,
      [codeHash, chatId, now],
    );
    return rows[0]?.user_id;
  }

  /**
   * `/stop`: the chat no longer talks as its user, and the user's notices no longer go there.
   * Returns the user it was linked to, if any.
   */
  async unlinkChat(chatId: string): Promise<string | undefined> {
    const { rows } = await this.#db.$client.query<{ user_id: string }>(
      `WITH gone AS (
         DELETE FROM telegram_chats WHERE chat_id = $1 AND user_id IS NOT NULL RETURNING user_id),
       cleared AS (
         UPDATE users u SET telegram_chat_id = NULL, updated_at = now()
           FROM gone WHERE u.user_id = gone.user_id AND u.telegram_chat_id = $1)
       SELECT user_id FROM gone`,
      [chatId],
    );
    return rows[0]?.user_id;
  }

  /**
   * Whether an unlinked chat should be told how to link now: true at most once per
   * `intervalSeconds` per chat, across replicas.
   */
  async hintDue(chatId: string, intervalSeconds: number): Promise<boolean> {
    const { rowCount } = await this.#db.$client.query(
      `INSERT INTO telegram_chats AS c (chat_id, hinted_at) VALUES ($1, now())
       ON CONFLICT (chat_id) DO UPDATE SET hinted_at = now()
        WHERE c.user_id IS NULL
          AND (c.hinted_at IS NULL OR c.hinted_at < now() - make_interval(secs => $2))`,
      [chatId, intervalSeconds],
    );
    return rowCount === 1;
  }

  /** The chat's own current conversation; undefined: it follows the user's shared one. */
  async conversationOf(chatId: string): Promise<string | undefined> {
    const { rows } = await this.#db.$client.query<{ conversation_id: string | null }>(
      'SELECT conversation_id FROM telegram_chats WHERE chat_id = $1',
      [chatId],
    );
    return rows[0]?.conversation_id ?? undefined;
  }

  /** Points the chat at one of its user's conversations (checked by the caller). */
  async pointAt(chatId: string, conversationId: string): Promise<void> {
    await this.#db.$client.query(
      'UPDATE telegram_chats SET conversation_id = $2 WHERE chat_id = $1',
      [chatId, conversationId],
    );
  }
}
