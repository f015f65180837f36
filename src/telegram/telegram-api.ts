import { autoRetry } from '@grammyjs/auto-retry';
import { Api, GrammyError, HttpError, type Transformer } from 'grammy';
import { createBoundedFetch } from '../models/answer-bound.ts';
import { RateGate } from './rate-gate.ts';

/**
 * The most a Bot API answer is read to. The largest is getUpdates': at most 100 updates, each
 * a message of up to 4096 characters (up to 6 bytes each as JSON escapes) with its entities,
 * the message it replies to and a quote, well under 100 kB; 16 MiB leaves room many times
 * over. (File downloads have their own limit, `download`'s maxBytes.)
 */
export const BOT_API_ANSWER_MAX_BYTES = 16 * 1024 * 1024;

/**
 * JSON calls (every one Parley makes) go through it; a call with a file upload (a streamed
 * body) falls back to the built-in fetch, unbounded (none is made today).
 */
const botApiFetch = createBoundedFetch('Telegram Bot API', BOT_API_ANSWER_MAX_BYTES);

export interface TelegramApiOptions {
  token: string;
  /** TELEGRAM_API_BASE, e.g. https://api.telegram.org. */
  baseUrl: string;
  /** The clock a 429's pause is timed by (the reminders' clock, which tests move). */
  now?: () => number;
  /** TELEGRAM_CALL_TIMEOUT_MS: the most one `reliable` call may take, its answer read. */
  callTimeoutMs?: number;
  /** TELEGRAM_DOWNLOAD_TIMEOUT_MS: the most one file download may take. */
  downloadTimeoutMs?: number;
}

/** How long a `bestEffort` call may take: a long poll's wait (at most 50 s) and then some. */
const BEST_EFFORT_TIMEOUT_MS = 90_000;
/**
 * grammY's own time limit sits this far past Parley's, so that Parley's ends a call first:
 * grammY's says only "timed out", not whether Telegram had answered 200 by then.
 */
const GRAMMY_BACKSTOP_MS = 5_000;

/**
 * Parley's one Telegram client (grammY), in two flavours sharing one 429 pause (RateGate):
 * `reliable` for what must arrive (final messages, replies, file downloads' getFile): it waits
 * out a pause and retries 429 and 5xx (grammY's auto-retry); `bestEffort` for what may be
 * dropped (drafts, edits mid-answer, chat actions, polling, reminder notices, which keep their
 * own retry schedule): never waits, never retries. The token is part of every URL, so URLs
 * and grammY's error messages are never logged (see src/error-log-fields.ts).
 */
export class TelegramApi {
  readonly reliable: Api;
  readonly bestEffort: Api;
  readonly gate: RateGate;
  /** The numeric id before the token's colon: update ids are counted per bot. */
  readonly botId: string;
  readonly #fileBase: string;
  readonly #downloadTimeoutMs: number;

  /** Aborted by close(): no call waits or retries past shutdown. */
  readonly #closed = new AbortController();

  constructor(options: TelegramApiOptions) {
    this.gate = new RateGate(options.now);
    const apiRoot = options.baseUrl.replace(/\/+$/, '');
    const reliableMs = options.callTimeoutMs ?? 30_000;
    this.reliable = new Api(options.token, clientWithin(apiRoot, reliableMs));
    this.reliable.config.use(this.gate.waiting);
    this.reliable.config.use(sentDespiteAnswer);
    // Each retry passes through the gate again. A pause longer than five minutes is not
    // waited for: the caller is told.
    this.reliable.config.use(autoRetry({ maxRetryAttempts: 20, maxDelaySeconds: 300 }));
    this.reliable.config.use(this.#untilClosed);
    this.bestEffort = new Api(options.token, clientWithin(apiRoot, BEST_EFFORT_TIMEOUT_MS));
    this.bestEffort.config.use(this.gate.refusing);
    this.bestEffort.config.use(this.#untilClosed);
    this.botId = options.token.split(':')[0] ?? '';
    this.#fileBase = `${apiRoot}/file/bot${options.token}`;
    this.#downloadTimeoutMs = options.downloadTimeoutMs ?? 120_000;
  }

  /** Ends every call still waiting or retrying (at shutdown, after the last answer). */
  close(): void {
    this.#closed.abort();
  }

  /** Outermost transformer: every call also ends when the client is closed. */
  readonly #untilClosed: Transformer = (prev, method, payload, signal) => {
    const closed = this.#closed.signal;
    const both = signal ? AbortSignal.any([signal as unknown as AbortSignal, closed]) : closed;
    return prev(method, payload, grammySignal(both));
  };

  /**
   * Downloads a file that getFile named, up to `maxBytes` (a 413 TelegramCallError when
   * larger); ended after TELEGRAM_DOWNLOAD_TIMEOUT_MS, or when this client is closed at shutdown. With `expected` (getFile's
   * `file_size`), a file of another length is refused: an answer whose own length was
   * consistent but short (a proxy's cut, a file server's) was taken as the whole file, and half
   * a document was told to the user as added.
   */
  async download(filePath: string, maxBytes: number, expected?: number): Promise<Buffer> {
    const response = await fetch(`${this.#fileBase}/${filePath}`, {
      signal: AbortSignal.any([this.#closed.signal, AbortSignal.timeout(this.#downloadTimeoutMs)]),
    });
    if (!response.ok || !response.body) {
      throw new TelegramCallError(response.status, 'file download failed');
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of response.body) {
      size += chunk.byteLength;
      if (size > maxBytes) throw new TelegramCallError(413, 'file larger than allowed');
      chunks.push(Buffer.from(chunk));
    }
    if (expected !== undefined && expected !== size) {
      throw new TelegramCallError(response.status, 'file download incomplete');
    }
    return Buffer.concat(chunks);
  }
}

/**
 * A Bot API answer that came with status 200 (Telegram carried the call out) and whose body
 * could not be read whole: cut, stalled past the call's time limit, or not JSON.
 */
class AnswerUnread extends Error {
  override readonly name = 'AnswerUnread';
}

/**
 * A sendMessage that Telegram answered 200 but whose answer did not arrive whole was sent:
 * grammY calls that an HttpError, and auto-retry sent it again, so the user saw the answer
 * twice. It counts as sent (no caller reads what sendMessage returns). Inside auto-retry, so a
 * send that never got its 200 (refused, reset, a proxy's 502) is still retried.
 */
const sentDespiteAnswer: Transformer = async (prev, method, payload, signal) => {
  try {
    return await prev(method, payload, signal);
  } catch (error) {
    if (
      method === 'sendMessage' &&
      error instanceof HttpError &&
      error.error instanceof AnswerUnread
    ) {
      return { ok: true, result: undefined as never };
    }
    throw error;
  }
};

/** grammY's Node build types signals with the `abort-controller` package; Node's are the same. */
export type GrammySignal = Parameters<Api['sendMessage']>[3];
export const grammySignal = (signal: AbortSignal): GrammySignal =>
  signal as unknown as GrammySignal;

/** grammY's client options for calls that end after `timeoutMs`, their answer read. */
const clientWithin = (apiRoot: string, timeoutMs: number) => ({
  apiRoot,
  fetch: nodeFetchWithin(timeoutMs) as never,
  timeoutSeconds: (timeoutMs + GRAMMY_BACKSTOP_MS) / 1000,
});

/**
 * Node's own fetch for grammY, instead of its node-fetch@2 fallback. grammY's Node build hands
 * fetch a signal of the `abort-controller` package, which Node's fetch refuses, and options
 * for node-fetch (`agent`, `compress`); both are translated here. Each call ends after
 * `timeoutMs`, reading its answer included, before grammY's own limit does: an answer that
 * stalls after its 200 then fails as AnswerUnread (carried out) rather than as a plain time-out
 * (which auto-retry would send again).
 */
const nodeFetchWithin =
  (timeoutMs: number) =>
  async (url: string, init: RequestInit & { agent?: unknown; compress?: unknown }) => {
    const { agent: _agent, compress: _compress, signal, ...rest } = init;
    const controller = new AbortController();
    if (signal?.aborted) controller.abort();
    else signal?.addEventListener('abort', () => controller.abort(), { once: true });
    const within = AbortSignal.any([controller.signal, AbortSignal.timeout(timeoutMs)]);
    return unreadToldApart(await botApiFetch(url, { ...rest, signal: within }));
  };

/** `response`, whose json() fails as AnswerUnread when its status was 200. */
function unreadToldApart(response: Response): Response {
  if (response.status === 200) {
    // grammY reads only json(): a 200 whose body does not arrive whole is told apart.
    const json = response.json.bind(response);
    Object.defineProperty(response, 'json', {
      value: () =>
        json().catch((error: unknown) => {
          throw new AnswerUnread('Telegram answered 200, its answer did not arrive whole', {
            cause: error,
          });
        }),
    });
  }
  return response;
}

/** A file download that failed; `status` is the HTTP status. */
export class TelegramCallError extends Error {
  override readonly name = 'TelegramCallError';
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

/** What a failed Bot API call said, in codes: never its message (it names the token's URL). */
export interface CallFailure {
  /** The Bot API's error_code (or HTTP status); undefined for a network error or timeout. */
  status: number | undefined;
  description: string;
  retryAfterSeconds: number | undefined;
}

export function callFailure(error: unknown): CallFailure | undefined {
  if (error instanceof GrammyError) {
    return {
      status: error.error_code,
      description: error.description,
      retryAfterSeconds: error.parameters.retry_after,
    };
  }
  if (error instanceof HttpError) {
    return { status: undefined, description: 'network error', retryAfterSeconds: undefined };
  }
  if (error instanceof TelegramCallError) {
    return { status: error.status, description: error.message, retryAfterSeconds: undefined };
  }
  return undefined;
}

/** 400 "message is not modified": an edit that changed nothing, which is fine. */
export const isNotModified = (error: unknown) =>
  callFailure(error)?.description.includes('message is not modified') ?? false;

/**
 * Telegram's 400s for a message's text as given: HTML it cannot parse, a text too long once
 * parsed or as sent, or one that shows nothing once parsed ("text must be non-empty"; "message
 * text is empty" for an empty `text`). The part is sent plain instead (it fits:
 * part-message.ts).
 */
const TEXT_REFUSED = [
  "can't parse entities",
  'message is too long',
  'text is too long',
  'text must be non-empty',
  'message text is empty',
];

/** Whether Telegram refused a message's text as given (TEXT_REFUSED). */
export const isTextRefused = (error: unknown) => {
  const failure = callFailure(error);
  return failure?.status === 400 && TEXT_REFUSED.some((t) => failure.description.includes(t));
};
