import type { ModelMessage } from 'ai';

/**
 * Keeps the most recent whole turns that fit a token budget; older turns are dropped (not
 * summarised: a summary would cost a model call per chat and can distort what was said).
 * A turn starts at a user message, so a tool result never loses the call it answers.
 *
 * Tokens are estimated without the model's tokenizer: one per CJK/Hangul character and one
 * per four other characters, which errs on the generous side for both scripts.
 */
export function fitHistory(messages: ModelMessage[], maxTokens: number): ModelMessage[] {
  let total = 0;
  let start = messages.length;
  for (let i = messages.length - 1; i >= 0; i--) {
    total += estimateTokens(messages[i] as ModelMessage);
    if (total > maxTokens) break;
    if (messages[i]?.role === 'user') start = i;
  }
  return messages.slice(start);
}

const WIDE = /[\u1100-\u11ff\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]/gu;

export function estimateTokens(message: ModelMessage): number {
  const text =
    typeof message.content === 'string' ? message.content : JSON.stringify(message.content);
  const wide = text.match(WIDE)?.length ?? 0;
  return 4 + wide + Math.ceil((text.length - wide) / 4);
}
