import type { Db } from './database.ts';
import { textOf } from './history-repository.ts';

/** A question or an answer whose words matched, newest first. */
export interface SearchHit {
  /** The cursor for older hits. */
  position: string;
  conversationId: string;
  title: string;
  runId: string;
  role: 'user' | 'assistant';
  text: string;
  /** Whether this version is on its conversation's active path. */
  onPath: boolean;
  createdAt: Date;
}

interface HitRow {
  position: string;
  conversation_id: string;
  title: string;
  run_id: string;
  role: 'user' | 'assistant';
  content: unknown;
  on_path: boolean;
  created_at: Date;
}

/**
 * Full-text search over a user's questions and answers, every conversation and version: the
 * GIN index on `messages.search` (the 'simple' configuration's words plus CJK bigrams, see
 * migration 0012) finds the rows, the user's own are kept, newest first.
 */
export class ConversationSearchRepository {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /** `query` is a tsquery in its input syntax (see conversations/search-query.ts). */
  async search(
    userId: string,
    query: string,
    before: string | undefined,
    limit: number,
  ): Promise<SearchHit[]> {
    const { rows } = await this.#db.$client.query<HitRow>(
      `SELECT m.id::text AS position, m.conversation_id, c.title, m.run_id, m.role, m.content,
              m.on_path, m.created_at
         FROM messages m JOIN conversations c ON c.id = m.conversation_id
        WHERE m.search @@ $2::tsquery AND m.user_id = $1 AND m.run_id IS NOT NULL
          AND ($3::bigint IS NULL OR m.id < $3::bigint)
        ORDER BY m.id DESC LIMIT $4`,
      [userId, query, before ?? null, limit],
    );
    return rows.map((row) => ({
      position: row.position,
      conversationId: row.conversation_id,
      title: row.title,
      runId: row.run_id,
      role: row.role,
      text: textOf(row.content),
      onPath: row.on_path,
      createdAt: new Date(row.created_at),
    }));
  }
}
