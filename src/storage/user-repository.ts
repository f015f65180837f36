import type { UserProfile } from '../assistant/system-prompt.ts';
import type { Db } from './database.ts';
import { orm } from './orm.ts';
import { users } from './schema.ts';

const { and, eq, gt, sql } = orm;

/**
 * A change to a profile: a field left out (undefined) stays as it is; null clears it; a fact
 * set to null is forgotten.
 */
export interface ProfileChange {
  displayName?: string | null | undefined;
  timezone?: string | null | undefined;
  locale?: string | null | undefined;
  telegramChatId?: string | null | undefined;
  facts?: Record<string, string | null> | undefined;
}

export interface StoredProfile extends UserProfile {
  telegramChatId: string | null;
}

/** User profiles, read into every prompt (see ChatContextRepository) and changed by tools. */
export class UserRepository {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /** The stored profile, or undefined for a user never seen. */
  async get(userId: string): Promise<StoredProfile | undefined> {
    const [row] = await this.#db.select().from(users).where(eq(users.userId, userId));
    return row ? toProfile(row) : undefined;
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
  ): Promise<StoredProfile> {
    return this.#db.transaction(async (tx) => {
      await tx.insert(users).values({ userId }).onConflictDoNothing();
      const [current] = await tx.select().from(users).where(eq(users.userId, userId)).for('update');
      const facts = { ...current?.facts };
      for (const [key, value] of Object.entries(change.facts ?? {})) {
        if (value === null) delete facts[key];
        else facts[key] = value;
      }
      const merged: StoredProfile = {
        displayName: pick(change.displayName, current?.displayName),
        timezone: pick(change.timezone, current?.timezone),
        locale: pick(change.locale, current?.locale),
        telegramChatId: pick(change.telegramChatId, current?.telegramChatId),
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

  /** Stores the hash of a new link code for the user (replacing any earlier one). */
  async setLinkCode(userId: string, codeHash: string, expiresAt: Date): Promise<void> {
    await this.#db
      .insert(users)
      .values({ userId, telegramLinkCodeHash: codeHash, telegramLinkExpiresAt: expiresAt })
      .onConflictDoUpdate({
        target: users.userId,
        set: { telegramLinkCodeHash: codeHash, telegramLinkExpiresAt: expiresAt },
      });
  }

  /**
   * Spends a link code: the user holding it (unexpired at `now`) gets the chat, and the code
   * is gone, in one statement. Returns the user id, or undefined for an unknown or old code.
   */
  async linkChat(codeHash: string, chatId: string, now: Date): Promise<string | undefined> {
    const [row] = await this.#db
      .update(users)
      .set({
        telegramChatId: chatId,
        telegramLinkCodeHash: null,
        telegramLinkExpiresAt: null,
        updatedAt: sql`now()`,
      })
      .where(and(eq(users.telegramLinkCodeHash, codeHash), gt(users.telegramLinkExpiresAt, now)))
      .returning({ userId: users.userId });
    return row?.userId;
  }
}

function pick<T>(change: T | null | undefined, current: T | null | undefined): T | null {
  return change === undefined ? (current ?? null) : change;
}

function toProfile(row: typeof users.$inferSelect): StoredProfile {
  return {
    displayName: row.displayName,
    timezone: row.timezone,
    locale: row.locale,
    telegramChatId: row.telegramChatId,
    facts: row.facts,
  };
}
