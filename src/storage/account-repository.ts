import type { Db } from './database.ts';
import { isUniqueViolation } from './database-errors.ts';
import { orm } from './orm.ts';
import { accounts, apiKeys } from './schema.ts';

const { and, eq, sql } = orm;

export interface StoredKey {
  keyId: string;
  prefix: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  expiresAt: Date | null;
}

export interface StoredAccount {
  userId: string;
  createdAt: Date;
  limits: Record<string, number>;
  keys: StoredKey[];
}

/** What a key's hash resolves to, for authentication. */
export interface KeyOwner {
  keyId: string;
  userId: string;
  expiresAt: Date | null;
  /** The account's limit overrides, read with the key so a chat needs no second lookup. */
  limits: Record<string, number>;
}

export interface NewKeyRow {
  keyId: string;
  hash: string;
  prefix: string;
  expiresAt: Date | null;
}

/** Accounts (users given access by the administrator) and their API keys. */
export class AccountRepository {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /** Creates the account with its first key; false when the account exists already. */
  async create(userId: string, key: NewKeyRow): Promise<boolean> {
    try {
      await this.#db.transaction(async (tx) => {
        await tx.insert(accounts).values({ userId });
        await tx.insert(apiKeys).values({ id: key.keyId, userId, ...key });
      });
      return true;
    } catch (error) {
      if (isUniqueViolation(error)) return false;
      throw error;
    }
  }

  /** Adds a key to an existing account; false when there is no such account. */
  async addKey(userId: string, key: NewKeyRow): Promise<boolean> {
    const rows = await this.#db
      .insert(apiKeys)
      .select(
        this.#db
          .select({
            id: sql`${key.keyId}::uuid`.as('id'),
            userId: accounts.userId,
            hash: sql`${key.hash}`.as('hash'),
            prefix: sql`${key.prefix}`.as('prefix'),
            createdAt: sql`now()`.as('created_at'),
            lastUsedAt: sql`null::timestamptz`.as('last_used_at'),
            expiresAt: sql`${key.expiresAt?.toISOString() ?? null}::timestamptz`.as('expires_at'),
          })
          .from(accounts)
          .where(eq(accounts.userId, userId)),
      )
      .returning({ id: apiKeys.id });
    return rows.length > 0;
  }

  /** Deletes a key; the user it belonged to, or undefined when there was none. */
  async revokeKey(keyId: string): Promise<string | undefined> {
    const [row] = await this.#db
      .delete(apiKeys)
      .where(eq(apiKeys.id, keyId))
      .returning({ userId: apiKeys.userId });
    return row?.userId;
  }

  async findKey(hash: string): Promise<KeyOwner | undefined> {
    const [row] = await this.#db
      .select({
        keyId: apiKeys.id,
        userId: apiKeys.userId,
        expiresAt: apiKeys.expiresAt,
        limits: accounts.limits,
      })
      .from(apiKeys)
      .innerJoin(accounts, eq(accounts.userId, apiKeys.userId))
      .where(eq(apiKeys.hash, hash));
    return row;
  }

  /** Stamps keys as used now (batched by the caller, at most once a minute per key). */
  async touchKeys(keyIds: string[]): Promise<void> {
    if (keyIds.length === 0) return;
    await this.#db.execute(
      sql`UPDATE api_keys SET last_used_at = now()
           WHERE id = ANY(${`{${keyIds.join(',')}}`}::uuid[])`,
    );
  }

  async limitsOf(userId: string): Promise<Record<string, number> | undefined> {
    const [row] = await this.#db
      .select({ limits: accounts.limits })
      .from(accounts)
      .where(eq(accounts.userId, userId));
    return row?.limits;
  }

  /** Replaces the overrides; false when there is no such account. */
  async setLimits(userId: string, limits: Record<string, number>): Promise<boolean> {
    const rows = await this.#db
      .update(accounts)
      .set({ limits })
      .where(eq(accounts.userId, userId))
      .returning({ userId: accounts.userId });
    return rows.length > 0;
  }

  async get(userId: string): Promise<StoredAccount | undefined> {
    const [account] = await this.list(userId);
    return account;
  }

  /** Every account (or one), oldest first, with its keys. */
  async list(userId?: string): Promise<StoredAccount[]> {
    const rows = await this.#db
      .select({
        userId: accounts.userId,
        createdAt: accounts.createdAt,
        limits: accounts.limits,
        keyId: apiKeys.id,
        prefix: apiKeys.prefix,
        keyCreatedAt: apiKeys.createdAt,
        lastUsedAt: apiKeys.lastUsedAt,
        expiresAt: apiKeys.expiresAt,
      })
      .from(accounts)
      .leftJoin(apiKeys, eq(apiKeys.userId, accounts.userId))
      .where(userId === undefined ? undefined : and(eq(accounts.userId, userId)))
      .orderBy(accounts.createdAt, sql`${accounts.userId} COLLATE "C"`, apiKeys.createdAt);
    const byUser = new Map<string, StoredAccount>();
    for (const row of rows) {
      let account = byUser.get(row.userId);
      if (!account) {
        account = { userId: row.userId, createdAt: row.createdAt, limits: row.limits, keys: [] };
        byUser.set(row.userId, account);
      }
      if (row.keyId && row.prefix && row.keyCreatedAt) {
        account.keys.push({
          keyId: row.keyId,
          prefix: row.prefix,
          createdAt: row.keyCreatedAt,
          lastUsedAt: row.lastUsedAt,
          expiresAt: row.expiresAt,
        });
      }
    }
    return [...byUser.values()];
  }
}
