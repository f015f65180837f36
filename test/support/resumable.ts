import { streamReader } from './chat-stream.ts';
import { type FakeLlmServer, reply } from './fake-llm-server.ts';

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

/**
 * Sixteen words a fake model hands to Parley 150 ms apart, in an answer `begin` starts on one
 * replica and `follow` (given its run id) follows from its start on another: what the follower
 * showed, and how long each word waited between the model and the follower, shortest first.
 * Woken by notifications a word waits for the holder's flush (50 ms once followed) and one
 * read; read only on the follower's poll (every second), ~500 ms in the middle, 750 ms at p75.
 */
export async function followerWaits(
  llm: FakeLlmServer,
  begin: () => Promise<Response>,
  follow: (runId: string) => Promise<Response>,
): Promise<{ expected: string; shown: string; waits: number[]; p75: number }> {
  const words = Array.from({ length: 16 }, (_, i) => `n${i}`);
  const sentAt: number[] = [];
  const pace = async (written: string) => {
    if (written !== '') await new Promise((resolve) => setTimeout(resolve, 150));
    // The chunk written next carries the word after those written (one word a chunk).
    sentAt[written.split(' ').filter(Boolean).length] = Date.now();
  };
  llm.enqueue(reply.text(words.join(' '), { pace }));
  const response = await begin();
  const runId = response.headers.get('x-parley-run-id') as string;
  const follower = await follow(runId);
  const shownAt = new Map<number, number>();
  let raw = '';
  const decoder = new TextDecoder();
  for await (const chunk of follower.body as unknown as AsyncIterable<Uint8Array>) {
    raw += decoder.decode(chunk, { stream: true });
    for (const [index, word] of words.entries()) {
      if (!shownAt.has(index) && textOf(sseEvents(raw)).split(/\s+/).includes(word)) {
        shownAt.set(index, Date.now());
      }
    }
  }
  await readAll(response);
  const waits = words
    .map((_, index) => (shownAt.get(index) as number) - (sentAt[index] as number))
    .slice(2) // the follower starts following after the first words
    .sort((x, y) => x - y);
  return {
    expected: words.join(' '),
    shown: textOf(sseEvents(raw)).trim(),
    waits,
    p75: waits[Math.floor(waits.length * 0.75)] as number,
  };
}
