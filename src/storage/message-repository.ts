import type { ModelMessage } from 'ai';
import { orm } from './orm.ts';

const { eq } = orm;

import type { Db } from './database.ts';
import { messages } from './schema.ts';

/** The rows of one turn; only the assistant's cut-short answer is marked, not the question. */
export function turnRows(
  userId: string,
  runId: string,
  turn: ModelMessage[],
  interrupted: boolean,
) {
  return turn.map((message, index) => ({
    userId,
    runId,
    role: message.role,
    content: message,
    interrupted: interrupted && index === turn.length - 1 && message.role === 'assistant',
  }));
}

/** Conversation history rows, always scoped by user. */
export class MessageRepository {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
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
