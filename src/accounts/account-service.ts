import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { AppError, notFound } from '../errors.ts';
import type { AccountRepository, StoredAccount } from '../storage/account-repository.ts';
import type { UserDataRepository } from '../storage/user-data-repository.ts';
import { hashApiKey, looksLikeApiKey, newApiKey } from './api-key.ts';
import { applyLimitChange, effectiveLimits, type LimitName, type Limits } from './limits.ts';
import type { Principal } from './principal.ts';

export interface AccountServiceDependencies {
  accounts: AccountRepository;
  userData: UserDataRepository;
  defaults: Limits;
  logger: Logger;
  /** Called when a user's limits or account change, so cached limits are read again. */
  onUserChanged?: (userId: string) => void;
  /** Told the limit overrides read with a key, so the chat it sends reads them no more. */
  onLimitsRead?: (userId: string, overrides: Record<string, number>) => void;
  /** The time keys expire by (the service's clock; tests move it). */
  now?: () => number;
  /** The monotonic milliseconds the key cache ages by; performance.now unless a test freezes it. */
  elapsed?: () => number;
}

export interface IssuedKey {
  keyId: string;
  key: string;
  expiresAt: Date | null;
}

export interface AccountView extends Omit<StoredAccount, 'limits'> {
  limits: Limits;
}

/**
 * How long a key's lookup is trusted: a revoked key is refused by every replica within this
 * (the contract says 1 s), and a busy key costs one indexed read a second, not one a request.
 */
const KEY_CACHE_MS = 900;
const KEY_CACHE_ENTRIES = 10_000;
/** `last_used_at` is written at most this often per key, off the request's path. */
const TOUCH_EVERY_MS = 60_000;

/** Accounts and their keys: created, listed, rotated and revoked by the administrator. */
export class AccountService {
  readonly #deps: AccountServiceDependencies;
  readonly #keys = new Map<
    string,
    { owner: Principal | undefined; at: number; expiresAt: number }
  >();
  readonly #touched = new Map<string, number>();
  /**
   * Counts changes made here to keys, accounts or limits: a key's lookup that one happened
   * during is used but not kept (nor its limits passed on), so it cannot undo the change for
   * the next KEY_CACHE_MS.
   */
  #changes = 0;

  constructor(deps: AccountServiceDependencies) {
    this.#deps = deps;
  }

  async create(userId: string): Promise<IssuedKey & { userId: string }> {
    const issued = newApiKey();
    const keyId = randomUUID();
    const created = await this.#deps.accounts.create(userId, {
      keyId,
      hash: issued.hash,
      prefix: issued.prefix,
      expiresAt: null,
    });
    if (!created)
      throw new AppError('user_exists', 409, `The user ${JSON.stringify(userId)} exists already.`);
    this.#deps.logger.info({ keyId }, 'account created');
    return { userId, keyId, key: issued.key, expiresAt: null };
  }

  async list(): Promise<AccountView[]> {
    const accounts = await this.#deps.accounts.list();
    return accounts.map((account) => ({
      ...account,
      limits: effectiveLimits(this.#deps.defaults, account.limits),
    }));
  }

  async addKey(userId: string, expiresInDays: number | undefined): Promise<IssuedKey> {
    const issued = newApiKey();
    const keyId = randomUUID();
    const expiresAt =
      expiresInDays === undefined ? null : new Date(this.#now() + expiresInDays * 86_400_000);
    const added = await this.#deps.accounts.addKey(userId, {
      keyId,
      hash: issued.hash,
      prefix: issued.prefix,
      expiresAt,
    });
    if (!added) throw notFound(`No user ${JSON.stringify(userId)}: create it first.`);
    this.#deps.logger.info({ keyId }, 'key added');
    return { keyId, key: issued.key, expiresAt };
  }

  async revokeKey(keyId: string): Promise<void> {
    const userId = await this.#deps.accounts.revokeKey(keyId);
    if (userId === undefined) throw notFound(`No key ${keyId}`);
    this.#changes++;
    this.#keys.clear(); // this replica at once; the others within KEY_CACHE_MS
    this.#deps.logger.info({ keyId }, 'key revoked');
  }

  async setLimits(
    userId: string,
    change: Partial<Record<LimitName, number | null>>,
  ): Promise<AccountView> {
    const account = await this.#deps.accounts.get(userId);
    if (!account) throw notFound(`No user ${JSON.stringify(userId)}`);
    const limits = applyLimitChange(account.limits, change);
    if (!(await this.#deps.accounts.setLimits(userId, limits))) {
      throw notFound(`No user ${JSON.stringify(userId)}`);
    }
    this.#changes++;
    this.#deps.onUserChanged?.(userId);
    return { ...account, limits: effectiveLimits(this.#deps.defaults, limits) };
  }

  /**
   * Deletes the account, its keys and everything kept about the user. 404 when there was
   * neither an account nor any data.
   */
  async deleteUser(userId: string): Promise<void> {
    const found = await this.#deps.userData.erase(userId);
    this.#changes++;
    this.#keys.clear();
    this.#deps.onUserChanged?.(userId);
    if (!found) throw notFound(`No user ${JSON.stringify(userId)}`);
    this.#deps.logger.info('user deleted');
  }

  /**
   * The user a bearer credential that looks like a key belongs to; undefined for an unknown,
   * revoked or expired key (the caller answers all three alike).
   */
  async authenticate(credential: string): Promise<Principal | undefined> {
    if (!looksLikeApiKey(credential)) return undefined;
    const hash = hashApiKey(credential);
    const at = this.#deps.elapsed?.() ?? performance.now();
    const cached = this.#keys.get(hash);
    let entry = cached && at - cached.at < KEY_CACHE_MS ? cached : undefined;
    if (!entry) {
      const changes = this.#changes;
      const found = await this.#deps.accounts.findKey(hash);
      const current = changes === this.#changes;
      if (found && current) this.#deps.onLimitsRead?.(found.userId, found.limits);
      entry = {
        at,
        owner: found && { kind: 'user', userId: found.userId, keyId: found.keyId },
        expiresAt: found?.expiresAt?.getTime() ?? Number.POSITIVE_INFINITY,
      };
      if (this.#keys.size >= KEY_CACHE_ENTRIES) this.#keys.clear();
      if (entry.owner && current) this.#keys.set(hash, entry);
    }
    if (!entry.owner || entry.expiresAt <= this.#now()) return undefined;
    if (entry.owner.kind === 'user' && entry.owner.keyId) this.#touch(entry.owner.keyId, at);
    return entry.owner;
  }

  #touch(keyId: string, now: number): void {
    // Never touched by this process: stamp it now. (Taking 0 for "never" skipped every key
    // used in the process's first minute, as `now` counts from the process's start.)
    const last = this.#touched.get(keyId);
    if (last !== undefined && now - last < TOUCH_EVERY_MS) return;
    this.#touched.set(keyId, now);
    if (this.#touched.size > KEY_CACHE_ENTRIES) this.#touched.clear();
    this.#deps.accounts.touchKeys([keyId]).catch((error: unknown) => {
      this.#deps.logger.warn({ err: error, keyId }, 'could not stamp a key as used');
    });
  }

  #now(): number {
    return (this.#deps.now ?? Date.now)();
  }
}
