import type { Db } from './database.ts';
import { orm } from './orm.ts';
import { apiKeys, webSessions } from './schema.ts';

const { and, eq, gt, inArray, isNull, lte, or } = orm;

export interface StoredWebSession {
  role: 'admin' | 'user';
  userId: string | null;
  keyId: string | null;
  expiresAt: Date;
}

/**
 * The web client's sessions, by the SHA-256 of the cookie's value: the database never holds a
 * value a browser could present. A session made from a key goes with the key (ON DELETE
 * CASCADE), so revoking the key ends it.
 */
export class WebSessionRepository {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  async create(id: string, session: StoredWebSession): Promise<void> {
    await this.#db.insert(webSessions).values({ id, ...session });
  }

  /**
   * The sessions stored under any of `ids` (one cookie has one id per way it can be stored),
   * while neither the session nor the key it was made from has expired.
   */
  async findAny(ids: string[], now: Date): Promise<Array<StoredWebSession & { id: string }>> {
    return await this.#db
      .select({
        id: webSessions.id,
        role: webSessions.role,
        userId: webSessions.userId,
        keyId: webSessions.keyId,
        expiresAt: webSessions.expiresAt,
      })
      .from(webSessions)
      .leftJoin(apiKeys, eq(apiKeys.id, webSessions.keyId))
      .where(
        and(
          inArray(webSessions.id, ids),
          gt(webSessions.expiresAt, now),
          or(isNull(apiKeys.expiresAt), gt(apiKeys.expiresAt, now)),
        ),
      );
  }

  async delete(ids: string[]): Promise<void> {
    await this.#db.delete(webSessions).where(inArray(webSessions.id, ids));
  }

  /** Removes expired sessions (called now and then at sign-in; they are refused anyway). */
  async deleteExpired(now: Date): Promise<void> {
    await this.#db.delete(webSessions).where(lte(webSessions.expiresAt, now));
  }
}
