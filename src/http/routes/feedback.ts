import { z } from 'zod';
import type { FeedbackService } from '../../feedback/feedback-service.ts';
import type { App } from '../app-types.ts';
import { AUTHENTICATED, errorResponses } from '../error-responses.ts';
import { withoutNul } from '../schemas.ts';

export const FEEDBACK_COMMENT_MAX_CHARS = 4000;

const feedbackBody = z.object({
  run_id: z.uuid({ message: 'must be the run_id (a UUID) from the end of a chat stream' }),
  score: z.number().finite(),
  // PostgreSQL cannot store U+0000 in text: the rating was a 500.
  comment: withoutNul(z.string().max(FEEDBACK_COMMENT_MAX_CHARS)).optional(),
  key: z
    .string()
    .min(1)
    .max(100)
    .regex(/^[\w.-]+$/, { message: 'may contain letters, digits, _ . and -' })
    .default('user_score'),
});

export function registerFeedbackRoutes(app: App, feedback: FeedbackService): void {
  app.post(
    '/feedback',
    {
      schema: {
        summary: 'Rate a chat run; forwarded to LangSmith when configured',
        tags: ['feedback'],
        body: feedbackBody,
        response: {
          200: z.object({ ok: z.literal(true), feedback_id: z.uuid() }),
          ...errorResponses(...AUTHENTICATED, 404, 413, 415, 422),
        },
      },
    },
    async (request) => {
      const { run_id, score, comment, key } = request.body;
      // A user's key reaches its own runs only; another user's run is as unknown as none.
      const principal = request.principal;
      const userId = principal.kind === 'user' ? principal.userId : undefined;
      const { feedbackId } = await feedback.submit({ runId: run_id, score, comment, key, userId });
      return { ok: true as const, feedback_id: feedbackId };
    },
  );
}
