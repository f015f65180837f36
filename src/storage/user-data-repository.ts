import type { Db } from './database.ts';
import type { DocumentRepository } from './document-repository.ts';
import { isoTimeSql } from './iso-time-sql.ts';
import { withTransaction } from './transaction.ts';

/** Rows of one user read per statement while exporting: memory stays flat for any history. */
const PAGE = 500;

/**
 * Everything kept about one user, as one place to erase or export it. A table added later
 * that holds a user's data must be added here too (the accounts tests check that a deleted
 * user leaves nothing behind in any table with a `user_id` or `owner` column).
 */
export class UserDataRepository {
  readonly #db: Db;
  readonly #documents: DocumentRepository;

  constructor(db: Db, documents: DocumentRepository) {
    this.#db = db;
    this.#documents = documents;
  }

  /** Deletes the user's data and account; false when there was nothing of theirs at all. */
  async erase(userId: string): Promise<boolean> {
    // Every door closed first, on its own: keys (their web sessions cascade), development
    // mode's web sessions and the Telegram chat. From here on no new request of the user's is
    // let in, so nothing can be uploaded while the documents below are being removed.
    let doors = 0;
    for (const statement of [
      'DELETE FROM accounts WHERE user_id = $1',
      'DELETE FROM web_sessions WHERE user_id = $1',
      'DELETE FROM telegram_chats WHERE user_id = $1',
      // Automations act as the user: none runs once they are gone (their runs cascade).
      'DELETE FROM automations WHERE user_id = $1',
    ]) {
      doors += (await this.#db.$client.query(statement, [userId])).rowCount ?? 0;
    }
    // Documents, through the index's own removal (postings and BM25 statistics).
    const documents =
      (await this.#documents.deleteOwned(userId, 'document')) +
      (await this.#documents.deleteOwned(userId, 'conversation'));
    const rows = await withTransaction(this.#db.$client, async (client) => {
      let count = 0;
      for (const statement of [
        'DELETE FROM messages WHERE user_id = $1',
        // Their current pointers and pending titles cascade.
        'DELETE FROM conversations WHERE user_id = $1',
        'DELETE FROM title_requests WHERE user_id = $1',
        'DELETE FROM chat_runs WHERE user_id = $1', // feedback cascades
        'DELETE FROM run_streams WHERE user_id = $1', // their events cascade
        'DELETE FROM memory_decisions WHERE user_id = $1',
        'DELETE FROM graph_triples WHERE user_id = $1',
        'DELETE FROM reminders WHERE user_id = $1', // notices cascade
        'DELETE FROM users WHERE user_id = $1', // profile and Telegram link
        'DELETE FROM chat_rates WHERE user_id = $1',
        'DELETE FROM ingest_usage WHERE user_id = $1',
        // Their MCP settings, credentials, standing permissions and pending approvals.
        'DELETE FROM mcp_server_users WHERE user_id = $1',
        'DELETE FROM mcp_always_allow WHERE user_id = $1',
        'DELETE FROM tool_approvals WHERE user_id = $1',
        // The user's BM25 statistics, zero once their documents are gone.
        'DELETE FROM chunk_terms WHERE owner = $1',
        'DELETE FROM term_stats WHERE owner = $1',
        'DELETE FROM corpus_stats WHERE owner = $1',
      ]) {
        count += (await client.query(statement, [userId])).rowCount ?? 0;
      }
      return count;
    });
    return doors + documents + rows > 0;
  }

  /** The rows of a small per-user table, oldest first. */
  async rows(table: ExportTable, userId: string): Promise<Record<string, unknown>[]> {
    const { rows } = await this.#db.$client.query(EXPORT_QUERIES[table], [userId]);
    return rows;
  }

  /** A long per-user table in pages, by id, so an export never holds it whole. */
  async *pages(table: PagedTable, userId: string): AsyncGenerator<Record<string, unknown>[]> {
    let after: string | number | null = null;
    for (;;) {
      const result: { rows: Record<string, unknown>[] } = await this.#db.$client.query(
        PAGED_QUERIES[table],
        [userId, after, PAGE],
      );
      const { rows } = result;
      if (rows.length === 0) return;
      after = String(rows[rows.length - 1]?.cursor);
      yield rows.map(({ cursor: _cursor, ...row }) => row);
      if (rows.length < PAGE) return;
    }
  }
}

const EXPORT_QUERIES = {
  conversations: `SELECT c.id, c.title, c.title_source, c.pinned, c.created_at, c.updated_at,
                         c.leaf_run_id,
                         EXISTS (SELECT 1 FROM current_conversations k
                                  WHERE k.user_id = c.user_id AND k.conversation_id = c.id) AS current
                    FROM conversations c WHERE c.user_id = $1 ORDER BY c.created_at, c.id`,
  profile: `SELECT display_name, timezone, locale, telegram_chat_id, facts, created_at, updated_at
              FROM users WHERE user_id = $1`,
  memories: `SELECT d.source, d.created_at,
                    (SELECT string_agg(c.content, ' ' ORDER BY c.chunk_index)
                       FROM chunks c WHERE c.document_id = d.id) AS text
               FROM documents d WHERE d.owner = $1 AND d.kind = 'conversation' ORDER BY d.id`,
  graph: `SELECT subject, relation, object, created_at FROM graph_triples
           WHERE user_id = $1 ORDER BY id`,
  reminders: `SELECT r.id, r.title, r.due_on::text AS date, r.time, r.timezone, r.note, r.created_at,
                     coalesce((SELECT json_agg(json_build_object('notice', 'D-' || n.days_before,
                                 'status', n.status, 'sent_at', ${isoTimeSql('n.sent_at')}) ORDER BY n.days_before DESC)
                                FROM reminder_notices n WHERE n.reminder_id = r.id), '[]') AS notices
                FROM reminders r WHERE r.user_id = $1 ORDER BY r.due_on, r.id`,
  automations: `SELECT a.id, a.name, a.prompt, a.schedule, a.timezone, a.status, a.paused_reason,
                       a.next_run_at, a.conversation_id, a.created_at,
                       coalesce((SELECT json_agg(json_build_object('occurrence', r.occurrence,
                                   'manual', r.manual, 'status', r.status, 'finished_at', ${isoTimeSql('r.finished_at')},
                                   'error', r.error, 'delivered_to', r.delivered_to)
                                   ORDER BY r.occurrence)
                                  FROM automation_runs r WHERE r.automation_id = a.id), '[]') AS runs
                  FROM automations a WHERE a.user_id = $1 ORDER BY a.created_at, a.id`,
  documents: `SELECT source, filename, content_type, bytes, chunk_count, created_at FROM documents
               WHERE owner = $1 AND kind = 'document' ORDER BY source COLLATE "C"`,
  // Each MCP server the user has a setting or a standing permission for. The credential is
  // named (its header), never exported: it is a secret, and sealed to this service's key.
  mcp_servers: `SELECT s.name AS server, u.allowed, u.enabled,
                       u.credential IS NOT NULL AS has_credential,
                       CASE WHEN u.credential IS NOT NULL THEN u.credential_header END AS credential_header,
                       u.updated_at,
                       coalesce((SELECT json_agg(a.tool ORDER BY a.tool COLLATE "C") FROM mcp_always_allow a
                                  WHERE a.user_id = $1 AND a.server_id = s.id), '[]') AS always_allowed
                  FROM mcp_servers s
                  LEFT JOIN mcp_server_users u ON u.server_id = s.id AND u.user_id = $1
                 WHERE u.user_id IS NOT NULL
                    OR EXISTS (SELECT 1 FROM mcp_always_allow a WHERE a.user_id = $1 AND a.server_id = s.id)
                 ORDER BY s.name COLLATE "C"`,
} as const;
export type ExportTable = keyof typeof EXPORT_QUERIES;

const PAGED_QUERIES = {
  messages: `SELECT id AS cursor, conversation_id, run_id, parent_run_id, role, content,
                    interrupted, on_path, created_at FROM messages
              WHERE user_id = $1 AND ($2::bigint IS NULL OR id > $2) ORDER BY id LIMIT $3`,
  runs: `SELECT r.started_at::text || '|' || r.id AS cursor, r.id AS run_id, r.status, r.model,
                r.input_tokens, r.output_tokens, r.tools_used, r.error_code, r.started_at, r.finished_at,
                r.answer,
                coalesce((SELECT json_agg(json_build_object('key', f.key, 'score', f.score,
                            'comment', f.comment, 'created_at', ${isoTimeSql('f.created_at')}) ORDER BY f.created_at)
                           FROM feedback f WHERE f.run_id = r.id), '[]') AS feedback
           FROM chat_runs r
          WHERE r.user_id = $1
            AND ($2::text IS NULL OR (r.started_at, r.id) >
                 (split_part($2, '|', 1)::timestamptz, split_part($2, '|', 2)::uuid))
          ORDER BY r.started_at, r.id LIMIT $3`,
  // One row per tool call that asked the user, with the arguments the model chose (their data).
  tool_approvals: `SELECT t.created_at::text || '|' || t.id AS cursor, t.id, t.run_id,
                          s.name AS server, t.tool, t.arguments, t.decision, t.created_at, t.decided_at
                     FROM tool_approvals t JOIN mcp_servers s ON s.id = t.server_id
                    WHERE t.user_id = $1
                      AND ($2::text IS NULL OR (t.created_at, t.id) >
                           (split_part($2, '|', 1)::timestamptz, split_part($2, '|', 2)::uuid))
                    ORDER BY t.created_at, t.id LIMIT $3`,
} as const;
export type PagedTable = keyof typeof PAGED_QUERIES;
