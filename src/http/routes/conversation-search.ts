import { Readable } from 'node:stream';
import { z } from 'zod';
import { conversationJson, conversationMarkdown } from '../../conversations/conversation-export.ts';
import type { ConversationService } from '../../conversations/conversation-service.ts';
import { SEARCH_MAX_CHARS } from '../../conversations/search-query.ts';
import { visibleText } from '../../visible-text.ts';
import type { App } from '../app-types.ts';
import { errorResponses, PER_USER } from '../error-responses.ts';
import { userIdSchema, uuidSchema } from '../schemas.ts';

/** Finding a user's conversations again: search across them, and export one. */
export function registerConversationSearchRoutes(
  app: App,
  conversations: ConversationService,
): void {
  app.get(
    '/users/:user_id/conversations/search',
    {
      schema: {
        summary: "Search the words of a user's questions and answers, newest first",
        description:
          'Every word must occur (English words match as prefixes; Korean, Chinese and ' +
          'Japanese through character pairs, so a word matches with its particles). Every ' +
          'version is searched; `on_path` says whether the hit is on the active path (select ' +
          'it with `POST …/select`). Pass `next_before` as `before` for older hits.',
        tags: ['conversations'],
        params: z.object({ user_id: userIdSchema }),
        querystring: z.object({
          q: visibleText(
            z
              .string()
              .trim()
              .min(1, { message: 'must not be empty' })
              .max(SEARCH_MAX_CHARS, { message: `must be at most ${SEARCH_MAX_CHARS} characters` }),
          ),
          before: z
            .string()
            .regex(/^\d{1,18}$/, { message: 'must be the next_before of a previous page' })
            .optional(),
          limit: z.coerce.number().int().min(1).max(50).default(20),
        }),
        response: {
          200: z.object({
            user_id: z.string(),
            results: z.array(
              z.object({
                conversation_id: z.uuid(),
                title: z.string(),
                run_id: z.uuid().describe('The turn the words are in'),
                role: z.enum(['user', 'assistant']).describe('In the question or the answer'),
                snippet: z.string(),
                on_path: z.boolean(),
                created_at: z.string(),
              }),
            ),
            next_before: z.string().nullable(),
          }),
          ...errorResponses(...PER_USER, 422),
        },
      },
    },
    async (request) => {
      const { user_id: userId } = request.params;
      const { q, before, limit } = request.query;
      const hits = await conversations.search(userId, q, before, limit);
      return {
        user_id: userId,
        results: hits.map((hit) => ({
          conversation_id: hit.conversationId,
          title: hit.title,
          run_id: hit.runId,
          role: hit.role,
          snippet: hit.snippet,
          on_path: hit.onPath,
          created_at: hit.createdAt.toISOString(),
        })),
        next_before: hits.length === limit ? (hits.at(-1)?.position ?? null) : null,
      };
    },
  );

  app.get(
    '/users/:user_id/conversations/:conversation_id/export',
    {
      schema: {
        summary: 'One conversation as Markdown (the active path) or JSON (every version)',
        tags: ['conversations'],
        params: z.object({
          user_id: userIdSchema,
          conversation_id: uuidSchema('must be a conversation id (a UUID)'),
        }),
        querystring: z.object({ format: z.enum(['markdown', 'json']).default('markdown') }),
        produces: ['text/markdown', 'application/json'],
        response: errorResponses(...PER_USER, 404, 422),
      },
    },
    async (request, reply) => {
      const { user_id: userId, conversation_id: id } = request.params;
      const { conversation, messages } = await conversations.exportMessages(userId, id);
      const json = request.query.format === 'json';
      const pieces = json
        ? conversationJson(conversation, messages, new Date())
        : conversationMarkdown(conversation, messages);
      // The first piece is read before answering: a database that is down is a 503.
      const first = await pieces.next();
      const body = Readable.from(
        (async function* () {
          if (!first.done) yield first.value;
          yield* pieces;
        })(),
      );
      return reply
        .header(
          'content-type',
          json ? 'application/json; charset=utf-8' : 'text/markdown; charset=utf-8',
        )
        .header(
          'content-disposition',
          `attachment; filename="conversation-${id}.${json ? 'json' : 'md'}"`,
        )
        .header('cache-control', 'no-store')
        .send(body);
    },
  );
}
