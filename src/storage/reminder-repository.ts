import { orm } from './orm.ts';

const { and, asc, eq, inArray, isNotNull } = orm;

import type { Db } from './database.ts';
import { reminderNotices, reminders } from './schema.ts';

export interface ReminderRecord {
  id: string;
  title: string;
  /** Calendar date, YYYY-MM-DD. */
  dueOn: string;
  createdAt: Date;
  /** Days before the date for which a notice has been sent: a subset of [7, 1, 0]. */
  noticesSent: number[];
}

export class ReminderRepository {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  async create(reminder: {
    id: string;
    userId: string;
    title: string;
    dueOn: string;
  }): Promise<void> {
    await this.#db.insert(reminders).values(reminder);
  }

  async listForUser(userId: string): Promise<ReminderRecord[]> {
    const rows = await this.#db
      .select()
      .from(reminders)
      .where(eq(reminders.userId, userId))
      .orderBy(asc(reminders.dueOn), asc(reminders.createdAt));
    if (rows.length === 0) return [];
    const notices = await this.#db
      .select({ reminderId: reminderNotices.reminderId, daysBefore: reminderNotices.daysBefore })
      .from(reminderNotices)
      .where(
        and(
          inArray(
            reminderNotices.reminderId,
            rows.map((row) => row.id),
          ),
          isNotNull(reminderNotices.sentAt),
        ),
      );
    return rows.map((row) => ({
      id: row.id,
      title: row.title,
      dueOn: row.dueOn,
      createdAt: row.createdAt,
      noticesSent: notices
        .filter((notice) => notice.reminderId === row.id)
        .map((notice) => notice.daysBefore)
        .sort((a, b) => b - a),
    }));
  }
}
