import { z } from 'zod';
import { notFound } from '../../errors.ts';
import { type DetachedRuns, EventIdPastEnd, type NumberedEvent } from '../../runs/detached-runs.ts';
import type { App } from '../app-types.ts';
import { closedSignal } from '../chat-abort.ts';
import { errorResponses, PER_USER } from '../error-responses.ts';
import { userIdSchema, uuidSchema } from '../schemas.ts';
import { DONE_ONLY, encodeNumberedEvent, sendEventStream, toSseBody } from '../sse.ts';

const params = z.object({
  user_id: userIdSchema,
  run_id: uuidSchema('must be a run id (a UUID)'),
});

/** An event id of the stream (`id:`), as `Last-Event-ID` or `?after=` sends it back. */
const eventId = z
  .string()
  .regex(/^\d{1,9}$/, { message: 'must be an event id of the stream (a whole number)' });

const NO_RUN =
  'No such run to follow: unknown, not resumable, another user’s, or ended too long ago.';

/**
 * Resumable runs (`"resumable": true` on POST /chat): follow one again from where the
 * client's stream broke, on any replica, and stop one on purpose.
 */
export function registerRunRoutes(app: App, runs: DetachedRuns, keepAliveMs: number): void {
  app.get(
    '/users/:user_id/runs/:run_id/events',
    {
      schema: {
        summary: 'Follow a resumable answer again, from where the stream broke',
        description:
          'The events after `Last-Event-ID` (or `?after=`; the header wins; none: from the ' +
          'start), each once and in order, then the live rest, as `POST /chat` streams them ' +
          '(every event with its `id:`), ending with the same `__done` and `[DONE]`. Leaving ' +
          'does not stop the answer. A run that is unknown, not resumable, another user’s or ' +
          'pruned (RUN_EVENTS_KEEP_HOURS after its end) is a 404; an id past its last event ' +
          '(from another stream) is a 422.',
        tags: ['chat'],
        params,
        querystring: z.object({ after: eventId.optional() }),
        headers: z.object({ 'last-event-id': eventId.optional() }),
        produces: ['text/event-stream'],
        response: errorResponses(...PER_USER, 404, 422),
      },
    },
    async (request, reply) => {
      const { user_id: userId, run_id: runId } = request.params;
      const header = request.headers['last-event-id'];
      const after = Number(header ?? request.query.after ?? 0);
      const left = closedSignal(reply.raw);
      let events: AsyncIterable<NumberedEvent> | undefined;
      try {
        events = await runs.listen(runId, userId, after, left);
      } catch (error) {
        if (!(error instanceof EventIdPastEnd)) throw error;
        const loc = header === undefined ? ['query', 'after'] : ['header', 'last-event-id'];
        return reply.code(422).send({ detail: [{ loc, msg: error.message, type: 'value_error' }] });
      }
      if (!events) throw notFound(NO_RUN);
      reply.header('x-parley-run-id', runId);
      const body = toSseBody(endingWithDone(events), keepAliveMs, reply.raw, (item) =>
        item === END_ONLY ? DONE_ONLY : encodeNumberedEvent(item),
      );
      return sendEventStream(reply, body);
    },
  );

  app.post(
    '/users/:user_id/runs/:run_id/stop',
    {
      schema: {
        summary: 'Stop a resumable answer, wherever it is being written',
        description:
          'The answer stops on whichever replica writes it; what was written is kept, marked ' +
          'interrupted, and can be rated. Its listeners get `__done` and `[DONE]`. `status` ' +
          'is `stopping` for an answer that was still being written, `ended` for one that ' +
          'had already ended.',
        tags: ['chat'],
        params,
        response: {
          200: z.object({ run_id: z.uuid(), status: z.enum(['stopping', 'ended']) }),
          ...errorResponses(...PER_USER, 404, 422),
        },
      },
    },
    async (request) => {
      const { user_id: userId, run_id: runId } = request.params;
      const status = await runs.stop(runId, userId);
      if (!status) throw notFound(NO_RUN);
      return { run_id: runId, status };
    },
  );
}

/** Marks a resumed stream whose run had ended where the client resumed: `[DONE]` alone. */
const END_ONLY = Symbol('end only');

async function* endingWithDone(
  events: AsyncIterable<NumberedEvent>,
): AsyncGenerator<NumberedEvent | typeof END_ONLY> {
  let ended = false;
  for await (const item of events) {
    if (item.event.type === 'done') ended = true;
    yield item;
  }
  if (!ended) yield END_ONLY;
}
