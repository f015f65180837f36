import { z } from 'zod';
import type { ConversationService } from '../../conversations/conversation-service.ts';
import { TITLE_MAX_CHARS } from '../../conversations/question-title.ts';
import type { Conversation, ListCursor } from '../../storage/conversation-repository.ts';
import type { StoredTurn } from '../../storage/history-repository.ts';
import { visibleText } from '../../visible-text.ts';
import type { App } from '../app-types.ts';
import { errorResponses, PER_USER } from '../error-responses.ts';
import { userIdSchema, uuidSchema } from '../schemas.ts';

const userParams = z.object({ user_id: userIdSchema });
const params = z.object({
  user_id: userIdSchema,
  conversation_id: uuidSchema('must be a conversation id (a UUID)'),
});
// zod's max counts code points (zod ^4.6.7), as the title writer and questionTitle cut, and as
// the published maxLength means in JSON Schema: a title the model wrote can be written back.
const titleSchema = visibleText(
  z
    .string()
    .trim()
    .min(1, { message: 'must not be empty' })
    .max(TITLE_MAX_CHARS, { message: `must be at most ${TITLE_MAX_CHARS} characters` })
    .regex(/^[^\p{Cc}]*$/u, { message: 'must not contain control characters' }),
);

export const conversationSchema = z.object({
  id: z.uuid(),
  title: z.string().describe('Empty until the first question'),
  title_source: z
    .enum(['question', 'model', 'user'])
    .describe("Who wrote the title: the question's first words, the model, or the user"),
  pinned: z.boolean(),
  current: z.boolean().describe('Where a chat without `conversation_id` goes'),
  created_at: z.string(),
  updated_at: z.string().describe('The last turn stored'),
  leaf_run_id: z.uuid().nullable().describe('The turn being continued'),
});

export const toConversationBody = (conversation: Conversation) => ({
  id: conversation.id,
  title: conversation.title,
  title_source: conversation.titleSource,
  pinned: conversation.pinned,
  current: conversation.current,
  created_at: conversation.createdAt.toISOString(),
  updated_at: conversation.updatedAt.toISOString(),
  leaf_run_id: conversation.leafRunId,
});

const turnSchema = z.object({
  run_id: z.uuid().describe('The turn, and the run to send feedback for'),
  parent_run_id: z.uuid().nullable().describe('The turn it follows (null: the first)'),
  created_at: z.string(),
  question: z.string(),
  answer: z.string(),
  interrupted: z.boolean(),
  status: z.enum(['running', 'completed', 'failed', 'interrupted']).nullable(),
  feedback: z.object({ score: z.number(), comment: z.string().nullable() }).nullable(),
  version: z
    .object({
      index: z.number().int().describe('1 for the oldest version'),
      count: z.number().int(),
      previous: z.uuid().nullable().describe('The run_id to select for the previous version'),
      next: z.uuid().nullable(),
    })
    .describe('This turn among its versions (edits and regenerations of the same question)'),
});

const toTurnBody = (turn: StoredTurn) => {
  const index = turn.versions.indexOf(turn.runId);
  return {
    run_id: turn.runId,
    parent_run_id: turn.parentRunId,
    created_at: turn.createdAt.toISOString(),
    question: turn.question,
    answer: turn.answer,
    interrupted: turn.interrupted,
    status: turn.status,
    feedback: turn.feedback,
    version: {
      index: index + 1,
      count: turn.versions.length,
      previous: turn.versions[index - 1] ?? null,
      next: turn.versions[index + 1] ?? null,
    },
  };
};

/**
 * An opaque list cursor: where the previous page ended, its time in microseconds since 1970
 * (any safe integer is a time PostgreSQL can hold). A cursor from before this form (the
 * database's text of the time) is refused like a made-up one: the client starts again.
 */
const cursorSchema = z
  .string()
  .max(200)
  .transform((value, ctx): ListCursor => {
    try {
      const [pinned, updatedMicros, id] = JSON.parse(Buffer.from(value, 'base64url').toString());
      if (
        typeof pinned === 'boolean' &&
        Number.isSafeInteger(updatedMicros) &&
        z.uuid().safeParse(id).success
      ) {
        return { pinned, updatedMicros, id };
      }
    } catch {}
    ctx.addIssue({ code: 'custom', message: 'must be the next_cursor of a previous page' });
    return z.NEVER;
  });
const encodeCursor = (cursor: ListCursor) =>
  Buffer.from(JSON.stringify([cursor.pinned, cursor.updatedMicros, cursor.id])).toString(
    'base64url',
  );
const positionSchema = z
  .string()
  .regex(/^\d{1,18}$/, { message: 'must be the next_before of a previous page' });

/** A user's conversations: create, list, read, rename, pin, select a version, delete. */
export function registerConversationRoutes(app: App, conversations: ConversationService): void {
  app.post(
    '/users/:user_id/conversations',
    {
      schema: {
        summary: 'Start a new conversation, which becomes the current one',
        description:
          'The conversations kept so far stay. Without a title, the first question names it ' +
          'until the model writes one.',
        tags: ['conversations'],
        params: userParams,
        body: z.object({ title: titleSchema.optional() }).nullish(),
        response: {
          201: conversationSchema,
          ...errorResponses(...PER_USER, 413, 415, 422),
        },
      },
    },
    async (request, reply) => {
      const created = await conversations.create(request.params.user_id, request.body?.title);
      return reply.code(201).send(toConversationBody(created));
    },
  );

  app.get(
    '/users/:user_id/conversations',
    {
      schema: {
        summary: "A user's conversations, pinned first, then by newest activity",
        description:
          'Pass `next_cursor` as `cursor` for the next page; it is null on the last page.',
        tags: ['conversations'],
        params: userParams,
        querystring: z.object({
          cursor: cursorSchema.optional(),
          limit: z.coerce.number().int().min(1).max(100).default(20),
        }),
        response: {
          200: z.object({
            user_id: z.string(),
            conversations: z.array(
              conversationSchema.extend({
                preview: z.string().describe("The start of the active path's last message"),
              }),
            ),
            next_cursor: z.string().nullable(),
          }),
          ...errorResponses(...PER_USER, 422),
        },
      },
    },
    async (request) => {
      const { user_id: userId } = request.params;
      const { cursor, limit } = request.query;
      const page = await conversations.list(userId, cursor, limit);
      return {
        user_id: userId,
        conversations: page.conversations.map((conversation) => ({
          ...toConversationBody(conversation),
          preview: conversation.preview,
        })),
        next_cursor:
          page.conversations.length === limit && page.last ? encodeCursor(page.last) : null,
      };
    },
  );

  app.get(
    '/users/:user_id/conversations/:conversation_id',
    {
      schema: {
        summary: "A conversation and its active path's turns, newest first, a page at a time",
        description:
          'Each turn says which of its versions it is (`version`); select another with ' +
          '`POST …/select`. Pass `next_before` as `before` for older turns.',
        tags: ['conversations'],
        params,
        querystring: z.object({
          before: positionSchema.optional(),
          limit: z.coerce.number().int().min(1).max(100).default(20),
        }),
        response: {
          200: z.object({
            user_id: z.string(),
            conversation: conversationSchema,
            turns: z.array(turnSchema),
            next_before: z.string().nullable(),
            running: z
              .object({ run_id: z.uuid(), question: z.string() })
              .nullable()
              .describe(
                'On the newest page: an answer being written in this conversation now (asked ' +
                  'from any device), not among `turns` until it ends. Follow it with ' +
                  '`GET /users/{user_id}/runs/{run_id}/events`.',
              ),
          }),
          ...errorResponses(...PER_USER, 404, 422),
        },
      },
    },
    async (request) => {
      const { user_id: userId, conversation_id: id } = request.params;
      const { before, limit } = request.query;
      const { conversation, turns, running } = await conversations.read(userId, id, before, limit);
      return {
        user_id: userId,
        conversation: toConversationBody(conversation),
        turns: turns.map(toTurnBody),
        next_before: turns.length === limit ? (turns.at(-1)?.position ?? null) : null,
        running: running ? { run_id: running.runId, question: running.question } : null,
      };
    },
  );

  app.patch(
    '/users/:user_id/conversations/:conversation_id',
    {
      schema: {
        summary: 'Rename a conversation, or pin or unpin it',
        description: 'A title given here is kept: the model never replaces it.',
        tags: ['conversations'],
        params,
        body: z
          .object({ title: titleSchema.optional(), pinned: z.boolean().optional() })
          .refine((change) => change.title !== undefined || change.pinned !== undefined, {
            message: 'must change the title or pinned',
          }),
        response: {
          200: conversationSchema,
          ...errorResponses(...PER_USER, 404, 413, 415, 422),
        },
      },
    },
    async (request) => {
      const { user_id: userId, conversation_id: id } = request.params;
      return toConversationBody(await conversations.update(userId, id, request.body));
    },
  );

  app.post(
    '/users/:user_id/conversations/:conversation_id/select',
    {
      schema: {
        summary: 'Show another version of a turn: the path through it becomes the active one',
        description:
          'Below the turn, the newest version at each level is shown; the next chat in this ' +
          'conversation continues from the leaf returned.',
        tags: ['conversations'],
        params,
        body: z.object({ run_id: uuidSchema('must be a run_id of this conversation') }),
        response: {
          200: z.object({ conversation_id: z.uuid(), leaf_run_id: z.uuid() }),
          ...errorResponses(...PER_USER, 404, 413, 415, 422),
        },
      },
    },
    async (request) => {
      const { user_id: userId, conversation_id: id } = request.params;
      const leaf = await conversations.select(userId, id, request.body.run_id);
      return { conversation_id: id, leaf_run_id: leaf };
    },
  );

  const deletedSchema = z.object({
    user_id: z.string(),
    deleted: z.number().int().describe('How many conversations were removed'),
  });
  app.delete(
    '/users/:user_id/conversations/:conversation_id',
    {
      schema: {
        summary: 'Delete a conversation, every version of its turns, and its memories',
        tags: ['conversations'],
        params,
        response: { 200: deletedSchema, ...errorResponses(...PER_USER, 404, 422) },
      },
    },
    async (request) => {
      const { user_id: userId, conversation_id: id } = request.params;
      return { user_id: userId, deleted: await conversations.delete(userId, id) };
    },
  );

  app.delete(
    '/users/:user_id/conversations',
    {
      schema: {
        summary: "Delete all of a user's conversations and their memories",
        tags: ['conversations'],
        params: userParams,
        response: { 200: deletedSchema, ...errorResponses(...PER_USER, 422) },
      },
    },
    async (request) => {
      const { user_id: userId } = request.params;
      return { user_id: userId, deleted: await conversations.delete(userId, undefined) };
    },
  );
}
