import type { LanguageModelV4Content } from '@ai-sdk/provider';
import { extractReasoningMiddleware, type LanguageModelMiddleware } from 'ai';

const OPENING = '<think>';
const CLOSING = '</think>';
const SEPARATOR = '\n';

/**
 * A whole text's closed `<think>…</think>` blocks split out of it, exactly as the AI SDK's
 * `extractReasoningMiddleware` splits a generated text (test/models/think-tags.test.ts compares
 * the two): the blocks' insides joined by a line break as the reasoning, the rest as the text,
 * a line break where a block stood between two pieces, an unclosed opening tag left in the text.
 * In one pass: the SDK's regular expression searches the whole rest of the text from every
 * opening tag no closing one follows, and re-copies the text once per block, seconds for a
 * few hundred KB of tags that a model can write.
 */
export function splitThinking(text: string): { text: string; reasoning: string | undefined } {
  const pieces: string[] = [];
  const reasoning: string[] = [];
  let from = 0;
  for (;;) {
    const opening = text.indexOf(OPENING, from);
    const closing = opening === -1 ? -1 : text.indexOf(CLOSING, opening + OPENING.length);
    if (closing === -1) break;
    pieces.push(text.slice(from, opening));
    reasoning.push(text.slice(opening + OPENING.length, closing));
    from = closing + CLOSING.length;
  }
  if (reasoning.length === 0) return { text, reasoning: undefined };
  pieces.push(text.slice(from));
  // A block's separator stands where something is kept after it, and something before it: the
  // text before the first block, or (as the SDK measures it) an earlier block itself.
  const joined: string[] = [];
  let keptAfter = false;
  for (let index = pieces.length - 1; index > 0; index -= 1) {
    const piece = pieces[index] as string;
    keptAfter ||= piece !== '';
    joined.push(piece);
    if (keptAfter && (index > 1 || pieces[0] !== '')) joined.push(SEPARATOR);
  }
  joined.push(pieces[0] as string);
  return { text: joined.reverse().join(''), reasoning: reasoning.join(SEPARATOR) };
}

/**
 * A model's text without its reasoning: each closed block dropped, and an unclosed one to the
 * end of the text, since all of it is reasoning (an answer cut while the model thought).
 */
export function withoutThinking(text: string): string {
  let kept = '';
  let from = 0;
  for (;;) {
    const opening = text.indexOf(OPENING, from);
    if (opening === -1) return kept + text.slice(from);
    kept += text.slice(from, opening);
    const closing = text.indexOf(CLOSING, opening + OPENING.length);
    if (closing === -1) return kept;
    from = closing + CLOSING.length;
  }
}

/**
 * The SDK's reasoning middleware with its whole-text split (titles, query rewriting, memory)
 * done by splitThinking; streams are split as the SDK does.
 */
export function thinkTagMiddleware(): LanguageModelMiddleware {
  return {
    ...extractReasoningMiddleware({ tagName: 'think' }),
    wrapGenerate: async ({ doGenerate }) => {
      const { content, structuredOutputText, ...rest } = await doGenerate();
      return {
        ...rest,
        ...(structuredOutputText !== undefined && {
          structuredOutputText: splitThinking(structuredOutputText).text,
        }),
        content: content.flatMap((part): LanguageModelV4Content[] => {
          if (part.type !== 'text') return [part];
          const { text, reasoning } = splitThinking(part.text);
          if (reasoning === undefined) return [part];
          return [
            { type: 'reasoning', text: reasoning },
            { type: 'text', text },
          ];
        }),
      };
    },
  };
}
