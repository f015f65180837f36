import type { Db } from './database.ts';
import type { NewReminder } from './reminder-repository.ts';

/** A reminder near its date, with what the scheduler needs to decide and send its notice. */
export interface NoticeCandidate extends Omit<NewReminder, 'id'> {
  reminderId: string;
  chatId: string | null;
  locale: string | null;
  notices: { daysBefore: number; status: string; nextAttemptAt: Date | null }[];
}

export interface NoticeKey {
  reminderId: string;
  daysBefore: number;
}

export interface ClaimedNotice extends NoticeKey {
  attempts: number;
}

/**
 * The scheduler's statements. Times come from the application's clock (a parameter), not the
 * database's `now()`, so tests can drive the schedule, and every replica agrees with its own
 * clock about what is due.
 */
export class NoticeRepository {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /**
   * Reminders whose date lies in [from, to] and whose D-0 notice is not settled. The range is
   * the caller's: wide enough for every timezone, narrow enough to use the date index.
   */
  candidates(from: string, to: string): Promise<NoticeCandidate[]> {
    return this.#candidates('r.due_on BETWEEN $1::date AND $2::date', [from, to]);
  }

  /** One reminder, if its D-0 notice is not settled (the job of a notice another tick found). */
  async candidate(reminderId: string): Promise<NoticeCandidate | undefined> {
    return (await this.#candidates('r.id = $1', [reminderId]))[0];
  }

  async #candidates(where: string, values: unknown[]): Promise<NoticeCandidate[]> {
    const { rows } = await this.#db.$client.query<{
      id: string;
      user_id: string;
      title: string;
      due_on: string;
      time: string | null;
      note: string | null;
      timezone: string;
      created_at: Date;
      chat_id: string | null;
      locale: string | null;
      notices: { d: number; s: string; n: string | null }[] | null;
    }>(
      `SELECT r.id, r.user_id, r.title, to_char(r.due_on, 'YYYY-MM-DD') AS due_on, r.time,
              r.note, r.timezone, r.created_at, u.telegram_chat_id AS chat_id, u.locale,
              (SELECT json_agg(json_build_object('d', n.days_before, 's', n.status,
                                                 'n', n.next_attempt_at))
                 FROM reminder_notices n WHERE n.reminder_id = r.id) AS notices
         FROM reminders r
         LEFT JOIN users u ON u.user_id = r.user_id
        WHERE ${where}
          AND NOT EXISTS (SELECT 1 FROM reminder_notices n
                           WHERE n.reminder_id = r.id AND n.days_before = 0
                             AND n.status IN ('sent', 'failed', 'undeliverable'))`,
      values,
    );
    return rows.map((row) => ({
      reminderId: row.id,
      userId: row.user_id,
      title: row.title,
      dueOn: row.due_on,
      time: row.time,
      note: row.note,
      timezone: row.timezone,
      createdAt: row.created_at,
      chatId: row.chat_id,
      locale: row.locale,
      notices: (row.notices ?? []).map((n) => ({
        daysBefore: n.d,
        status: n.s,
        nextAttemptAt: n.n ? new Date(n.n) : null,
      })),
    }));
  }

  /**
   * Claims notices for sending, in one statement: a notice with no row gets one ('sending',
   * owned until `leaseUntil`); a row left 'sending' past its lease (its sender died) or due
   * for a retry is taken over. Concurrent claims of one notice, from ticks or replicas, are
   * serialised by the primary key: exactly one gets it back.
   */
  async claim(keys: NoticeKey[], now: Date, leaseUntil: Date): Promise<ClaimedNotice[]> {
    if (keys.length === 0) return [];
    const { rows } = await this.#db.$client.query<{
      reminder_id: string;
      days_before: number;
      attempts: number;
    }>(
      `INSERT INTO reminder_notices AS n
              (reminder_id, days_before, status, claimed_at, next_attempt_at)
       SELECT k.reminder_id, k.days_before, 'sending', $3, $4
         FROM unnest($1::uuid[], $2::int[]) AS k(reminder_id, days_before)
         JOIN reminders r ON r.id = k.reminder_id
       ON CONFLICT (reminder_id, days_before) DO UPDATE
          SET status = 'sending', claimed_at = EXCLUDED.claimed_at,
              next_attempt_at = EXCLUDED.next_attempt_at
        WHERE n.status IN ('sending', 'retry') AND n.next_attempt_at <= $3
       RETURNING n.reminder_id, n.days_before, n.attempts`,
      [keys.map((k) => k.reminderId), keys.map((k) => k.daysBefore), now, leaseUntil],
    );
    return rows.map((row) => ({
      reminderId: row.reminder_id,
      daysBefore: row.days_before,
      attempts: row.attempts,
    }));
  }

  async markSent(key: NoticeKey, at: Date): Promise<void> {
    await this.#settle(key, 'sent', { sentAt: at });
  }

  /**
   * Due again at `retryAt`. A failed send records `error` and counts an attempt; a notice
   * released untried (`error` undefined: shutting down, too late in its lease) keeps the
   * error of its last real attempt, which is what the administrator needs to see.
   */
  async markRetry(key: NoticeKey, retryAt: Date, error?: string): Promise<void> {
    await this.#db.$client.query(
      `UPDATE reminder_notices
          SET status = 'retry', next_attempt_at = $3, last_error = COALESCE($4, last_error),
              attempts = attempts + $5
        WHERE reminder_id = $1 AND days_before = $2 AND status = 'sending'`,
      [key.reminderId, key.daysBefore, retryAt, error ?? null, error === undefined ? 0 : 1],
    );
  }

  /** Settled for good without being sent; `errorKind` is what GET /admin/jobs shows. */
  async markFailed(
    key: NoticeKey,
    status: 'failed' | 'undeliverable',
    failure: { error: string; errorKind: string; at: Date },
  ) {
    await this.#settle(key, status, failure);
  }

  async #settle(
    key: NoticeKey,
    status: 'sent' | 'failed' | 'undeliverable',
    details: { sentAt?: Date; error?: string; errorKind?: string; at?: Date },
  ): Promise<void> {
    await this.#db.$client.query(
      `UPDATE reminder_notices
          SET status = $3, sent_at = $4, last_error = $5, next_attempt_at = NULL,
              attempts = attempts + 1, error_kind = $6, failed_at = $7
        WHERE reminder_id = $1 AND days_before = $2`,
      [
        key.reminderId,
        key.daysBefore,
        status,
        details.sentAt ?? null,
        details.error ?? null,
        details.errorKind ?? null,
        details.at ?? null,
      ],
    );
  }
}
