import type { LanguageModelUsage } from 'ai';

/**
 * Finish reasons a model server sends that the AI SDK's provider does not know, and maps to
 * `other`. Most of them are a harmless end under another name (llama.cpp's `eos`), but some
 * say the server gave up on the answer: vLLM ends a generation it aborted (engine shutdown,
 * preemption, its own client gone) with `abort`, other servers with `error` or `cancelled`.
 * Such an answer is as incomplete as one whose connection broke, and is treated as one.
 */
const CUT_REASONS = new Set(['abort', 'error', 'cancelled', 'canceled']);

/** The cut's reason, lower-cased, when the server's raw finish reason means one. */
export function cutFinishReason(raw: string | undefined): string | undefined {
  const reason = raw?.toLowerCase();
  return reason !== undefined && CUT_REASONS.has(reason) ? reason : undefined;
}

/**
 * A raw finish reason as the log may carry it: a server could send any text there, so only
 * what looks like a code is written.
 */
export function loggableFinishReason(raw: string): string {
  return /^[\w.:-]{1,40}$/.test(raw) ? raw : 'unreadable';
}

/** The model server ended the answer before its end, with a finish reason that says so. */
export class ModelAnswerCutError extends Error {
  override readonly name = 'ModelAnswerCutError';
  /** The server's finish reason (one of CUT_REASONS), which the log shows as the error's code. */
  readonly code: string;
  /** The tokens the server reported for the call it cut: they count for the user's day. */
  readonly usage: LanguageModelUsage | undefined;

  constructor(reason: string, usage?: LanguageModelUsage) {
    super(`the model server ended the answer with finish reason ${reason}`);
    this.code = reason;
    this.usage = usage;
  }
}
