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
    content: withoutNul(message),
    interrupted: interrupted && index === turn.length - 1 && message.role === 'assistant',
  }));
}

/**
 * PostgreSQL's JSON cannot hold U+0000 (22P05): a model that sends one would lose the whole
 * turn, so it is stored as U+FFFD, the replacement character. Questions never contain it
 * (POST /chat refuses them).
 */
function withoutNul(message: ModelMessage): ModelMessage {
  return JSON.stringify(message).includes('\\u0000') ? replaceNul(message) : message;
}

function replaceNul<T>(value: T): T {
  if (typeof value === 'string') return value.replaceAll('\u0000', '\ufffd') as T;
  if (Array.isArray(value)) return value.map(replaceNul) as T;
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, replaceNul(v)])) as T;
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
