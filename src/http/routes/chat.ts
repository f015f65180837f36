import { randomUUID } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import { actingUser, type Principal } from '../../accounts/principal.ts';
import type { ChatService } from '../../assistant/chat-service.ts';
import type { ConversationService } from '../../conversations/conversation-service.ts';
import { meteredChat } from '../../metrics/metered-chat.ts';
import type { Metrics } from '../../metrics/metrics.ts';
import type { DetachedRuns } from '../../runs/detached-runs.ts';
import { visibleText } from '../../visible-text.ts';
import { decodeImage, imageMaxChars as maxImageChars } from '../../vision/decode-image.ts';
import type { ImageIntake } from '../../vision/image-intake.ts';
import type { ImageMediaType } from '../../vision/image-type.ts';
import type { App } from '../app-types.ts';
import { abortWithExchange, closedSignal, disposeAfter } from '../chat-abort.ts';
import { errorResponses } from '../error-responses.ts';
import { userIdSchema, uuidSchema } from '../schemas.ts';
import { encodeNumberedEvent, sendEventStream, toSseBody } from '../sse.ts';

export interface ChatRouteSettings {
  messageMaxChars: number;
  imageMaxBytes: number;
  /** Checks and stores a request's image; refuses images when vision is not usable. */
  images: ImageIntake;
  keepAliveMs: number;
  /** Aborted when the server shuts down and the grace period is over. */
  shutdown: AbortSignal;
  /**
   * Checks and counts the chat against the user's limits; throws a 429 AppError. Answers the
   * user's current conversation, read in the same statement (null: they have none yet).
   */
  admit: (
    principal: Principal,
    userId: string,
  ) => Promise<{ currentConversationId: string | null }>;
  /** Counts chats for /metrics (METRICS_ENABLED). */
  metrics?: Pick<Metrics, 'chatStarted'> | undefined;
  /** Where resumable answers run (`"resumable": true`), detached from their connection. */
  runs?: DetachedRuns | undefined;
}

export function registerChatRoutes(
  app: App,
  chats: ChatService,
  conversations: ConversationService,
  settings: ChatRouteSettings,
): void {
  const imageMaxChars = maxImageChars(settings.imageMaxBytes);
  const bodySchema = z.object({
    // A question of nothing visible would name its conversation with an empty-looking title.
    message: visibleText(
      z
        .string()
        .min(1, { message: 'must not be empty' })
        .max(settings.messageMaxChars, {
          message: `must be at most ${settings.messageMaxChars} characters`,
        })
        // PostgreSQL cannot store U+0000 in text or JSON: the turn would be lost.
        .refine((value) => !value.includes('\u0000'), {
          message: 'must not contain the NUL character (U+0000)',
        }),
    ),
    user_id: userIdSchema
      .optional()
      .describe(
        "Whose assistant answers: the key's own user when absent (the administrator: `default`)",
      ),
    show_thinking: z.boolean().default(false),
    approvals: z
      .enum(['ask', 'refuse'])
      .default('refuse')
      .describe(
        "`ask`: a tool call that needs the user's approval is sent as " +
          '`data: {"__approval": {"id", "server", "tool", "arguments"}}` and waits for ' +
          '`POST /users/{user_id}/approvals/{id}` (then `{"__approval_decided": {"id", ' +
          '"decision"}}`); `refuse` (default): such a call is not run and the model is told so.',
      ),
    image_base64: z
      .string()
      .max(imageMaxChars, { message: `must encode at most ${settings.imageMaxBytes} bytes` })
      .transform((value, ctx) => imageOrIssue(value, settings, ctx))
      .optional()
      .describe(
        'A PNG, JPEG, GIF or WebP image, plain base64 or a `data:image/…;base64,` URL, for the ' +
          'analyze_image tool of this request only',
      ),
    conversation_id: uuidSchema('must be a conversation id (a UUID)')
      .optional()
      .describe(
        "The user's conversation to continue (it becomes the current one); default: the " +
          'current one. Another user’s, or an unknown one, is a 404.',
      ),
    parent: uuidSchema('must be a run_id of the conversation')
      .nullable()
      .optional()
      .describe(
        'The turn (run_id) the question follows, to branch the conversation there (editing a ' +
          'later question); null for a new first question. Default: the last turn of the ' +
          'active path. The turns after it stay, as other versions.',
      ),
    regenerate: uuidSchema('must be a run_id of the conversation')
      .optional()
      .describe(
        'A turn (run_id) this question is a new version of: send its question again for ' +
          'another answer, or an edited one. The new turn follows what that turn followed.',
      ),
    resumable: z
      .boolean()
      .default(false)
      .describe(
        'The answer outlives this connection: it goes on to its end if the client leaves ' +
          '(bounded by ANSWER_MAX_SECONDS), every event carries an SSE `id:`, and ' +
          '`GET /users/{user_id}/runs/{run_id}/events` with `Last-Event-ID` follows it again, ' +
          'on any replica; `POST /users/{user_id}/runs/{run_id}/stop` stops it. Default ' +
          "false: no `id:` lines, and leaving stops the answer (the spec's behaviour).",
      ),
  });

  app.post(
    '/chat',
    {
      // A character may take 6 bytes of JSON (`\uXXXX`, how Python's json writes any non-ASCII):
      // a message within MESSAGE_MAX_CHARS must not be refused as too large a body (413).
      bodyLimit: imageMaxChars + settings.messageMaxChars * 6 + 64 * 1024,
      schema: {
        summary: "Ask the user's assistant; the answer streams as server-sent events",
        description:
          'Each fragment is `data: "<JSON string>"`. The stream ends with ' +
          '`data: {"__done": true, "run_id": "<uuid>"}` and then `data: [DONE]`. An error after ' +
          'the stream has started is sent as `data: {"__error": {"code", "message"}}` before ' +
          'the two end events. Lines starting with `:` are keep-alives. The `X-Parley-Run-Id` ' +
          'response header carries the same run_id from the start, so an answer the client ' +
          'stops early can still be rated. `X-Parley-Conversation-Id` names the conversation ' +
          'the turn goes to. With `"resumable": true` every event also has an `id:` and the ' +
          'answer outlives the connection (see `resumable`).',
        tags: ['chat'],
        body: bodySchema.refine(
          (value) => value.parent === undefined || value.regenerate === undefined,
          {
            message: 'send parent or regenerate, not both',
            path: ['regenerate'],
          },
        ),
        produces: ['text/event-stream'],
        response: errorResponses(401, 403, 404, 413, 415, 422, 429),
      },
    },
    async (request, reply) => {
      const userId = actingUser(request.principal, request.body.user_id);
      // Before the stream starts: over a limit is a 429 with Retry-After, never a cut answer.
      const admitted = await settings.admit(request.principal, userId);
      // Before the stream too: an unknown conversation or turn is a 404.
      const place = await conversations.placeChat(
        userId,
        {
          conversationId: request.body.conversation_id,
          parent: request.body.parent,
          regenerate: request.body.regenerate,
        },
        admitted.currentConversationId,
      );
      if (request.body.resumable && settings.runs) {
        return answerDetached(request.body, userId, place, settings.runs, reply);
      }
      const abort = abortWithExchange(reply.raw, settings.shutdown);

      const upload = request.body.image_base64;
      const image = upload ? await settings.images.save(upload.bytes, upload.mediaType) : undefined;
      // Named before the answer starts, so a client that stops it still knows what to rate.
      const runId = randomUUID();
      reply.header('x-parley-run-id', runId);
      reply.header('x-parley-conversation-id', place.conversationId);
      const answer = chats.chat(
        {
          runId,
          userId,
          conversationId: place.conversationId,
          parentRunId: place.parentRunId,
          message: request.body.message,
          showThinking: request.body.show_thinking,
          approvals: request.body.approvals,
          image,
        },
        abort.signal,
      );
      const events = settings.metrics ? meteredChat(answer, settings.metrics) : answer;
      // The image file goes when the answer is over: finished, failed or abandoned.
      const stream = toSseBody(
        image ? disposeAfter(events, image.dispose) : events,
        settings.keepAliveMs,
        reply.raw,
      );
      stream.on('close', () => {
        abort.release();
        void image?.dispose();
      });
      return sendEventStream(reply, stream);
    },
  );

  /**
   * A resumable answer: registered, then driven to its end in the server whoever listens;
   * this response is its first listener, and leaving only stops the listening.
   */
  async function answerDetached(
    body: z.infer<typeof bodySchema>,
    userId: string,
    place: { conversationId: string; parentRunId: string | null | undefined },
    runs: DetachedRuns,
    reply: FastifyReply,
  ): Promise<FastifyReply> {
    const left = closedSignal(reply.raw);
    const upload = body.image_base64;
    const image = upload ? await settings.images.save(upload.bytes, upload.mediaType) : undefined;
    const runId = randomUUID();
    try {
      // Should this process die, the question and its place are stored by whoever ends the run.
      const turn = { question: body.message, ...place };
      await runs.begin({ runId, userId, turn }, (signal) => {
        const answer = chats.chat(
          {
            runId,
            userId,
            conversationId: place.conversationId,
            parentRunId: place.parentRunId,
            message: body.message,
            showThinking: body.show_thinking,
            approvals: body.approvals,
            image,
          },
          signal,
        );
        const events = settings.metrics ? meteredChat(answer, settings.metrics) : answer;
        // The image file goes when the answer is over, not when its client leaves.
        return image ? disposeAfter(events, image.dispose) : events;
      });
    } catch (error) {
      await image?.dispose();
      throw error;
    }
    reply.header('x-parley-run-id', runId);
    reply.header('x-parley-conversation-id', place.conversationId);
    const events = await runs.listen(runId, userId, 0, left, { bounded: false });
    if (!events) throw new Error('a run just begun was not found');
    return sendEventStream(
      reply,
      toSseBody(events, settings.keepAliveMs, reply.raw, encodeNumberedEvent),
    );
  }
}

/** Decodes `image_base64`; every way it can be wrong is a 422 naming what to fix. */
function imageOrIssue(
  value: string,
  settings: ChatRouteSettings,
  ctx: z.RefinementCtx,
): { bytes: Buffer; mediaType: ImageMediaType } {
  const decoded = settings.images.refusal
    ? { problem: settings.images.refusal }
    : decodeImage(value, settings.imageMaxBytes);
  if (decoded.problem !== undefined) {
    ctx.addIssue({ code: 'custom', message: decoded.problem });
    return z.NEVER;
  }
  return decoded;
}
