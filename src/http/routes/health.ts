import { z } from 'zod';
import type { ModelStatus } from '../../models/model-status.ts';
import type { DatabaseState } from '../../storage/database.ts';
import { APP_VERSION } from '../../version.ts';
import type { App } from '../app-types.ts';

const modelSchema = z
  .object({
    source: z
      .enum(['server', 'file', 'download'])
      .describe('A model server (LLM_BASE_URL), a file (LLM_MODEL_PATH), or downloaded'),
    state: z
      .enum(['checking', 'downloading', 'ready', 'failed', 'unreachable', 'refusing'])
      .describe(
        'A model server is ready until a request to it finds nothing answering (`unreachable`) ' +
          'or is refused for its key or model (`refusing`, HTTP 401, 403 or 404), each with ' +
          'the reason, until one is answered otherwise; it is not probed',
      ),
    downloaded_bytes: z.number().int().optional(),
    total_bytes: z.number().int().optional().describe('0 until the host has said'),
    percent: z.number().int().optional(),
    resumed_from_bytes: z
      .number()
      .int()
      .optional()
      .describe('Downloading: what an interrupted download had fetched (it goes on from there)'),
    reason: z.string().optional().describe('Why it failed or is unreachable, and what to set'),
  })
  .describe('The chat model (not in the spec): its first download, or why it cannot be had');

const healthSchema = z.object({
  status: z.enum(['ok', 'unavailable']),
  version: z.string(),
  database: z
    .enum(['ok', 'busy', 'unreachable'])
    .describe(
      '`busy`: a trivial query waited 2 s behind others holding every pooled connection; the ' +
        'database answers them, so the status stays ok (200)',
    ),
  model: modelSchema,
});

export function registerHealthRoutes(
  app: App,
  checkDatabase: () => Promise<DatabaseState>,
  modelStatus: () => ModelStatus,
): void {
  app.get(
    '/health',
    {
      config: { public: true },
      schema: {
        summary: 'Liveness, database reachability and the model’s state (no authentication)',
        tags: ['service'],
        response: { 200: healthSchema, 503: healthSchema },
      },
    },
    async (_request, reply) => {
      const database = await checkDatabase();
      // Busy is not down: taking a busy replica out of rotation would only load the others more.
      const up = database !== 'unreachable';
      return reply.code(up ? 200 : 503).send({
        status: up ? 'ok' : 'unavailable',
        version: APP_VERSION,
        database,
        model: modelBody(modelStatus()),
      });
    },
  );
}

function modelBody(status: ModelStatus): z.infer<typeof modelSchema> {
  switch (status.state) {
    case 'downloading':
      return {
        source: status.source,
        state: status.state,
        downloaded_bytes: status.downloadedBytes,
        total_bytes: status.totalBytes,
        percent: status.percent,
        resumed_from_bytes: status.resumedFromBytes,
      };
    case 'failed':
    case 'unreachable':
    case 'refusing':
      return { source: status.source, state: status.state, reason: status.reason };
    default:
      return { source: status.source, state: status.state };
  }
}
