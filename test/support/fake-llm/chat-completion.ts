import type { TurnReply, Usage } from './reply.ts';

/** Per-request values every chunk of one completion shares. */
export interface CompletionContext {
  id: string;
  created: number;
  /** Echoed from the request, as OpenAI-compatible servers do. */
  model: string;
  includeUsage: boolean;
  promptTokens: number;
  nextToolCallId: () => string;
}

const fingerprint = 'fp_fake';

/** The `chat.completion.chunk` objects a real provider would stream for this turn. */
export function turnChunks(turn: TurnReply, ctx: CompletionContext): object[] {
  const chunk = (delta: object, finishReason: string | null = null): object => ({
    id: ctx.id,
    object: 'chat.completion.chunk',
    created: ctx.created,
    model: ctx.model,
    system_fingerprint: fingerprint,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    // With include_usage OpenAI sends `usage: null` on every chunk but the last.
    ...(ctx.includeUsage ? { usage: null } : {}),
  });

  const chunks = [chunk({ role: 'assistant', content: '' })];
  const reasoningPieces = splitText(turn.reasoning ?? '', turn.chunks);
  if (turn.reasoningFormat === 'think-tags' && reasoningPieces.length > 0) {
    chunks.push(chunk({ content: '<think>\n' }));
    for (const piece of reasoningPieces) chunks.push(chunk({ content: piece }));
    chunks.push(chunk({ content: '\n</think>\n\n' }));
  } else {
    for (const piece of reasoningPieces) chunks.push(chunk({ [turn.reasoningFormat]: piece }));
  }
  const textPieces = splitText(turn.text ?? '', turn.chunks);
  for (const piece of textPieces) chunks.push(chunk({ content: piece }));

  let argPieceCount = 0;
  for (const [index, call] of toolCallsOf(turn, ctx).entries()) {
    // Real providers name the call first with empty arguments, then stream the arguments.
    chunks.push(
      chunk({
        tool_calls: [
          { index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } },
        ],
      }),
    );
    for (const piece of splitEvenly(call.arguments, turn.argChunks)) {
      chunks.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
      argPieceCount++;
    }
  }
  chunks.push(chunk({}, finishReasonOf(turn)));

  if (ctx.includeUsage) {
    const completion = reasoningPieces.length + textPieces.length + argPieceCount;
    chunks.push({
      id: ctx.id,
      object: 'chat.completion.chunk',
      created: ctx.created,
      model: ctx.model,
      system_fingerprint: fingerprint,
      choices: [],
      usage: usageJson(turn.usage, ctx.promptTokens, completion, reasoningPieces.length),
    });
  }
  return chunks;
}

/** The `chat.completion` object a real provider would answer for this turn with `stream: false`. */
export function turnCompletion(turn: TurnReply, ctx: CompletionContext): object {
  const reasoning = turn.reasoning ?? '';
  const text = turn.text ?? '';
  const inline = turn.reasoningFormat === 'think-tags' && reasoning !== '';
  const content = inline ? `<think>\n${reasoning}\n</think>\n\n${text}` : text;
  const toolCalls = toolCallsOf(turn, ctx).map(({ id, name, arguments: args }) => ({
    id,
    type: 'function',
    function: { name, arguments: args },
  }));
  const message = {
    role: 'assistant',
    content: content === '' && toolCalls.length > 0 ? null : content,
    refusal: null,
    ...(!inline && reasoning !== '' ? { [turn.reasoningFormat]: reasoning } : {}),
    ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
  };
  const completion = estimateTokens(text) + estimateTokens(reasoning);
  return {
    id: ctx.id,
    object: 'chat.completion',
    created: ctx.created,
    model: ctx.model,
    system_fingerprint: fingerprint,
    choices: [{ index: 0, message, logprobs: null, finish_reason: finishReasonOf(turn) }],
    usage: usageJson(turn.usage, ctx.promptTokens, completion, estimateTokens(reasoning)),
  };
}

/** A rough token count (4 characters a token), enough for usage that is not scripted. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

function toolCallsOf(turn: TurnReply, ctx: CompletionContext) {
  return turn.toolCalls.map((call) => ({
    id: call.id ?? ctx.nextToolCallId(),
    name: call.name,
    arguments: typeof call.args === 'string' ? call.args : JSON.stringify(call.args),
  }));
}

function finishReasonOf(turn: TurnReply): string {
  return turn.finishReason ?? (turn.toolCalls.length > 0 ? 'tool_calls' : 'stop');
}

function usageJson(
  usage: Usage | undefined,
  prompt: number,
  completion: number,
  reasoning: number,
) {
  const promptTokens = usage?.prompt ?? prompt;
  const completionTokens = usage?.completion ?? completion;
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
    prompt_tokens_details: { cached_tokens: usage?.cached ?? 0 },
    completion_tokens_details: { reasoning_tokens: usage?.reasoning ?? reasoning },
  };
}

/** Word-like pieces by default (a leading space stays with its word, as tokenizers do), or N even pieces. */
function splitText(text: string, pieces: number | undefined): string[] {
  if (text === '') return [];
  if (pieces !== undefined) return splitEvenly(text, pieces);
  return text.match(/\s*\S+|\s+$/gu) ?? [text];
}

/** N pieces of near-equal length, cut between code points so Korean and emoji stay whole. */
function splitEvenly(text: string, pieces: number): string[] {
  const chars = Array.from(text);
  const count = Math.max(1, Math.min(pieces, chars.length));
  const base = Math.floor(chars.length / count);
  const extra = chars.length % count;
  const result: string[] = [];
  let start = 0;
  for (let i = 0; i < count; i++) {
    const end = start + base + (i < extra ? 1 : 0);
    result.push(chars.slice(start, end).join(''));
    start = end;
  }
  return result;
}
