import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { LogFn } from 'pino';
import { z } from 'zod';
import type { DocumentService } from '../documents/document-service.ts';
import { AppError } from '../errors.ts';
import type { GraphService } from '../graph/graph-service.ts';
import { TERM_MAX_CHARS } from '../graph/term-key.ts';
import type { ConversationMemory } from '../memory/conversation-memory.ts';
import { MAX_YEARS_AHEAD, type ReminderService } from '../reminders/reminder-service.ts';
import { BUSY, isDatabaseUnavailable, poolWaitTimeout } from '../storage/database-errors.ts';
import {
  describeReminder,
  isoDate,
  localTime,
  REMINDER_TITLE_MAX,
  reminderNote,
} from '../tools/reminder-tools.ts';
import { visibleText } from '../visible-text.ts';

/** The services the `/mcp` door's tools use: the same ones every other door uses. */
export interface UserToolServices {
  documents: DocumentService;
  reminders: ReminderService;
  graph: GraphService;
  /** Present when CONV_RAG_ENABLED; without it a user has no memories. */
  memory?: ConversationMemory | undefined;
}

/** Where calls are logged (the request's logger). */
export interface ToolLogger {
  info: LogFn;
  warn: LogFn;
  error: LogFn;
}

export interface UserToolSettings {
  /** SEARCH_TOP_K: passages a search returns. */
  topK: number;
  /** TOOL_TIMEOUT_MS: longest one call may take. */
  timeoutMs: number;
}

/** Items a listing returns at most (the rest is counted in `total`): a client's context is small. */
export const LIST_MAX = 100;

const READ_ONLY = { readOnlyHint: true, openWorldHint: false } as const;

/**
 * Registers one user's tools on an MCP server (the `/mcp` door): their documents, reminders,
 * memories and knowledge graph, through the services every other door uses. The user is bound
 * here, never taken from a tool's arguments, so no call can reach another user's data.
 */
export function registerUserTools(
  server: McpServer,
  userId: string,
  services: UserToolServices,
  settings: UserToolSettings,
  logger: ToolLogger,
): void {
  const run = runner(settings.timeoutMs, logger);

  server.registerTool(
    'search_documents',
    {
      title: 'Search my documents',
      description:
        'Search the documents this user uploaded to Parley (their private ones and the shared ' +
        'ones) and their conversation memories. Returns the most relevant passages with their ' +
        'source and page.',
      inputSchema: {
        query: visibleText(z.string().trim().min(1).max(1000)).describe('What to look for'),
      },
      annotations: READ_ONLY,
    },
    ({ query }, extra) =>
      run('search_documents', extra.signal, async (signal) => {
        const { hits, retrieval } = await services.documents.search(query, {
          userId,
          limit: settings.topK,
          signal,
        });
        return {
          retrieval,
          hits: hits.map((hit) => ({
            source: hit.source,
            page: hit.page,
            score: Math.round(hit.score * 10_000) / 10_000,
            text: hit.content,
          })),
        };
      }),
  );

  server.registerTool(
    'list_reminders',
    {
      title: 'List my reminders',
      description:
        'List this user’s reminders, soonest first: from today on, or all with include_past. ' +
        'Also gives today’s date and the timezone reminders are set in.',
      inputSchema: {
        include_past: z.boolean().optional().describe('Also list reminders whose date has passed'),
      },
      annotations: READ_ONLY,
    },
    ({ include_past }, extra) =>
      run('list_reminders', extra.signal, async () => {
        const [{ today, timezone }, all] = await Promise.all([
          services.reminders.userToday(userId),
          services.reminders.list(userId, include_past ?? false),
        ]);
        return {
          today,
          timezone,
          reminders: all.slice(0, LIST_MAX).map(describeReminder),
          total: all.length,
        };
      }),
  );

  server.registerTool(
    'set_reminder',
    {
      title: 'Set a reminder',
      description:
        'Save a reminder for this user on a calendar date in their timezone (list_reminders ' +
        'gives today’s date there). Parley notifies them on Telegram 7 days before, 1 day ' +
        'before and on the day.',
      inputSchema: {
        title: visibleText(z.string().trim().min(1).max(REMINDER_TITLE_MAX)).describe(
          'What to remind of',
        ),
        date: isoDate.describe(
          `The date, YYYY-MM-DD: from today to ${MAX_YEARS_AHEAD} years ahead`,
        ),
        time: localTime.optional().describe('The time of day, HH:MM (24-hour)'),
        note: reminderNote.optional().describe('Details worth repeating'),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
    },
    (input, extra) =>
      run('set_reminder', extra.signal, async () =>
        describeReminder(await services.reminders.create(userId, input)),
      ),
  );

  server.registerTool(
    'cancel_reminder',
    {
      title: 'Cancel a reminder',
      description: 'Cancel (delete) one of this user’s reminders by its id, from list_reminders.',
      inputSchema: { id: z.uuid().describe('The reminder’s id') },
      annotations: { destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
    ({ id }, extra) =>
      run('cancel_reminder', extra.signal, async () => {
        await services.reminders.cancel(userId, id);
        return { cancelled: id };
      }),
  );

  server.registerTool(
    'list_memories',
    {
      title: 'List my memories',
      description:
        'List what Parley’s assistant remembered from this user’s conversations, newest first ' +
        '(empty when conversation memory is off).',
      annotations: READ_ONLY,
    },
    (extra) =>
      run('list_memories', extra.signal, async () => {
        const all = services.memory ? await services.memory.list(userId) : [];
        return {
          memories: all.slice(0, LIST_MAX).map((item) => ({
            id: item.id,
            conversation_id: item.conversationId,
            text: item.text,
            created_at: item.createdAt.toISOString(),
          })),
          total: all.length,
        };
      }),
  );

  server.registerTool(
    'delete_memory',
    {
      title: 'Delete a memory',
      description: 'Delete one of this user’s memories by its id, from list_memories.',
      inputSchema: { id: z.uuid().describe('The memory’s id') },
      annotations: { destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
    ({ id }, extra) =>
      run('delete_memory', extra.signal, async () => {
        const deleted = services.memory ? await services.memory.delete(userId, id) : 0;
        if (deleted === 0) throw new AppError('not_found', 404, `No memory ${id} for this user.`);
        return { deleted: id };
      }),
  );

  server.registerTool(
    'query_graph',
    {
      title: 'Query my knowledge graph',
      description:
        'Look up this user’s knowledge graph (facts as subject, relation, object): every ' +
        'relation where `name` is the subject or the object, or without `name` the newest ' +
        'relations.',
      inputSchema: {
        name: visibleText(z.string().trim().min(1).max(TERM_MAX_CHARS))
          .optional()
          .describe('The entity to look up (a person, place, thing…)'),
      },
      annotations: READ_ONLY,
    },
    ({ name }, extra) =>
      run('query_graph', extra.signal, async () => {
        const triples =
          name === undefined
            ? await services.graph.list(userId)
            : await services.graph.about(userId, name);
        return {
          relations: triples.slice(0, LIST_MAX).map((triple) => ({
            subject: triple.subject,
            relation: triple.relation,
            object: triple.object,
            created_at: triple.createdAt.toISOString(),
          })),
          total: triples.length,
        };
      }),
  );
}

/**
 * Runs one call under TOOL_TIMEOUT_MS and the client's cancellation, and turns its outcome into
 * a tool result: the value as JSON text; a refusal of Parley's (AppError: a date in the past, an
 * unknown id) as an error result saying why; anything else as an error result that reveals
 * nothing internal, logged with its cause. Logs name the tool and outcome, never arguments or
 * results.
 */
function runner(timeoutMs: number, logger: ToolLogger) {
  return async (
    tool: string,
    cancelled: AbortSignal,
    work: (signal: AbortSignal) => Promise<unknown>,
  ): Promise<CallToolResult> => {
    const started = performance.now();
    const signal = AbortSignal.any([cancelled, AbortSignal.timeout(timeoutMs)]);
    let outcome = 'ok';
    try {
      const value = await Promise.race([work(signal), aborted(signal)]);
      return { content: [{ type: 'text', text: JSON.stringify(value) }] };
    } catch (error) {
      if (AppError.isInstance(error)) {
        outcome = error.code;
        return failure(error.message);
      }
      if (signal.aborted && !cancelled.aborted) {
        outcome = 'timeout';
        return failure(
          `The call took longer than ${timeoutMs} ms (TOOL_TIMEOUT_MS) and was stopped.`,
        );
      }
      if (cancelled.aborted) {
        outcome = 'cancelled';
        return failure('The call was cancelled.');
      }
      const busy = poolWaitTimeout(error);
      if (busy) {
        outcome = BUSY.code;
        logger.warn({ ...busy.logFields(), mcp_tool: tool }, 'database pool wait timed out');
        return failure(BUSY.message);
      }
      if (isDatabaseUnavailable(error)) {
        outcome = 'database_unavailable';
        logger.warn({ err: error, mcp_tool: tool }, 'database unavailable');
        return failure('The database is unavailable; try again shortly.');
      }
      outcome = 'error';
      logger.error({ err: error, mcp_tool: tool }, 'mcp tool failed');
      return failure('Parley could not do this because of an internal error.');
    } finally {
      logger.info(
        { mcp_tool: tool, outcome, ms: Math.round(performance.now() - started) },
        'mcp tool call',
      );
    }
  };
}

const failure = (text: string): CallToolResult => ({
  isError: true,
  content: [{ type: 'text', text }],
});

/** Rejects once the signal aborts, so a call that ignores its signal still ends in time. */
function aborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}
