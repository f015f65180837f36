import { streamReader } from './chat-stream.ts';

/** One SSE event as a client reads it: its `id:` (if any) and its data. */
export interface SseEvent {
  id: number | undefined;
  data: string;
}

/** The complete events of a stream so far (a trailing partial event is left out). */
export function sseEvents(raw: string): SseEvent[] {
  const complete = raw.slice(0, raw.lastIndexOf('\n\n') + 2);
  const events: SseEvent[] = [];
  for (const block of complete.split('\n\n')) {
    let id: number | undefined;
    let data: string | undefined;
    for (const line of block.split('\n')) {
      if (line.startsWith('id: ')) id = Number(line.slice(4));
      if (line.startsWith('data: ')) data = line.slice(6);
    }
    if (data !== undefined) events.push({ id, data });
  }
  return events;
}

/** The answer text the events carry (JSON-string fragments). */
export function textOf(events: readonly SseEvent[]): string {
  return events
    .map((event) => JSON.parse(event.data === '[DONE]' ? 'null' : event.data) as unknown)
    .filter((value): value is string => typeof value === 'string')
    .join('');
}

/** The id a client that stopped reading here sends back as `Last-Event-ID` (0: none yet). */
export function lastEventId(events: readonly SseEvent[]): number {
  return events.reduce((last, event) => event.id ?? last, 0);
}

/**
 * Holds a fake model's stream before the chunk where `at(chunkIndex, textWritten)` first
 * holds: pass `pace` to the reply, await `reached`, then `release()`.
 */
export function holdAt(at: (chunk: number, textWritten: string) => boolean) {
  let chunk = 0;
  let held = false;
  let reach: () => void = () => {};
  let release: () => void = () => {};
  const reached = new Promise<void>((resolve) => {
    reach = resolve;
  });
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  return {
    reached,
    release,
    pace: async (textWritten: string) => {
      const index = chunk++;
      if (held || !at(index, textWritten)) return;
      held = true;
      reach();
      await released;
    },
  };
}

/** Reads a response until `predicate` holds for its events, then hangs up. */
export async function readThenLeave(
  response: Response,
  controller: AbortController,
  predicate: (events: SseEvent[]) => boolean,
): Promise<SseEvent[]> {
  const reader = streamReader(response);
  const raw = await reader.until((soFar) => predicate(sseEvents(soFar)));
  controller.abort();
  return sseEvents(raw);
}

/** Reads a whole response into its events. */
export async function readAll(response: Response): Promise<{ raw: string; events: SseEvent[] }> {
  const raw = await response.text();
  return { raw, events: sseEvents(raw) };
}
