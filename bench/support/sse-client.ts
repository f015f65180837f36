import { Agent, request } from 'node:http';

/** One agent for all benchmark requests: no socket limit, connections kept alive. */
export const agent = new Agent({ keepAlive: true, maxSockets: Infinity });

export interface SseEvent {
  /** performance.now() when the bytes carrying the event arrived. */
  at: number;
  data: string;
  /** The event's SSE `id:` (resumable answers number their events; others have none). */
  id?: string;
}

export interface SseResult {
  status: number;
  startedAt: number;
  endedAt: number;
  events: SseEvent[];
  /** A transport error (reset, refused…); the HTTP status is in `status`. */
  failure?: string;
}

/**
 * POSTs JSON and reads the response as server-sent events, timestamping each `data:` event
 * as its bytes arrive. Comment lines (keep-alives) are skipped.
 */
export function postSse(url: string, body: unknown): Promise<SseResult> {
  const payload = JSON.stringify(body);
  const startedAt = performance.now();
  return new Promise((resolve) => {
    const events: SseEvent[] = [];
    let status = 0;
    const finish = (failure?: string) =>
      resolve({
        status,
        startedAt,
        endedAt: performance.now(),
        events,
        ...(failure ? { failure } : {}),
      });
    const req = request(
      url,
      {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
        },
      },
      (res) => {
        status = res.statusCode ?? 0;
        res.setEncoding('utf8');
        let buffer = '';
        res.on('data', (text: string) => {
          const at = performance.now();
          buffer += text;
          let end = buffer.indexOf('\n\n');
          while (end !== -1) {
            let block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            // A resumable answer's events are `id: N` then `data: …` (Parley sends no other fields).
            let id: string | undefined;
            if (block.startsWith('id: ')) {
              const line = block.indexOf('\n');
              id = block.slice(4, line);
              block = block.slice(line + 1);
            }
            if (block.startsWith('data: ')) {
              events.push(
                id === undefined ? { at, data: block.slice(6) } : { at, data: block.slice(6), id },
              );
            }
            end = buffer.indexOf('\n\n');
          }
        });
        res.on('end', () => finish());
        res.on('error', (error) => finish(error.message));
      },
    );
    req.on('error', (error) => finish(error.message));
    req.end(payload);
  });
}

/** A `/chat` stream as the spec's client sees it. */
export interface ChatResult {
  status: number;
  startedAt: number;
  endedAt: number;
  /** Arrival times of the answer fragments (`data: "<string>"`). */
  fragmentTimes: number[];
  /**
   * Arrival time of each token of the fake model's answer (`t1 t2 … tN`, one word a token).
   * Parley merges tokens that reach it together into one fragment; each of them is timed
   * here by the fragment that carried it, so a stall still shows as one long gap.
   */
  tokenTimes: number[];
  text: string;
  done: boolean;
  ended: boolean;
  error: string | undefined;
  /** Events that carried an SSE `id:` (all but `[DONE]` for a resumable answer, else none). */
  numbered: number;
}

/**
 * BENCH_RESUMABLE=1: every benchmark's chats opt in to resumable answers (`"resumable": true`,
 * issue 32), so any of them measures that path; unset, the spec's plain request, unchanged.
 */
export const RESUMABLE_BY_DEFAULT = process.env.BENCH_RESUMABLE === '1';

export async function chat(
  baseUrl: string,
  userId: string,
  message = 'Hello there',
  { resumable = RESUMABLE_BY_DEFAULT }: { resumable?: boolean } = {},
): Promise<ChatResult> {
  const result = await postSse(
    `${baseUrl}/chat`,
    resumable ? { user_id: userId, message, resumable: true } : { user_id: userId, message },
  );
  const chatResult = startResult(result);
  for (const event of result.events) {
    if (event.id !== undefined) chatResult.numbered++;
    if (event.data === '[DONE]') {
      chatResult.ended = true;
      continue;
    }
    const value = JSON.parse(event.data) as unknown;
    if (typeof value === 'string') {
      addFragment(chatResult, value, event.at);
    } else if (value && typeof value === 'object' && '__done' in value) {
      chatResult.done = true;
    } else if (value && typeof value === 'object' && '__error' in value) {
      chatResult.error = JSON.stringify((value as { __error: unknown }).__error);
    }
  }
  if (result.status !== 200 && !chatResult.error) chatResult.error = `HTTP ${result.status}`;
  return chatResult;
}

/** A result with the response's timing and status, before its events are read. */
export function startResult(result: SseResult): ChatResult {
  return {
    status: result.status,
    startedAt: result.startedAt,
    endedAt: result.endedAt,
    fragmentTimes: [],
    tokenTimes: [],
    text: '',
    done: false,
    ended: false,
    error: result.failure,
    numbered: 0,
  };
}

/** Records one answer fragment: its arrival, and each fake-model token (`t1 t2 …`) it carries. */
export function addFragment(chatResult: ChatResult, text: string, at: number): void {
  chatResult.fragmentTimes.push(at);
  for (const _ of text.matchAll(TOKEN)) chatResult.tokenTimes.push(at);
  chatResult.text += text;
}

const TOKEN = /t\d+/g;

/** True when the stream ended as the spec says a successful one does. */
export const succeeded = (result: ChatResult): boolean =>
  result.status === 200 && result.done && result.ended && result.error === undefined;

/** Gaps between consecutive tokens of one stream (0 for tokens that shared a fragment). */
export function gaps(result: ChatResult): number[] {
  const times = result.tokenTimes;
  return times.slice(1).map((at, i) => at - (times[i] as number));
}

/** GET with the shared agent; resolves with the status and the latency in ms. */
export function timedGet(url: string): Promise<{ status: number; ms: number }> {
  const startedAt = performance.now();
  return new Promise((resolve) => {
    const req = request(url, { agent }, (res) => {
      res.resume();
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, ms: performance.now() - startedAt }),
      );
    });
    req.on('error', () => resolve({ status: 0, ms: performance.now() - startedAt }));
    req.end();
  });
}

/** POST without a body the caller cares about; resolves with the status and the latency. */
export function timedPost(url: string): Promise<{ status: number; ms: number }> {
  const startedAt = performance.now();
  return new Promise((resolve) => {
    const req = request(url, { method: 'POST', agent }, (res) => {
      res.resume();
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, ms: performance.now() - startedAt }),
      );
    });
    req.on('error', () => resolve({ status: 0, ms: performance.now() - startedAt }));
    req.end();
  });
}
