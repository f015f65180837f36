import type { Db } from './database.ts';
import { orm } from './orm.ts';
import { apiKeys, webSessions } from './schema.ts';

const { and, eq, gt, isNull, lte, or } = orm;

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

  /** The session, while neither it nor the key it was made from has expired. */
  async find(id: string, now: Date): Promise<StoredWebSession | undefined> {
    const [row] = await this.#db
      .select({
        role: webSessions.role,
        userId: webSessions.userId,
        keyId: webSessions.keyId,
        expiresAt: webSessions.expiresAt,
      })
      .from(webSessions)
      .leftJoin(apiKeys, eq(apiKeys.id, webSessions.keyId))
      .where(
        and(
          eq(webSessions.id, id),
          gt(webSessions.expiresAt, now),
          or(isNull(apiKeys.expiresAt), gt(apiKeys.expiresAt, now)),
        ),
      );
    return row;
  }

  async delete(id: string): Promise<void> {
    await this.#db.delete(webSessions).where(eq(webSessions.id, id));
  }

  /** Removes expired sessions (called now and then at sign-in; they are refused anyway). */
  async deleteExpired(now: Date): Promise<void> {
    await this.#db.delete(webSessions).where(lte(webSessions.expiresAt, now));
  }
}
