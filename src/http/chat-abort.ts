import type { ServerResponse } from 'node:http';
import { SHUTDOWN } from '../assistant/chat-events.ts';

export interface ChatAbort {
  /** Aborted when the client goes away, or with SHUTDOWN when the server stops. */
  signal: AbortSignal;
  /** Stops listening for the shutdown: call once the answer is over. */
  release(): void;
}

/**
 * Ties a chat to its HTTP exchange, for every door that answers with the assistant. `close`
 * on the response before it finished means the client went away: the model (its HTTP request
 * is aborted) and the tools stop at once. A server stopping after its grace period aborts with
 * SHUTDOWN, so the client still listening is told why.
 */
export function abortWithExchange(response: ServerResponse, shutdown: AbortSignal): ChatAbort {
  const abort = new AbortController();
  const stop = () => abort.abort(SHUTDOWN);
  const left = () => {
    if (!response.writableFinished) abort.abort();
  };
  // A client can leave while the route still awaits (the limits, an image being saved):
  // `close` has then already been emitted, and a listener added now would never hear it.
  if (response.destroyed) left();
  else response.on('close', left);
  // Likewise a server that began stopping while the route awaited.
  if (shutdown.aborted) stop();
  else shutdown.addEventListener('abort', stop, { once: true });
  return {
    signal: abort.signal,
    release: () => shutdown.removeEventListener('abort', stop),
  };
}

/** Passes events through, then runs `dispose` however they end (finished, failed, abandoned). */
export async function* disposeAfter<T>(
  events: AsyncIterable<T>,
  dispose: () => Promise<void>,
): AsyncGenerator<T> {
  try {
    yield* events;
  } finally {
    await dispose();
  }
}

/**
 * Aborted when the client goes away before the response finished: for a listener of a
 * resumable run, whose leaving stops only its own listening, never the run.
 */
export function closedSignal(response: ServerResponse): AbortSignal {
  const left = new AbortController();
  const onClose = () => {
    if (!response.writableFinished) left.abort();
  };
  if (response.destroyed) onClose();
  else response.on('close', onClose);
  return left.signal;
}
