import { z } from 'zod';
import type { AccountService, AccountView } from '../../accounts/account-service.ts';
import { LIMIT_NAMES } from '../../accounts/limits.ts';
import { requireAdmin } from '../../accounts/principal.ts';
import type { FailedJob } from '../../storage/failed-job-repository.ts';
import type { App } from '../app-types.ts';
import { errorResponses } from '../error-responses.ts';
import { storedUserIdSchema, userIdSchema } from '../schemas.ts';

const ADMIN_ERRORS = [401, 403, 503] as const;
const limitsSchema = z.object(
  Object.fromEntries(LIMIT_NAMES.map((name) => [name, z.number().int()])) as Record<
    (typeof LIMIT_NAMES)[number],
    z.ZodNumber
  >,
);
const limitChange = z
  .object(
    Object.fromEntries(
      LIMIT_NAMES.map((name) => [
        name,
        z.number().int().min(0).max(1_000_000_000_000).nullable().optional(),
      ]),
    ) as Record<(typeof LIMIT_NAMES)[number], z.ZodOptional<z.ZodNullable<z.ZodNumber>>>,
  )
  .strict();
const keySchema = z.object({
  key_id: z.uuid(),
  prefix: z.string().describe('The first characters of the key, to tell keys apart'),
  created_at: z.string(),
  last_used_at: z.string().nullable().describe('Updated at most once a minute'),
  expires_at: z.string().nullable(),
});
const userSchema = z.object({
  user_id: z.string(),
  created_at: z.string(),
  limits: limitsSchema.describe(
    'The limits in force (defaults with this user’s overrides); 0 = none',
  ),
  keys: z.array(keySchema),
});
const userParams = z.object({ user_id: storedUserIdSchema });
const failedJobSchema = z.object({
  kind: z.enum(['feedback_forward', 'memory_decision', 'conversation_title', 'reminder_notice']),
  id: z.string().describe('The row: a feedback_id, a run_id, or reminder id / notice'),
  user_id: z.string(),
  attempts: z.number().int(),
  error_kind: z
    .string()
    .nullable()
    .describe('Why, in a word: http_400, http_403, no_chat, timeout, ECONNREFUSED…'),
  failed_at: z.string(),
});

/** Background jobs given up for good. */
export interface FailedJobs {
  list(limit: number): Promise<FailedJob[]>;
}

/**
 * The administrator's routes (API_TOKEN, or development mode): accounts, keys, limits,
 * deletion. A user's key gets 403 on all of them.
 */
export function registerAdminRoutes(
  app: App,
  accounts: AccountService,
  failedJobs: FailedJobs,
): void {
  const tags = ['admin'];
  app.addHook('preValidation', async (request) => {
    // A public route has no principal: under /admin/ that is only the 405 answer to a method
    // a path does not take (http/method-not-allowed.ts), which was a TypeError and a 500.
    if (request.routeOptions.config.public) return;
    if (request.routeOptions.url?.startsWith('/admin/')) requireAdmin(request.principal);
  });

  app.post(
    '/admin/users',
    {
      schema: {
        summary: 'Create a user with a key (the key is shown once)',
        tags,
        body: z.object({ user_id: userIdSchema }),
        response: {
          201: z.object({ user_id: z.string(), key_id: z.uuid(), key: z.string() }),
          ...errorResponses(...ADMIN_ERRORS, 409, 413, 415, 422),
        },
      },
    },
    async (request, reply) => {
      const created = await accounts.create(request.body.user_id);
      return reply
        .code(201)
        .header('cache-control', 'no-store')
        .send({ user_id: created.userId, key_id: created.keyId, key: created.key });
    },
  );

  app.get(
    '/admin/users',
    {
      schema: {
        summary: 'List the users, their limits and their keys (never a key itself)',
        tags,
        response: {
          200: z.object({ users: z.array(userSchema) }),
          ...errorResponses(...ADMIN_ERRORS),
        },
      },
    },
    async () => ({ users: (await accounts.list()).map(userView) }),
  );

  app.post(
    '/admin/users/:user_id/keys',
    {
      schema: {
        summary: 'Give a user another key, e.g. to rotate keys (shown once)',
        tags,
        params: userParams,
        body: z
          .object({ expires_in_days: z.number().int().min(1).max(36_500).optional() })
          .default({}),
        response: {
          201: z.object({ key_id: z.uuid(), key: z.string(), expires_at: z.string().nullable() }),
          ...errorResponses(...ADMIN_ERRORS, 404, 413, 415, 422),
        },
      },
    },
    async (request, reply) => {
      const issued = await accounts.addKey(request.params.user_id, request.body.expires_in_days);
      return reply
        .code(201)
        .header('cache-control', 'no-store')
        .send({
          key_id: issued.keyId,
          key: issued.key,
          expires_at: issued.expiresAt?.toISOString() ?? null,
        });
    },
  );

  app.delete(
    '/admin/keys/:key_id',
    {
      schema: {
        summary: 'Revoke a key (refused by every replica within a second)',
        tags,
        params: z.object({ key_id: z.uuid({ message: 'must be a key_id' }) }),
        response: {
          200: z.object({ revoked: z.uuid() }),
          ...errorResponses(...ADMIN_ERRORS, 404, 422),
        },
      },
    },
    async (request) => {
      await accounts.revokeKey(request.params.key_id);
      return { revoked: request.params.key_id };
    },
  );

  app.patch(
    '/admin/users/:user_id',
    {
      schema: {
        summary: "Override a user's limits (null: back to the default; 0: no limit)",
        tags,
        params: userParams,
        body: z.object({ limits: limitChange }),
        response: { 200: userSchema, ...errorResponses(...ADMIN_ERRORS, 404, 413, 415, 422) },
      },
    },
    async (request) =>
      userView(await accounts.setLimits(request.params.user_id, request.body.limits)),
  );

  app.delete(
    '/admin/users/:user_id',
    {
      schema: {
        summary:
          'Delete a user: keys, history, runs, memories, graph, reminders, profile, documents',
        description: 'Traces already sent to LangSmith are not deleted from here (see the README).',
        tags,
        params: userParams,
        response: {
          200: z.object({ deleted: z.string() }),
          ...errorResponses(...ADMIN_ERRORS, 404, 422),
        },
      },
    },
    async (request) => {
      await accounts.deleteUser(request.params.user_id);
      return { deleted: request.params.user_id };
    },
  );

  app.get(
    '/admin/jobs',
    {
      schema: {
        summary: 'Background jobs that failed for good and will not be retried, newest first',
        description:
          'Feedback LangSmith refused, memory decisions given up, reminder notices Telegram ' +
          'refused or had no chat for. Ids and error kinds only, never what users wrote.',
        tags,
        querystring: z.object({
          state: z.enum(['failed']),
          limit: z.coerce.number().int().min(1).max(500).default(50),
        }),
        response: {
          200: z.object({ jobs: z.array(failedJobSchema) }),
          ...errorResponses(...ADMIN_ERRORS, 422),
        },
      },
    },
    async (request) => ({
      jobs: (await failedJobs.list(request.query.limit)).map((job) => ({
        kind: job.kind,
        id: job.id,
        user_id: job.userId,
        attempts: job.attempts,
        error_kind: job.errorKind,
        failed_at: job.failedAt.toISOString(),
      })),
    }),
  );
}

function userView(account: AccountView) {
  return {
    user_id: account.userId,
    created_at: account.createdAt.toISOString(),
    limits: account.limits,
    keys: account.keys.map((key) => ({
      key_id: key.keyId,
      prefix: key.prefix,
      created_at: key.createdAt.toISOString(),
      last_used_at: key.lastUsedAt?.toISOString() ?? null,
      expires_at: key.expiresAt?.toISOString() ?? null,
    })),
  };
}
