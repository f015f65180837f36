import type { ModelMessage } from 'ai';
import { orm } from './orm.ts';

const { desc, eq } = orm;

import type { Db } from './database.ts';
import { messages } from './schema.ts';

export interface StoredMessage {
  message: ModelMessage;
  runId: string | null;
  interrupted: boolean;
}

/** Conversation history rows, always scoped by user. */
export class MessageRepository {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /** The user's latest `limit` messages, oldest first. */
  async recent(userId: string, limit: number): Promise<StoredMessage[]> {
    const rows = await this.#db
      .select({
        content: messages.content,
        runId: messages.runId,
        interrupted: messages.interrupted,
      })
      .from(messages)
      .where(eq(messages.userId, userId))
      .orderBy(desc(messages.id))
      .limit(limit);
    return rows.reverse().map((row) => ({
      message: row.content as ModelMessage,
      runId: row.runId,
      interrupted: row.interrupted,
    }));
  }

  /** Appends one turn atomically: a reader sees all of it or none of it. */
  async append(
    userId: string,
    runId: string,
    turn: ModelMessage[],
    options: { interrupted?: boolean } = {},
  ): Promise<void> {
    if (turn.length === 0) return;
    await this.#db.insert(messages).values(
      turn.map((message, index) => ({
        userId,
        runId,
        role: message.role,
        content: message,
        // Only the assistant's cut-short answer is marked, not the question before it.
        interrupted:
          Boolean(options.interrupted) && index === turn.length - 1 && message.role === 'assistant',
      })),
    );
  }

  /**
   * Returns how many messages were removed. No RETURNING: for a long history, parsing the
   * returned ids cost ~250 ms of main-thread time per 300k rows (bench/RESULTS.md §2).
   */
  async deleteForUser(userId: string): Promise<number> {
    const result = await this.#db.delete(messages).where(eq(messages.userId, userId));
    return result.rowCount ?? 0;
  }
}
