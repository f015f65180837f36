import { z } from 'zod';
import { SHUTDOWN } from '../../assistant/chat-events.ts';
import type { ChatService } from '../../assistant/chat-service.ts';
import type { App } from '../app-types.ts';
import { userIdSchema } from '../schemas.ts';
import { toSseBody } from '../sse.ts';

export interface ChatRouteSettings {
  messageMaxChars: number;
  imageMaxBytes: number;
  keepAliveMs: number;
  /** Aborted when the server shuts down and the grace period is over. */
  shutdown: AbortSignal;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export function registerChatRoutes(
  app: App,
  chats: ChatService,
  settings: ChatRouteSettings,
): void {
  const imageMaxChars = Math.ceil(settings.imageMaxBytes / 3) * 4;
  const body = z.object({
    message: z
      .string()
      .min(1, { message: 'must not be empty' })
      .max(settings.messageMaxChars, {
        message: `must be at most ${settings.messageMaxChars} characters`,
      }),
    user_id: userIdSchema.default('default'),
    show_thinking: z.boolean().default(false),
    image_base64: z
      .string()
      .max(imageMaxChars, { message: `must encode at most ${settings.imageMaxBytes} bytes` })
      .transform((value) => value.replace(/^data:[\w/+.-]+;base64,/, '').replace(/\s+/g, ''))
      .refine((value) => value.length > 0 && value.length % 4 === 0 && BASE64.test(value), {
        message: 'must be base64-encoded',
      })
      .optional()
      .describe('An image for the analyze_image tool, used by this request only'),
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
      },
    },
    async (request, reply) => {
      const abort = new AbortController();
      const stop = () => abort.abort(SHUTDOWN);
      // `close` on the response before it finished means the client went away: stop the
      // model (its HTTP request is aborted) and the tools at once.
      reply.raw.on('close', () => {
        if (!reply.raw.writableFinished) abort.abort();
      });
      settings.shutdown.addEventListener('abort', stop, { once: true });

      const events = chats.chat(
        {
          userId: request.body.user_id,
          message: request.body.message,
          showThinking: request.body.show_thinking,
          imageBase64: request.body.image_base64,
        },
        abort.signal,
      );
      const stream = toSseBody(events, settings.keepAliveMs, reply.raw);
      stream.on('close', () => settings.shutdown.removeEventListener('abort', stop));
      return reply
        .header('content-type', 'text/event-stream; charset=utf-8')
        .header('cache-control', 'no-cache')
        .header('x-accel-buffering', 'no')
        .send(stream);
    },
  );
}
