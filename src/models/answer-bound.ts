import { type BodyTransform, createHttpFetch } from './http-fetch.ts';

/**
 * An outside server's answer read whole (a JSON body) is read up to a size it can legitimately
 * have, and no further: one answering gigabytes (misbehaving, or hostile) was read into memory
 * until the process died, with every user's streams. Counted after decompression, so a small
 * compressed body that unpacks to gigabytes is stopped as well. Past the bound the body ends
 * with AnswerTooLargeError, as a body cut short does, and the connection is closed: each
 * caller's handling of a cut answer applies (a short tool error, a batch left for retry, a
 * poll retried).
 */
export class AnswerTooLargeError extends Error {
  override readonly name = 'AnswerTooLargeError';
  /** What the log shows of it (never a byte of the answer). */
  readonly code = 'upstream_answer_too_large';
  readonly maxBytes: number;

  constructor(upstream: string, maxBytes: number) {
    super(`the ${upstream} sent an answer over ${maxBytes} bytes; Parley stopped reading it`);
    this.maxBytes = maxBytes;
  }
}

/** Whether `error`, or one of its causes, is an AnswerTooLargeError (the SDKs wrap it). */
export function isAnswerTooLarge(error: unknown): boolean {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; depth++) {
    if (e instanceof AnswerTooLargeError) return true;
    e = e.cause;
  }
  return false;
}

/** A body passed on unchanged up to `maxBytes` in all; past that it ends with AnswerTooLargeError. */
export function createAnswerBound(upstream: string, maxBytes: number): BodyTransform {
  let size = 0;
  return {
    chunk(bytes) {
      size += bytes.byteLength;
      if (size > maxBytes) throw new AnswerTooLargeError(upstream, maxBytes);
      return bytes;
    },
    end: () => undefined,
  };
}

/**
 * A `fetch` (createHttpFetch, one connection pool) whose answers are read up to `maxBytes`;
 * `upstream` names the server in the error ("embeddings server"). Create one per upstream and
 * keep it: each holds its own pool.
 */
export function createBoundedFetch(upstream: string, maxBytes: number): typeof fetch {
  return createHttpFetch({ transformBody: () => createAnswerBound(upstream, maxBytes) });
}
