/**
 * The per-user limits: defaults from the environment, overridden per account. 0 = no limit.
 * The names are those of the API (`PATCH /admin/users/{user_id}`, `GET …/usage`).
 */
export const LIMIT_NAMES = [
  'chats_per_minute',
  'tokens_per_day',
  'ingest_mb_per_day',
  'storage_mb',
] as const;
export type LimitName = (typeof LIMIT_NAMES)[number];
export type Limits = Record<LimitName, number>;

export interface LimitDefaults {
  LIMIT_CHATS_PER_MINUTE: number;
  LIMIT_TOKENS_PER_DAY: number;
  LIMIT_INGEST_MB_PER_DAY: number;
  LIMIT_STORAGE_MB: number;
}

export function defaultLimits(config: LimitDefaults): Limits {
  return {
    chats_per_minute: config.LIMIT_CHATS_PER_MINUTE,
    tokens_per_day: config.LIMIT_TOKENS_PER_DAY,
    ingest_mb_per_day: config.LIMIT_INGEST_MB_PER_DAY,
    storage_mb: config.LIMIT_STORAGE_MB,
  };
}

/** The defaults with an account's overrides applied (unknown names in storage are ignored). */
export function effectiveLimits(defaults: Limits, overrides: Record<string, number> = {}): Limits {
  const limits = { ...defaults };
  for (const name of LIMIT_NAMES) {
    const value = overrides[name];
    if (typeof value === 'number' && Number.isFinite(value) && value >= 0) limits[name] = value;
  }
  return limits;
}

/** A change to the overrides: a number sets one, null puts it back to the default. */
export function applyLimitChange(
  current: Record<string, number>,
  change: Partial<Record<LimitName, number | null>>,
): Record<string, number> {
  const next: Record<string, number> = {};
  for (const name of LIMIT_NAMES) {
    const value = name in change ? change[name] : current[name];
    if (typeof value === 'number') next[name] = value;
  }
  return next;
}

export const MB = 1024 * 1024;
