import { z } from 'zod';
import { notFound } from '../../errors.ts';
import type { ConversationMemory } from '../../memory/conversation-memory.ts';
import type { App } from '../app-types.ts';
import { errorResponses, PER_USER } from '../error-responses.ts';
import { userIdSchema, uuidSchema } from '../schemas.ts';

const memorySchema = z.object({
  id: z.string().describe('The run_id of the chat the memory was taken from'),
  conversation_id: z
    .uuid()
    .nullable()
    .describe('The conversation it came from (deleting that conversation deletes it)'),
  text: z.string(),
  created_at: z.string().describe('When it was remembered (ISO 8601)'),
});
const deletedSchema = z.object({
  user_id: z.string(),
  deleted: z.number().int().describe('How many memories were removed'),
});
const errors = errorResponses(...PER_USER, 422);
const params = z.object({ user_id: userIdSchema });

/**
 * A user can see and delete what the assistant remembered from their conversations
 * (CONV_RAG_ENABLED). When conversation memory is off, the lists are simply empty.
 */
export function registerMemoryRoutes(app: App, memory: ConversationMemory | undefined): void {
  app.get(
    '/users/:user_id/memories',
    {
      schema: {
        summary: 'List what the assistant remembered from a user’s conversations, newest first',
        tags: ['memories'],
        params,
        response: {
          200: z.object({ user_id: z.string(), memories: z.array(memorySchema) }),
          ...errors,
        },
      },
    },
    async (request) => {
      const userId = request.params.user_id;
      const memories = memory ? await memory.list(userId) : [];
      return {
        user_id: userId,
        memories: memories.map((item) => ({
          id: item.id,
          conversation_id: item.conversationId,
          text: item.text,
          created_at: item.createdAt.toISOString(),
        })),
      };
    },
  );

  app.delete(
    '/users/:user_id/memories',
    {
      schema: {
        summary: 'Delete all of a user’s conversation memories',
        tags: ['memories'],
        params,
        response: { 200: deletedSchema, ...errors },
      },
    },
    async (request) => ({
      user_id: request.params.user_id,
      deleted: memory ? await memory.delete(request.params.user_id) : 0,
    }),
  );

  app.delete(
    '/users/:user_id/memories/:memory_id',
    {
      schema: {
        summary: 'Delete one conversation memory',
        tags: ['memories'],
        params: params.extend({ memory_id: uuidSchema('must be a memory id (a UUID)') }),
        response: { 200: deletedSchema, ...errorResponses(...PER_USER, 404, 422) },
      },
    },
    async (request) => {
      const { user_id: userId, memory_id: memoryId } = request.params;
      const deleted = memory ? await memory.delete(userId, memoryId) : 0;
      if (deleted === 0) throw notFound(`No memory ${memoryId} for this user`);
      return { user_id: userId, deleted };
    },
  );
}
