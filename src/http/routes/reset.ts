import { z } from 'zod';
import type { ConversationService } from '../../assistant/conversation-service.ts';
import type { App } from '../app-types.ts';
import { AUTHENTICATED, errorResponses } from '../error-responses.ts';
import { userIdSchema } from '../schemas.ts';

export function registerResetRoutes(app: App, conversations: ConversationService): void {
  app.post(
    '/reset',
    {
      schema: {
        summary: "Clear a user's conversation history",
        tags: ['chat'],
        querystring: z.object({ user_id: userIdSchema.default('default') }),
        response: {
          200: z.object({ reset: z.literal(true), user_id: z.string() }),
          ...errorResponses(...AUTHENTICATED, 422),
        },
      },
    },
    async (request) => {
      const userId = request.query.user_id;
      await conversations.reset(userId);
      return { reset: true as const, user_id: userId };
    },
  );
}
