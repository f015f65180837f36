import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { isAbsolute, join } from 'node:path';

/** Provider recordings from the Vercel AI SDK fixtures (see shared/data/SOURCES.md). */
export const recordingsDir = join(
  import.meta.dirname,
  '../../../../shared/data/llm-streams/vercel-ai',
);

/** Resolves a recording name against `recordingsDir`, failing at once when it does not exist. */
export function recordingPath(file: string): string {
  const path = isAbsolute(file) ? file : join(recordingsDir, file);
  if (!existsSync(path)) throw new Error(`no LLM stream recording at ${path}`);
  return path;
}

/**
 * The `data:` payloads of a recording, verbatim. `.sse` files are already framed
 * (their `[DONE]` is dropped: the server adds its own); the others hold one JSON chunk a line.
 */
export async function loadRecording(path: string): Promise<string[]> {
  const text = await readFile(path, 'utf8');
  if (path.endsWith('.sse')) {
    return text
      .split(/\r?\n\r?\n/)
      .map((event) => event.replace(/^data: ?/, '').trim())
      .filter((payload) => payload !== '' && payload !== '[DONE]');
  }
  return text.split(/\r?\n/).filter((line) => line.trim() !== '');
}

interface RecordedChunk {
  id?: string;
  created?: number;
  model?: string;
  usage?: unknown;
  choices?: Array<{
    delta?: {
      content?: unknown;
      reasoning_content?: string | null;
      reasoning?: string | null;
      tool_calls?: Array<{
        index?: number;
        id?: string | null;
        function?: { name?: string | null; arguments?: string | null };
      }> | null;
    } | null;
    finish_reason?: string | null;
  }>;
}

/**
 * Folds a streamed recording into the `chat.completion` the same provider would have
 * answered with `stream: false`: content and reasoning concatenated, tool-call deltas
 * merged by index.
 */
export function foldRecording(payloads: readonly string[]): object {
  const chunks = payloads.map((payload) => JSON.parse(payload) as RecordedChunk);
  let content = '';
  let reasoning = '';
  let finishReason: string | null = null;
  let usage: unknown = null;
  const toolCalls = new Map<number, { id: string; name: string; arguments: string }>();
  for (const chunk of chunks) {
    if (chunk.usage != null) usage = chunk.usage;
    const choice = chunk.choices?.[0];
    if (choice?.finish_reason != null) finishReason = choice.finish_reason;
    const delta = choice?.delta;
    if (delta == null) continue;
    if (typeof delta.content === 'string') content += delta.content;
    reasoning += delta.reasoning_content ?? delta.reasoning ?? '';
    for (const call of delta.tool_calls ?? []) {
      const index = call.index ?? toolCalls.size;
      const merged = toolCalls.get(index) ?? { id: '', name: '', arguments: '' };
      merged.id ||= call.id ?? '';
      merged.name ||= call.function?.name ?? '';
      merged.arguments += call.function?.arguments ?? '';
      toolCalls.set(index, merged);
    }
  }
  const first = chunks[0] ?? {};
  const calls = [...toolCalls.values()].map(({ id, name, arguments: args }) => ({
    id,
    type: 'function',
    function: { name, arguments: args },
  }));
  return {
    id: first.id,
    object: 'chat.completion',
    created: first.created,
    model: first.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: content === '' && calls.length > 0 ? null : content,
          ...(reasoning !== '' ? { reasoning_content: reasoning } : {}),
          ...(calls.length > 0 ? { tool_calls: calls } : {}),
        },
        logprobs: null,
        finish_reason: finishReason,
      },
    ],
    usage,
  };
}
