import type { UserProfile } from '../assistant/system-prompt.ts';
import type { Db } from './database.ts';
import { orm } from './orm.ts';
import { users } from './schema.ts';

const { eq, sql } = orm;

/** A change to a profile: a field left out stays as it is; a fact set to null is forgotten. */
export interface ProfileChange {
  displayName?: string | undefined;
  timezone?: string | undefined;
  locale?: string | undefined;
  facts?: Record<string, string | null> | undefined;
}

/** User profiles, read into every prompt (see ChatContextRepository) and changed by tools. */
export class UserRepository {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /**
   * Applies the change and returns the profile as stored, creating it on first use. The row
   * is locked while the facts are merged, so two changes never lose each other's facts;
   * `check` may refuse the merged result (too many facts) before anything is written.
   */
  async update(
    userId: string,
    change: ProfileChange,
    check: (merged: UserProfile) => void = () => {},
  ): Promise<UserProfile> {
    return this.#db.transaction(async (tx) => {
      await tx.insert(users).values({ userId }).onConflictDoNothing();
      const [current] = await tx.select().from(users).where(eq(users.userId, userId)).for('update');
      const facts = { ...current?.facts };
      for (const [key, value] of Object.entries(change.facts ?? {})) {
        if (value === null) delete facts[key];
        else facts[key] = value;
      }
      const merged: UserProfile = {
        displayName: change.displayName ?? current?.displayName ?? null,
        timezone: change.timezone ?? current?.timezone ?? null,
        locale: change.locale ?? current?.locale ?? null,
        facts,
      };
      check(merged);
      await tx
        .update(users)
        .set({ ...merged, updatedAt: sql`now()` })
        .where(eq(users.userId, userId));
      return merged;
    });
  }
}
