import type { BodyEnding } from '../body-endings.ts';
import { recordingPath } from './recording.ts';

/** Token counts a scripted reply reports; unset numbers are estimated from the reply. */
export interface Usage {
  prompt?: number;
  completion?: number;
  reasoning?: number;
  cached?: number;
}

/**
 * Faults applied while streaming. "After K" counts `data:` chunks already written, so
 * `disconnectAfter: 0` drops the socket right after the headers.
 */
export interface StreamFaults {
  /** Pause before every chunk, so a test can act mid-stream. */
  delayMs?: number;
  /**
   * Awaited before every chunk with the answer text written so far: a test that asserts how
   * an answer was split waits here until its client has shown that text (see `lockstep`), so
   * two chunks cannot reach Parley together however slow the machine is.
   */
  pace?: (textWritten: string) => Promise<void>;
  /** Destroy the socket after K chunks: no `[DONE]`, no clean end. */
  disconnectAfter?: number;
  /** With `disconnectAfter`: first write half of the next chunk's bytes (a cut inside an event). */
  cutInsideEvent?: boolean;
  /** Write one line of invalid JSON after K chunks, then carry on. */
  malformedAfter?: number;
  /** Write K chunks, then nothing more until the client gives up. */
  stallAfter?: number;
  /** Send nothing at all, not even the response headers, until the client gives up. */
  silent?: boolean;
  /** After K chunks, start one event that never ends, and write it until the client gives up. */
  endlessEvent?: EndlessEvent;
  /** `stream: false` only: end the 200 answer this way (test/support/body-endings.ts). */
  bodyEnding?: BodyEnding;
}

/**
 * An SSE event that never ends, as a broken proxy or server might send it:
 * - `line`: one `data:` line of text delta that never gets its newline;
 * - `lines`: `data:` lines that never get the blank line ending their event;
 * - `garbage`: bytes that are neither text nor newlines;
 * - `cr-lines`: `data:` lines ended with `\r` (a framing the SSE standard allows), never a blank one.
 */
export interface EndlessEvent {
  after: number;
  kind: 'line' | 'lines' | 'garbage' | 'cr-lines';
  /** Bytes written at a time. */
  pieceBytes: number;
  /** Pause between pieces; 0: as fast as the socket takes them. */
  everyMs: number;
}

/** Where reasoning goes: DeepSeek/vLLM `reasoning_content`, Groq/OpenRouter `reasoning`, or Qwen-style `<think>` in content. */
export type ReasoningFormat = 'reasoning_content' | 'reasoning' | 'think-tags';

export interface ToolCallSpec {
  name: string;
  /** An object is JSON-encoded; a string is sent as is (to script invalid arguments). */
  args: unknown;
  id?: string;
}

export interface TurnReply extends StreamFaults {
  kind: 'turn';
  reasoning?: string;
  reasoningFormat: ReasoningFormat;
  text?: string;
  toolCalls: ToolCallSpec[];
  /** Pieces the text (and the reasoning) is split into; default one per word. */
  chunks?: number;
  /** Pieces each tool call's arguments are split into. */
  argChunks: number;
  usage?: Usage;
  finishReason?: string;
}

export interface ReplayReply extends StreamFaults {
  kind: 'replay';
  /** Absolute path; the recording is sent verbatim, its model name included. */
  path: string;
}

export interface ErrorReply {
  kind: 'http-error';
  status: number;
  body: unknown;
  headers: Record<string, string>;
}

export type Reply = TurnReply | ReplayReply | ErrorReply;

export interface TextOptions extends StreamFaults {
  chunks?: number;
  usage?: Usage;
  finishReason?: string;
}

export interface ToolCallOptions extends StreamFaults {
  argChunks?: number;
  /** Text the model says before calling the tools. */
  text?: string;
  usage?: Usage;
  /** Default `tool_calls`; vLLM ends a generation it aborted with `abort` even after a call. */
  finishReason?: string;
}

export interface ErrorOptions {
  message?: string;
  type?: string;
  code?: string | null;
  headers?: Record<string, string>;
  /** Replaces the OpenAI-style error body entirely (a string is sent verbatim). */
  body?: unknown;
}

const defaultErrors: Record<number, { message: string; type: string; code: string | null }> = {
  400: { message: 'Invalid request.', type: 'invalid_request_error', code: null },
  401: {
    message: 'Incorrect API key provided.',
    type: 'invalid_request_error',
    code: 'invalid_api_key',
  },
  429: {
    message: 'Rate limit reached for requests.',
    type: 'requests',
    code: 'rate_limit_exceeded',
  },
  500: {
    message: 'The server had an error while processing your request. Sorry about that!',
    type: 'server_error',
    code: null,
  },
  503: { message: 'The engine is currently overloaded.', type: 'server_error', code: null },
};

/** An OpenAI-style error body. */
export function openAiError(status: number, options: ErrorOptions = {}): unknown {
  const base = defaultErrors[status] ?? {
    message: `HTTP ${status}`,
    type: 'api_error',
    code: null,
  };
  return {
    error: {
      message: options.message ?? base.message,
      type: options.type ?? base.type,
      param: null,
      code: options.code === undefined ? base.code : options.code,
    },
  };
}

/** Builders for scripted chat-completions replies, e.g. `server.enqueue(reply.text('hi'))`. */
export const reply = {
  text(text: string, options: TextOptions = {}): TurnReply {
    return {
      kind: 'turn',
      text,
      toolCalls: [],
      reasoningFormat: 'reasoning_content',
      argChunks: 1,
      ...options,
    };
  },

  reasoning(
    reasoning: string,
    text: string,
    options: TextOptions & { format?: ReasoningFormat } = {},
  ): TurnReply {
    const { format = 'reasoning_content', ...rest } = options;
    return { ...reply.text(text, rest), reasoning, reasoningFormat: format };
  },

  toolCalls(calls: ToolCallSpec[], options: ToolCallOptions = {}): TurnReply {
    const { argChunks = 3, ...rest } = options;
    return {
      kind: 'turn',
      toolCalls: calls,
      reasoningFormat: 'reasoning_content',
      argChunks,
      ...rest,
    };
  },

  /** Headers are sent, then nothing: the client has to time out or abort. */
  stall(): TurnReply {
    return reply.text('', { stallAfter: 0 });
  },

  /** The request is taken and never answered, not even with headers (a wedged server). */
  silent(): TurnReply {
    return reply.text('', { silent: true });
  },

  error(status: number, options: ErrorOptions = {}): ErrorReply {
    return {
      kind: 'http-error',
      status,
      body: options.body ?? openAiError(status, options),
      headers: options.headers ?? {},
    };
  },

  /** Replays a recording from the shared `llm-streams/vercel-ai/` directory (or an absolute path). */
  replay(file: string, faults: StreamFaults = {}): ReplayReply {
    return { kind: 'replay', path: recordingPath(file), ...faults };
  },
};
