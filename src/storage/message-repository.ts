import { eq } from 'drizzle-orm';
import type { Db } from './database.ts';
import { messages } from './schema.ts';

/** Conversation history rows, always scoped by user. */
export class MessageRepository {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /** Returns how many messages were removed. */
  async deleteForUser(userId: string): Promise<number> {
    const removed = await this.#db
      .delete(messages)
      .where(eq(messages.userId, userId))
      .returning({ id: messages.id });
    return removed.length;
  }
}
