/**
 * Domain errors carry a stable code and the HTTP status they map to. Services throw them;
 * the HTTP edge (http/error-handler.ts) and the chat stream turn them into responses in one
 * place. Check with `AppError.isInstance`, never by message.
 */
export class AppError extends Error {
  readonly code: string;
  readonly status: number;
  /** Sent as `Retry-After` (429, 503): when trying again can succeed. */
  readonly retryAfterSeconds: number | undefined;

  constructor(
    code: string,
    status: number,
    message: string,
    options?: ErrorOptions & { retryAfterSeconds?: number },
  ) {
    super(message, options);
    this.name = 'AppError';
    this.code = code;
    this.status = status;
    this.retryAfterSeconds = options?.retryAfterSeconds;
  }

  static isInstance(error: unknown): error is AppError {
    return error instanceof AppError;
  }
}

export const notFound = (message: string) => new AppError('not_found', 404, message);
