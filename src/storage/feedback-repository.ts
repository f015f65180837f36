import { randomUUID } from 'node:crypto';
import { orm } from './orm.ts';

const { eq, sql } = orm;

import type { Db } from './database.ts';
import { isForeignKeyViolation } from './database-errors.ts';
import { feedback } from './schema.ts';

export interface NewFeedback {
  runId: string;
  key: string;
  score: number;
  comment?: string | undefined;
  /** When set, the run must be this user's: another user's run is as unknown as none. */
  userId?: string | undefined;
}

export interface PendingFeedback {
  id: string;
  runId: string;
  key: string;
  score: number;
  comment: string | null;
  attempts: number;
}

/** Stored feedback; rows not yet forwarded to LangSmith form the forwarding outbox. */
export class FeedbackRepository {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /** Stores feedback on a run and returns its id; undefined when there is no such run. */
  async insert(input: NewFeedback): Promise<string | undefined> {
    const id = randomUUID();
    if (input.userId !== undefined) {
      const { rowCount } = await this.#db.$client.query(
        `INSERT INTO feedback (id, run_id, key, score, comment)
         SELECT $1, r.id, $3, $4, $5 FROM chat_runs r WHERE r.id = $2 AND r.user_id = $6`,
        [id, input.runId, input.key, input.score, input.comment ?? null, input.userId],
      );
      return rowCount ? id : undefined;
    }
    try {
      await this.#db.insert(feedback).values({
        id,
        runId: input.runId,
        key: input.key,
        score: input.score,
        comment: input.comment ?? null,
      });
    } catch (error) {
      if (isForeignKeyViolation(error)) return undefined; // the run_id names no run
      throw error;
    }
    return id;
  }

  /**
   * Leases up to `limit` rows that are due for forwarding: their next attempt moves
   * `leaseMs` ahead in the same statement, so replicas sharing the database do not send the
   * same row at the same time, and a replica that dies mid-send only delays it.
   */
  async leaseDue(limit: number, leaseMs: number): Promise<PendingFeedback[]> {
    const { rows } = await this.#db.execute<{
      id: string;
      run_id: string;
      key: string;
      score: number;
      comment: string | null;
      forward_attempts: number;
    }>(sql`
      UPDATE ${feedback}
      SET next_attempt_at = now() + make_interval(secs => ${leaseMs / 1000})
      WHERE id IN (
        SELECT id FROM ${feedback}
        WHERE forwarded_at IS NULL AND next_attempt_at <= now()
        ORDER BY next_attempt_at
        LIMIT ${limit}
        FOR UPDATE SKIP LOCKED
      )
      RETURNING id, run_id, key, score, comment, forward_attempts`);
    return rows.map((row) => ({
      id: row.id,
      runId: row.run_id,
      key: row.key,
      score: Number(row.score),
      comment: row.comment,
      attempts: row.forward_attempts,
    }));
  }

  async markForwarded(id: string): Promise<void> {
    await this.#db.update(feedback).set({ forwardedAt: new Date() }).where(eq(feedback.id, id));
  }

  async markFailed(id: string, attempts: number, retryAt: Date): Promise<void> {
    await this.#db
      .update(feedback)
      .set({ forwardAttempts: attempts, nextAttemptAt: retryAt })
      .where(eq(feedback.id, id));
  }
}
