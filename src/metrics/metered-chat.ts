import type { ChatEvent } from '../assistant/chat-events.ts';
import type { Metrics } from './metrics.ts';

/**
 * Passes a chat's events through unchanged, counting them: in flight from the first read to
 * the last, the first fragment's delay, fragments, the error code if any, and how it ended
 * (a stream closed before its `done` was abandoned: the client left, or the server stopped).
 */
export async function* meteredChat(
  events: AsyncIterable<ChatEvent>,
  metrics: Pick<Metrics, 'chatStarted'>,
): AsyncGenerator<ChatEvent> {
  const chat = metrics.chatStarted();
  let outcome: 'completed' | 'failed' | 'abandoned' = 'abandoned';
  let failed = false;
  try {
    for await (const event of events) {
      if (event.type === 'text') chat.fragment();
      else if (event.type === 'error') {
        failed = true;
        chat.error(event.code);
      } else if (event.type === 'done') outcome = failed ? 'failed' : 'completed';
      yield event;
    }
  } finally {
    chat.end(outcome);
  }
}
