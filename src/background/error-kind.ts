import { errorLogFields } from '../error-log-fields.ts';

/**
 * A failure in a word the administrator can read and a metric could carry: the HTTP status
 * (`http_503`), a socket's code (`ECONNREFUSED`), `timeout`, else the error's type. Taken
 * from the error's codes and causes only (error-log-fields.ts), never from its text.
 */
export function errorKindOf(error: unknown): string {
  for (let fields = errorLogFields(error); ; ) {
    if (fields.status !== undefined) return `http_${fields.status}`;
    if (typeof fields.code === 'string' && /^E[A-Z]+$/.test(fields.code)) return fields.code;
    if (fields.type === 'TimeoutError' || fields.type === 'AbortError') return 'timeout';
    if (!fields.cause) break;
    fields = fields.cause;
  }
  return errorLogFields(error).type;
}

/** The HTTP status a failure carries (its own or a cause's), if any. */
export function statusOf(error: unknown): number | undefined {
  for (
    let fields: ReturnType<typeof errorLogFields> | undefined = errorLogFields(error);
    fields;
  ) {
    if (fields.status !== undefined) return fields.status;
    fields = fields.cause;
  }
  return undefined;
}
