import type { AnswerEnd, ChatEvent } from '../assistant/chat-events.ts';
import { openAiError } from './openai-error.ts';

export interface CompletionMeta {
  /** `chatcmpl-<run_id>`. */
  id: string;
  /** Unix seconds. */
  created: number;
  model: string;
}

/** A stable value for the field OpenAI fills with its backend's fingerprint. */
export const SYSTEM_FINGERPRINT = 'fp_parley';

/**
 * Frames a chat's events as OpenAI's `chat.completion.chunk` stream, field for field as the
 * recorded OpenAI streams have them: a first chunk with the role, one chunk per fragment
 * (`content`, or `reasoning_content` for reasoning, as DeepSeek, vLLM and Ollama send it), a
 * last chunk with `finish_reason`, the usage chunk (`choices: []`) when asked, then
 * `data: [DONE]`. An error after the stream started is an `{"error": …}` chunk, which the SDKs
 * raise as an APIError, then `[DONE]`.
 *
 * One fragment is one string concatenation around a JSON-escaped text: this runs per token.
 */
export function completionChunkEncoder(
  meta: CompletionMeta,
  includeUsage: boolean,
): (event: ChatEvent) => string {
  const head =
    `{"id":${JSON.stringify(meta.id)},"object":"chat.completion.chunk","created":${meta.created},` +
    `"model":${JSON.stringify(meta.model)},"system_fingerprint":"${SYSTEM_FINGERPRINT}","choices":`;
  const delta = (body: string, finish: string | null) =>
    `data: ${head}[{"index":0,"delta":${body},"logprobs":null,"finish_reason":${
      finish === null ? 'null' : `"${finish}"`
    }}]}\n\n`;
  const contentPrefix = `data: ${head}[{"index":0,"delta":{"content":`;
  const reasoningPrefix = `data: ${head}[{"index":0,"delta":{"reasoning_content":`;
  const suffix = '},"logprobs":null,"finish_reason":null}]}\n\n';
  let started = false;
  /** The role chunk, once, before whatever comes first. */
  const start = () => {
    if (started) return '';
    started = true;
    return delta('{"role":"assistant","content":"","refusal":null}', null);
  };

  return (event) => {
    switch (event.type) {
      case 'text':
        return `${start()}${contentPrefix}${JSON.stringify(event.text)}${suffix}`;
      case 'reasoning':
        return `${start()}${reasoningPrefix}${JSON.stringify(event.text)}${suffix}`;
      case 'error': {
        const body = openAiError(500, event.message, { code: event.code });
        return `${start()}data: ${JSON.stringify(body)}\n\n`;
      }
      case 'done': {
        if (!event.end) return `${start()}data: [DONE]\n\n`; // after an error chunk
        const last = delta('{}', finishReason(event.end));
        const usage = includeUsage
          ? `data: ${head}[],"usage":${JSON.stringify(usageOf(event.end))}}\n\n`
          : '';
        return `${start()}${last}${usage}data: [DONE]\n\n`;
      }
      case 'approval':
      case 'approval-decided':
        return ''; // this door never asks for approvals
    }
  };
}

/** OpenAI's finish reasons; tools run inside Parley, so the client never sees `tool_calls`. */
export function finishReason(end: AnswerEnd): 'stop' | 'length' | 'content_filter' {
  if (end.finishReason === 'length') return 'length';
  if (end.finishReason === 'content-filter') return 'content_filter';
  return 'stop';
}

/** OpenAI's usage object, summed over every model call of the chat. */
export function usageOf(end: AnswerEnd) {
  const prompt = end.inputTokens ?? 0;
  const completion = end.outputTokens ?? 0;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    completion_tokens_details: { reasoning_tokens: end.reasoningTokens ?? 0 },
  };
}
