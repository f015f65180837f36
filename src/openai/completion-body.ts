import type { AnswerEnd, ChatErrorCode, ChatEvent } from '../assistant/chat-events.ts';
import {
  type CompletionMeta,
  finishReason,
  SYSTEM_FINGERPRINT,
  usageOf,
} from './completion-chunks.ts';

export type CollectedCompletion =
  | { ok: true; body: ReturnType<typeof completionBody> }
  | { ok: false; code: ChatErrorCode; message: string }
  /** The events ended without a done: the client left, nothing to answer. */
  | { ok: false; code: undefined; message: string };

/**
 * Reads a whole answer for a non-streamed request: one `chat.completion`, or the error the
 * assistant ended with (its partial answer is kept in the run by the assistant).
 */
export async function collectCompletion(
  events: AsyncIterable<ChatEvent>,
  meta: CompletionMeta,
): Promise<CollectedCompletion> {
  let content = '';
  let reasoning = '';
  let error: { code: ChatErrorCode; message: string } | undefined;
  for await (const event of events) {
    if (event.type === 'text') content += event.text;
    else if (event.type === 'reasoning') reasoning += event.text;
    else if (event.type === 'error') error = event;
    else if (event.type !== 'done')
      continue; // approvals: this door never asks
    else if (error) return { ok: false, ...error };
    else if (event.end)
      return { ok: true, body: completionBody(meta, content, reasoning, event.end) };
  }
  return { ok: false, code: undefined, message: 'the answer ended early' };
}

function completionBody(meta: CompletionMeta, content: string, reasoning: string, end: AnswerEnd) {
  return {
    id: meta.id,
    object: 'chat.completion' as const,
    created: meta.created,
    model: meta.model,
    system_fingerprint: SYSTEM_FINGERPRINT,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant' as const,
          content,
          refusal: null,
          ...(reasoning ? { reasoning_content: reasoning } : {}),
        },
        logprobs: null,
        finish_reason: finishReason(end),
      },
    ],
    usage: usageOf(end),
  };
}
