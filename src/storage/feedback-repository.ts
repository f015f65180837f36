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

/** A button press on an answer: the user's one rating of that run from that door. */
export interface ButtonPress {
  runId: string;
  key: string;
  score: number;
  /** The run must be this user's: another user's run is as unknown as none. */
  userId: string;
}

export interface PendingFeedback {
  id: string;
  runId: string;
  key: string;
  score: number;
  comment: string | null;
  attempts: number;
  /** The change being sent; a later change makes this send not the last word. */
  revision: number;
  /** LangSmith already holds this feedback (sent before): update it rather than create it. */
  forwardedOnce: boolean;
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
   * Records a Telegram button press: the first press on a run adds its feedback, a later one
   * changes that same row's score and makes it due again, so LangSmith gets the change as an
   * update of the one feedback. While a send is under way (leased), the lease is kept: the
   * send finishing finds a newer revision and leaves the row due (see markForwarded), so two
   * sends of one row never race. A row waiting out a failure keeps its backoff; one LangSmith
   * refused for good is tried again with the new score. Pressing the
   * chosen button again changes nothing. Returns the feedback id; undefined when the run is
   * unknown or another user's.
   */
  async recordPress(press: ButtonPress): Promise<string | undefined> {
    const { rows } = await this.#db.$client.query<{ id: string }>(
      `INSERT INTO feedback (id, run_id, key, score, source)
       SELECT $1, r.id, $3, $4, 'telegram' FROM chat_runs r WHERE r.id = $2 AND r.user_id = $5
       ON CONFLICT (run_id) WHERE source = 'telegram' DO UPDATE SET
         key = EXCLUDED.key,
         score = EXCLUDED.score,
         revision = feedback.revision + 1,
         updated_at = now(),
         forwarded_at = NULL,
         forward_attempts = CASE WHEN feedback.forwarded_at IS NULL AND feedback.failed_at IS NULL
                                 THEN feedback.forward_attempts ELSE 0 END,
         next_attempt_at = CASE WHEN feedback.forwarded_at IS NULL AND feedback.failed_at IS NULL
                                THEN feedback.next_attempt_at ELSE now() END,
         failed_at = NULL,
         error_kind = NULL
       WHERE feedback.score <> EXCLUDED.score OR feedback.key <> EXCLUDED.key
       RETURNING id`,
      [randomUUID(), press.runId, press.key, press.score, press.userId],
    );
    if (rows[0]) return rows[0].id;
    // The same button again: nothing changes, nothing is sent again.
    const same = await this.#db.$client.query<{ id: string }>(
      `SELECT f.id FROM feedback f JOIN chat_runs r ON r.id = f.run_id
        WHERE f.run_id = $1 AND f.source = 'telegram' AND r.user_id = $2`,
      [press.runId, press.userId],
    );
    return same.rows[0]?.id;
  }

  /** Feedback not yet forwarded nor given up, oldest first: ids only. */
  async pendingIds(limit: number, offset = 0): Promise<string[]> {
    const { rows } = await this.#db.execute<{ id: string }>(sql`
      SELECT id FROM ${feedback}
      WHERE forwarded_at IS NULL AND failed_at IS NULL
      ORDER BY next_attempt_at, id
      LIMIT ${limit} OFFSET ${offset}`);
    return rows.map((row) => row.id);
  }

  /** The feedback as it stands now, if it is still to be forwarded. */
  async pending(id: string): Promise<PendingFeedback | undefined> {
    const { rows } = await this.#db.execute<{
      id: string;
      run_id: string;
      key: string;
      score: number;
      comment: string | null;
      forward_attempts: number;
      revision: number;
      forwarded_once: boolean;
    }>(sql`
      SELECT id, run_id, key, score, comment, forward_attempts, revision, forwarded_once
      FROM ${feedback}
      WHERE id = ${id} AND forwarded_at IS NULL AND failed_at IS NULL`);
    const row = rows[0];
    return (
      row && {
        id: row.id,
        runId: row.run_id,
        key: row.key,
        score: Number(row.score),
        comment: row.comment,
        attempts: row.forward_attempts,
        revision: row.revision,
        forwardedOnce: row.forwarded_once,
      }
    );
  }

  /**
   * LangSmith accepted `revision` of this feedback. It is done unless it changed meanwhile:
   * then it is due again at once, to send the newer score.
   */
  async markForwarded(id: string, revision: number): Promise<void> {
    await this.#db.execute(sql`
      UPDATE ${feedback}
      SET forwarded_once = true,
          forwarded_at = CASE WHEN revision = ${revision} THEN now() ELSE NULL END
      WHERE id = ${id}`);
  }

  /** `attempts` counts the failed sends so far; `errorKind` is the last one's. */
  async markRetry(id: string, attempts: number, errorKind: string): Promise<void> {
    await this.#db
      .update(feedback)
      .set({ forwardAttempts: attempts, errorKind })
      .where(eq(feedback.id, id));
  }

  /**
   * Refused for good: kept, not sent again (GET /admin/jobs lists it). Unless the rating
   * changed while its send was refused: the new score is due at once.
   */
  async markFailed(id: string, revision: number, attempts: number, errorKind: string) {
    await this.#db.execute(sql`
      UPDATE ${feedback}
      SET forward_attempts = ${attempts}, error_kind = ${errorKind},
          failed_at = CASE WHEN revision = ${revision} THEN now() ELSE NULL END
      WHERE id = ${id}`);
  }
}
