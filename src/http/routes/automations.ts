import { z } from 'zod';
import { automationName } from '../../automations/automation-fields.ts';
import type { AutomationService } from '../../automations/automation-service.ts';
import { scheduleSchema } from '../../automations/schedule.ts';
import { scheduleInWords } from '../../automations/schedule-words.ts';
import { timezoneName } from '../../place-and-language.ts';
import type { AutomationRecord, AutomationRunRecord } from '../../storage/automation-repository.ts';
import { visibleText } from '../../visible-text.ts';
import type { App } from '../app-types.ts';
import { errorResponses, PER_USER } from '../error-responses.ts';
import { userIdSchema, withoutNul } from '../schemas.ts';

/** A prompt is a chat message: long enough for instructions, short enough to send every day. */
export const PROMPT_MAX_CHARS = 4_000;

const timezone = timezoneName('America/New_York');

const automationSchema = z.object({
  id: z.uuid(),
  name: z.string(),
  prompt: z.string(),
  schedule: scheduleSchema,
  schedule_in_words: z.string().describe('The schedule as a sentence, to check it'),
  timezone: z.string(),
  status: z.enum(['active', 'paused', 'finished']),
  paused_reason: z.string().nullable().describe('Why it was paused, when Parley paused it'),
  next_run_at: z.string().nullable().describe('The next occurrence (null: none)'),
  conversation_id: z.uuid().nullable().describe('Its own conversation, made at its first run'),
  unread: z.number().int().describe('Results the user has not marked read'),
  created_at: z.string(),
});

const runSchema = z.object({
  id: z.uuid(),
  occurrence: z.string().describe('The scheduled time (or when "run now" was asked)'),
  manual: z.boolean(),
  status: z.enum(['queued', 'running', 'done', 'failed', 'refused', 'skipped']),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
  chat_run_id: z.uuid().nullable().describe('The answer’s run in the conversation'),
  error: z.string().nullable().describe('Why it failed, was refused or was skipped'),
  delivered_to: z.string().nullable().describe('"telegram,web" or "web"'),
  read: z.boolean(),
});

const name = automationName;
const prompt = visibleText(withoutNul(z.string().trim().min(1).max(PROMPT_MAX_CHARS)));

const newAutomation = z
  .object({
    name: name.optional(),
    prompt,
    schedule: scheduleSchema,
    timezone: timezone.optional().describe('Default: the user’s profile timezone'),
  })
  .strict();

const change = z
  .object({
    name: name.optional(),
    prompt: prompt.optional(),
    schedule: scheduleSchema.optional(),
    timezone: timezone.optional(),
  })
  .strict()
  .describe('Fields to change; a new schedule or timezone counts from now');

const params = z.object({ user_id: userIdSchema });
const oneParams = z.object({
  user_id: userIdSchema,
  id: z.uuid({ message: 'must be an automation id' }),
});
const ONE_ERRORS = errorResponses(...PER_USER, 404, 422);

export function registerAutomationRoutes(app: App, automations: AutomationService): void {
  app.post(
    '/users/:user_id/automations',
    {
      schema: {
        summary: 'Schedule a prompt for the user’s assistant',
        description:
          'The assistant answers the prompt at each occurrence in the automation’s own ' +
          'conversation; the result goes to Telegram (when linked) and the web client.',
        tags: ['automations'],
        params,
        body: newAutomation,
        response: { 201: automationSchema, ...errorResponses(...PER_USER, 413, 415, 422) },
      },
    },
    async (request, reply) => {
      const created = await automations.create(request.params.user_id, request.body);
      return reply.code(201).send(toBody(created));
    },
  );

  app.get(
    '/users/:user_id/automations',
    {
      schema: {
        summary: "List a user's automations",
        tags: ['automations'],
        params,
        response: {
          200: z.object({
            automations: z.array(automationSchema),
            unread: z.number().int().describe('Unread results of all of them'),
          }),
          ...errorResponses(...PER_USER, 422),
        },
      },
    },
    async (request) => {
      const all = await automations.list(request.params.user_id);
      return { automations: all.map(toBody), unread: all.reduce((n, a) => n + a.unread, 0) };
    },
  );

  app.patch(
    '/users/:user_id/automations/:id',
    {
      schema: {
        summary: 'Change an automation',
        tags: ['automations'],
        params: oneParams,
        body: change,
        response: { 200: automationSchema, ...errorResponses(...PER_USER, 404, 413, 415, 422) },
      },
    },
    async (request) =>
      toBody(await automations.change(request.params.user_id, request.params.id, request.body)),
  );

  for (const [action, summary] of [
    ['pause', 'Pause an automation (no runs until resumed)'],
    ['resume', 'Resume an automation from its next occurrence'],
  ] as const) {
    app.post(
      `/users/:user_id/automations/:id/${action}`,
      {
        schema: {
          summary,
          tags: ['automations'],
          params: oneParams,
          response: { 200: automationSchema, ...ONE_ERRORS },
        },
      },
      async (request) =>
        toBody(await automations[action](request.params.user_id, request.params.id)),
    );
  }

  app.delete(
    '/users/:user_id/automations/:id',
    {
      schema: {
        summary: 'Delete an automation and its runs (its conversation is kept)',
        tags: ['automations'],
        params: oneParams,
        response: { 200: z.object({ deleted: z.uuid() }), ...ONE_ERRORS },
      },
    },
    async (request) => {
      await automations.delete(request.params.user_id, request.params.id);
      return { deleted: request.params.id };
    },
  );

  app.post(
    '/users/:user_id/automations/:id/run',
    {
      schema: {
        summary: 'Run an automation now (once, besides its schedule)',
        tags: ['automations'],
        params: oneParams,
        response: {
          202: z.object({ queued: z.literal(true) }),
          ...errorResponses(...PER_USER, 404, 409, 422),
        },
      },
    },
    async (request, reply) => {
      await automations.runNow(request.params.user_id, request.params.id);
      return reply.code(202).send({ queued: true as const });
    },
  );

  app.get(
    '/users/:user_id/automations/:id/runs',
    {
      schema: {
        summary: "An automation's runs, newest first",
        tags: ['automations'],
        params: oneParams,
        querystring: z.object({ limit: z.coerce.number().int().min(1).max(100).default(20) }),
        response: { 200: z.object({ runs: z.array(runSchema) }), ...ONE_ERRORS },
      },
    },
    async (request) => {
      const runs = await automations.runs(
        request.params.user_id,
        request.params.id,
        request.query.limit,
      );
      return { runs: runs.map(toRunBody) };
    },
  );

  app.post(
    '/users/:user_id/automations/:id/read',
    {
      schema: {
        summary: "Mark an automation's results as read (clears its unread mark)",
        tags: ['automations'],
        params: oneParams,
        response: { 200: z.object({ unread: z.literal(0) }), ...ONE_ERRORS },
      },
    },
    async (request) => {
      await automations.markRead(request.params.user_id, request.params.id);
      return { unread: 0 as const };
    },
  );
}

function toBody(automation: AutomationRecord) {
  return {
    id: automation.id,
    name: automation.name,
    prompt: automation.prompt,
    schedule: automation.schedule,
    schedule_in_words: scheduleInWords(automation.schedule, automation.timezone),
    timezone: automation.timezone,
    status: automation.status,
    paused_reason: automation.pausedReason,
    next_run_at: automation.nextRunAt?.toISOString() ?? null,
    conversation_id: automation.conversationId,
    unread: automation.unread,
    created_at: automation.createdAt.toISOString(),
  };
}

function toRunBody(run: AutomationRunRecord) {
  return {
    id: run.id,
    occurrence: run.occurrence.toISOString(),
    manual: run.manual,
    status: run.status,
    started_at: run.startedAt?.toISOString() ?? null,
    finished_at: run.finishedAt?.toISOString() ?? null,
    chat_run_id: run.chatRunId,
    error: run.error,
    delivered_to: run.deliveredTo,
    read: run.read,
  };
}
