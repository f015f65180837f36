import type { ServerResponse } from 'node:http';
import { PassThrough, type Readable } from 'node:stream';
import type { ChatEvent } from '../assistant/chat-events.ts';

/**
 * Server-sent-event framing of the chat stream (spec §6). Each fragment is `data: <JSON
 * string>` with non-ASCII written as is (JSON.stringify never escapes it, and it escapes the
 * line breaks SSE would split on). The end is the object form with the run id, then the
 * literal `[DONE]` that the first form of the stream ended with, so both kinds of client
 * stop cleanly.
 */
export function encodeEvent(event: ChatEvent): string {
  switch (event.type) {
    case 'text':
      return `data: ${JSON.stringify(event.text)}\n\n`;
    case 'error':
      return `data: ${JSON.stringify({ __error: { code: event.code, message: event.message } })}\n\n`;
    case 'done':
      return `data: ${JSON.stringify({ __done: true, run_id: event.runId })}\n\ndata: [DONE]\n\n`;
  }
}

/** A comment line: clients ignore it, proxies see traffic and keep the connection open. */
export const KEEP_ALIVE = ': ping\n\n';

/**
 * Pumps events into a body stream, adding a keep-alive comment after `keepAliveMs` of
 * silence (while a user's previous chat finishes, or a model thinks before its first token).
 *
 * This is the per-token hot path, so it does the least per event: one write, no timer or
 * promise per event (one interval checks for silence), and writes of the same tick corked
 * into one socket write.
 */
export function toSseBody(
  events: AsyncIterable<ChatEvent>,
  keepAliveMs: number,
  response: ServerResponse,
): Readable {
  const body = new PassThrough();
  let lastWrite = Date.now();
  let corked = false;
  const write = (chunk: string) => {
    lastWrite = Date.now();
    if (!corked) {
      corked = true;
      response.cork();
      process.nextTick(() => {
        corked = false;
        response.uncork();
      });
    }
    body.write(chunk);
  };
  const keepAlive = setInterval(
    () => {
      if (Date.now() - lastWrite >= keepAliveMs) write(KEEP_ALIVE);
    },
    Math.max(50, Math.floor(keepAliveMs / 4)),
  );

  (async () => {
    try {
      for await (const event of events) {
        if (body.destroyed) break;
        write(encodeEvent(event));
      }
    } finally {
      clearInterval(keepAlive);
      body.end();
    }
  })().catch((error: unknown) => body.destroy(error as Error));

  body.on('close', () => clearInterval(keepAlive));
  return body;
}
