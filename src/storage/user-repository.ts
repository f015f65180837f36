import { orm } from './orm.ts';

const { eq } = orm;

import type { UserProfile } from '../assistant/system-prompt.ts';
import type { Db } from './database.ts';
import { users } from './schema.ts';

/** User profiles: created on first chat, read into every prompt. */
export class UserRepository {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /** Returns the profile, creating an empty one for a user seen for the first time. */
  async getOrCreate(userId: string): Promise<UserProfile> {
    const [existing] = await this.#db.select().from(users).where(eq(users.userId, userId)).limit(1);
    if (existing) return existing;
    await this.#db.insert(users).values({ userId }).onConflictDoNothing();
    return { facts: {} };
  }
}
