import { generateText, Output } from 'ai';
import { z } from 'zod';
import { firstCharacters } from '../first-characters.ts';
import type { ChatModel } from '../models/chat-model.ts';
import type { PendingExchange } from '../storage/memory-queue-repository.ts';
import { hasVisibleCharacter } from '../visible-text.ts';

/** The longest memory kept; a memory is a note, not a transcript. */
export const MEMORY_MAX_CHARS = 500;
/** How much of each side of the exchange the model is shown. */
const EXCHANGE_MAX_CHARS = 4_000;

const decisionSchema = z.object({
  remember: z
    .boolean()
    .describe('true when the exchange holds something worth recalling in later conversations'),
  memory: z
    .string()
    .describe('When remember is true: one or two standalone sentences to recall; else ""'),
});

const INSTRUCTIONS =
  'You decide what an assistant should remember from one exchange with a user, to recall in ' +
  'later conversations. Remember lasting facts about the user (names, relations, preferences, ' +
  'plans, decisions, commitments) and conclusions reached together. Do not remember small ' +
  'talk, greetings, questions answered from general knowledge, or anything the user asked to ' +
  'forget. When remembering, write the memory as one or two standalone sentences in the ' +
  'user\'s language, naming the user as "the user". Answer with JSON only: ' +
  '{"remember": true|false, "memory": "..."}.';

/** Decides whether an exchange is worth remembering; resolves with the memory's text, or none. */
export type MemoryDecider = (
  exchange: PendingExchange,
  signal: AbortSignal,
) => Promise<string | undefined>;

/**
 * Asks the chat model, with structured output (a JSON schema both providers enforce: the
 * OpenAI-compatible one as `response_format`, the embedded one as a grammar). An answer that
 * does not fit the schema throws, and the exchange is tried again later.
 */
export function createMemoryDecider(model: ChatModel): MemoryDecider {
  return async (exchange, signal) => {
    const { output } = await generateText({
      model: await model.get(),
      system: INSTRUCTIONS,
      // Cut between characters: half an emoji is a lone surrogate in the model server's JSON.
      prompt:
        `User: ${firstCharacters(exchange.question, EXCHANGE_MAX_CHARS)}\n\n` +
        `Assistant: ${firstCharacters(exchange.answer, EXCHANGE_MAX_CHARS)}`,
      output: Output.object({ schema: decisionSchema, name: 'memory_decision' }),
      maxRetries: 0,
      abortSignal: signal,
    });
    const memory = output.memory.trim();
    // A memory of only invisible characters (zero-width spaces…) would list as an empty row.
    return output.remember && hasVisibleCharacter(memory)
      ? firstCharacters(memory, MEMORY_MAX_CHARS) // half an emoji would be stored as U+FFFD
      : undefined;
  };
}
