import type { Db } from './database.ts';
import { orm } from './orm.ts';
import { memoryDecisions } from './schema.ts';

const { and, eq, isNull } = orm;

/** An answered exchange waiting for the remember-or-not decision. */
export interface PendingExchange {
  runId: string;
  userId: string;
  question: string;
  answer: string;
  attempts: number;
}

/**
 * The queue of memory decisions (CONV_RAG_ENABLED): the rows say what is left to decide; the
 * job engine (src/background) decides when and where each one is tried.
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

  /** Exchanges still to decide, oldest first: run ids only. */
  async pendingIds(limit: number, offset = 0): Promise<string[]> {
    const rows = await this.#db
      .select({ runId: memoryDecisions.runId })
      .from(memoryDecisions)
      .where(isNull(memoryDecisions.failedAt))
      .orderBy(memoryDecisions.nextAttemptAt, memoryDecisions.runId)
      .limit(limit)
      .offset(offset);
    return rows.map((row) => row.runId);
  }

  /** The exchange, if it is still to decide. */
  async pending(runId: string): Promise<PendingExchange | undefined> {
    const [row] = await this.#db
      .select({
        runId: memoryDecisions.runId,
        userId: memoryDecisions.userId,
        question: memoryDecisions.question,
        answer: memoryDecisions.answer,
        attempts: memoryDecisions.attempts,
      })
      .from(memoryDecisions)
      .where(and(eq(memoryDecisions.runId, runId), isNull(memoryDecisions.failedAt)));
    return row;
  }

  /** Decided (remembered or not): the exchange leaves the queue. */
  async remove(runId: string): Promise<void> {
    await this.#db.delete(memoryDecisions).where(eq(memoryDecisions.runId, runId));
  }

  /** `attempts` counts the failed decisions so far; `errorKind` is the last one's. */
  async markRetry(runId: string, attempts: number, errorKind: string): Promise<void> {
    await this.#db
      .update(memoryDecisions)
      .set({ attempts, errorKind })
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
