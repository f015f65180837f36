/**
 * Recognises errors that mean "the database cannot be reached right now" (as opposed to a
 * bug in a query), so the HTTP edge can answer 503 and the caller can retry.
 */
const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENOENT', // the embedded engine's socket is gone
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
]);

const UNREACHABLE_MESSAGES = [
  'Connection terminated',
  'Client has encountered a connection error',
  'Cannot use a pool after calling end',
];

export function isDatabaseUnavailable(error: unknown): boolean {
  return someCause(
    error,
    ({ code, message }) =>
      (typeof code === 'string' && UNREACHABLE_CODES.has(code)) ||
      (typeof message === 'string' && UNREACHABLE_MESSAGES.some((m) => message.includes(m))),
  );
}

/**
 * A query waited DB_POOL_WAIT_MS for a pooled connection and gave up (priority-pool.ts turns
 * pg-pool's timeout into this): every connection was in use, so Parley is busy; the database
 * itself answers. Clients get 503 `busy` with Retry-After, not `database_unavailable`.
 */
export class PoolWaitTimeout extends Error {
  /** Names the cause in every log line that carries this error. */
  readonly code = 'pool_wait_timeout';
  /** Queries still waiting for a connection when this one gave up. */
  readonly waiting: number;
  readonly poolSize: number;
  readonly waitMs: number;

  constructor(pool: { waiting: number; poolSize: number; waitMs: number }) {
    super('timed out waiting for a pooled database connection');
    this.name = 'PoolWaitTimeout';
    this.waiting = pool.waiting;
    this.poolSize = pool.poolSize;
    this.waitMs = pool.waitMs;
  }

  /** The log line's fields: the cause and the pool's numbers, nothing of the request. */
  logFields() {
    return {
      cause: this.code,
      code: BUSY.code,
      waiting: this.waiting,
      pool_size: this.poolSize,
      wait_ms: this.waitMs,
    };
  }
}

/** What a client is told when its query could not get a connection in time. */
export const BUSY = {
  code: 'busy',
  message: 'Parley is busy; try again in a few seconds.',
  // A burst of uploads and chats clears in seconds; a client that waits longer only loses time.
  retryAfterSeconds: 5,
} as const;

/** The pool wait timeout behind an error (Drizzle wraps the driver's), if that is what it is. */
export function poolWaitTimeout(error: unknown): PoolWaitTimeout | undefined {
  let found: PoolWaitTimeout | undefined;
  someCause(error, (current) => {
    if (current instanceof PoolWaitTimeout) found = current;
    return found !== undefined;
  });
  return found;
}

/** A row names another that does not exist (Postgres 23503, foreign_key_violation). */
export function isForeignKeyViolation(error: unknown): boolean {
  return someCause(error, ({ code }) => code === '23503');
}

/**
 * A chat's turn names a conversation that is gone: deleted with its user while the answer was
 * written (erasing a user does not wait for the user's chats, nor for their automations' runs).
 */
export function isConversationGone(error: unknown): boolean {
  return someCause(
    error,
    (cause) =>
      cause.code === '23503' &&
      /conversation_id/.test(String((cause as { constraint?: unknown }).constraint ?? '')),
  );
}

/** A row repeats a unique key (Postgres 23505, unique_violation). */
export function isUniqueViolation(error: unknown): boolean {
  return someCause(error, ({ code }) => code === '23505');
}

/** Drizzle wraps the driver's error in its own: the test applies to every `cause` in turn. */
function someCause(
  error: unknown,
  test: (error: { code?: unknown; message?: unknown }) => boolean,
): boolean {
  for (let current = error, depth = 0; current && depth < 5; depth++) {
    if (test(current as { code?: unknown; message?: unknown })) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}
