import { orm } from './orm.ts';

const { and, asc, eq, inArray } = orm;

import type { Db } from './database.ts';
import { reminderNotices, reminders } from './schema.ts';
import { withTransaction } from './transaction.ts';
import { takeUserTurn } from './user-turns.ts';

export interface NoticeRecord {
  daysBefore: number;
  status: 'sending' | 'retry' | 'sent' | 'failed' | 'undeliverable';
  sentAt: Date | null;
  lastError: string | null;
}

export interface ReminderRecord {
  id: string;
  title: string;
  /** Calendar date, YYYY-MM-DD. */
  dueOn: string;
  time: string | null;
  note: string | null;
  timezone: string;
  createdAt: Date;
  /** Every notice that was claimed, whatever became of it, latest offset first. */
  notices: NoticeRecord[];
}

export interface NewReminder {
  id: string;
  userId: string;
  title: string;
  dueOn: string;
  time: string | null;
  note: string | null;
  timezone: string;
  createdAt: Date;
}

/** Reminders as users see them; the scheduler's queries are in NoticeRepository. */
export class ReminderRepository {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /**
   * Stores the reminder unless the user has `max` already; false then. The count and the
   * insert are one statement, the user's creations one at a time (see user-turns.ts).
   */
  async create(reminder: NewReminder, max: number): Promise<boolean> {
    return withTransaction(this.#db.$client, async (client) => {
      await takeUserTurn(client, 'reminderCreate', reminder.userId);
      const { rowCount } = await client.query(
        `INSERT INTO reminders (id, user_id, title, due_on, time, note, timezone, created_at)
         SELECT $1, $2, $3, $4, $5, $6, $7, $8
          WHERE (SELECT count(*) FROM reminders WHERE user_id = $2) < $9`,
        [
          reminder.id,
          reminder.userId,
          reminder.title,
          reminder.dueOn,
          reminder.time ?? null,
          reminder.note ?? null,
          reminder.timezone,
          reminder.createdAt,
          max,
        ],
      );
      return rowCount === 1;
    });
  }

  /** Deletes the user's reminder (and its notices); false when the user has no such reminder. */
  async delete(userId: string, id: string): Promise<boolean> {
    const deleted = await this.#db
      .delete(reminders)
      .where(and(eq(reminders.userId, userId), eq(reminders.id, id)))
      .returning({ id: reminders.id });
    return deleted.length > 0;
  }

  async listForUser(userId: string): Promise<ReminderRecord[]> {
    const rows = await this.#db
      .select()
      .from(reminders)
      .where(eq(reminders.userId, userId))
      .orderBy(asc(reminders.dueOn), asc(reminders.time), asc(reminders.createdAt));
    if (rows.length === 0) return [];
    const notices = await this.#db
      .select()
      .from(reminderNotices)
      .where(
        inArray(
          reminderNotices.reminderId,
          rows.map((row) => row.id),
        ),
      );
    return rows.map((row) => ({
      id: row.id,
      title: row.title,
      dueOn: row.dueOn,
      time: row.time,
      note: row.note,
      timezone: row.timezone,
      createdAt: row.createdAt,
      notices: notices
        .filter((notice) => notice.reminderId === row.id)
        .sort((a, b) => b.daysBefore - a.daysBefore)
        .map((notice) => ({
          daysBefore: notice.daysBefore,
          status: notice.status,
          sentAt: notice.sentAt,
          lastError: notice.lastError,
        })),
    }));
  }
}
