import { randomUUID } from 'node:crypto';
import type { FastifyError } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { actingUser } from '../../accounts/principal.ts';
import type { ChatService } from '../../assistant/chat-service.ts';
import { AppError } from '../../errors.ts';
import { meteredChat } from '../../metrics/metered-chat.ts';
import {
  type ChatCompletionBody,
  chatCompletionBody,
  PARLEY_MODEL,
  toChatInput,
} from '../../openai/chat-completion-request.ts';
import { collectCompletion } from '../../openai/completion-body.ts';
import { completionChunkEncoder } from '../../openai/completion-chunks.ts';
import { chatErrorStatus, InvalidRequest, openAiError } from '../../openai/openai-error.ts';
import { BUSY, isDatabaseUnavailable, poolWaitTimeout } from '../../storage/database-errors.ts';
import { imageMaxChars } from '../../vision/decode-image.ts';
import type { App } from '../app-types.ts';
import { abortWithExchange, disposeAfter } from '../chat-abort.ts';
import { describeClientError } from '../error-handler.ts';
import { afterBodyOverLimit } from '../over-limit.ts';
import { userIdSchema } from '../schemas.ts';
import { sendEventStream, toSseBody } from '../sse.ts';
import type { ChatRouteSettings } from './chat.ts';

/** When the `parley` model "was created", for `GET /v1/models` (the release of this door). */
const MODEL_CREATED = Date.UTC(2026, 10, 25) / 1000;
const MODEL = {
  id: PARLEY_MODEL,
  object: 'model' as const,
  created: MODEL_CREATED,
  owned_by: 'parley',
};

const errorBody = z.object({
  error: z.object({
    message: z.string(),
    type: z.string(),
    param: z.string().nullable(),
    code: z.string().nullable(),
  }),
});
type ErrorStatus = 400 | 401 | 403 | 404 | 413 | 415 | 429 | 503;
/** OpenAPI error responses of this door, each in OpenAI's shape; 500 is always included. */
const errors = (statuses: Partial<Record<ErrorStatus, string>>) => {
  const chosen: Partial<Record<ErrorStatus | 500, typeof errorBody>> = {};
  for (const [status, text] of Object.entries({ ...statuses, 500: 'Unexpected failure' })) {
    chosen[Number(status) as ErrorStatus] = errorBody.describe(text);
  }
  return chosen;
};
const model = z.object({
  id: z.string(),
  object: z.literal('model'),
  created: z.number(),
  owned_by: z.string(),
});
const UNAUTHORIZED = openAiError(
  401,
  'Missing or wrong API key: send your Parley key as the bearer token.',
  {
    code: 'invalid_api_key',
  },
);

/**
 * The OpenAI-compatible door (issue 23): `GET /v1/models` and `POST /v1/chat/completions`,
 * answered by the user's own assistant. An encapsulated scope, so its errors (the 401 of the
 * auth hook included) take OpenAI's shape while every other route keeps `{"detail": …}`.
 */
export async function registerOpenAiRoutes(
  app: App,
  chats: ChatService,
  settings: ChatRouteSettings,
): Promise<void> {
  await app.register(
    async (scope) => {
      scope.addHook('onRoute', (route) => {
        route.config = { ...route.config, unauthorizedBody: UNAUTHORIZED };
      });
      scope.setErrorHandler(answerError);
      scope.setNotFoundHandler((request, reply) => {
        const path = request.url.split('?')[0];
        reply.code(404).send(openAiError(404, `Unknown route: ${request.method} ${path}`));
      });
      registerModels(scope as App);
      registerCompletions(scope as App, chats, settings);
    },
    { prefix: '/v1' },
  );
}

/** The credential throttle's answer (http/credential-throttle.ts), possible on every route. */
const TOO_MANY_WRONG_TOKENS = 'Too many wrong tokens from this address; see `Retry-After`';

function registerModels(app: App): void {
  app.get(
    '/models',
    {
      schema: {
        summary: 'The one model: `parley`',
        tags: ['openai'],
        response: {
          200: z.object({ object: z.literal('list'), data: z.array(model) }),
          ...errors({ 401: 'Missing or wrong key', 429: TOO_MANY_WRONG_TOKENS }),
        },
      },
    },
    async () => ({ object: 'list' as const, data: [MODEL] }),
  );
  app.get(
    '/models/:model',
    {
      schema: {
        summary: 'Describe the `parley` model',
        tags: ['openai'],
        params: z.object({ model: z.string() }),
        response: {
          200: model,
          ...errors({
            401: 'Missing or wrong key',
            404: 'Not a model this server serves',
            429: TOO_MANY_WRONG_TOKENS,
          }),
        },
      },
    },
    async (request) => {
      if (request.params.model !== PARLEY_MODEL) throw unknownModel(request.params.model, null);
      return MODEL;
    },
  );
}

function registerCompletions(app: App, chats: ChatService, settings: ChatRouteSettings): void {
  const body = chatCompletionBody.extend({ user: userIdSchema.nullish() });
  const limits = {
    messageMaxChars: settings.messageMaxChars,
    imageMaxBytes: settings.imageMaxBytes,
    imageRefusal: settings.images.refusal,
  };
  app.post(
    '/chat/completions',
    {
      // A client resends the whole conversation, its images too; the last message alone may
      // take 6 bytes of JSON per character (`\uXXXX`) up to MESSAGE_MAX_CHARS.
      bodyLimit:
        4 * imageMaxChars(settings.imageMaxBytes) + settings.messageMaxChars * 6 + 1024 * 1024,
      schema: {
        summary: "OpenAI's Chat Completions, answered by the user's own assistant",
        description:
          'With `stream: true` the answer is a `text/event-stream` of `chat.completion.chunk` ' +
          'objects ending with `data: [DONE]`; otherwise one `chat.completion`. The `id` is ' +
          '`chatcmpl-<run_id>`: send `run_id` to `POST /feedback`. Tools run inside Parley; a ' +
          "request's own `tools` are refused. See the README's \"Use Parley from any OpenAI " +
          'client".',
        tags: ['openai'],
        body,
        produces: ['application/json', 'text/event-stream'],
        response: {
          200: z
            .looseObject({ id: z.string(), object: z.literal('chat.completion') })
            .describe('A `chat.completion` (or, streamed, `chat.completion.chunk` events)'),
          ...errors({
            400: 'Invalid or unsupported request (`param` names the field)',
            401: 'Missing or wrong key',
            403: "A user's key naming another `user`",
            404: 'A model other than `parley`',
            413: 'The body is too large',
            415: 'A body that is not JSON',
            429: "Over the user's limits, or too many wrong tokens from this address; `Retry-After` says when to try again",
            503: 'The model or the database is unavailable',
          }),
        },
      },
    },
    async (request, reply) => {
      const request_ = request.body as ChatCompletionBody;
      if (request_.model !== PARLEY_MODEL) throw unknownModel(request_.model, 'model');
      const input = toChatInput(request_, limits);
      const userId = actingUser(request.principal, request_.user ?? undefined);
      // Before any answer starts: over a limit is a 429 with Retry-After.
      await settings.admit(request.principal, userId);

      const runId = randomUUID();
      const meta = {
        id: `chatcmpl-${runId}`,
        created: Math.floor(Date.now() / 1000),
        model: PARLEY_MODEL,
      };
      const abort = abortWithExchange(reply.raw, settings.shutdown);
      const image = input.image
        ? await settings.images.save(input.image.bytes, input.image.mediaType)
        : undefined;
      const answer = chats.chat(
        {
          userId,
          message: input.question,
          showThinking: false,
          separateReasoning: true,
          image,
          runId,
          conversation: input.conversation,
          callSettings: input.callSettings,
        },
        abort.signal,
      );
      const metered = settings.metrics ? meteredChat(answer, settings.metrics) : answer;
      const events = image ? disposeAfter(metered, image.dispose) : metered;

      if (request_.stream) {
        const encode = completionChunkEncoder(
          meta,
          request_.stream_options?.include_usage === true,
        );
        const stream = toSseBody(events, settings.keepAliveMs, reply.raw, encode);
        stream.on('close', () => {
          abort.release();
          void image?.dispose();
        });
        return sendEventStream(reply, stream);
      }
      try {
        const result = await collectCompletion(events, meta);
        if (result.ok) return reply.send(result.body);
        const status = result.code ? chatErrorStatus(result.code) : (500 as const);
        if (result.code === BUSY.code) reply.header('retry-after', String(BUSY.retryAfterSeconds));
        return reply
          .code(status)
          .send(openAiError(status, result.message, { code: result.code ?? null }));
      } finally {
        abort.release();
        await image?.dispose();
      }
    },
  );
}

const unknownModel = (model: string, param: string | null) =>
  Object.assign(
    new InvalidRequest(
      `The model \`${model}\` does not exist: this server serves \`${PARLEY_MODEL}\`, the user's own assistant.`,
      param,
      'model_not_found',
    ),
    { status: 404 },
  );

/** Every failure of this scope, in OpenAI's shape with the status the SDKs map to a class. */
function answerError(
  error: FastifyError,
  request: Parameters<Parameters<App['setErrorHandler']>[0]>[1],
  reply: Parameters<Parameters<App['setErrorHandler']>[0]>[2],
) {
  if (hasZodFastifySchemaValidationErrors(error)) {
    const first = error.validation[0];
    const param = first?.instancePath
      .split('/')
      .filter(Boolean)
      .reduce(
        (path, segment) =>
          /^\d+$/.test(segment) ? `${path}[${segment}]` : path ? `${path}.${segment}` : segment,
        '',
      );
    const message = `${param || 'body'}: ${first?.message ?? 'invalid value'}`;
    return reply
      .code(400)
      .send(openAiError(400, message, { param: param || null, code: 'invalid_value' }));
  }
  if (AppError.isInstance(error)) {
    if (error.status >= 500) request.log.warn({ err: error }, error.message);
    if (error.retryAfterSeconds !== undefined) {
      reply.header('retry-after', String(error.retryAfterSeconds));
    }
    const param = error instanceof InvalidRequest ? error.param : null;
    const code = error.status === 429 ? 'rate_limit_exceeded' : error.code;
    return reply.code(error.status).send(openAiError(error.status, error.message, { param, code }));
  }
  const busy = poolWaitTimeout(error);
  if (busy) {
    request.log.warn(busy.logFields(), 'database pool wait timed out: Parley is busy');
    return reply
      .code(503)
      .header('retry-after', String(BUSY.retryAfterSeconds))
      .send(openAiError(503, BUSY.message, { code: BUSY.code }));
  }
  if (isDatabaseUnavailable(error)) {
    request.log.warn({ err: error }, 'database unavailable');
    return reply.code(503).send(
      openAiError(503, 'The database is unavailable; try again shortly.', {
        code: 'database_unavailable',
      }),
    );
  }
  const clientError = describeClientError(error);
  if (clientError) {
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      afterBodyOverLimit(request, reply, request.routeOptions.bodyLimit ?? 0);
    }
    // Malformed JSON is OpenAI's 400, not the spec's 422.
    const status = clientError.status === 422 ? 400 : clientError.status;
    const message =
      typeof clientError.detail === 'string' ? clientError.detail : 'The body is not valid JSON';
    return reply.code(status).send(openAiError(status, message));
  }
  request.log.error({ err: error }, 'unhandled error');
  return reply
    .code(500)
    .send(openAiError(500, `Internal error; quote request id ${request.id} when reporting it.`));
}
