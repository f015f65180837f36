import type { Db } from './database.ts';

/** A background job given up for good, as the administrator sees it: no user's words. */
export interface FailedJob {
  kind: 'feedback_forward' | 'memory_decision' | 'conversation_title' | 'reminder_notice';
  id: string;
  userId: string;
  attempts: number;
  errorKind: string | null;
  failedAt: Date;
}

/**
 * The buried jobs of every kind, read from each kind's own table (the job runner keeps no
 * table of its own). Only ids, counts and error kinds are selected: never a comment, a
 * question, an answer or a reminder's title.
 */
export class FailedJobRepository {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /** Newest first. */
  async list(limit: number): Promise<FailedJob[]> {
    const { rows } = await this.#db.$client.query<{
      kind: FailedJob['kind'];
      id: string;
      user_id: string;
      attempts: number;
      error_kind: string | null;
      failed_at: Date;
    }>(
      `SELECT * FROM (
         SELECT 'feedback_forward' AS kind, f.id::text AS id, r.user_id,
                f.forward_attempts AS attempts, f.error_kind, f.failed_at
           FROM feedback f JOIN chat_runs r ON r.id = f.run_id
          WHERE f.failed_at IS NOT NULL
         UNION ALL
         SELECT 'memory_decision', m.run_id::text, m.user_id, m.attempts, m.error_kind, m.failed_at
           FROM memory_decisions m
          WHERE m.failed_at IS NOT NULL
         UNION ALL
         SELECT 'conversation_title', t.conversation_id::text, t.user_id, t.attempts, t.error_kind,
                t.failed_at
           FROM title_requests t
          WHERE t.failed_at IS NOT NULL
         UNION ALL
         SELECT 'reminder_notice', n.reminder_id::text || '/D-' || n.days_before, r.user_id,
                n.attempts, n.error_kind, n.failed_at
           FROM reminder_notices n JOIN reminders r ON r.id = n.reminder_id
          WHERE n.failed_at IS NOT NULL
       ) failed
       ORDER BY failed_at DESC, kind COLLATE "C", id COLLATE "C"
       LIMIT $1`,
      [limit],
    );
    return rows.map((row) => ({
      kind: row.kind,
      id: row.id,
      userId: row.user_id,
      attempts: row.attempts,
      errorKind: row.error_kind,
      failedAt: new Date(row.failed_at),
    }));
  }
}
