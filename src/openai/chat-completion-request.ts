import type { ModelMessage } from 'ai';
import { z } from 'zod';
import type { CallSettings, ClientConversation } from '../assistant/chat-events.ts';
import { characterCount } from '../first-characters.ts';
import { hasVisibleCharacter } from '../visible-text.ts';
import { decodeImage } from '../vision/decode-image.ts';
import type { ImageMediaType } from '../vision/image-type.ts';
import { InvalidRequest } from './openai-error.ts';

/** The one model id served: the user's own assistant. */
export const PARLEY_MODEL = 'parley';

const textPart = z.object({ type: z.literal('text'), text: z.string() });
const imagePart = z.object({
  type: z.literal('image_url'),
  image_url: z.object({ url: z.string(), detail: z.string().optional() }),
});
/** Other part types (audio, files, refusals) are named in a 400 rather than dropped. */
const otherPart = z.looseObject({ type: z.string() });
/**
 * Messages of a request, and parts of a message, at most: OpenAI's own bound on `messages`. A
 * request is read whole before the user's rate limit is checked, so without one, millions of
 * tiny messages (within the body's size) cost seconds of the event loop each time.
 */
export const OPENAI_MAX_ITEMS = 2048;

const content = z.union([
  z.string(),
  z.array(z.union([textPart, imagePart, otherPart])).max(OPENAI_MAX_ITEMS),
  z.null(),
]);

const message = z.looseObject({
  role: z.string(),
  content: content.optional(),
  tool_calls: z.array(z.unknown()).nullish(),
});

/** The Chat Completions request, as far as Parley reads it; other fields are ignored. */
export const chatCompletionBody = z.looseObject({
  model: z.string().describe(`Always \`${PARLEY_MODEL}\`: the user's own assistant`),
  messages: z.array(message).min(1).max(OPENAI_MAX_ITEMS),
  stream: z.boolean().nullish(),
  stream_options: z.object({ include_usage: z.boolean().nullish() }).nullish(),
  max_tokens: z.number().int().positive().nullish(),
  max_completion_tokens: z.number().int().positive().nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  user: z
    .string()
    .nullish()
    .describe(
      "Whose assistant answers when the administrator's token is used (default `default`); " +
        "with a user's key it must be absent or that user's id",
    ),
  n: z.number().int().nullish(),
  tools: z.array(z.unknown()).nullish(),
  functions: z.array(z.unknown()).nullish(),
});

export type ChatCompletionBody = z.infer<typeof chatCompletionBody>;

export interface ChatInput {
  /** The text of the last user message: what the run records and memory reads. */
  question: string;
  conversation: ClientConversation;
  /** The last `data:` image of the conversation: what `analyze_image` sees. */
  image: { bytes: Buffer; mediaType: ImageMediaType } | undefined;
  callSettings: CallSettings;
}

export interface InputLimits {
  /** MESSAGE_MAX_CHARS, for the question (the last user message), as `/chat` has it. */
  messageMaxChars: number;
  imageMaxBytes: number;
  /** Why images are refused (vision off), or undefined. */
  imageRefusal: string | undefined;
}

/**
 * Turns a request into what the assistant reads: system and developer messages become the
 * client's instructions, the rest the conversation (text only: an image is a placeholder the
 * model reads, and the last one is handed to `analyze_image`). Everything Parley cannot honour
 * is a 400 naming the parameter, never silently dropped.
 */
export function toChatInput(body: ChatCompletionBody, limits: InputLimits): ChatInput {
  if (body.tools?.length || body.functions?.length) {
    throw new InvalidRequest(
      "Parley's assistant runs its own tools; a request's own tools are not supported.",
      body.tools?.length ? 'tools' : 'functions',
      'unsupported_parameter',
    );
  }
  if (body.n != null && body.n !== 1) {
    throw new InvalidRequest('Only one choice (n = 1) is supported.', 'n', 'unsupported_value');
  }
  const instructions: string[] = [];
  const messages: ModelMessage[] = [];
  /** The last image of the conversation and where it is, decoded once all is read. */
  let lastImage: { url: string; at: string } | undefined;
  /** Where the conversation's last message is in the request, for the errors naming it. */
  let lastAt = 'messages';

  body.messages.forEach((entry, i) => {
    const where = `messages[${i}]`;
    if (entry.tool_calls?.length) {
      throw new InvalidRequest(
        'Tool calls in the conversation are not supported: tools run inside Parley.',
        `${where}.tool_calls`,
        'unsupported_parameter',
      );
    }
    const parts = typeof entry.content === 'string' ? [textOf(entry.content)] : entry.content;
    const texts: string[] = [];
    (parts ?? []).forEach((part, j) => {
      const at = `${where}.content[${j}]`;
      if (part.type === 'text' && typeof part.text === 'string') texts.push(part.text);
      else if (part.type === 'image_url' && entry.role === 'user') {
        // A part that missed the image schema (no image_url object, no url string) ends here too.
        const url = (part as { image_url?: { url?: unknown } }).image_url?.url;
        if (typeof url !== 'string' || !url.startsWith('data:')) {
          throw new InvalidRequest(
            typeof url !== 'string'
              ? 'An image_url part needs an image_url object with a url (a data: URL).'
              : 'Only images sent inline as data: URLs are accepted; Parley does not fetch image URLs.',
            `${at}.image_url.url`,
            'invalid_image_url',
          );
        }
        lastImage = { url, at: `${at}.image_url.url` };
        texts.push('[image]');
      } else {
        throw new InvalidRequest(
          `Content parts of type "${part.type}" are not supported here.`,
          at,
          'unsupported_content_type',
        );
      }
    });
    const text = texts.join('\n');
    if (text.includes('\u0000')) {
      throw new InvalidRequest('must not contain the NUL character (U+0000)', `${where}.content`);
    }
    switch (entry.role) {
      case 'system':
      case 'developer':
        if (text) instructions.push(text);
        break;
      case 'user':
      case 'assistant':
        messages.push({ role: entry.role, content: text });
        lastAt = `${where}.content`;
        break;
      default:
        throw new InvalidRequest(
          `Messages of role "${entry.role}" are not supported: tools run inside Parley.`,
          `${where}.role`,
          'unsupported_value',
        );
    }
  });

  const last = messages.at(-1);
  if (last?.role !== 'user') {
    throw new InvalidRequest('The last message must be from the user.', 'messages');
  }
  const question = last.content as string;
  // As /chat's `message`: content null, absent, [] or blanks asks the model nothing.
  if (!hasVisibleCharacter(question)) {
    throw new InvalidRequest('The last message must contain a visible character.', lastAt);
  }
  if (characterCount(question) > limits.messageMaxChars) {
    throw new InvalidRequest(
      `The last message must be at most ${limits.messageMaxChars} characters.`,
      lastAt,
      'string_above_max_length',
    );
  }
  let image: ChatInput['image'];
  if (lastImage) {
    if (limits.imageRefusal) throw new InvalidRequest(limits.imageRefusal, lastImage.at);
    const decoded = decodeImage(lastImage.url, limits.imageMaxBytes);
    if (decoded.problem !== undefined) {
      throw new InvalidRequest(`The image ${decoded.problem}.`, lastImage.at, 'invalid_image');
    }
    image = decoded;
  }
  return {
    question,
    conversation: { instructions: instructions.join('\n\n') || undefined, messages },
    image,
    callSettings: {
      maxOutputTokens: body.max_completion_tokens ?? body.max_tokens ?? undefined,
      temperature: body.temperature ?? undefined,
    },
  };
}

const textOf = (text: string) => ({ type: 'text' as const, text });
