import type { ModelMessage } from 'ai';
import { orm } from './orm.ts';
import { storableValue } from './storable-text.ts';

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
    content: storable(message),
    interrupted: interrupted && index === turn.length - 1 && message.role === 'assistant',
  }));
}

/**
 * PostgreSQL's JSON cannot hold U+0000 (22P05) nor half of a surrogate pair (22P02, from a
 * client that cut text by UTF-16 length): the whole turn would be lost, so each is stored as
 * U+FFFD, the replacement character, as the text columns store such halves. POST /chat refuses
 * U+0000 in a question; the model may send it. `JSON.stringify` writes both as `\u` escapes
 * (a backslash the text had is doubled, so its text is only looked at, never changed wrongly).
 */
function storable(message: ModelMessage): ModelMessage {
  return UNSTORABLE.test(JSON.stringify(message)) ? storableValue(message) : message;
}

const UNSTORABLE = /\\u(?:0000|d[89a-f])/i;

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
