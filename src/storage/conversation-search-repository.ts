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
 * The user's newest messages read in order before the index is asked (see `search`): a word
 * in more than 1 % of them fills a page there; a rarer one has few rows in the index.
 */
const RECENT_WINDOW = 2_000;

const COLUMNS = `m.id::text AS position, m.conversation_id, c.title, m.run_id, m.role, m.content,
  m.on_path, m.created_at`;

/**
 * Full-text search over a user's questions and answers, every conversation and version,
 * newest first, in two steps whose cost is bounded whatever the words' frequency:
 *
 * 1. The user's newest RECENT_WINDOW messages are read in order (the `(user_id, id)` index)
 *    and tested: a common word fills the page within the first few.
 * 2. When they held fewer hits than asked, the word is rare, and the GIN index on
 *    `messages.search` (the 'simple' configuration's words plus CJK bigrams, see migration
 *    0012) finds its few rows among the older ones.
 *
 * Left to itself the planner takes one plan for both; for a prefix (`lease:*`) it cannot
 * estimate how rare the word is, and read a user's whole history in order for a rare one
 * (bench/conversations.ts: 240 ms at 100,000 turns).
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
    const client = this.#db.$client;
    // The window's rows, newest first, tested as they are read: it stops at the page's end.
    const recent = await client.query<HitRow>(
      `SELECT ${COLUMNS}
         FROM (SELECT id, conversation_id, run_id, role, content, on_path, created_at, search
                 FROM messages
                WHERE user_id = $1 AND ($3::bigint IS NULL OR id < $3::bigint)
                ORDER BY id DESC LIMIT ${RECENT_WINDOW}) m
         JOIN conversations c ON c.id = m.conversation_id
        WHERE m.search @@ $2::tsquery AND m.run_id IS NOT NULL
        ORDER BY m.id DESC LIMIT $4`,
      [userId, query, before ?? null, limit],
    );
    let rows: HitRow[] = recent.rows;
    if (rows.length < limit) {
      // Below the window. `m.id + 0`: with the id itself, the planner would read the history
      // in order again, or AND the index's few rows with every id below the window (92 ms).
      const older = await client.query<HitRow>(
        `SELECT ${COLUMNS}
           FROM messages m JOIN conversations c ON c.id = m.conversation_id
          WHERE m.search @@ $2::tsquery AND m.user_id = $1 AND m.run_id IS NOT NULL
            AND m.id + 0 < coalesce(
              (SELECT min(id) FROM (SELECT id FROM messages
                                     WHERE user_id = $1 AND ($3::bigint IS NULL OR id < $3::bigint)
                                     ORDER BY id DESC LIMIT ${RECENT_WINDOW}) w), 0)
          ORDER BY m.id + 0 DESC LIMIT $4`,
        [userId, query, before ?? null, limit - rows.length],
      );
      rows = [...rows, ...older.rows];
    }
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
