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
 * Encodes events, inserting a keep-alive comment after every `keepAliveMs` of silence
 * (while a user's previous chat finishes, or a model thinks before its first token).
 */
export async function* toSse(
  events: AsyncIterable<ChatEvent>,
  keepAliveMs: number,
): AsyncGenerator<string> {
  const iterator = events[Symbol.asyncIterator]();
  let next = iterator.next();
  try {
    while (true) {
      let timer: NodeJS.Timeout | undefined;
      const silence = new Promise<'silence'>((resolve) => {
        timer = setTimeout(() => resolve('silence'), keepAliveMs);
      });
      const result = await Promise.race([next, silence]);
      clearTimeout(timer);
      if (result === 'silence') {
        yield KEEP_ALIVE;
        continue;
      }
      if (result.done) return;
      yield encodeEvent(result.value);
      next = iterator.next();
    }
  } finally {
    await iterator.return?.();
  }
}
