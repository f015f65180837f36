import type { Db } from './database.ts';
import { textOf } from './history-repository.ts';

/** A conversation to title, with its first exchange on the active path. */
export interface TitleRequest {
  conversationId: string;
  userId: string;
  question: string;
  answer: string;
  attempts: number;
}

/**
 * Conversations waiting for the model to title them: the rows say what is left to do; the job
 * engine (src/background) decides when and where each one is tried.
 */
export class TitleRequestRepository {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /** Queues a conversation the model has not titled (nor the user named); once at most. */
  async request(conversationId: string): Promise<boolean> {
    const { rowCount } = await this.#db.$client.query(
      `INSERT INTO title_requests (conversation_id, user_id)
       SELECT id, user_id FROM conversations WHERE id = $1 AND title_source = 'question'
       ON CONFLICT (conversation_id) DO NOTHING`,
      [conversationId],
    );
    return rowCount === 1;
  }

  async pendingIds(limit: number, offset = 0): Promise<string[]> {
    const { rows } = await this.#db.$client.query<{ id: string }>(
      `SELECT conversation_id AS id FROM title_requests WHERE failed_at IS NULL
        ORDER BY created_at, conversation_id LIMIT $1 OFFSET $2`,
      [limit, offset],
    );
    return rows.map((row) => row.id);
  }

  /**
   * The request with the first question and answer of the active path; undefined when it is
   * done, given up, or its conversation is gone.
   */
  async pending(conversationId: string): Promise<TitleRequest | undefined> {
    const { rows } = await this.#db.$client.query<{
      user_id: string;
      attempts: number;
      first: { role: string; content: unknown }[] | null;
    }>(
      `SELECT t.user_id, t.attempts,
              (SELECT json_agg(json_build_object('role', f.role, 'content', f.content) ORDER BY f.id)
                 FROM (SELECT id, role, content FROM messages
                        WHERE conversation_id = t.conversation_id AND on_path
                        ORDER BY id LIMIT 8) f) AS first
         FROM title_requests t
        WHERE t.conversation_id = $1 AND t.failed_at IS NULL`,
      [conversationId],
    );
    const row = rows[0];
    if (!row) return undefined;
    const first = row.first ?? [];
    const question = first.find((message) => message.role === 'user');
    const answer = first.find((message) => message.role === 'assistant' && textOf(message.content));
    return {
      conversationId,
      userId: row.user_id,
      question: question ? textOf(question.content) : '',
      answer: answer ? textOf(answer.content) : '',
      attempts: row.attempts,
    };
  }

  async remove(conversationId: string): Promise<void> {
    await this.#db.$client.query('DELETE FROM title_requests WHERE conversation_id = $1', [
      conversationId,
    ]);
  }

  async markRetry(conversationId: string, attempts: number, errorKind: string): Promise<void> {
    await this.#db.$client.query(
      'UPDATE title_requests SET attempts = $2, error_kind = $3 WHERE conversation_id = $1',
      [conversationId, attempts, errorKind],
    );
  }

  /** Given up: kept for the administrator to see (GET /admin/jobs); the title stays the question's. */
  async markFailed(conversationId: string, attempts: number, errorKind: string): Promise<void> {
    await this.#db.$client.query(
      `UPDATE title_requests SET attempts = $2, error_kind = $3, failed_at = now()
        WHERE conversation_id = $1`,
      [conversationId, attempts, errorKind],
    );
  }
}
