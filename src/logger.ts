import pino, { type Logger } from 'pino';
import { errorLogFields } from './error-log-fields.ts';

/**
 * Structured JSON logs. Secrets and user content are redacted at the source: the bearer
 * token, API keys, and message or file bodies never reach a log line at any level. Errors
 * (under `err` or `error`) are logged as their kind, codes and causes only (error-log-fields.ts).
 */
export function createLogger(level: string): Logger {
  return pino({
    level,
    serializers: { err: errorLogFields, error: errorLogFields, req: requestLogFields },
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        'headers.authorization',
        'headers.cookie',
        // @fastify/multipart logs the request's headers it hands its parser, at trace.
        'busboyOptions.headers.authorization',
        'busboyOptions.headers.cookie',
        '*.apiKey',
        '*.api_key',
        '*.token',
      ],
      censor: '[redacted]',
    },
  });
}

/**
 * A request as its log line shows it: the path without its query, which can carry users'
 * words (a conversation search's `q`). A wildcard route's path is its template: the rest of
 * `/documents/*` is a source, which is the uploaded file's name unless the user chose another.
 */
function requestLogFields(request: {
  method?: string;
  url?: string;
  host?: string;
  ip?: string;
  socket?: { remotePort?: number };
  routeOptions?: { url?: string };
}) {
  const route = request.routeOptions?.url;
  return {
    method: request.method,
    url: route?.includes('*') ? route : request.url?.split('?')[0],
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}
