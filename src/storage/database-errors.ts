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
  'timeout exceeded when trying to connect',
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

/** A row names another that does not exist (Postgres 23503, foreign_key_violation). */
export function isForeignKeyViolation(error: unknown): boolean {
  return someCause(error, ({ code }) => code === '23503');
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
