import { generateText } from 'ai';
import { characterCount, firstCharacters, firstGraphemes } from '../first-characters.ts';
import type { ChatModel } from '../models/chat-model.ts';
import { withoutThinking } from '../models/think-tags.ts';
import type { TitleRequest } from '../storage/title-request-repository.ts';
import { hasVisibleCharacter } from '../visible-text.ts';
import { TITLE_MAX_CHARS } from './question-title.ts';

/** How much of each side of the first exchange the model is shown, in characters. */
const EXCHANGE_MAX_CHARS = 2_000;

const INSTRUCTIONS =
  'You name a conversation between a user and an assistant from its first exchange. Answer ' +
  'with the title only: at most 6 words, in the language the user wrote in, no quotes, no ' +
  'final punctuation.';

/** Writes a conversation's title; undefined when the model gave nothing usable. */
export type TitleWriter = (
  request: TitleRequest,
  signal: AbortSignal,
) => Promise<string | undefined>;

/** Asks the chat model for a short title, and keeps its first line, trimmed to the limit. */
export function createTitleWriter(model: ChatModel): TitleWriter {
  return async (request, signal) => {
    const { text } = await generateText({
      model: await model.get(),
      system: INSTRUCTIONS,
      prompt:
        `User: ${firstCharacters(request.question, EXCHANGE_MAX_CHARS)}\n\n` +
        `Assistant: ${firstCharacters(request.answer, EXCHANGE_MAX_CHARS)}`,
      maxRetries: 0,
      abortSignal: signal,
    });
    return cleanTitle(text);
  };
}

/** The model's answer as a title: reasoning, quotes, a "Title:" label and line breaks removed. */
export function cleanTitle(text: string): string | undefined {
  const line = withoutThinking(text)
    .split('\n')
    .map((part) => part.trim())
    .find((part) => part !== '');
  if (line === undefined) return undefined;
  const title = withoutClosingMarks(
    line
      .replace(/^(title|제목)\s*[:：]\s*/iu, '')
      .replace(/^["'“‘«「*]+/u, '')
      .replace(/\p{Cc}/gu, ''),
  ).trim();
  if (!hasVisibleCharacter(title)) return undefined;
  return characterCount(title) <= TITLE_MAX_CHARS
    ? title
    : `${firstGraphemes(title, TITLE_MAX_CHARS - 1)}…`;
}

/** Closing quotes, emphasis and final punctuation a model puts after a title. */
const CLOSING_MARKS = new Set(['"', "'", '”', '’', '»', '」', '*', '.', '。']);

/**
 * The text without the closing marks at its end, read from the end once: the pattern
 * `/[…]+$/` tried every run of them from each of its characters, and a model's answer of
 * 100,000 dots before a letter held the event loop for seconds.
 */
function withoutClosingMarks(text: string): string {
  let end = text.length;
  while (end > 0 && CLOSING_MARKS.has(text[end - 1] as string)) end--;
  return text.slice(0, end);
}
