import { z } from 'zod';
import type { GraphService } from '../../graph/graph-service.ts';
import type { App } from '../app-types.ts';
import { errorResponses, PER_USER } from '../error-responses.ts';
import { userIdSchema } from '../schemas.ts';

const tripleSchema = z.object({
  subject: z.string(),
  relation: z.string(),
  object: z.string(),
  created_at: z.string().describe('When the relation was first stored (ISO 8601)'),
});
const errors = errorResponses(...PER_USER, 422);
const params = z.object({ user_id: userIdSchema });

/** A user can see and clear their knowledge graph (the relations the assistant keeps). */
export function registerGraphRoutes(app: App, graph: GraphService): void {
  app.get(
    '/users/:user_id/graph',
    {
      schema: {
        summary: "List a user's knowledge graph, newest first",
        tags: ['graph'],
        params,
        response: {
          200: z.object({ user_id: z.string(), triples: z.array(tripleSchema) }),
          ...errors,
        },
      },
    },
    async (request) => {
      const userId = request.params.user_id;
      const triples = await graph.list(userId);
      return {
        user_id: userId,
        triples: triples.map((triple) => ({
          subject: triple.subject,
          relation: triple.relation,
          object: triple.object,
          created_at: triple.createdAt.toISOString(),
        })),
      };
    },
  );

  app.delete(
    '/users/:user_id/graph',
    {
      schema: {
        summary: "Clear a user's knowledge graph",
        tags: ['graph'],
        params,
        response: {
          200: z.object({
            user_id: z.string(),
            deleted: z.number().int().describe('How many relations were removed'),
          }),
          ...errors,
        },
      },
    },
    async (request) => ({
      user_id: request.params.user_id,
      deleted: await graph.clear(request.params.user_id),
    }),
  );
}
