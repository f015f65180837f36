import { AppError } from '../errors.ts';
import type { LimitName } from './limits.ts';

/**
 * A 429 over one of a user's limits. Besides the English reason (the API's `detail`), it says
 * which limit and its value, so a door can give the reason in the user's own language.
 */
export class LimitExceededError extends AppError {
  readonly limit: LimitName;
  readonly allowed: number;

  constructor(limit: LimitName, allowed: number, message: string, retryAfterMs: number) {
    super('limit_exceeded', 429, message, {
      retryAfterSeconds: Math.max(1, Math.ceil(retryAfterMs / 1000)),
    });
    this.limit = limit;
    this.allowed = allowed;
  }
}
