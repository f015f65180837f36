import { AppError } from '../errors.ts';

/**
 * Who is asking. Every door (the REST API, the web client's session, the OpenAI-compatible
 * API, Telegram) resolves its caller to one of these, and one rule decides what it may reach:
 *
 * - `admin`: the API_TOKEN (or development mode, when no token is set): any user's data, as
 *   the spec intends for a trusted server in front.
 * - `user`: one person, by their key (or a session made from it): their own data only.
 */
export type Principal =
  | { kind: 'admin' /** no API_TOKEN is configured */; development: boolean }
  | { kind: 'user'; userId: string; keyId: string | undefined };

export const forbidden = (message: string) => new AppError('forbidden', 403, message);

/**
 * The user a request acts for: the one it names, or when it names none the key's own user
 * (`default` for the administrator, as the spec has it). A user naming someone else is
 * refused: a key reaches its own user's data only.
 */
export function actingUser(principal: Principal, named: string | undefined): string {
  if (principal.kind === 'admin') return named ?? 'default';
  if (named === undefined || named === principal.userId) return principal.userId;
  throw forbidden("This key belongs to another user: it can only reach its own user's data.");
}

export function requireAdmin(principal: Principal): void {
  if (principal.kind !== 'admin') {
    throw forbidden('Only the administrator (API_TOKEN) can do this.');
  }
}

/** Whether a request is subject to the per-user limits (LIMITS_APPLY_TO_ADMIN). */
export function isLimited(principal: Principal, limitsApplyToAdmin: boolean): boolean {
  return principal.kind === 'user' || limitsApplyToAdmin;
}
