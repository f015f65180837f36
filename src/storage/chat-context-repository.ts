import type { ModelMessage } from 'ai';
import type { UserProfile } from '../assistant/system-prompt.ts';
import type { Db } from './database.ts';
import { orm } from './orm.ts';

const { sql } = orm;

export interface ChatContext {
  /** Undefined for a user who has never told the assistant anything about themselves. */
  profile: UserProfile | undefined;
  /** The user's latest messages, oldest first. */
  history: ModelMessage[];
}

/**
 * What a chat reads before calling the model, in one statement: every round trip here is
 * time before the first token, and the embedded engine runs statements one at a time.
 */
export class ChatContextRepository {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  async load(userId: string, historyRows: number): Promise<ChatContext> {
    const result = await this.#db.execute<{
      profile: UserProfile | null;
      history: ModelMessage[];
    }>(sql`
      SELECT
        (SELECT json_build_object(
            'displayName', display_name, 'timezone', timezone, 'locale', locale, 'facts', facts)
           FROM users WHERE user_id = ${userId}) AS profile,
        COALESCE(
          (SELECT json_agg(content ORDER BY id)
             FROM (SELECT id, content FROM messages
                    WHERE user_id = ${userId} ORDER BY id DESC LIMIT ${historyRows}) AS recent),
          '[]'::json) AS history`);
    const row = result.rows[0];
    return { profile: row?.profile ?? undefined, history: row?.history ?? [] };
  }
}
