import { generateText, type ModelMessage } from 'ai';
import type { Logger } from 'pino';
import { firstCharacters } from '../first-characters.ts';
import type { ChatModel } from '../models/chat-model.ts';
import { withoutThinking } from '../models/think-tags.ts';
import type { QueryRewriter } from '../tools/document-tools.ts';

/** Conversation turns shown to the rewriter: enough for "it" and "that section". */
const RECENT_MESSAGES = 8;
const MAX_QUERY_CHARS = 1000;

const INSTRUCTIONS =
  'You rewrite a search query for a document search engine. Using the conversation, turn the ' +
  'query into one standalone query: replace pronouns and references ("it", "that section", ' +
  '"the second one") with what they refer to, keep the language and the key words of the ' +
  'question. Answer with the query only, no quotes, no explanation.';

/**
 * QUERY_REWRITE_ENABLED: before searching, the chat model turns the query into a standalone
 * one using the conversation ("and its second section?" → "second section of the Parley
 * install guide"). The first message of a conversation has nothing to resolve and is searched
 * as is. A failed rewrite falls back to the query as given: search still answers.
 */
export function createQueryRewriter(
  model: ChatModel,
  logger: Logger,
  verbose: boolean,
): QueryRewriter {
  return async (query, conversation, signal) => {
    const turns = conversation.slice(-RECENT_MESSAGES).map(asText).filter(Boolean);
    if (turns.length <= 1) return query;
    try {
      const { text } = await generateText({
        model: await model.get(),
        system: INSTRUCTIONS,
        prompt: `Conversation:\n${turns.join('\n')}\n\nQuery: ${query}\n\nStandalone query:`,
        maxRetries: 0,
        ...(signal ? { abortSignal: signal } : {}),
      });
      const rewritten = withoutThinking(text).trim().replace(/^"|"$/g, '');
      if (!rewritten) return query;
      if (verbose) logger.info({ query, rewritten }, 'search query rewritten');
      // Cut between characters: half an emoji is a lone surrogate in the embedding request.
      return firstCharacters(rewritten, MAX_QUERY_CHARS);
    } catch (error) {
      if (signal?.aborted) throw error;
      logger.warn(
        { cause: error instanceof Error ? error.name : 'unknown' },
        'query rewrite failed; searching the query as given',
      );
      return query;
    }
  };
}

function asText(message: ModelMessage): string {
  if (message.role !== 'user' && message.role !== 'assistant') return '';
  const content =
    typeof message.content === 'string'
      ? message.content
      : message.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
  return content.trim() ? `${message.role}: ${content.trim()}` : '';
}
