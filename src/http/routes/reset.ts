import { z } from 'zod';
import { actingUser } from '../../accounts/principal.ts';
import type { ConversationService } from '../../conversations/conversation-service.ts';
import type { App } from '../app-types.ts';
import { errorResponses, PER_USER } from '../error-responses.ts';
import { userIdSchema } from '../schemas.ts';

export function registerResetRoutes(app: App, conversations: ConversationService): void {
  app.post(
    '/reset',
    {
      schema: {
        summary: "Clear a user's conversation history (the current conversation's turns)",
        tags: ['chat'],
        querystring: z.object({
          user_id: userIdSchema
            .optional()
            .describe(
              "The user whose history to clear: the key's own user when absent (the administrator: `default`)",
            ),
        }),
        response: {
          200: z.object({ reset: z.literal(true), user_id: z.string() }),
          ...errorResponses(...PER_USER, 422),
        },
      },
    },
    async (request) => {
      const userId = actingUser(request.principal, request.query.user_id);
      await conversations.reset(userId);
      return { reset: true as const, user_id: userId };
    },
  );
}
