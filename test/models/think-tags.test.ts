import type {
  LanguageModelV4,
  LanguageModelV4Content,
  LanguageModelV4GenerateResult,
} from '@ai-sdk/provider';
import { extractReasoningMiddleware, type LanguageModelMiddleware } from 'ai';
import { describe, expect, it } from 'vitest';
import { thinkTagMiddleware, withoutThinking } from '../../src/models/think-tags.ts';
import { seededRandom } from '../support/seeded-random.ts';

/** What a middleware makes of a generated answer with these content parts. */
async function generated(
  middleware: LanguageModelMiddleware,
  content: LanguageModelV4Content[],
  structuredOutputText?: string,
) {
  const wrapGenerate = middleware.wrapGenerate as NonNullable<typeof middleware.wrapGenerate>;
  return wrapGenerate({
    doGenerate: async (): Promise<LanguageModelV4GenerateResult> => ({
      content,
      ...(structuredOutputText !== undefined && { structuredOutputText }),
      finishReason: { unified: 'stop', raw: 'stop' },
      usage: {
        inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
        outputTokens: { total: 1, text: 1, reasoning: 0 },
      },
      warnings: [],
    }),
    doStream: () => Promise.reject(new Error('not used')),
    params: { prompt: [] },
    model: {} as LanguageModelV4,
  });
}

/** Texts made of the pieces tags are made of, so that every arrangement of them comes up. */
function randomTexts(count: number): string[] {
  const pieces = ['<think>', '</think>', 'a', 'bc', '\n', ' ', '<', 'think>', '</', '<thin'];
  const next = seededRandom(7);
  return Array.from({ length: count }, () =>
    Array.from({ length: Math.floor(next() * 12) }, () => pieces[Math.floor(next() * 10)]).join(''),
  );
}

describe('reasoning in a whole generated text', () => {
  it("splits every text as the AI SDK's middleware does", async () => {
    const texts = [
      '',
      'plain',
      '<think>only</think>',
      '<think>a</think><think>b</think>x',
      'x<think>a</think>',
      '<think>open',
      'a<think>b</think>c<think>d',
      ...randomTexts(3_000),
    ];
    for (const text of texts) {
      const content: LanguageModelV4Content[] = [
        { type: 'text', text },
        { type: 'tool-call', toolCallId: 't', toolName: 'x', input: '{}' },
        { type: 'text', text: `${text}!` },
      ];
      const ours = await generated(thinkTagMiddleware(), content, text);
      const sdks = await generated(extractReasoningMiddleware({ tagName: 'think' }), content, text);
      expect(ours, JSON.stringify(text)).toEqual(sdks);
    }
  });

  it('drops closed and unclosed reasoning alike', () => {
    const before = (text: string) => text.replace(/<think>[\s\S]*?(?:<\/think>|$)/g, '');
    for (const text of randomTexts(3_000)) expect(withoutThinking(text)).toBe(before(text));
    expect(withoutThinking('<think>plan</think>Lease end date')).toBe('Lease end date');
    expect(withoutThinking('An answer <think>cut while thinking')).toBe('An answer ');
  });
});
