import type { AccountRepository } from '../storage/account-repository.ts';
import type { StorageCap } from '../storage/document-repository.ts';
import type { AdmittedChat, UsageRepository, UserDay } from '../storage/usage-repository.ts';
import { LimitExceededError } from './limit-exceeded.ts';
import { effectiveLimits, type Limits, MB } from './limits.ts';
import { isLimited, type Principal } from './principal.ts';

export interface UsageLimitsDependencies {
  usage: UsageRepository;
  accounts: AccountRepository;
  defaults: Limits;
  applyToAdmin: boolean;
  defaultTimezone: string;
  /**
   * The instant whose day the daily limits count (the reminders' clock, so a test can place
   * it on any day); Date.now unless given.
   */
  now?: () => number;
  /** The monotonic milliseconds the limits' cache ages by; performance.now unless a test freezes it. */
  elapsed?: () => number;
}

export interface UsageView {
  user_id: string;
  chats_last_minute: number;
  tokens_today: number;
  ingest_mb_today: number;
  storage_mb: number;
  limits: Limits;
}

/** How long an account's limits are taken from memory before being read again. */
const LIMITS_TTL_MS = 1_000;
const MINUTE_MS = 60_000;

/**
 * The per-user limits, shared by every door and every replica (the counters are in the
 * database). Usage always counts for the user named, whoever sends the request; whether a
 * limit refuses it depends on the principal (a user's key always; the administrator's token
 * only with LIMITS_APPLY_TO_ADMIN). A limit is checked before an answer starts and never cuts
 * one that has.
 */
export class UsageLimits {
  readonly #deps: UsageLimitsDependencies;
  readonly #cache = new Map<string, { limits: Limits; at: number }>();
  /** Counts `forget`s: a read that one happened during is used but not cached. */
  #changes = 0;

  constructor(deps: UsageLimitsDependencies) {
    this.#deps = deps;
  }

  /**
   * The limits in force for a user; cached for a second, so a change made on another replica
   * is in force here within a second (one made here is at once: see `forget`).
   */
  async limitsOf(userId: string): Promise<Limits> {
    const now = this.#elapsed();
    const cached = this.#cache.get(userId);
    if (cached && now - cached.at < LIMITS_TTL_MS) return cached.limits;
    const changes = this.#changes;
    const limits = effectiveLimits(this.#deps.defaults, await this.#deps.accounts.limitsOf(userId));
    // A change made here while the read was under way may have missed it: not kept, so the
    // next request reads the new limits rather than these for another second.
    if (changes !== this.#changes) return limits;
    if (this.#cache.size > 10_000) this.#cache.clear();
    this.#cache.set(userId, { limits, at: now });
    return limits;
  }

  /** A user's limits changed on this replica: the next request reads them again. */
  forget(userId: string): void {
    this.#changes++;
    this.#cache.delete(userId);
  }

  /** Overrides read elsewhere (with a user's key): cached as if read here. */
  remember(userId: string, overrides: Record<string, number>): void {
    if (this.#cache.size > 10_000) this.#cache.clear();
    this.#cache.set(userId, {
      limits: effectiveLimits(this.#deps.defaults, overrides),
      at: this.#elapsed(),
    });
  }

  /**
   * Counts a chat, or refuses it with 429 and `Retry-After` when it is over the user's chat
   * rate or today's tokens. One statement when admitted, which also reads the user's current
   * conversation (see UsageRepository.admitChat).
   */
  async admitChat(principal: Principal, userId: string): Promise<AdmittedChat> {
    const enforce = isLimited(principal, this.#deps.applyToAdmin);
    // A chat that is only counted (the administrator's, by default) is counted at the default
    // rate without reading the user's overrides: one statement per chat either way (a key's
    // overrides come with the key's own lookup).
    const limits = enforce ? await this.limitsOf(userId) : this.#deps.defaults;
    if (enforce && limits.storage_mb > 0) {
      // A full store refuses new turns as it refuses uploads (never an answer under way).
      const stored = await this.#deps.usage.storedBytes(userId);
      if (stored >= limits.storage_mb * MB) {
        throw new LimitExceededError(
          'storage_mb',
          limits.storage_mb,
          `Your conversations and documents take your ${limits.storage_mb} MB: delete some first.`,
          60 * MINUTE_MS,
        );
      }
    }
    const intervalMs = limits.chats_per_minute > 0 ? MINUTE_MS / limits.chats_per_minute : 0;
    const day = this.#today();
    const admitted = await this.#deps.usage.admitChat(
      userId,
      day,
      intervalMs,
      limits.tokens_per_day,
      enforce,
    );
    if (admitted) return admitted;
    const state = await this.#deps.usage.chatState(userId, day);
    if (limits.tokens_per_day > 0 && state.tokensToday >= limits.tokens_per_day) {
      throw new LimitExceededError(
        'tokens_per_day',
        limits.tokens_per_day,
        `Today's limit of ${limits.tokens_per_day} model tokens is used up; it resets at midnight in your timezone.`,
        state.dayEndsInMs,
      );
    }
    // The next chat fits once `tat + interval` is within a minute of now.
    throw new LimitExceededError(
      'chats_per_minute',
      limits.chats_per_minute,
      `Too many chats: the limit is ${limits.chats_per_minute} a minute. Try again shortly.`,
      state.tatAheadMs + intervalMs - MINUTE_MS,
    );
  }

  /**
   * Counts an upload of `bytes` for `source` against today's ingestion and the user's storage
   * (private documents and conversations; a shared document is not the user's), or refuses it.
   */
  async admitIngest(
    principal: Principal,
    userId: string,
    bytes: number,
    privateSource: string | undefined,
  ): Promise<StorageCap | undefined> {
    const limits = await this.limitsOf(userId);
    const enforce = isLimited(principal, this.#deps.applyToAdmin);
    let cap: StorageCap | undefined;
    if (enforce && privateSource !== undefined && limits.storage_mb > 0) {
      cap = {
        maxBytes: limits.storage_mb * MB,
        refusal: () =>
          new LimitExceededError(
            'storage_mb',
            limits.storage_mb,
            `Your documents and conversations would take more than your ${limits.storage_mb} MB: delete some first.`,
            60 * MINUTE_MS,
          ),
      };
      // Refused here before the upload is read; checked again as it is stored (StorageCap).
      const stored = await this.#deps.usage.storedBytes(userId, privateSource);
      if (stored + bytes > cap.maxBytes) throw cap.refusal();
    }
    const day = this.#today();
    const counted = await this.#deps.usage.addIngest(
      userId,
      day,
      bytes,
      limits.ingest_mb_per_day * MB,
      enforce,
    );
    if (!counted) {
      const state = await this.#deps.usage.chatState(userId, day);
      throw new LimitExceededError(
        'ingest_mb_per_day',
        limits.ingest_mb_per_day,
        `This upload would pass today's limit of ${limits.ingest_mb_per_day} MB; it resets at midnight in your timezone.`,
        state.dayEndsInMs,
      );
    }
    return cap;
  }

  async usage(userId: string): Promise<UsageView> {
    const limits = await this.limitsOf(userId);
    const day = this.#today();
    const [state, ingested, stored, runs] = await Promise.all([
      this.#deps.usage.chatState(userId, day),
      this.#deps.usage.ingestBytesToday(userId, day),
      this.#deps.usage.storedBytes(userId),
      this.#deps.usage.runsLastMinute(userId),
    ]);
    // With a rate limit, the chats still inside the last minute are what holds `tat` ahead.
    const counted =
      limits.chats_per_minute > 0
        ? Math.ceil(state.tatAheadMs / (MINUTE_MS / limits.chats_per_minute))
        : 0;
    return {
      user_id: userId,
      chats_last_minute: Math.max(counted, runs),
      tokens_today: state.tokensToday,
      ingest_mb_today: round(ingested / MB),
      storage_mb: round(stored / MB),
      limits,
    };
  }

  /** The day the daily limits count now: one instant for every statement of a request. */
  #today(): UserDay {
    return {
      defaultTimezone: this.#deps.defaultTimezone,
      now: new Date((this.#deps.now ?? Date.now)()),
    };
  }

  #elapsed(): number {
    return this.#deps.elapsed?.() ?? performance.now();
  }
}

const round = (mb: number) => Math.round(mb * 1000) / 1000;
