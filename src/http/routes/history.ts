import { z } from 'zod';
import type { ConversationService } from '../../conversations/conversation-service.ts';
import type { App } from '../app-types.ts';
import { errorResponses, PER_USER } from '../error-responses.ts';
import { userIdSchema } from '../schemas.ts';

const turnSchema = z.object({
  run_id: z.uuid().describe('The run to send feedback for'),
  created_at: z.string(),
  question: z.string(),
  answer: z.string().describe('What the assistant answered (empty when nothing was stored)'),
  interrupted: z.boolean().describe('The answer was cut short (Stop, a disconnect, a shutdown)'),
  status: z.enum(['running', 'completed', 'failed', 'interrupted']).nullable(),
  feedback: z
    .object({ score: z.number(), comment: z.string().nullable() })
    .nullable()
    .describe('The latest feedback given on this run'),
});

/** A user's conversation read back by people (the web client), a page at a time. */
export function registerHistoryRoutes(app: App, conversations: ConversationService): void {
  app.get(
    '/users/:user_id/history',
    {
      schema: {
        summary:
          "A user's current conversation (its active path), newest turn first, a page at a time",
        description:
          'Pass the `next_before` of one page as `before` to get the turns before it; ' +
          '`next_before` is null on the last page. `POST /reset` clears it.',
        tags: ['chat'],
        params: z.object({ user_id: userIdSchema }),
        querystring: z.object({
          before: z
            .string()
            .regex(/^\d{1,18}$/, { message: 'must be the next_before of a previous page' })
            .optional(),
          limit: z.coerce.number().int().min(1).max(100).default(20),
        }),
        response: {
          200: z.object({
            user_id: z.string(),
            turns: z.array(turnSchema),
            next_before: z.string().nullable(),
          }),
          ...errorResponses(...PER_USER, 422),
        },
      },
    },
    async (request) => {
      const { user_id: userId } = request.params;
      const { before, limit } = request.query;
      const turns = await conversations.currentTurns(userId, before, limit);
      return {
        user_id: userId,
        turns: turns.map((turn) => ({
          run_id: turn.runId,
          created_at: turn.createdAt.toISOString(),
          question: turn.question,
          answer: turn.answer,
          interrupted: turn.interrupted,
          status: turn.status,
          feedback: turn.feedback,
        })),
        next_before: turns.length === limit ? (turns.at(-1)?.position ?? null) : null,
      };
    },
  );
}
