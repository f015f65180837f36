import type { Db } from './database.ts';
import { orm } from './orm.ts';
import { memoryDecisions } from './schema.ts';

const { eq, sql } = orm;

/** An answered exchange waiting for the remember-or-not decision. */
export interface PendingExchange {
  runId: string;
  userId: string;
  question: string;
  answer: string;
  attempts: number;
}

/**
 * The queue of memory decisions (CONV_RAG_ENABLED). Rows are leased, not locked: taking a
 * row moves its next attempt past the lease, so replicas never decide one exchange at the
 * same time, and one that dies mid-decision only delays it until the lease runs out.
 */
export class MemoryQueueRepository {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /** Queues an exchange; a run is queued once however often this is called. */
  async enqueue(exchange: Omit<PendingExchange, 'attempts'>): Promise<void> {
    await this.#db.insert(memoryDecisions).values(exchange).onConflictDoNothing();
  }

  async leaseDue(limit: number, leaseMs: number): Promise<PendingExchange[]> {
    const { rows } = await this.#db.execute<{
      run_id: string;
      user_id: string;
      question: string;
      answer: string;
      attempts: number;
    }>(sql`
      UPDATE ${memoryDecisions}
      SET next_attempt_at = now() + make_interval(secs => ${leaseMs / 1000})
      WHERE run_id IN (
        SELECT run_id FROM ${memoryDecisions}
        WHERE failed_at IS NULL AND next_attempt_at <= now()
        ORDER BY next_attempt_at
        LIMIT ${limit}
        FOR UPDATE SKIP LOCKED
      )
      RETURNING run_id, user_id, question, answer, attempts`);
    return rows.map((row) => ({
      runId: row.run_id,
      userId: row.user_id,
      question: row.question,
      answer: row.answer,
      attempts: row.attempts,
    }));
  }

  /** Decided (remembered or not): the exchange leaves the queue. */
  async remove(runId: string): Promise<void> {
    await this.#db.delete(memoryDecisions).where(eq(memoryDecisions.runId, runId));
  }

  /** Puts a leased row back: due at `retryAt`, counting the failed attempt when it was one. */
  async release(runId: string, attempts: number, retryAt: Date, errorKind?: string): Promise<void> {
    await this.#db
      .update(memoryDecisions)
      .set({ attempts, nextAttemptAt: retryAt, ...(errorKind ? { errorKind } : {}) })
      .where(eq(memoryDecisions.runId, runId));
  }

  /**
   * Given up: the row stays for the administrator to see, without the exchange's words (the
   * question and answer are still in the user's history, and nothing will read them here).
   */
  async markFailed(runId: string, attempts: number, errorKind: string): Promise<void> {
    await this.#db
      .update(memoryDecisions)
      .set({ attempts, failedAt: new Date(), errorKind, question: '', answer: '' })
      .where(eq(memoryDecisions.runId, runId));
  }
}
