import { AppError } from './errors.ts';
import { PoolWaitTimeout } from './storage/database-errors.ts';

/**
 * What of an error may be logged: its kind, codes, statuses and causes, never its text.
 *
 * Errors carry users' words in many places: the AI SDK's `APICallError` holds the whole
 * request (system prompt with profile facts, the conversation) and the upstream's answer;
 * Drizzle's query errors put the statement's parameters into their message; a JSON or
 * validation error quotes the value it failed on. So no error's message, body or properties
 * are logged except the fields below, which are codes and numbers by construction. Our own
 * `AppError` messages are written by us (and shown to the client anyway); a Node system error's
 * message names only a syscall and an address.
 */
export interface ErrorLogFields {
  type: string;
  message?: string;
  code?: string | number;
  status?: number;
  retryable?: boolean;
  syscall?: string;
  /** Postgres: where the error was raised, and which schema object it concerns. */
  routine?: string;
  constraint?: string;
  table?: string;
  column?: string;
  /** Where a failed HTTP call went: the origin only (a path can hold a secret, e.g. `/bot<token>/`). */
  url?: string;
  /** The upstream's own error type and code (OpenAI-style error bodies), not its message. */
  upstream?: { type?: string; code?: string | number };
  /** A wait for a pooled database connection that timed out: the pool's numbers then. */
  pool?: { waiting: number; size: number; wait_ms: number };
  /** Stack frames, without the first line (which repeats the message). */
  frames?: string;
  cause?: ErrorLogFields;
}

const MAX_DEPTH = 5;

export function errorLogFields(error: unknown, depth = 0): ErrorLogFields {
  if (typeof error !== 'object' || error === null) return { type: typeof error };
  const e = error as Record<string, unknown>;
  const fields: ErrorLogFields = { type: typeName(e) };

  if (AppError.isInstance(error) || isSystemError(e)) fields.message = String(e.message);
  const code = e.code ?? e.errno;
  if (typeof code === 'string' || typeof code === 'number') fields.code = code;
  const status = e.statusCode ?? e.status;
  if (typeof status === 'number') fields.status = status;
  if (typeof e.isRetryable === 'boolean') fields.retryable = e.isRetryable;
  for (const key of ['syscall', 'routine', 'constraint', 'table', 'column'] as const) {
    if (typeof e[key] === 'string') fields[key] = e[key];
  }
  if (typeof e.url === 'string' && URL.canParse(e.url)) fields.url = new URL(e.url).origin;
  if (error instanceof PoolWaitTimeout) {
    fields.pool = { waiting: error.waiting, size: error.poolSize, wait_ms: error.waitMs };
  }
  const upstream = upstreamCodes(e.data);
  if (upstream) fields.upstream = upstream;
  // Where it happened, except for an upstream's HTTP answer or a socket error, whose place
  // is always the same client code and would only repeat on every outage.
  if (fields.status === undefined && fields.syscall === undefined && typeof e.stack === 'string') {
    const at = e.stack.indexOf('\n    at ');
    if (at >= 0) fields.frames = e.stack.slice(at + 1);
  }

  // The AI SDK's RetryError keeps the real failure as `lastError`; AggregateError its `errors`;
  // grammY's HttpError the failed request's error as `error`.
  const next =
    e.lastError ??
    e.cause ??
    (e.error instanceof Error ? e.error : undefined) ??
    (Array.isArray(e.errors) ? (e.errors as unknown[]).at(-1) : undefined);
  if (next !== undefined && depth < MAX_DEPTH) fields.cause = errorLogFields(next, depth + 1);
  return fields;
}

function typeName(e: Record<string, unknown>): string {
  const constructorName = (e.constructor as { name?: string } | undefined)?.name;
  if (constructorName && constructorName !== 'Error' && constructorName !== 'Object') {
    return constructorName;
  }
  return typeof e.name === 'string' ? e.name : 'Error';
}

/** Node's own socket and file errors: `connect ECONNREFUSED 127.0.0.1:9000`. */
function isSystemError(e: Record<string, unknown>): boolean {
  return typeof e.syscall === 'string' && typeof e.code === 'string' && /^E[A-Z]+$/.test(e.code);
}

function upstreamCodes(data: unknown): ErrorLogFields['upstream'] | undefined {
  const body = (data as { error?: { type?: unknown; code?: unknown } } | undefined)?.error;
  if (!body || typeof body !== 'object') return undefined;
  const codes: NonNullable<ErrorLogFields['upstream']> = {};
  if (typeof body.type === 'string') codes.type = body.type.slice(0, 100);
  if (typeof body.code === 'string' || typeof body.code === 'number') {
    codes.code = typeof body.code === 'string' ? body.code.slice(0, 100) : body.code;
  }
  return Object.keys(codes).length > 0 ? codes : undefined;
}
