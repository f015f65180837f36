import { Readable } from 'node:stream';
import { z } from 'zod';
import { LIMIT_NAMES } from '../../accounts/limits.ts';
import type { UsageLimits } from '../../accounts/usage-limits.ts';
import { exportUserData } from '../../accounts/user-export.ts';
import type { UserDataRepository } from '../../storage/user-data-repository.ts';
import type { App } from '../app-types.ts';
import { errorResponses, PER_USER } from '../error-responses.ts';
import { storedUserIdSchema } from '../schemas.ts';

const params = z.object({ user_id: storedUserIdSchema });

/** A user's own view of their account: usage against the limits, and all their data. */
export function registerAccountRoutes(
  app: App,
  limits: UsageLimits,
  userData: UserDataRepository,
): void {
  app.get(
    '/users/:user_id/usage',
    {
      schema: {
        summary: "A user's usage against their limits (0 = no limit)",
        description: '"Today" is the day in the user’s timezone.',
        tags: ['users'],
        params,
        response: {
          200: z.object({
            user_id: z.string(),
            chats_last_minute: z.number().int(),
            tokens_today: z.number().int(),
            ingest_mb_today: z.number(),
            storage_mb: z.number(),
            limits: z.object(
              Object.fromEntries(LIMIT_NAMES.map((name) => [name, z.number()])) as Record<
                (typeof LIMIT_NAMES)[number],
                z.ZodNumber
              >,
            ),
          }),
          ...errorResponses(...PER_USER, 422),
        },
      },
    },
    async (request) => limits.usage(request.params.user_id),
  );

  // Documentation only: the export is streamed, and fastify sends a stream unserialized.
  const rows = z.array(z.record(z.string(), z.unknown()));
  const exportSchema = z
    .object({
      user_id: z.string(),
      exported_at: z.string(),
      profile: z.record(z.string(), z.unknown()).nullable(),
      conversations: rows.describe('Each with its title and which one is current'),
      messages: rows.describe(
        'Every version of every turn: its conversation_id, run_id, parent_run_id and on_path',
      ),
      runs: rows.describe('With their feedback'),
      tool_approvals: rows.describe(
        'Each MCP tool call that asked the user: server, tool, arguments, decision',
      ),
      memories: rows,
      graph: rows,
      reminders: rows.describe('With their notices'),
      automations: rows.describe('With their runs'),
      documents: rows.describe("The user's private documents (names and sizes, not contents)"),
      mcp_servers: rows.describe(
        'Their MCP server settings and always-allowed tools (whether a credential is stored, never the credential)',
      ),
    })
    .describe('Everything kept about the user');
  app.get(
    '/users/:user_id/export',
    {
      schema: {
        summary: 'Everything kept about a user, as one JSON document (streamed)',
        description:
          'profile, conversations, messages (every version of every turn), runs with their feedback, memories, graph, ' +
          'reminders with their notices, automations with their runs, and the list of the user’s ' +
          'private documents.',
        tags: ['users'],
        params,
        produces: ['application/json'],
        response: { 200: exportSchema, ...errorResponses(...PER_USER, 422) },
      },
    },
    async (request, reply) => {
      const userId = request.params.user_id;
      // The first piece is read before answering: a database that is down is a 503, not a
      // cut document.
      const pieces = exportUserData(userData, userId, new Date());
      const first = await pieces.next();
      const body = Readable.from(
        (async function* () {
          if (!first.done) yield first.value;
          yield* pieces;
        })(),
      );
      return reply
        .header('content-type', 'application/json; charset=utf-8')
        .header('content-disposition', `attachment; filename="parley-export.json"`)
        .header('cache-control', 'no-store')
        .send(body);
    },
  );
}
