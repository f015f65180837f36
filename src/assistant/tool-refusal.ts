import { AppError } from '../errors.ts';

/**
 * A tool's deliberate refusal or failure it explains itself (a date in the past, too many
 * facts, the vision model is busy): its message is written for the model, which tells the
 * user. Anything else a tool throws is unexpected (a database error, a socket error naming an
 * internal host, a bug): its message may carry SQL, addresses or stack text, so the model gets
 * only `TOOL_FAILED_TEXT` and the log gets the error's codes (toolFailureText).
 */
export class ToolRefusal extends Error {
  readonly code: string;

  constructor(code: string, message: string) {
    super(message);
    this.name = 'ToolRefusal';
    this.code = code;
  }

  static isInstance(error: unknown): error is ToolRefusal {
    return error instanceof ToolRefusal;
  }
}

export const TOOL_FAILED_CODE = 'tool_failed';
export const TOOL_FAILED_TEXT = `The tool failed (${TOOL_FAILED_CODE}): try again later, or answer without it.`;

/**
 * What the model is told of a tool's throw: a refusal's own words (our `AppError`s' too: we
 * wrote them, and the HTTP edge shows them to clients as they are), else the generic text.
 */
export function toolFailureText(error: unknown): { text: string; unexpected: boolean } {
  if (ToolRefusal.isInstance(error) || AppError.isInstance(error)) {
    return { text: error.message, unexpected: false };
  }
  return { text: TOOL_FAILED_TEXT, unexpected: true };
}
