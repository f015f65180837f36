import type { LanguageModelV4, LanguageModelV4StreamPart } from '@ai-sdk/provider';
import { extractReasoningMiddleware } from 'ai';
import { describe, expect, it } from 'vitest';
import { ReasoningTagSplitter } from '../../src/models/reasoning-tag-splitter.ts';

type Part = LanguageModelV4StreamPart;

/** What the AI SDK's middleware makes of these parts. */
async function throughMiddleware(parts: Part[]): Promise<Part[]> {
  const middleware = extractReasoningMiddleware({ tagName: 'think' });
  const wrapStream = middleware.wrapStream as NonNullable<typeof middleware.wrapStream>;
  const { stream } = await wrapStream({
    doStream: async () => ({
      stream: new ReadableStream<Part>({
        start(controller) {
          for (const part of parts) controller.enqueue(part);
          controller.close();
        },
      }),
    }),
    doGenerate: () => Promise.reject(new Error('not used')),
    params: { prompt: [] },
    model: {} as LanguageModelV4,
  });
  const out: Part[] = [];
  for await (const part of stream as AsyncIterable<Part>) out.push(part);
  return out;
}

const throughSplitter = (parts: Part[]) => {
  const splitter = new ReasoningTagSplitter('think');
  return parts.flatMap((part) => splitter.split(part));
};

/** A text part written in these deltas, between the parts a stream starts and ends with. */
function textStream(deltas: string[], id = 'txt-0'): Part[] {
  return [
    { type: 'stream-start', warnings: [] },
    { type: 'text-start', id },
    ...deltas.map((delta): Part => ({ type: 'text-delta', id, delta })),
    { type: 'text-end', id },
    {
      type: 'finish',
      finishReason: { unified: 'stop', raw: 'stop' },
      usage: {
        inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
        outputTokens: { total: 1, text: 1, reasoning: 0 },
      },
    },
  ];
}

const texts = [
  '<think>\nLet me plan.\n</think>\n\nThe answer is 4.',
  'before<think>first</think>middle<think>second</think>after',
  '<think>never closed, cut off',
  'no tags at all, only < and > and </ here',
  '<think></think>an empty thought',
  'a <thin k> that is no tag, and <think>one that is</think>',
  '<think>only reasoning</think>',
  '안녕 <think>생각 😀</think> 끝',
  '<<think>>doubled brackets</think></think>',
];

describe('ReasoningTagSplitter gives the parts the AI SDK middleware gives', () => {
  it.each(texts)('%j, cut into two deltas at every position', async (text) => {
    for (let cut = 0; cut <= text.length; cut++) {
      const parts = textStream([text.slice(0, cut), text.slice(cut)]);
      expect(throughSplitter(parts)).toEqual(await throughMiddleware(parts));
    }
  });

  it.each(texts)('%j, one character a delta and three at a time', async (text) => {
    for (const size of [1, 3]) {
      const deltas = Array.from({ length: Math.ceil(text.length / size) }, (_, i) =>
        text.slice(i * size, (i + 1) * size),
      );
      const parts = textStream(deltas);
      expect(throughSplitter(parts)).toEqual(await throughMiddleware(parts));
    }
  });

  it('keeps two text parts and the parts between them apart', async () => {
    const first = textStream(['<think>a', '</think>b'], 'one');
    const second = textStream(['c<think>d</think>'], 'two');
    const parts: Part[] = [
      ...first.slice(0, -1),
      { type: 'tool-call', toolCallId: 'call-1', toolName: 'x', input: '{}' },
      ...second.slice(1),
    ];
    const split = throughSplitter(parts);
    expect(split).toEqual(await throughMiddleware(parts));
    expect(split.filter((part) => part.type === 'reasoning-delta')).toHaveLength(2);
  });

  it('shows what it does on a plain example', () => {
    const split = throughSplitter(textStream(['<think>plan</th', 'ink>Answer']));
    expect(split.map((part) => [part.type, 'delta' in part ? part.delta : ''])).toEqual([
      ['stream-start', ''],
      ['reasoning-start', ''],
      ['reasoning-delta', 'plan'],
      ['reasoning-end', ''],
      ['text-start', ''],
      ['text-delta', 'Answer'],
      ['text-end', ''],
      ['finish', ''],
    ]);
  });
});
