import { orm } from './orm.ts';

const { and, asc, eq, inArray } = orm;

import type { Db } from './database.ts';
import { reminderNotices, reminders } from './schema.ts';

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

  async create(reminder: NewReminder): Promise<void> {
    await this.#db.insert(reminders).values(reminder);
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
