import type { Db } from './database.ts';
import { textOf } from './history-repository.ts';

/** A turn as a chat asks again: its question and the turn it followed. */
export interface TurnQuestion {
  question: string;
  parentRunId: string | null;
}

/** One stored message of a conversation, every version included (the JSON export). */
export interface ExportedMessage {
  id: string;
  runId: string | null;
  parentRunId: string | null;
  role: string;
  text: string;
  interrupted: boolean;
  onPath: boolean;
  createdAt: Date;
}

/** Rows read per statement while exporting. */
const EXPORT_PAGE = 500;

/**
 * The tree of turns of one conversation: which branch is the active path, and a turn's
 * question. The caller has checked that the conversation is the user's.
 */
export class TurnRepository {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /** A turn's question and parent; undefined when the conversation has no such turn. */
  async question(conversationId: string, runId: string): Promise<TurnQuestion | undefined> {
    const { rows } = await this.#db.$client.query<{ content: unknown; parent_run_id: string }>(
      `SELECT content, parent_run_id FROM messages
        WHERE run_id = $2 AND conversation_id = $1 AND role = 'user' LIMIT 1`,
      [conversationId, runId],
    );
    const row = rows[0];
    return row && { question: textOf(row.content), parentRunId: row.parent_run_id };
  }

  /**
   * Makes the branch through a turn the active path: its ancestors, itself, and below it the
   * newest version at each level, down to a leaf, which the conversation continues from. One
   * statement: the rows whose mark changes are the only ones written. Returns the new leaf,
   * or undefined when the conversation has no such turn.
   */
  async activate(conversationId: string, runId: string): Promise<string | undefined> {
    const { rows } = await this.#db.$client.query<{ leaf: string | null }>(
      `WITH RECURSIVE up AS (
         SELECT run_id, parent_run_id FROM messages
          WHERE run_id = $2 AND conversation_id = $1 AND role = 'user'
         UNION ALL
         SELECT m.run_id, m.parent_run_id FROM up
           JOIN messages m ON m.run_id = up.parent_run_id AND m.conversation_id = $1
                          AND m.role = 'user'
       ), down AS (
         SELECT run_id, 0 AS depth FROM up WHERE run_id = $2
         UNION ALL
         SELECT child.run_id, down.depth + 1 FROM down
          CROSS JOIN LATERAL (
            SELECT m.run_id FROM messages m
             WHERE m.conversation_id = $1 AND m.parent_run_id = down.run_id AND m.role = 'user'
             ORDER BY m.id DESC LIMIT 1) child
       ), chain AS (
         SELECT run_id FROM up UNION SELECT run_id FROM down
       ), flipped AS (
         UPDATE messages m SET on_path = NOT m.on_path
          WHERE m.conversation_id = $1
            AND m.on_path <> coalesce(m.run_id IN (SELECT run_id FROM chain), false)
       ), leaf AS (
         SELECT run_id FROM down ORDER BY depth DESC LIMIT 1
       ), moved AS (
         UPDATE conversations SET leaf_run_id = (SELECT run_id FROM leaf)
          WHERE id = $1 AND EXISTS (SELECT 1 FROM leaf)
       )
       SELECT run_id AS leaf FROM leaf`,
      [conversationId, runId],
    );
    return rows[0]?.leaf ?? undefined;
  }

  /** Every message of the conversation, every version, oldest first, a page at a time. */
  async *messages(conversationId: string): AsyncGenerator<ExportedMessage[]> {
    let after: string | null = null;
    for (;;) {
      // `messages.id`: a bare `id` would sort the text the ids go out as ("10" before "9"),
      // and the next page would start after the wrong row.
      const result: { rows: ExportRow[] } = await this.#db.$client.query<ExportRow>(
        `SELECT id::text AS id, run_id, parent_run_id, role, content, interrupted, on_path,
                created_at
           FROM messages WHERE conversation_id = $1 AND ($2::bigint IS NULL OR id > $2::bigint)
          ORDER BY messages.id LIMIT $3`,
        [conversationId, after, EXPORT_PAGE],
      );
      const { rows } = result;
      if (rows.length === 0) return;
      after = rows[rows.length - 1]?.id ?? null;
      yield rows.map((row) => ({
        id: row.id,
        runId: row.run_id,
        parentRunId: row.parent_run_id,
        role: row.role,
        text: textOf(row.content),
        interrupted: row.interrupted,
        onPath: row.on_path,
        createdAt: new Date(row.created_at),
      }));
      if (rows.length < EXPORT_PAGE) return;
    }
  }
}

interface ExportRow {
  id: string;
  run_id: string | null;
  parent_run_id: string | null;
  role: string;
  content: unknown;
  interrupted: boolean;
  on_path: boolean;
  created_at: Date;
}
