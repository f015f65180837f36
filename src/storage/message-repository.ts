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
  return UNSTORABLE.test(JSON.stringify(message)) ? replaceUnstorable(message) : message;
}

const UNSTORABLE = /\\u(?:0000|d[89a-f])/i;

/** Text as PostgreSQL can store it, in a text column or in JSON (see `storable`). */
export const storableText = (text: string): string =>
  text.replaceAll('\u0000', '\ufffd').toWellFormed();

function replaceUnstorable<T>(value: T): T {
  if (typeof value === 'string') return storableText(value) as T;
  if (Array.isArray(value)) return value.map(replaceUnstorable) as T;
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, replaceUnstorable(v)]),
    ) as T;
  }
  return value;
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
