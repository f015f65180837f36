import { readFile } from 'node:fs/promises';
import { APICallError, tool, zodSchema } from 'ai';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { RequestImage } from '../assistant/chat-events.ts';
import { ToolRefusal } from '../assistant/tool-refusal.ts';
import { isAnswerTooLarge } from '../models/answer-bound.ts';
import type { VisionModel } from '../vision/vision-model.ts';

const analyzeImageInput = zodSchema(
  z.object({
    question: z
      .string()
      .max(1_000)
      .optional()
      .describe('What to look for in the image; leave out for a general description'),
  }),
);

const DEFAULT_QUESTION = 'Describe this image in detail, including any text in it.';

export interface VisionToolContext {
  /** This request's image, and no other (spec rule 2). */
  image: RequestImage;
  vision: VisionModel;
  logger: Logger;
}

/** `analyze_image`, offered only to a request that carries an image and bound to it. */
export function visionTools(context: VisionToolContext) {
  return {
    analyze_image: tool({
      description:
        'Look at the image the user sent with this message and answer a question about it ' +
        '(or describe it). The image is only visible through this tool.',
      inputSchema: analyzeImageInput,
      execute: async ({ question }, { abortSignal }) => {
        const started = Date.now();
        try {
          const image = await readFile(context.image.path, { signal: abortSignal });
          const answer = await context.vision.analyze({
            image,
            mediaType: context.image.mediaType,
            question: question?.trim() || DEFAULT_QUESTION,
            signal: abortSignal,
          });
          context.logger.info({ ms: Date.now() - started }, 'image analysed');
          return { answer };
        } catch (error) {
          if (abortSignal?.aborted) throw error;
          const status = APICallError.isInstance(error) ? error.statusCode : undefined;
          context.logger.info(
            {
              ms: Date.now() - started,
              status,
              cause: errorName(error),
              ...(isAnswerTooLarge(error) ? { code: 'upstream_answer_too_large' } : {}),
            },
            'image analysis failed',
          );
          throw new ToolRefusal('vision_failed', shortReason(error, status));
        }
      },
    }),
  };
}

function shortReason(error: unknown, status: number | undefined): string {
  if (status === 429) return 'The vision model is busy (rate limited); try again later.';
  // A 200 whose body was cut, stalled or is not the JSON promised: the AI SDK reports it with
  // the answer's status, and "failed (HTTP 200)" read as a model that had answered.
  if (status !== undefined && status >= 200 && status < 300)
    return 'The vision model sent an incomplete or unreadable answer.';
  if (status !== undefined) return `The vision model failed (HTTP ${status}).`;
  if (APICallError.isInstance(error)) return 'The vision model could not be reached.';
  if (error instanceof Error && error.name === 'TimeoutError')
    return 'The vision model took too long.';
  return 'The image could not be analysed.';
}

const errorName = (error: unknown) => (error instanceof Error ? error.name : typeof error);
