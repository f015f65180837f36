import { z } from 'zod';
import { actingUser, type Principal } from '../../accounts/principal.ts';
import { SHUTDOWN } from '../../assistant/chat-events.ts';
import type { ChatService } from '../../assistant/chat-service.ts';
import { meteredChat } from '../../metrics/metered-chat.ts';
import type { Metrics } from '../../metrics/metrics.ts';
import type { ImageIntake } from '../../vision/image-intake.ts';
import { detectImageType, type ImageMediaType } from '../../vision/image-type.ts';
import type { App } from '../app-types.ts';
import { errorResponses } from '../error-responses.ts';
import { userIdSchema } from '../schemas.ts';
import { toSseBody } from '../sse.ts';

export interface ChatRouteSettings {
  messageMaxChars: number;
  imageMaxBytes: number;
  /** Checks and stores a request's image; refuses images when vision is not usable. */
  images: ImageIntake;
  keepAliveMs: number;
  /** Aborted when the server shuts down and the grace period is over. */
  shutdown: AbortSignal;
  /** Checks and counts the chat against the user's limits; throws a 429 AppError. */
  admit: (principal: Principal, userId: string) => Promise<void>;
  /** Counts chats for /metrics (METRICS_ENABLED). */
  metrics?: Pick<Metrics, 'chatStarted'> | undefined;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const DATA_URL_PREFIX = /^data:image\/[\w.+-]+;base64,/;

export function registerChatRoutes(
  app: App,
  chats: ChatService,
  settings: ChatRouteSettings,
): void {
  const imageMaxChars = Math.ceil(settings.imageMaxBytes / 3) * 4 + 256; // room for a data: prefix
  const body = z.object({
    message: z
      .string()
      .min(1, { message: 'must not be empty' })
      .max(settings.messageMaxChars, {
        message: `must be at most ${settings.messageMaxChars} characters`,
      })
      // PostgreSQL cannot store U+0000 in text or JSON: the turn would be lost.
      .refine((value) => !value.includes('\u0000'), {
        message: 'must not contain the NUL character (U+0000)',
      }),
    user_id: userIdSchema
      .optional()
      .describe(
        "Whose assistant answers: the key's own user when absent (the administrator: `default`)",
      ),
    show_thinking: z.boolean().default(false),
    image_base64: z
      .string()
      .max(imageMaxChars, { message: `must encode at most ${settings.imageMaxBytes} bytes` })
      .transform((value, ctx) => decodeImage(value, settings, ctx))
      .optional()
      .describe(
        'A PNG, JPEG, GIF or WebP image, plain base64 or a `data:image/…;base64,` URL, for the ' +
          'analyze_image tool of this request only',
      ),
  });

  app.post(
    '/chat',
    {
      bodyLimit: imageMaxChars + settings.messageMaxChars * 4 + 64 * 1024,
      schema: {
        summary: "Ask the user's assistant; the answer streams as server-sent events",
        description:
          'Each fragment is `data: "<JSON string>"`. The stream ends with ' +
          '`data: {"__done": true, "run_id": "<uuid>"}` and then `data: [DONE]`. An error after ' +
          'the stream has started is sent as `data: {"__error": {"code", "message"}}` before ' +
          'the two end events. Lines starting with `:` are keep-alives.',
        tags: ['chat'],
        body,
        produces: ['text/event-stream'],
        response: errorResponses(401, 403, 413, 415, 422, 429),
      },
    },
    async (request, reply) => {
      const userId = actingUser(request.principal, request.body.user_id);
      // Before the stream starts: over a limit is a 429 with Retry-After, never a cut answer.
      await settings.admit(request.principal, userId);
      const abort = new AbortController();
      const stop = () => abort.abort(SHUTDOWN);
      // `close` on the response before it finished means the client went away: stop the
      // model (its HTTP request is aborted) and the tools at once.
      reply.raw.on('close', () => {
        if (!reply.raw.writableFinished) abort.abort();
      });
      settings.shutdown.addEventListener('abort', stop, { once: true });

      const upload = request.body.image_base64;
      const image = upload ? await settings.images.save(upload.bytes, upload.mediaType) : undefined;
      const answer = chats.chat(
        {
          userId,
          message: request.body.message,
          showThinking: request.body.show_thinking,
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
        settings.shutdown.removeEventListener('abort', stop);
        void image?.dispose();
      });
      return reply
        .header('content-type', 'text/event-stream; charset=utf-8')
        .header('cache-control', 'no-cache')
        .header('x-accel-buffering', 'no')
        .send(stream);
    },
  );
}

/** Decodes `image_base64`; every way it can be wrong is a 422 naming what to fix. */
function decodeImage(
  value: string,
  settings: ChatRouteSettings,
  ctx: z.RefinementCtx,
): { bytes: Buffer; mediaType: ImageMediaType } {
  const refuse = (message: string) => {
    ctx.addIssue({ code: 'custom', message });
    return z.NEVER;
  };
  if (settings.images.refusal) return refuse(settings.images.refusal);
  const base64 = value.replace(DATA_URL_PREFIX, '').replace(/\s+/g, '');
  if (base64.length === 0 || base64.length % 4 !== 0 || !BASE64.test(base64)) {
    return refuse('must be base64-encoded (plain, or a data:image/...;base64, URL)');
  }
  const bytes = Buffer.from(base64, 'base64');
  if (bytes.length > settings.imageMaxBytes) {
    return refuse(`must encode at most ${settings.imageMaxBytes} bytes`);
  }
  const mediaType = detectImageType(bytes);
  if (!mediaType) return refuse('must be a PNG, JPEG, GIF or WebP image');
  return { bytes, mediaType };
}

async function* disposeAfter<T>(events: AsyncIterable<T>, dispose: () => Promise<void>) {
  try {
    yield* events;
  } finally {
    await dispose();
  }
}
