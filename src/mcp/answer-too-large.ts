import { McpError } from '@modelcontextprotocol/sdk/types.js';

/**
 * The longest message Parley reads from an MCP server, over stdio (a line) or HTTP (a JSON
 * body, an SSE event): the SDK's own stdio limit. Past it the message is not read at all,
 * so a server's huge answer can neither hold the event loop nor fill the memory.
 */
export const MESSAGE_MAX_BYTES = 10 * 1024 * 1024;

/** The JSON-RPC error code Parley answers a request with when its answer was too long. */
export const ANSWER_TOO_LARGE = -32_050;

/** A server's answer over MESSAGE_MAX_BYTES, left unread. */
export class AnswerTooLargeError extends Error {
  constructor(bytes: number) {
    super(
      `answer too large: the server's message was over ${bytes} bytes, more than the ${MESSAGE_MAX_BYTES} Parley reads`,
    );
    this.name = 'AnswerTooLargeError';
  }
}

/** Whether a call failed because its answer was too long to read (any transport). */
export function isAnswerTooLarge(error: unknown): boolean {
  return (
    error instanceof AnswerTooLargeError ||
    (error instanceof McpError && error.code === ANSWER_TOO_LARGE)
  );
}
